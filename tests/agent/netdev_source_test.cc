#include "agent/netdev_source.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "agent/device_links.h"
#include "agent/rdma_sysfs_source.h"
#include "agent/snapshotter.h"
#include "common/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/fake_sysfs.h"

namespace fabricdiag::agent {
namespace {

using ::testing::ElementsAre;
using ::testing::Pair;
using ::testing::UnorderedElementsAre;

SysfsReader::Options NoCache() {
  SysfsReader::Options o;
  o.cache_policy = FdCachePolicy::kNever;
  return o;
}

const Sample* Find(const Snapshot& snap, Subsystem subsystem,
                   const std::string& netdev, const std::string& name) {
  for (const Sample& s : snap.samples) {
    if (s.desc->subsystem == subsystem && s.desc->device == netdev &&
        s.desc->name == name) {
      return &s;
    }
  }
  return nullptr;
}

const NetdevInfo* FindInfo(const Snapshot& snap, const std::string& netdev) {
  for (const NetdevInfo& n : snap.netdevs) {
    if (n.name == netdev) return &n;
  }
  return nullptr;
}

std::unique_ptr<NetdevSource> MakeSource(SysfsReader* reader) {
  absl::StatusOr<std::unique_ptr<NetdevSource>> s =
      NetdevSource::Create(reader);
  EXPECT_TRUE(s.ok()) << s.status();
  return *std::move(s);
}

TEST(NetdevFixtureTest, Eth0FromProcfsFixture) {
  SysfsReader reader(
      std::string(FABRICDIAG_SOURCE_DIR) + "/tests/fixtures/sysfs", NoCache());
  std::unique_ptr<NetdevSource> source = MakeSource(&reader);
  EXPECT_EQ(source->name(), "netdev");
  Snapshot snap;
  SourceStatus st = source->Collect(&snap);
  EXPECT_TRUE(st.ok) << st.last_error;  // eth0 has no statistics/: not an error
  auto attr = [&](const std::string& name) {
    return Find(snap, Subsystem::kNetdevAttribute, "eth0", name);
  };
  ASSERT_NE(attr("carrier_changes"), nullptr);
  EXPECT_EQ(attr("carrier_changes")->raw, 2u);
  EXPECT_EQ(attr("carrier_changes")->desc->kind, Kind::kCounter);
  EXPECT_EQ(attr("carrier_up_count")->raw, 1u);
  EXPECT_EQ(attr("carrier_down_count")->raw, 1u);
  ASSERT_NE(attr("mtu"), nullptr);
  EXPECT_EQ(attr("mtu")->raw, 1500u);
  EXPECT_EQ(attr("mtu")->desc->kind, Kind::kGauge);
  ASSERT_NE(attr("speed_bytes_per_second"), nullptr);
  EXPECT_EQ(attr("speed_bytes_per_second")->raw, 125000000u);
  EXPECT_EQ(attr("speed_bytes_per_second")->desc->kind, Kind::kGauge);
  EXPECT_EQ(attr("carrier")->raw, 1u);
  const NetdevInfo* info = FindInfo(snap, "eth0");
  ASSERT_NE(info, nullptr);
  EXPECT_EQ(info->operstate, "up");
  EXPECT_EQ(info->rdma_device, "");
  ASSERT_EQ(snap.netdevs.size(), 1u);
}

TEST(NetdevTest, ExcludesVirtualInterfacesKeepsSwitchPorts) {
  ScopedTempDir tmp;
  FakeSysfs fake(tmp.path());
  FakeNetdevSpec virt;
  for (const char* name : {"lo", "veth0", "docker0", "br-1234", "cali9",
                           "vxlan.calico", "nodelocaldns"}) {
    ASSERT_TRUE(fake.AddNetdev(name, virt).ok());
  }
  FakeNetdevSpec phys;
  phys.pci_address = "0000:03:00.0";
  ASSERT_TRUE(fake.AddNetdev("swp1", phys).ok());
  phys.pci_address = "0000:04:00.0";
  ASSERT_TRUE(fake.AddNetdev("Ethernet0", phys).ok());
  ASSERT_TRUE(fake.AddNetdev("lookalike_lo", virt).ok());  // not "lo"
  ASSERT_TRUE(fake.SetNetdevStat("swp1", "rx_bytes", 123456789012ULL).ok());
  ASSERT_TRUE(fake.WriteFile("class/net/bonding_masters", "").ok());

  SysfsReader reader(tmp.path(), NoCache());
  std::unique_ptr<NetdevSource> source = MakeSource(&reader);
  Snapshot snap;
  SourceStatus st = source->Collect(&snap);
  EXPECT_TRUE(st.ok) << st.last_error;
  std::vector<std::string> names;
  for (const NetdevInfo& n : snap.netdevs) names.push_back(n.name);
  EXPECT_THAT(names, ElementsAre("Ethernet0", "lookalike_lo", "swp1"));
  for (const Sample& s : snap.samples) {
    EXPECT_TRUE(s.desc->device == "swp1" || s.desc->device == "Ethernet0" ||
                s.desc->device == "lookalike_lo")
        << s.desc->device;
  }
  const Sample* rx =
      Find(snap, Subsystem::kNetdevStatistics, "swp1", "rx_bytes");
  ASSERT_NE(rx, nullptr);
  EXPECT_EQ(rx->raw, 123456789012u);
  EXPECT_EQ(rx->desc->width_bits, 64u);
  EXPECT_EQ(rx->desc->unit, "bytes");
  EXPECT_EQ(rx->desc->direction, Direction::kRx);
  int stats = 0;
  for (const Sample& s : snap.samples) {
    stats += s.desc->device == "Ethernet0" &&
             s.desc->subsystem == Subsystem::kNetdevStatistics;
  }
  EXPECT_EQ(stats, 24);
  EXPECT_EQ(
      Find(snap, Subsystem::kNetdevAttribute, "swp1", "speed_bytes_per_second")
          ->raw,
      400000ULL * 125000);
}

TEST(NetdevTest, CustomAndInvalidExcludeRegex) {
  ScopedTempDir tmp;
  FakeSysfs fake(tmp.path());
  ASSERT_TRUE(fake.AddNetdev("lo", FakeNetdevSpec()).ok());
  SysfsReader reader(tmp.path(), NoCache());
  NetdevSource::Options none;
  none.exclude_regex = "";
  absl::StatusOr<std::unique_ptr<NetdevSource>> all =
      NetdevSource::Create(&reader, none);
  ASSERT_TRUE(all.ok());
  Snapshot snap;
  (*all)->Collect(&snap);
  EXPECT_NE(FindInfo(snap, "lo"), nullptr);

  NetdevSource::Options bad;
  bad.exclude_regex = "^(lo|veth";
  EXPECT_EQ(NetdevSource::Create(&reader, bad).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(NetdevTest, DownLinkSpeedIsAbsentNotZero) {
  ScopedTempDir tmp;
  FakeSysfs fake(tmp.path());
  FakeNetdevSpec down;
  down.pci_address = "0000:a2:00.0";
  down.speed = "";  // what a down ice port reads (procfs fixture)
  down.operstate = "down";
  down.carrier = "0";
  ASSERT_TRUE(fake.AddNetdev("enp162s0f0np0", down).ok());
  FakeNetdevSpec unknown = down;
  unknown.pci_address = "0000:a3:00.0";
  unknown.speed = "-1";  // SPEED_UNKNOWN
  ASSERT_TRUE(fake.AddNetdev("enp163s0f0np0", unknown).ok());

  SysfsReader reader(tmp.path(), NoCache());
  std::unique_ptr<NetdevSource> source = MakeSource(&reader);
  Snapshot snap;
  SourceStatus st = source->Collect(&snap);
  EXPECT_TRUE(st.ok) << st.last_error;
  EXPECT_EQ(st.errors, 0);
  for (const char* n : {"enp162s0f0np0", "enp163s0f0np0"}) {
    EXPECT_EQ(
        Find(snap, Subsystem::kNetdevAttribute, n, "speed_bytes_per_second"),
        nullptr)
        << n;
    ASSERT_NE(Find(snap, Subsystem::kNetdevAttribute, n, "carrier"), nullptr);
    EXPECT_EQ(Find(snap, Subsystem::kNetdevAttribute, n, "carrier")->raw, 0u);
    EXPECT_EQ(FindInfo(snap, n)->operstate, "down");
  }
}

TEST(NetdevTest, JunkIsCountedAndTheRestReported) {
  ScopedTempDir tmp;
  FakeSysfs fake(tmp.path());
  FakeNetdevSpec phys;
  phys.pci_address = "0000:03:00.0";
  ASSERT_TRUE(fake.AddNetdev("swp1", phys).ok());
  ASSERT_TRUE(
      fake.WriteFile("class/net/swp1/statistics/rx_errors", "lots\n").ok());
  ASSERT_TRUE(fake.SetNetdevAttribute("swp1", "speed", "fast\n").ok());
  ASSERT_TRUE(fake.SetNetdevAttribute("swp1", "mtu", "").ok());
  SysfsReader reader(tmp.path(), NoCache());
  std::unique_ptr<NetdevSource> source = MakeSource(&reader);
  Snapshot snap;
  SourceStatus st = source->Collect(&snap);
  EXPECT_FALSE(st.ok);
  EXPECT_EQ(st.errors, 2);
  EXPECT_EQ(Find(snap, Subsystem::kNetdevStatistics, "swp1", "rx_errors"),
            nullptr);
  EXPECT_EQ(Find(snap, Subsystem::kNetdevAttribute, "swp1", "mtu"), nullptr);
  EXPECT_NE(Find(snap, Subsystem::kNetdevStatistics, "swp1", "tx_errors"),
            nullptr);
}

TEST(NetdevTest, NetdevRemovedBetweenCalls) {
  ScopedTempDir tmp;
  FakeSysfs fake(tmp.path());
  FakeNetdevSpec phys;
  phys.pci_address = "0000:03:00.0";
  ASSERT_TRUE(fake.AddNetdev("swp1", phys).ok());
  phys.pci_address = "0000:04:00.0";
  ASSERT_TRUE(fake.AddNetdev("swp2", phys).ok());
  SysfsReader reader(tmp.path(), NoCache());
  std::unique_ptr<NetdevSource> source = MakeSource(&reader);
  Snapshot first;
  source->Collect(&first);
  EXPECT_EQ(first.netdevs.size(), 2u);
  ASSERT_TRUE(fake.RemoveNetdev("swp1").ok());
  Snapshot second;
  SourceStatus st = source->Collect(&second);
  EXPECT_TRUE(st.ok) << st.last_error;
  ASSERT_EQ(second.netdevs.size(), 1u);
  EXPECT_EQ(second.netdevs[0].name, "swp2");
}

class NetdevRoceTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(BuildRoceNode(tmp_.path(), 8).ok()); }
  void ExpectMapping(const Snapshot& snap) {
    ASSERT_EQ(snap.netdevs.size(), 8u);
    for (int i = 0; i < 8; ++i) {
      const NetdevInfo* info =
          FindInfo(snap, absl::StrCat("ens", i + 1, "f0np0"));
      ASSERT_NE(info, nullptr);
      EXPECT_EQ(info->rdma_device, absl::StrCat("mlx5_", i));
      EXPECT_EQ(info->rdma_port, 1u);
    }
  }
  ScopedTempDir tmp_;
  SysfsReader reader_{tmp_.path(), NoCache()};
};

TEST_F(NetdevRoceTest, LinkedToTheRdmaDevicesTheRdmaSourceFound) {
  RdmaSysfsSource rdma(&reader_);
  std::unique_ptr<NetdevSource> netdev = MakeSource(&reader_);
  Snapshot snap;
  SourceStatus st = netdev->Collect(&snap);
  EXPECT_TRUE(st.ok) << st.last_error;
  rdma.Collect(&snap);
  LinkNetdevsToRdma(&snap);
  ExpectMapping(snap);
  const Sample* tx =
      Find(snap, Subsystem::kNetdevStatistics, "ens3f0np0", "tx_bytes");
  ASSERT_NE(tx, nullptr);
  EXPECT_EQ(tx->raw, 3000u + 8);  // BuildRoceNode: base + name length
}

// The Snapshotter does not depend on the order the sources are given in:
// the netdevs are linked to RDMA devices after every device source ran, and
// the ethtool source reads the netdevs it is handed.
TEST_F(NetdevRoceTest, SnapshotterLinksWhateverTheOrderOfSources) {
  std::vector<std::unique_ptr<Source>> sources;
  sources.push_back(MakeSource(&reader_));
  sources.push_back(std::make_unique<RdmaSysfsSource>(&reader_));
  SystemClock clock;
  Snapshotter snapshotter(std::move(sources), {}, clock);
  Snapshot snap = snapshotter.Take();
  ExpectMapping(snap);
  ASSERT_EQ(snap.sources.size(), 2u);
  EXPECT_EQ(snap.sources[0].source, "netdev");
  EXPECT_EQ(snap.sources[1].source, "rdma_sysfs");
}

TEST(MapNetdevsToRdmaTest, GidAttrsWinDeviceNetIsFallback) {
  RdmaPortInfo p1;
  p1.device = "mlx5_0";
  p1.port = 1;
  p1.netdevs = {"ens1f0np0"};
  RdmaPortInfo ib1;  // IPoIB device with two ports, no GID netdevs
  ib1.device = "mlx5_1";
  ib1.port = 1;
  RdmaPortInfo ib2 = ib1;
  ib2.port = 2;
  RdmaPortInfo single;  // one port, netdev only visible via device/net
  single.device = "mlx5_2";
  single.port = 1;
  RdmaDeviceInfo d0;
  d0.name = "mlx5_0";
  d0.netdevs = {"ens1f0np0"};
  RdmaDeviceInfo d1;
  d1.name = "mlx5_1";
  d1.netdevs = {"ib0"};
  RdmaDeviceInfo d2;
  d2.name = "mlx5_2";
  d2.netdevs = {"ib1"};
  auto map = MapNetdevsToRdma({p1, ib1, ib2, single}, {d0, d1, d2});
  EXPECT_THAT(map, UnorderedElementsAre(
                       Pair("ens1f0np0", Pair("mlx5_0", 1u)),
                       Pair("ib0", Pair("mlx5_1", 0u)),  // port unknown
                       Pair("ib1", Pair("mlx5_2", 1u))));
}

}  // namespace
}  // namespace fabricdiag::agent
