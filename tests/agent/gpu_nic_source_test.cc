// The sysfs walk and the GpuNicSource on the fake trees of
// tests/fixtures/pci (built by tests/agent/pci_fake_tree.h).
#include "agent/gpu_nic_source.h"

#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "agent/gpu_nic_pairing.h"
#include "agent/pci_sysfs.h"
#include "agent/sysfs_reader.h"
#include "common/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/agent/pci_fake_tree.h"
#include "tests/testing/fake_sysfs.h"

namespace fabricdiag::agent {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Optional;
using ::testing::SizeIs;

struct Want {
  std::string gpu_pci;
  std::string device;
  std::string netdev;
  PcieDistance distance;
};

std::vector<GpuNicPair> Pairs(const std::vector<Want>& want) {
  std::vector<GpuNicPair> out;
  for (size_t i = 0; i < want.size(); ++i) {
    GpuNicPair p;
    p.gpu = static_cast<int>(i);
    p.gpu_pci = want[i].gpu_pci;
    p.device = want[i].device;
    p.netdev = want[i].netdev;
    p.distance = want[i].distance;
    out.push_back(p);
  }
  return out;
}

constexpr PcieDistance kSwitch = PcieDistance::kPcieSwitch;

TEST(ParsePciHexTest, Table) {
  EXPECT_THAT(ParsePciHex("0x030200\n"), Optional(0x030200U));
  EXPECT_THAT(ParsePciHex("0x10de"), Optional(0x10deU));
  EXPECT_THAT(ParsePciHex("0xffffffff\n"), Optional(0xffffffffU));
  for (const char* junk : {"", "\n", "0x", "030200", "0x03g200", "0x123456789",
                           "-0x1", "0x 12", "class?"}) {
    EXPECT_EQ(ParsePciHex(junk), std::nullopt) << junk;
  }
}

TEST(ParseNumaNodeTest, Table) {
  EXPECT_THAT(ParseNumaNode("0\n"), Optional(0));
  EXPECT_THAT(ParseNumaNode("-1\n"), Optional(-1));
  EXPECT_THAT(ParseNumaNode("7"), Optional(7));
  for (const char* junk : {"", "\n", "-2", "junk-numa", "1.5", "0x1"}) {
    EXPECT_EQ(ParseNumaNode(junk), std::nullopt) << junk;
  }
}

TEST(SysfsReaderRealPathTest, ResolvesInsideTheRoot) {
  ScopedTempDir dir;
  FakeSysfs fs(dir.path());
  ASSERT_TRUE(fs.MakeDir("devices/pci0000:00/0000:00:01.0").ok());
  ASSERT_TRUE(fs.Symlink("../../../devices/pci0000:00/0000:00:01.0",
                         "bus/pci/devices/0000:00:01.0")
                  .ok());
  ASSERT_TRUE(fs.Symlink("../../../devices/pci0000:00/gone",
                         "bus/pci/devices/0000:00:02.0")
                  .ok());
  // An absolute link is resolved inside the root (RESOLVE_IN_ROOT).
  ASSERT_TRUE(
      fs.Symlink("/devices/pci0000:00", "bus/pci/devices/absolute").ok());
  SysfsReader reader(dir.path());
  EXPECT_EQ(reader.RealPath("bus/pci/devices/0000:00:01.0").value_or("?"),
            "devices/pci0000:00/0000:00:01.0");
  EXPECT_EQ(reader.RealPath("bus/pci/devices/absolute").value_or("?"),
            "devices/pci0000:00");
  EXPECT_EQ(reader.RealPath("").value_or("?"), "");
  absl::StatusOr<std::string> dangling =
      reader.RealPath("bus/pci/devices/0000:00:02.0");
  ASSERT_FALSE(dangling.ok());
  EXPECT_TRUE(absl::IsNotFound(dangling.status()));
  EXPECT_THAT(dangling.status().message(), HasSubstr("0000:00:02.0"));
  EXPECT_TRUE(absl::IsInvalidArgument(reader.RealPath("../etc").status()));
  EXPECT_TRUE(absl::IsNotFound(
      SysfsReader(dir.path() + "/missing").RealPath("bus").status()));
}

TEST(ScanPciTest, DgxH100TreeFindsFunctionsAndNics) {
  ScopedTempDir dir;
  ASSERT_TRUE(BuildPciTreeFromFixture(dir.path(), "dgx-h100.txt").ok());
  SysfsReader reader(dir.path());
  PciScan scan = ScanPci(&reader);
  EXPECT_THAT(scan.errors, IsEmpty());
  ASSERT_THAT(scan.nics, SizeIs(12));
  EXPECT_EQ(scan.nics[0].device, "mlx5_0");
  EXPECT_EQ(scan.nics[0].pci_address, "0000:18:00.0");
  EXPECT_EQ(scan.nics[0].netdev, "ibp24s0");
  bool found = false;
  for (const PciFunction& f : scan.functions) {
    if (f.address != "0000:1b:00.0") continue;
    found = true;
    EXPECT_EQ(f.path,
              "pci0000:15/0000:15:01.0/0000:16:00.0/0000:17:03.0/"
              "0000:1b:00.0");
    EXPECT_EQ(f.pci_class, 0x030200U);
    EXPECT_EQ(f.vendor, 0x10deU);
    EXPECT_EQ(f.numa_node, 0);
  }
  EXPECT_TRUE(found);
}

TEST(GpuNicSourceTest, DgxH100EachGpuGetsTheNicOnItsSwitch) {
  ScopedTempDir dir;
  ASSERT_TRUE(BuildPciTreeFromFixture(dir.path(), "dgx-h100.txt").ok());
  SysfsReader reader(dir.path());
  FakeClock clock;
  GpuNicSource source(&reader, clock);
  Snapshot snap;
  const SourceStatus status = source.Collect(&snap);
  EXPECT_TRUE(status.ok) << status.last_error;
  EXPECT_EQ(status.source, "gpu_nic");
  EXPECT_TRUE(snap.gpus_read);
  EXPECT_EQ(snap.gpu_nics,
            Pairs({{"0000:1b:00.0", "mlx5_0", "ibp24s0", kSwitch},
                   {"0000:43:00.0", "mlx5_3", "ibp64s0", kSwitch},
                   {"0000:52:00.0", "mlx5_4", "ibp79s0", kSwitch},
                   {"0000:61:00.0", "mlx5_5", "ibp94s0", kSwitch},
                   {"0000:9d:00.0", "mlx5_6", "ibp154s0", kSwitch},
                   {"0000:c3:00.0", "mlx5_9", "ibp192s0", kSwitch},
                   {"0000:d1:00.0", "mlx5_10", "ibp206s0", kSwitch},
                   {"0000:df:00.0", "mlx5_11", "ibp220s0", kSwitch}}));
}

TEST(GpuNicSourceTest, Mi300xEachGpuGetsTheNicOnItsSwitch) {
  ScopedTempDir dir;
  ASSERT_TRUE(BuildPciTreeFromFixture(dir.path(), "mi300x.txt").ok());
  SysfsReader reader(dir.path());
  FakeClock clock;
  GpuNicSource source(&reader, clock);
  Snapshot snap;
  EXPECT_TRUE(source.Collect(&snap).ok);
  std::vector<Want> want;
  int i = 0;
  for (const char* bus : {"00", "20", "40", "60", "80", "a0", "c0", "e0"}) {
    const int hb = std::stoi(bus, nullptr, 16);
    char gpu[16];
    std::snprintf(gpu, sizeof(gpu), "0000:%02x:00.0", hb + 5);
    want.push_back({gpu, absl::StrCat("mlx5_", i++),
                    absl::StrCat("ibp", hb + 6, "s0"), kSwitch});
  }
  EXPECT_EQ(snap.gpu_nics, Pairs(want));
}

TEST(GpuNicSourceTest, TwoGpusPerSwitchShareItsNic) {
  ScopedTempDir dir;
  ASSERT_TRUE(BuildPciTreeFromFixture(dir.path(), "shared-nic.txt").ok());
  SysfsReader reader(dir.path());
  FakeClock clock;
  GpuNicSource source(&reader, clock);
  Snapshot snap;
  EXPECT_TRUE(source.Collect(&snap).ok);
  EXPECT_EQ(snap.gpu_nics,
            Pairs({{"0000:0e:00.0", "mlx5_0", "ibp16s0", kSwitch},
                   {"0000:0f:00.0", "mlx5_0", "ibp16s0", kSwitch},
                   {"0000:44:00.0", "mlx5_1", "ibp70s0", kSwitch},
                   {"0000:45:00.0", "mlx5_1", "ibp70s0", kSwitch},
                   {"0000:88:00.0", "mlx5_2", "ibp138s0", kSwitch},
                   {"0000:89:00.0", "mlx5_2", "ibp138s0", kSwitch},
                   {"0000:c0:00.0", "mlx5_3", "ibp194s0", kSwitch},
                   {"0000:c1:00.0", "mlx5_3", "ibp194s0", kSwitch}}));
}

TEST(GpuNicSourceTest, HostWithoutGpuHasNoPairsAndNoError) {
  ScopedTempDir dir;
  ASSERT_TRUE(BuildPciTreeFromFixture(dir.path(), "no-gpu.txt").ok());
  SysfsReader reader(dir.path());
  FakeClock clock;
  GpuNicSource source(&reader, clock);
  Snapshot snap;
  const SourceStatus status = source.Collect(&snap);
  EXPECT_TRUE(status.ok) << status.last_error;
  EXPECT_EQ(status.errors, 0);
  EXPECT_TRUE(snap.gpus_read);  // read: there are none
  EXPECT_THAT(snap.gpu_nics, IsEmpty());
}

TEST(GpuNicSourceTest, EmptyOrMissingRootIsNoError) {
  ScopedTempDir dir;
  FakeClock clock;
  for (const std::string& root : {dir.path(), dir.path() + "/missing"}) {
    SysfsReader reader(root);
    GpuNicSource source(&reader, clock);
    Snapshot snap;
    const SourceStatus status = source.Collect(&snap);
    EXPECT_TRUE(status.ok) << root << ": " << status.last_error;
    EXPECT_THAT(snap.gpu_nics, IsEmpty());
  }
}

TEST(GpuNicSourceTest, GarbageIsCountedNeverFatal) {
  ScopedTempDir dir;
  ASSERT_TRUE(BuildPciTreeFromFixture(dir.path(), "garbage.txt").ok());
  FakeSysfs fs(dir.path());
  ASSERT_TRUE(fs.Symlink("../../../devices/pci0000:ee/0000:ee:00.0",
                         "bus/pci/devices/0000:ee:00.0")
                  .ok());
  // An RDMA device whose parent link dangles: its address is not a known
  // function, so it cannot be placed.
  ASSERT_TRUE(fs.MakeDir("devices/virtual/infiniband/mlx5_9").ok());
  ASSERT_TRUE(fs.Symlink("../../../pci0000:ee/0000:ef:00.0",
                         "devices/virtual/infiniband/mlx5_9/device")
                  .ok());
  ASSERT_TRUE(fs.Symlink("../../devices/virtual/infiniband/mlx5_9",
                         "class/infiniband/mlx5_9")
                  .ok());
  // A software RDMA device without a parent: ignored, no error.
  ASSERT_TRUE(fs.MakeDir("devices/virtual/infiniband/rxe0").ok());
  ASSERT_TRUE(fs.Symlink("../../devices/virtual/infiniband/rxe0",
                         "class/infiniband/rxe0")
                  .ok());
  SysfsReader reader(dir.path());
  PciScan scan = ScanPci(&reader);
  EXPECT_THAT(
      scan.errors,
      ::testing::UnorderedElementsAre(
          HasSubstr("bus/pci/devices/0000:ee:00.0"),
          HasSubstr("bus/pci/devices/0000:81:00.0/numa_node: not a NUMA node"),
          HasSubstr("bus/pci/devices/0000:82:00.0/class: not a hex number"),
          HasSubstr("bus/pci/devices/0000:83:00.0/vendor")));

  FakeClock clock;
  GpuNicSource source(&reader, clock);
  Snapshot snap;
  const SourceStatus status = source.Collect(&snap);
  EXPECT_FALSE(status.ok);
  EXPECT_EQ(status.errors, 4);
  EXPECT_FALSE(status.last_error.empty());
  EXPECT_TRUE(snap.gpus_read);  // errors, but GPUs were paired
  // numa_node -1 does not matter below a shared switch; the GPU with a junk
  // numa_node still meets mlx5_1 on its host bridge. The junk-class and
  // vendor-less functions are not GPUs.
  EXPECT_EQ(snap.gpu_nics,
            Pairs({{"0000:03:00.0", "mlx5_0", "ibp4s0", kSwitch},
                   {"0000:81:00.0", "mlx5_1", "", PcieDistance::kNuma}}));
}

TEST(GpuNicSourceTest, AFailedWalkWithoutPairsIsNotARead) {
  ScopedTempDir dir;
  FakeSysfs fs(dir.path());
  ASSERT_TRUE(fs.Symlink("../../../devices/pci0000:ee/0000:ee:00.0",
                         "bus/pci/devices/0000:ee:00.0")
                  .ok());
  SysfsReader reader(dir.path());
  FakeClock clock;
  GpuNicSource source(&reader, clock);
  Snapshot snap;
  EXPECT_FALSE(source.Collect(&snap).ok);
  // "Could not tell", not "no GPUs": the collector keeps what it knew.
  EXPECT_FALSE(snap.gpus_read);
  EXPECT_THAT(snap.gpu_nics, IsEmpty());
}

TEST(GpuNicSourceTest, RescansOnlyAfterTheInterval) {
  ScopedTempDir dir;
  ASSERT_TRUE(BuildPciTreeFromFixture(dir.path(), "no-gpu.txt").ok());
  SysfsReader reader(dir.path());
  FakeClock clock;
  GpuNicSource source(&reader, clock);  // 60 s
  Snapshot first;
  source.Collect(&first);
  EXPECT_THAT(first.gpu_nics, IsEmpty());
  // A GPU appears (hotplug) on the NIC's root port.
  ASSERT_TRUE(BuildPciTree(dir.path(),
                           "pci0000:15/0000:15:01.0/0000:18:00.0 0x030200 "
                           "0x10de 0")
                  .ok());
  clock.Advance(absl::Seconds(59));
  Snapshot second;
  source.Collect(&second);
  EXPECT_THAT(second.gpu_nics, IsEmpty());
  EXPECT_EQ(source.scans(), 1U);
  clock.Advance(absl::Seconds(1));
  Snapshot third;
  source.Collect(&third);
  EXPECT_EQ(source.scans(), 2U);
  EXPECT_EQ(third.gpu_nics, Pairs({{"0000:18:00.0", "mlx5_0", "ens1f0np0",
                                    PcieDistance::kRootPort}}));
}

TEST(BuildPciTreeTest, RejectsBadDescriptions) {
  ScopedTempDir dir;
  EXPECT_FALSE(BuildPciTree(dir.path(), "pci0000:00/0000:00:01.0 0x0").ok());
  EXPECT_FALSE(
      BuildPciTree(dir.path(), "pci0000:00/0000:00:01.0 0x0 0x0 0 what=1")
          .ok());
  EXPECT_FALSE(BuildPciTreeFromFixture(dir.path(), "no-such.txt").ok());
}

}  // namespace
}  // namespace fabricdiag::agent
