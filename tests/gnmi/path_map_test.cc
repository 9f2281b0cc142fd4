#include "gnmi/path_map.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace fabricdiag::gnmi {
namespace {

using Kind = LeafTarget::Kind;

struct MapCase {
  Dialect dialect;
  const char* db;
  const char* path;
  Kind kind;
  const char* device;
  const char* name;  // for kSeries
};

void PrintTo(const MapCase& c, std::ostream* os) { *os << c.path; }

class MapLeafTest : public ::testing::TestWithParam<MapCase> {};

TEST_P(MapLeafTest, MapsThePath) {
  const MapCase& c = GetParam();
  const ::gnmi::Path parsed = *ParsePath(c.path);
  PathView path;
  path.Append(parsed);
  OidNames oids = {{"oid:0x1000000000039", "Ethernet68"}};
  std::string name = "stale";
  const LeafTarget t = MapLeaf(c.dialect, c.db, path, oids, &name);
  EXPECT_EQ(t.kind, c.kind);
  EXPECT_EQ(t.device, c.device);
  if (c.kind == Kind::kSeries) {
    EXPECT_EQ(name, c.name);
  } else {
    EXPECT_EQ(name, "");
  }
}

constexpr Dialect OC = Dialect::kOpenConfig;
constexpr Dialect SONIC = Dialect::kSonic;

INSTANTIATE_TEST_SUITE_P(
    OpenConfig, MapLeafTest,
    ::testing::Values(
        MapCase{
            OC, "",
            "/interfaces/interface[name=Ethernet1]/state/counters/in-octets",
            Kind::kSeries, "Ethernet1",
            "/interfaces/interface/state/counters/in-octets"},
        // RFC 7951 member names carry their module.
        MapCase{OC, "",
                "/openconfig-interfaces:interfaces/interface[name=Ethernet1]/"
                "state/openconfig-interfaces:counters/in-octets",
                Kind::kSeries, "Ethernet1",
                "/interfaces/interface/state/counters/in-octets"},
        MapCase{OC, "",
                "/interfaces/interface[name=Ethernet1]/state/oper-status",
                Kind::kOperStatus, "Ethernet1", ""},
        MapCase{
            OC, "",
            "/interfaces/interface[name=Ethernet1]/ethernet/state/port-speed",
            Kind::kPortSpeed, "Ethernet1", ""},
        MapCase{OC, "",
                "/interfaces/interface[name=Ethernet1]/ethernet/state/"
                "negotiated-port-speed",
                Kind::kNegotiatedSpeed, "Ethernet1", ""},
        MapCase{OC, "",
                "/interfaces/interface[name=Ethernet1]/ethernet/pfc/priorities/"
                "priority[index=3]/state/in-frames",
                Kind::kSeries, "Ethernet1",
                "/interfaces/interface/ethernet/pfc/priorities/"
                "priority[index=3]/state/in-frames"},
        MapCase{OC, "",
                "/interfaces/interface[name=Ethernet1]/ethernet/state/counters/"
                "in-crc-errors",
                Kind::kSeries, "Ethernet1",
                "/interfaces/interface/ethernet/state/counters/in-crc-errors"},
        MapCase{OC, "",
                "/qos/interfaces/interface[interface-id=swp1]/output/queues/"
                "queue[name=3]/state/transmit-octets",
                Kind::kSeries, "swp1",
                "/qos/interfaces/interface/output/queues/queue[name=3]/state/"
                "transmit-octets"},
        MapCase{OC, "",
                "/qos/interfaces/interface[interface-id=swp1]/state/"
                "switch-priority[priority=3]/counters/in-pause-pkts",
                Kind::kSeries, "swp1",
                "/qos/interfaces/interface/state/switch-priority[priority=3]/"
                "counters/in-pause-pkts"},
        MapCase{OC, "", "/system/state/boot-time", Kind::kBootTime, "", ""},
        // Configuration, subinterfaces and other models are not counters
        // of the port.
        MapCase{OC, "", "/interfaces/interface[name=Ethernet1]/config/mtu",
                Kind::kIgnored, "", ""},
        MapCase{OC, "",
                "/interfaces/interface[name=Ethernet1]/subinterfaces/"
                "subinterface[index=0]/state/counters/in-octets",
                Kind::kIgnored, "", ""},
        MapCase{OC, "",
                "/qos/interfaces/interface[interface-id=swp1]/output/queues/"
                "queue[name=3]/config/name",
                Kind::kIgnored, "", ""},
        MapCase{OC, "", "/system/state/hostname", Kind::kIgnored, "", ""},
        MapCase{OC, "", "/interfaces/interface[name=Ethernet1]/state",
                Kind::kIgnored, "", ""},
        // A port path without its key cannot be placed.
        MapCase{OC, "", "/interfaces/interface/state/counters/in-octets",
                Kind::kBadPath, "", ""},
        MapCase{OC, "",
                "/qos/interfaces/interface/output/queues/queue[name=3]/state/"
                "transmit-octets",
                Kind::kBadPath, "", ""}));

INSTANTIATE_TEST_SUITE_P(
    Sonic, MapLeafTest,
    ::testing::Values(
        MapCase{SONIC, "COUNTERS_DB",
                "/COUNTERS/Ethernet68/SAI_PORT_STAT_IF_IN_OCTETS",
                Kind::kSeries, "Ethernet68", "SAI_PORT_STAT_IF_IN_OCTETS"},
        MapCase{SONIC, "COUNTERS_DB",
                "/COUNTERS/Ethernet*/Ethernet68/SAI_PORT_STAT_IF_IN_OCTETS",
                Kind::kSeries, "Ethernet68", "SAI_PORT_STAT_IF_IN_OCTETS"},
        MapCase{SONIC, "COUNTERS_DB",
                "/COUNTERS/Ethernet68/Queues/Ethernet68:3/SAI_QUEUE_STAT_BYTES",
                Kind::kSeries, "Ethernet68", "Queues[3]/SAI_QUEUE_STAT_BYTES"},
        MapCase{SONIC, "COUNTERS_DB",
                "/COUNTERS/Ethernet*/Queues/Ethernet68:3/SAI_QUEUE_STAT_BYTES",
                Kind::kSeries, "Ethernet68", "Queues[3]/SAI_QUEUE_STAT_BYTES"},
        MapCase{SONIC, "COUNTERS_DB",
                "/COUNTERS/Ethernet68/Pfcwd/Ethernet68:3/"
                "PFC_WD_QUEUE_STATS_DEADLOCK_DETECTED",
                Kind::kSeries, "Ethernet68",
                "Queues[3]/PFC_WD_QUEUE_STATS_DEADLOCK_DETECTED"},
        MapCase{SONIC, "COUNTERS_DB",
                "/COUNTERS/Ethernet68/Queues/Ethernet68:1:periodic/"
                "SAI_QUEUE_STAT_SHARED_WATERMARK_BYTES",
                Kind::kSeries, "Ethernet68",
                "Queues[1:periodic]/SAI_QUEUE_STAT_SHARED_WATERMARK_BYTES"},
        MapCase{SONIC, "COUNTERS_DB",
                "/COUNTERS/oid:0x1000000000039/SAI_PORT_STAT_IF_IN_OCTETS",
                Kind::kSeries, "Ethernet68", "SAI_PORT_STAT_IF_IN_OCTETS"},
        MapCase{SONIC, "COUNTERS_DB", "/COUNTERS_PORT_NAME_MAP/Ethernet68",
                Kind::kPortOid, "Ethernet68", ""},
        MapCase{SONIC, "APPL_DB", "/PORT_TABLE/Ethernet*/Ethernet0/oper_status",
                Kind::kOperStatus, "Ethernet0", ""},
        MapCase{SONIC, "APPL_DB", "/PORT_TABLE/Ethernet0/speed",
                Kind::kPortSpeed, "Ethernet0", ""},
        MapCase{SONIC, "APPL_DB", "/PORT_TABLE/Ethernet0/mtu", Kind::kIgnored,
                "", ""},
        // Wrong port, no queue index, an oid nobody named, another DB.
        MapCase{SONIC, "COUNTERS_DB",
                "/COUNTERS/Ethernet68/Queues/Ethernet64:3/SAI_QUEUE_STAT_BYTES",
                Kind::kBadPath, "", ""},
        MapCase{SONIC, "COUNTERS_DB",
                "/COUNTERS/Ethernet68/Queues/Ethernet68/SAI_QUEUE_STAT_BYTES",
                Kind::kBadPath, "", ""},
        MapCase{SONIC, "COUNTERS_DB",
                "/COUNTERS/oid:0x1000000000099/SAI_PORT_STAT_IF_IN_OCTETS",
                Kind::kBadPath, "", ""},
        MapCase{SONIC, "CONFIG_DB",
                "/COUNTERS/Ethernet68/SAI_PORT_STAT_IF_IN_OCTETS",
                Kind::kIgnored, "", ""},
        MapCase{SONIC, "COUNTERS_DB", "/COUNTERS/Ethernet*", Kind::kIgnored, "",
                ""}));

TEST(OperStateTest, AsNetdevOperstate) {
  EXPECT_EQ(OperState("UP"), "up");
  EXPECT_EQ(OperState("up"), "up");
  EXPECT_EQ(OperState("DOWN"), "down");
  EXPECT_EQ(OperState("LOWER_LAYER_DOWN"), "down");
  EXPECT_EQ(OperState("NOT_PRESENT"), "down");
  EXPECT_EQ(OperState("DORMANT"), "dormant");
  EXPECT_EQ(OperState("TESTING"), "testing");
  EXPECT_EQ(OperState("UNKNOWN"), "unknown");
  EXPECT_EQ(OperState("sideways"), "unknown");
}

TEST(SpeedTest, OpenConfigIdentities) {
  EXPECT_DOUBLE_EQ(SpeedIdentityBytesPerSecond("SPEED_400GB"), 400e9 / 8);
  EXPECT_DOUBLE_EQ(
      SpeedIdentityBytesPerSecond("openconfig-if-ethernet:SPEED_2500MB"),
      2.5e9 / 8);
  EXPECT_DOUBLE_EQ(SpeedIdentityBytesPerSecond("SPEED_800GB"), 100e9);
  EXPECT_EQ(SpeedIdentityBytesPerSecond("SPEED_UNKNOWN"), 0);
  EXPECT_EQ(SpeedIdentityBytesPerSecond("SPEED_FAST"), 0);
  EXPECT_EQ(SpeedIdentityBytesPerSecond("400G"), 0);
}

}  // namespace
}  // namespace fabricdiag::gnmi
