#include "agent/verbs_port_source.h"

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "agent/sample.h"
#include "agent/verbs.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace fabricdiag::agent {
namespace {

using ::testing::_;
using ::testing::ElementsAre;
using ::testing::Eq;
using ::testing::Field;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Optional;
using ::testing::Pointee;
using ::testing::Return;
using ::testing::StrictMock;
using ::testing::UnorderedElementsAre;

class MockVerbsApi : public VerbsApi {
 public:
  MOCK_METHOD(absl::StatusOr<std::vector<std::string>>, ListDevices, (),
              (override));
  MOCK_METHOD(absl::StatusOr<VerbsDeviceAttr>, QueryDevice,
              (absl::string_view device), (override));
  MOCK_METHOD(absl::StatusOr<VerbsPortAttr>, QueryPort,
              (absl::string_view device, uint32_t port), (override));
};

// IB encodings (include/rdma/ib_verbs.h).
constexpr uint32_t kWidth1X = 1;
constexpr uint32_t kWidth4X = 2;
constexpr uint32_t kWidth8X = 4;
constexpr uint32_t kWidth12X = 8;
constexpr uint32_t kWidth2X = 16;
constexpr uint32_t kSpeedSdr = 1;
constexpr uint32_t kSpeedQdr = 4;
constexpr uint32_t kSpeedFdr10 = 8;
constexpr uint32_t kSpeedFdr = 16;
constexpr uint32_t kSpeedEdr = 32;
constexpr uint32_t kSpeedHdr = 64;
constexpr uint32_t kSpeedNdr = 128;
constexpr uint32_t kSpeedXdr = 256;

// --- pure decoders -----------------------------------------------------------

TEST(IbWidthToLanesTest, DecodesEveryKernelWidth) {
  EXPECT_THAT(IbWidthToLanes(kWidth1X), Optional(1));
  EXPECT_THAT(IbWidthToLanes(kWidth4X), Optional(4));
  EXPECT_THAT(IbWidthToLanes(kWidth8X), Optional(8));
  EXPECT_THAT(IbWidthToLanes(kWidth12X), Optional(12));
  EXPECT_THAT(IbWidthToLanes(kWidth2X), Optional(2));
}

TEST(IbWidthToLanesTest, UnknownWidthIsAbsent) {
  for (uint32_t width : {0u, 3u, 32u, 255u, 0xffffffffu}) {
    EXPECT_EQ(IbWidthToLanes(width), std::nullopt) << width;
  }
}

TEST(IbSpeedToLaneGbpsTest, DecodesEveryKernelSpeed) {
  const struct {
    uint32_t speed;
    double gbps;
    const char* name;
  } kCases[] = {
      {1, 2.5, "SDR"},  {2, 5, "DDR"},     {4, 10, "QDR"},
      {8, 10, "FDR10"}, {16, 14, "FDR"},   {32, 25, "EDR"},
      {64, 50, "HDR"},  {128, 100, "NDR"}, {256, 200, "XDR"},
  };
  for (const auto& c : kCases) {
    EXPECT_THAT(IbSpeedToLaneGbps(c.speed), Optional(c.gbps)) << c.name;
    EXPECT_STREQ(IbSpeedName(c.speed), c.name);
  }
}

TEST(IbSpeedToLaneGbpsTest, UnknownSpeedIsAbsentNotSdr) {
  // rate_show() would print SDR here; a made-up rate is worse than none.
  for (uint32_t speed : {0u, 3u, 512u, 1024u, 0xffffffffu}) {
    EXPECT_EQ(IbSpeedToLaneGbps(speed), std::nullopt) << speed;
    EXPECT_STREQ(IbSpeedName(speed), "") << speed;
  }
}

// The sysfs `rate` file parsed the procfs way: leading number in Gb/s.
double SysfsRateBytesPerSecond(const std::string& rate_text) {
  return std::strtod(rate_text.c_str(), nullptr) * 125e6;
}

TEST(ExpectedRateBytesPerSecondTest, MatchesTheSysfsRateFile) {
  // Texts as rate_show() in drivers/infiniband/core/sysfs.c prints them.
  const struct {
    uint32_t width;
    uint32_t speed;
    const char* sysfs_rate;
  } kCases[] = {
      {kWidth1X, kSpeedSdr, "2.5 Gb/sec (1X SDR)"},
      {kWidth4X, kSpeedQdr, "40 Gb/sec (4X QDR)"},
      {kWidth4X, kSpeedFdr10, "40 Gb/sec (4X FDR10)"},
      {kWidth4X, kSpeedFdr, "56 Gb/sec (4X FDR)"},
      {kWidth1X, kSpeedEdr, "25 Gb/sec (1X EDR)"},
      {kWidth4X, kSpeedEdr, "100 Gb/sec (4X EDR)"},
      {kWidth12X, kSpeedEdr, "300 Gb/sec (12X EDR)"},
      {kWidth4X, kSpeedHdr, "200 Gb/sec (4X HDR)"},
      {kWidth2X, kSpeedNdr, "200 Gb/sec (2X NDR)"},
      {kWidth4X, kSpeedNdr, "400 Gb/sec (4X NDR)"},
      {kWidth8X, kSpeedNdr, "800 Gb/sec (8X NDR)"},
      {kWidth4X, kSpeedXdr, "800 Gb/sec (4X XDR)"},
  };
  for (const auto& c : kCases) {
    EXPECT_THAT(ExpectedRateBytesPerSecond(c.width, c.speed),
                Optional(SysfsRateBytesPerSecond(c.sysfs_rate)))
        << c.sysfs_rate;
  }
  EXPECT_THAT(ExpectedRateBytesPerSecond(kWidth4X, kSpeedNdr), Optional(5e10));
}

TEST(ExpectedRateBytesPerSecondTest, UnknownWidthOrSpeedHasNoRate) {
  EXPECT_EQ(ExpectedRateBytesPerSecond(kWidth4X, 512), std::nullopt);
  EXPECT_EQ(ExpectedRateBytesPerSecond(3, kSpeedNdr), std::nullopt);
  EXPECT_EQ(ExpectedRateBytesPerSecond(0, 0), std::nullopt);
}

TEST(IbMtuToBytesTest, DecodesEnumAndRejectsTheRest) {
  EXPECT_THAT(IbMtuToBytes(1), Optional(256));
  EXPECT_THAT(IbMtuToBytes(2), Optional(512));
  EXPECT_THAT(IbMtuToBytes(3), Optional(1024));
  EXPECT_THAT(IbMtuToBytes(4), Optional(2048));
  EXPECT_THAT(IbMtuToBytes(5), Optional(4096));
  for (int mtu : {0, 6, -1, 31, 1 << 30}) {
    EXPECT_EQ(IbMtuToBytes(mtu), std::nullopt) << mtu;
  }
}

TEST(IbPortStateNameTest, SpellsStatesLikeSysfs) {
  EXPECT_STREQ(IbPortStateName(0), "NOP");
  EXPECT_STREQ(IbPortStateName(1), "DOWN");
  EXPECT_STREQ(IbPortStateName(2), "INIT");
  EXPECT_STREQ(IbPortStateName(3), "ARMED");
  EXPECT_STREQ(IbPortStateName(4), "ACTIVE");
  EXPECT_STREQ(IbPortStateName(5), "ACTIVE_DEFER");
  EXPECT_STREQ(IbPortStateName(6), "UNKNOWN");
  EXPECT_STREQ(IbPortStateName(-1), "UNKNOWN");
}

TEST(IbLinkLayerNameTest, UnspecifiedIsInfiniBand) {
  EXPECT_STREQ(IbLinkLayerName(0), "InfiniBand");
  EXPECT_STREQ(IbLinkLayerName(1), "InfiniBand");
  EXPECT_STREQ(IbLinkLayerName(2), "Ethernet");
  EXPECT_STREQ(IbLinkLayerName(3), "Unknown");
}

// --- the source
// ----------------------------------------------------------------

VerbsDeviceAttr OnePortDevice() {
  VerbsDeviceAttr attr;
  attr.fw_ver = "28.39.1002";
  attr.phys_port_cnt = 1;
  return attr;
}

// A ConnectX-7 port up at 4X NDR with a 4096-byte MTU.
VerbsPortAttr NdrPort() {
  VerbsPortAttr attr;
  attr.state = 4;
  attr.phys_state = 5;
  attr.max_mtu = 5;
  attr.active_mtu = 5;
  attr.active_width = kWidth4X;
  attr.active_speed = kSpeedNdr;
  attr.link_layer = 1;
  attr.lid = 17;
  return attr;
}

std::vector<std::string> Devices(int n) {
  std::vector<std::string> names;
  for (int i = 0; i < n; ++i) names.push_back(absl::StrCat("mlx5_", i));
  return names;
}

const Sample* FindSample(const Snapshot& snapshot, absl::string_view device,
                         uint32_t port, absl::string_view name) {
  for (const Sample& s : snapshot.samples) {
    if (s.desc->device == device && s.desc->port == port &&
        s.desc->name == name)
      return &s;
  }
  return nullptr;
}

struct Fixture {
  Fixture() {
    auto owned = std::make_unique<StrictMock<MockVerbsApi>>();
    api = owned.get();
    source = std::make_unique<VerbsPortSource>(std::move(owned));
  }
  StrictMock<MockVerbsApi>* api;
  std::unique_ptr<VerbsPortSource> source;
};

TEST(VerbsPortSourceTest, IsNamedVerbs) {
  Fixture f;
  EXPECT_EQ(f.source->name(), "verbs");
}

// Every snapshot of a port points at the same gauge descriptions (so the
// rate calculator and the stream encoder take their fast paths); a port
// that went away and came back gets fresh ones.
TEST(VerbsPortSourceTest, PortsKeepTheirDescriptionsBetweenSnapshots) {
  Fixture f;
  EXPECT_CALL(*f.api, ListDevices())
      .WillOnce(Return(Devices(1)))
      .WillOnce(Return(Devices(1)))
      .WillOnce(Return(std::vector<std::string>{}))
      .WillOnce(Return(Devices(1)));
  EXPECT_CALL(*f.api, QueryDevice(_))
      .Times(3)
      .WillRepeatedly(Return(OnePortDevice()));
  EXPECT_CALL(*f.api, QueryPort(_, 1))
      .Times(3)
      .WillRepeatedly(Return(NdrPort()));
  Snapshot first, second, none, back;
  f.source->Collect(&first);
  f.source->Collect(&second);
  const Sample* a = FindSample(first, "mlx5_0", 1, "state");
  const Sample* b = FindSample(second, "mlx5_0", 1, "state");
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(a->desc, b->desc);
  f.source->Collect(&none);
  EXPECT_TRUE(none.samples.empty());
  f.source->Collect(&back);
  const Sample* c = FindSample(back, "mlx5_0", 1, "state");
  ASSERT_NE(c, nullptr);
  EXPECT_NE(c->desc, b->desc);
  // The earlier snapshots still describe their samples.
  EXPECT_EQ(b->desc->name, "state");
  EXPECT_EQ(b->desc->device, "mlx5_0");
}

TEST(VerbsPortSourceTest, EightNicNdrNodeReportsEveryPort) {
  Fixture f;
  EXPECT_CALL(*f.api, ListDevices()).WillOnce(Return(Devices(8)));
  EXPECT_CALL(*f.api, QueryDevice(_))
      .Times(8)
      .WillRepeatedly(Return(OnePortDevice()));
  EXPECT_CALL(*f.api, QueryPort(_, 1))
      .Times(8)
      .WillRepeatedly(Return(NdrPort()));

  Snapshot snapshot;
  SourceStatus status = f.source->Collect(&snapshot);

  EXPECT_TRUE(status.ok);
  EXPECT_EQ(status.source, "verbs");
  EXPECT_EQ(status.errors, 0);
  ASSERT_EQ(snapshot.verbs_ports.size(), 8u);
  for (int i = 0; i < 8; ++i) {
    const VerbsPortInfo& info = snapshot.verbs_ports[static_cast<size_t>(i)];
    const std::string device = absl::StrCat("mlx5_", i);
    EXPECT_EQ(info.device, device);
    EXPECT_EQ(info.port, 1u);
    EXPECT_EQ(info.state, 4);
    EXPECT_EQ(info.active_mtu_bytes, 4096);
    EXPECT_EQ(info.active_width_lanes, 4);
    EXPECT_EQ(info.lane_gbps, 100.0);
    EXPECT_EQ(info.expected_rate_bytes_per_second, 5e10);
    EXPECT_EQ(info.link_layer, "InfiniBand");

    const Sample* rate =
        FindSample(snapshot, device, 1, "expected_rate_bytes_per_second");
    ASSERT_NE(rate, nullptr) << device;
    EXPECT_EQ(rate->raw, 50000000000u);
    EXPECT_EQ(rate->BaseValue(), 5e10);
    EXPECT_EQ(rate->desc->unit, "bytes_per_second");
    EXPECT_EQ(rate->desc->kind, Kind::kGauge);
    EXPECT_EQ(rate->desc->subsystem, Subsystem::kVerbs);
  }
  // Five gauges per port, nothing else.
  EXPECT_EQ(snapshot.samples.size(), 8u * 5u);
}

TEST(VerbsPortSourceTest, EmitsEachGaugeWithItsUnit) {
  Fixture f;
  EXPECT_CALL(*f.api, ListDevices())
      .WillOnce(Return(std::vector<std::string>{"mlx5_3"}));
  EXPECT_CALL(*f.api, QueryDevice(Eq("mlx5_3")))
      .WillOnce(Return(OnePortDevice()));
  EXPECT_CALL(*f.api, QueryPort(Eq("mlx5_3"), 1)).WillOnce(Return(NdrPort()));

  Snapshot snapshot;
  f.source->Collect(&snapshot);

  auto gauge = [](const char* name, uint64_t raw, const char* unit) {
    return AllOf(
        Field(&Sample::raw, raw),
        Field(&Sample::desc,
              Pointee(AllOf(Field(&SeriesDesc::name, name),
                            Field(&SeriesDesc::unit, unit),
                            Field(&SeriesDesc::kind, Kind::kGauge),
                            Field(&SeriesDesc::subsystem, Subsystem::kVerbs),
                            Field(&SeriesDesc::device, "mlx5_3"),
                            Field(&SeriesDesc::port, 1u)))));
  };
  EXPECT_THAT(
      snapshot.samples,
      UnorderedElementsAre(gauge("state", 4, ""), gauge("phys_state", 5, ""),
                           gauge("active_mtu_bytes", 4096, "bytes"),
                           gauge("active_width_lanes", 4, "lanes"),
                           gauge("expected_rate_bytes_per_second", 50000000000u,
                                 "bytes_per_second")));
}

TEST(VerbsPortSourceTest, FailingDeviceDoesNotStopTheOthers) {
  Fixture f;
  EXPECT_CALL(*f.api, ListDevices()).WillOnce(Return(Devices(3)));
  EXPECT_CALL(*f.api, QueryDevice(Eq("mlx5_0")))
      .WillOnce(Return(OnePortDevice()));
  EXPECT_CALL(*f.api, QueryDevice(Eq("mlx5_1")))
      .WillOnce(Return(absl::NotFoundError("mlx5_1 vanished")));
  EXPECT_CALL(*f.api, QueryDevice(Eq("mlx5_2")))
      .WillOnce(Return(OnePortDevice()));
  EXPECT_CALL(*f.api, QueryPort(Eq("mlx5_0"), 1)).WillOnce(Return(NdrPort()));
  EXPECT_CALL(*f.api, QueryPort(Eq("mlx5_2"), 1)).WillOnce(Return(NdrPort()));

  Snapshot snapshot;
  SourceStatus status = f.source->Collect(&snapshot);

  EXPECT_FALSE(status.ok);
  EXPECT_EQ(status.errors, 1);
  EXPECT_THAT(status.last_error, HasSubstr("mlx5_1 vanished"));
  EXPECT_THAT(snapshot.verbs_ports,
              ElementsAre(Field(&VerbsPortInfo::device, "mlx5_0"),
                          Field(&VerbsPortInfo::device, "mlx5_2")));
  EXPECT_EQ(FindSample(snapshot, "mlx5_1", 1, "state"), nullptr);
}

TEST(VerbsPortSourceTest, FailingPortDoesNotStopTheNextPort) {
  Fixture f;
  VerbsDeviceAttr two_ports = OnePortDevice();
  two_ports.phys_port_cnt = 2;
  EXPECT_CALL(*f.api, ListDevices())
      .WillOnce(Return(std::vector<std::string>{"mlx4_0"}));
  EXPECT_CALL(*f.api, QueryDevice(Eq("mlx4_0"))).WillOnce(Return(two_ports));
  EXPECT_CALL(*f.api, QueryPort(Eq("mlx4_0"), 1))
      .WillOnce(Return(absl::UnavailableError("ibv_query_port: EAGAIN")));
  EXPECT_CALL(*f.api, QueryPort(Eq("mlx4_0"), 2)).WillOnce(Return(NdrPort()));

  Snapshot snapshot;
  SourceStatus status = f.source->Collect(&snapshot);

  EXPECT_FALSE(status.ok);
  EXPECT_EQ(status.errors, 1);
  EXPECT_THAT(snapshot.verbs_ports,
              ElementsAre(Field(&VerbsPortInfo::port, 2u)));
}

TEST(VerbsPortSourceTest, ZeroDevicesIsOkAndAddsNothing) {
  Fixture f;
  EXPECT_CALL(*f.api, ListDevices())
      .WillOnce(Return(std::vector<std::string>{}));

  Snapshot snapshot;
  SourceStatus status = f.source->Collect(&snapshot);

  EXPECT_TRUE(status.ok);
  EXPECT_EQ(status.errors, 0);
  EXPECT_THAT(snapshot.samples, IsEmpty());
  EXPECT_THAT(snapshot.verbs_ports, IsEmpty());
}

TEST(VerbsPortSourceTest, ListFailureIsReportedNotFatal) {
  Fixture f;
  EXPECT_CALL(*f.api, ListDevices())
      .WillOnce(Return(absl::PermissionDeniedError("ibv_get_device_list")));

  Snapshot snapshot;
  SourceStatus status = f.source->Collect(&snapshot);

  EXPECT_FALSE(status.ok);
  EXPECT_EQ(status.errors, 1);
  EXPECT_THAT(status.last_error, HasSubstr("ibv_get_device_list"));
  EXPECT_THAT(snapshot.samples, IsEmpty());
}

TEST(VerbsPortSourceTest, UnknownSpeedHasNoExpectedRateButKeepsTheRest) {
  Fixture f;
  VerbsPortAttr future = NdrPort();
  future.active_speed = 512;  // a speed newer than this code
  EXPECT_CALL(*f.api, ListDevices())
      .WillOnce(Return(std::vector<std::string>{"mlx5_0"}));
  EXPECT_CALL(*f.api, QueryDevice(_)).WillOnce(Return(OnePortDevice()));
  EXPECT_CALL(*f.api, QueryPort(_, 1)).WillOnce(Return(future));

  Snapshot snapshot;
  SourceStatus status = f.source->Collect(&snapshot);

  EXPECT_TRUE(status.ok);
  EXPECT_EQ(FindSample(snapshot, "mlx5_0", 1, "expected_rate_bytes_per_second"),
            nullptr);
  ASSERT_NE(FindSample(snapshot, "mlx5_0", 1, "active_width_lanes"), nullptr);
  ASSERT_EQ(snapshot.verbs_ports.size(), 1u);
  EXPECT_EQ(snapshot.verbs_ports[0].expected_rate_bytes_per_second, 0.0);
  EXPECT_EQ(snapshot.verbs_ports[0].lane_gbps, 0.0);
  EXPECT_EQ(snapshot.verbs_ports[0].active_width_lanes, 4);
}

TEST(VerbsPortSourceTest, GarbageEncodingsAreAbsentNotZero) {
  Fixture f;
  VerbsPortAttr garbage;
  garbage.state = -3;
  garbage.phys_state = -1;
  garbage.active_mtu = 9;
  garbage.active_width = 3;
  garbage.active_speed = 0;
  garbage.link_layer = 77;
  EXPECT_CALL(*f.api, ListDevices())
      .WillOnce(Return(std::vector<std::string>{"rxe0"}));
  EXPECT_CALL(*f.api, QueryDevice(_)).WillOnce(Return(OnePortDevice()));
  EXPECT_CALL(*f.api, QueryPort(_, 1)).WillOnce(Return(garbage));

  Snapshot snapshot;
  f.source->Collect(&snapshot);

  EXPECT_THAT(snapshot.samples, IsEmpty());
  ASSERT_EQ(snapshot.verbs_ports.size(), 1u);
  EXPECT_EQ(snapshot.verbs_ports[0].link_layer, "Unknown");
}

TEST(VerbsPortSourceTest, AbsurdPortCountIsClampedToTheVerbsLimit) {
  Fixture f;
  VerbsDeviceAttr absurd = OnePortDevice();
  absurd.phys_port_cnt = 0xffffffffu;  // would loop forever unclamped
  EXPECT_CALL(*f.api, ListDevices())
      .WillOnce(Return(std::vector<std::string>{"mlx5_0"}));
  EXPECT_CALL(*f.api, QueryDevice(_)).WillOnce(Return(absurd));
  EXPECT_CALL(*f.api, QueryPort(_, _))
      .Times(255)
      .WillRepeatedly(Return(absl::InvalidArgumentError("no such port")));

  Snapshot snapshot;
  SourceStatus status = f.source->Collect(&snapshot);

  EXPECT_EQ(status.errors, 255);
}

TEST(VerbsPortSourceTest, DeviceWithoutPortsAddsNothing) {
  Fixture f;
  VerbsDeviceAttr no_ports = OnePortDevice();
  no_ports.phys_port_cnt = 0;
  EXPECT_CALL(*f.api, ListDevices())
      .WillOnce(Return(std::vector<std::string>{"mlx5_0"}));
  EXPECT_CALL(*f.api, QueryDevice(_)).WillOnce(Return(no_ports));

  Snapshot snapshot;
  SourceStatus status = f.source->Collect(&snapshot);

  EXPECT_TRUE(status.ok);
  EXPECT_THAT(snapshot.verbs_ports, IsEmpty());
}

TEST(VerbsPortSourceTest, AppendsToAnExistingSnapshot) {
  Fixture f;
  EXPECT_CALL(*f.api, ListDevices())
      .WillOnce(Return(std::vector<std::string>{"mlx5_0"}));
  EXPECT_CALL(*f.api, QueryDevice(_)).WillOnce(Return(OnePortDevice()));
  EXPECT_CALL(*f.api, QueryPort(_, 1)).WillOnce(Return(NdrPort()));

  Snapshot snapshot;
  SeriesDesc earlier;
  earlier.name = "port_xmit_data";
  snapshot.samples.push_back(Sample::Of(std::move(earlier), 1));
  f.source->Collect(&snapshot);

  ASSERT_EQ(snapshot.samples.size(), 6u);
  EXPECT_EQ(snapshot.samples[0].desc->name, "port_xmit_data");
}

}  // namespace
}  // namespace fabricdiag::agent
