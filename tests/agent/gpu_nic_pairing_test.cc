#include "agent/gpu_nic_pairing.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace fabricdiag::agent {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

constexpr uint32_t k3d = 0x030200;
constexpr uint32_t kVga = 0x030000;
constexpr uint32_t kAccel = 0x120000;
constexpr uint32_t kIb = 0x020700;
constexpr uint32_t kEth = 0x020000;
constexpr uint32_t kBridge = 0x060400;
constexpr uint32_t kNvidia = 0x10de;
constexpr uint32_t kAmd = 0x1002;
constexpr uint32_t kMellanox = 0x15b3;

// The function at `path` (its address is the last component).
PciFunction Fn(const std::string& path, uint32_t pci_class, uint32_t vendor,
               int numa) {
  PciFunction f;
  f.path = path;
  f.address = path.substr(path.rfind('/') + 1);
  f.pci_class = pci_class;
  f.vendor = vendor;
  f.numa_node = numa;
  return f;
}

GpuNicPair Pair(int gpu, const std::string& pci, const std::string& device,
                PcieDistance distance, const std::string& netdev = "") {
  GpuNicPair p;
  p.gpu = gpu;
  p.gpu_pci = pci;
  p.device = device;
  p.netdev = netdev;
  p.distance = distance;
  return p;
}

TEST(IsGpuTest, ClassesAndVendors) {
  struct Case {
    uint32_t pci_class;
    uint32_t vendor;
    bool gpu;
  };
  const Case cases[] = {
      {k3d, kNvidia, true},        // H100, A100
      {kVga, kNvidia, true},       // workstation GPUs
      {0x030201, kNvidia, true},   // prog-if ignored
      {0x038000, kAmd, true},      // MI200 display controller
      {kAccel, kAmd, true},        // MI300X processing accelerator
      {kVga, 0x1a03, false},       // the BMC's ASPEED VGA
      {0x068000, kNvidia, false},  // NVSwitch (bridge, other)
      {kIb, kMellanox, false},     // ConnectX
      {kBridge, kNvidia, false},   // a bridge of NVIDIA's
      {0x040300, kNvidia, false},  // the GPU's HDMI audio function
      {0, 0, false},
  };
  for (const Case& c : cases) {
    PciFunction f;
    f.pci_class = c.pci_class;
    f.vendor = c.vendor;
    EXPECT_EQ(IsGpu(f), c.gpu) << std::hex << c.pci_class << " " << c.vendor;
  }
}

TEST(PcieDistanceNameTest, LabelValues) {
  EXPECT_EQ(PcieDistanceName(PcieDistance::kPcieSwitch), "pcie_switch");
  EXPECT_EQ(PcieDistanceName(PcieDistance::kRootPort), "root_port");
  EXPECT_EQ(PcieDistanceName(PcieDistance::kNuma), "numa");
  EXPECT_EQ(PcieDistanceName(PcieDistance::kNone), "none");
}

TEST(PairGpusWithNicsTest, NoGpuNoPairs) {
  const std::vector<PciFunction> fns = {
      Fn("pci0000:00/0000:00:01.0/0000:17:00.0", kEth, kMellanox, 0)};
  EXPECT_THAT(PairGpusWithNics(fns, {{"mlx5_0", "0000:17:00.0", "eth0"}}),
              IsEmpty());
  EXPECT_THAT(PairGpusWithNics({}, {}), IsEmpty());
}

TEST(PairGpusWithNicsTest, SameSwitchBeatsNearerAddress) {
  // GPU 0 shares a switch with mlx5_1, GPU 1 with mlx5_0: the switch, not
  // the order of the names or addresses, decides.
  const std::vector<PciFunction> fns = {
      Fn("pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:00.0/0000:03:00.0", k3d,
         kNvidia, 0),
      Fn("pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:01.0/0000:04:00.0", kIb,
         kMellanox, 0),
      Fn("pci0000:00/0000:00:02.0/0000:11:00.0/0000:12:00.0/0000:13:00.0", k3d,
         kNvidia, 0),
      Fn("pci0000:00/0000:00:02.0/0000:11:00.0/0000:12:01.0/0000:14:00.0", kIb,
         kMellanox, 0),
  };
  const std::vector<RdmaNicPci> nics = {{"mlx5_0", "0000:14:00.0", "ibp20s0"},
                                        {"mlx5_1", "0000:04:00.0", "ibp4s0"}};
  EXPECT_THAT(PairGpusWithNics(fns, nics),
              ElementsAre(Pair(0, "0000:03:00.0", "mlx5_1",
                               PcieDistance::kPcieSwitch, "ibp4s0"),
                          Pair(1, "0000:13:00.0", "mlx5_0",
                               PcieDistance::kPcieSwitch, "ibp20s0")));
}

TEST(PairGpusWithNicsTest, NearestSwitchOfACascadeWins) {
  // Both NICs are below the root port's switch; mlx5_1 also shares the
  // second-level switch with the GPU.
  const std::string sw = "pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:00.0";
  const std::vector<PciFunction> fns = {
      Fn(sw + "/0000:03:00.0/0000:04:00.0/0000:05:00.0", k3d, kNvidia, 0),
      Fn(sw + "/0000:03:00.0/0000:04:01.0/0000:06:00.0", kIb, kMellanox, 0),
      Fn("pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:01.0/0000:07:00.0", kIb,
         kMellanox, 0),
  };
  EXPECT_THAT(PairGpusWithNics(fns, {{"mlx5_0", "0000:07:00.0", ""},
                                     {"mlx5_1", "0000:06:00.0", ""}}),
              ElementsAre(Pair(0, "0000:05:00.0", "mlx5_1",
                               PcieDistance::kPcieSwitch)));
}

TEST(PairGpusWithNicsTest, DistanceLevels) {
  const std::string gpu =
      "pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:00.0/0000:03:00.0";
  struct Case {
    std::string nic_path;
    int gpu_numa;
    int nic_numa;
    PcieDistance want;
  };
  const Case cases[] = {
      // Below the same switch.
      {"pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:01.0/0000:04:00.0", 0, 0,
       PcieDistance::kPcieSwitch},
      // Another function of the root port's only device (no switch shared).
      {"pci0000:00/0000:00:01.0/0000:04:00.0", 0, 0, PcieDistance::kRootPort},
      // Another root port of the same host bridge.
      {"pci0000:00/0000:00:02.0/0000:04:00.0", 0, 1, PcieDistance::kNuma},
      // Another host bridge on the same NUMA node.
      {"pci0000:20/0000:20:01.0/0000:21:00.0", 0, 0, PcieDistance::kNuma},
      // The other socket.
      {"pci0000:80/0000:80:01.0/0000:81:00.0", 0, 1, PcieDistance::kNone},
      // Unknown NUMA nodes (-1) never match.
      {"pci0000:80/0000:80:01.0/0000:81:00.0", -1, -1, PcieDistance::kNone},
      // A switch is a switch whatever numa_node says.
      {"pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:01.0/0000:04:00.0", -1, -1,
       PcieDistance::kPcieSwitch},
  };
  for (const Case& c : cases) {
    const std::vector<PciFunction> fns = {
        Fn(gpu, k3d, kNvidia, c.gpu_numa),
        Fn(c.nic_path, kIb, kMellanox, c.nic_numa)};
    const std::string nic_pci = fns[1].address;
    const std::string want_device =
        c.want == PcieDistance::kNone ? "" : "mlx5_0";
    EXPECT_THAT(PairGpusWithNics(fns, {{"mlx5_0", nic_pci, ""}}),
                ElementsAre(Pair(0, "0000:03:00.0", want_device, c.want)))
        << c.nic_path << " numa " << c.gpu_numa << "/" << c.nic_numa;
  }
}

TEST(PairGpusWithNicsTest, TwoGpusShareTheirSwitchsNic) {
  const std::string sw0 = "pci0000:00/0000:00:01.0/0000:01:00.0";
  const std::string sw1 = "pci0000:00/0000:00:02.0/0000:11:00.0";
  const std::vector<PciFunction> fns = {
      Fn(sw0 + "/0000:02:00.0/0000:03:00.0", k3d, kNvidia, 0),
      Fn(sw0 + "/0000:02:01.0/0000:04:00.0", k3d, kNvidia, 0),
      Fn(sw0 + "/0000:02:02.0/0000:05:00.0", kIb, kMellanox, 0),
      Fn(sw1 + "/0000:12:00.0/0000:13:00.0", k3d, kNvidia, 0),
      Fn(sw1 + "/0000:12:01.0/0000:14:00.0", k3d, kNvidia, 0),
      Fn(sw1 + "/0000:12:02.0/0000:15:00.0", kIb, kMellanox, 0),
  };
  EXPECT_THAT(
      PairGpusWithNics(fns, {{"mlx5_0", "0000:05:00.0", ""},
                             {"mlx5_1", "0000:15:00.0", ""}}),
      ElementsAre(
          Pair(0, "0000:03:00.0", "mlx5_0", PcieDistance::kPcieSwitch),
          Pair(1, "0000:04:00.0", "mlx5_0", PcieDistance::kPcieSwitch),
          Pair(2, "0000:13:00.0", "mlx5_1", PcieDistance::kPcieSwitch),
          Pair(3, "0000:14:00.0", "mlx5_1", PcieDistance::kPcieSwitch)));
}

TEST(PairGpusWithNicsTest, EquallyNearNicsAreSpreadLowestAddressFirst) {
  // Two GPUs and a dual-port NIC (two functions) below one switch; listed
  // in reverse to show the input order does not matter.
  const std::string sw = "pci0000:00/0000:00:01.0/0000:01:00.0";
  const std::vector<PciFunction> fns = {
      Fn(sw + "/0000:02:01.0/0000:04:00.0", k3d, kNvidia, 0),
      Fn(sw + "/0000:02:00.0/0000:03:00.0", k3d, kNvidia, 0),
      Fn(sw + "/0000:02:02.0/0000:05:00.1", kIb, kMellanox, 0),
      Fn(sw + "/0000:02:02.0/0000:05:00.0", kIb, kMellanox, 0),
  };
  const std::vector<RdmaNicPci> nics = {{"mlx5_1", "0000:05:00.1", ""},
                                        {"mlx5_0", "0000:05:00.0", ""}};
  EXPECT_THAT(
      PairGpusWithNics(fns, nics),
      ElementsAre(
          Pair(0, "0000:03:00.0", "mlx5_0", PcieDistance::kPcieSwitch),
          Pair(1, "0000:04:00.0", "mlx5_1", PcieDistance::kPcieSwitch)));
  // Three GPUs on two NICs: the third goes back to the lowest address.
  std::vector<PciFunction> three = fns;
  three.push_back(Fn(sw + "/0000:02:03.0/0000:06:00.0", k3d, kNvidia, 0));
  const std::vector<GpuNicPair> pairs = PairGpusWithNics(three, nics);
  ASSERT_EQ(pairs.size(), 3U);
  EXPECT_EQ(pairs[2].device, "mlx5_0");
}

TEST(PairGpusWithNicsTest, NoNearNicGivesNone) {
  // One NIC on socket 0, GPUs on both sockets: the socket-1 GPU has none.
  const std::vector<PciFunction> fns = {
      Fn("pci0000:00/0000:00:01.0/0000:01:00.0", k3d, kNvidia, 0),
      Fn("pci0000:00/0000:00:02.0/0000:02:00.0", kIb, kMellanox, 0),
      Fn("pci0000:80/0000:80:01.0/0000:81:00.0", k3d, kNvidia, 1),
  };
  EXPECT_THAT(PairGpusWithNics(fns, {{"mlx5_0", "0000:02:00.0", "ibp2s0"}}),
              ElementsAre(Pair(0, "0000:01:00.0", "mlx5_0", PcieDistance::kNuma,
                               "ibp2s0"),
                          Pair(1, "0000:81:00.0", "", PcieDistance::kNone)));
  // No NIC at all: every GPU is listed, with none.
  EXPECT_THAT(PairGpusWithNics(fns, {}),
              ElementsAre(Pair(0, "0000:01:00.0", "", PcieDistance::kNone),
                          Pair(1, "0000:81:00.0", "", PcieDistance::kNone)));
}

TEST(PairGpusWithNicsTest, NicWithoutPciFunctionIsIgnored) {
  const std::vector<PciFunction> fns = {
      Fn("pci0000:00/0000:00:01.0/0000:01:00.0", k3d, kNvidia, 0)};
  EXPECT_THAT(PairGpusWithNics(
                  fns, {{"rxe0", "", "eth0"}, {"mlx5_0", "0000:99:00.0", ""}}),
              ElementsAre(Pair(0, "0000:01:00.0", "", PcieDistance::kNone)));
}

TEST(PairGpusWithNicsTest, GpusNumberedByPciAddressAmdToo) {
  const std::vector<PciFunction> fns = {
      Fn("pci0000:00/0000:00:03.0/0000:9d:00.0", kAccel, kAmd, 1),
      Fn("pci0000:00/0000:00:01.0/0000:1b:00.0", kAccel, kAmd, 0),
      Fn("pci0000:00/0000:00:02.0/0000:43:00.0", kAccel, kAmd, 0),
      // Not GPUs: the BMC's VGA, an NVSwitch.
      Fn("pci0000:00/0000:00:04.0/0000:05:00.0", kVga, 0x1a03, 0),
      Fn("pci0000:00/0000:00:05.0/0000:06:00.0", 0x068000, kNvidia, 0),
  };
  const std::vector<GpuNicPair> pairs = PairGpusWithNics(fns, {});
  ASSERT_EQ(pairs.size(), 3U);
  EXPECT_EQ(pairs[0].gpu_pci, "0000:1b:00.0");
  EXPECT_EQ(pairs[1].gpu_pci, "0000:43:00.0");
  EXPECT_EQ(pairs[2].gpu_pci, "0000:9d:00.0");
  EXPECT_EQ(pairs[2].gpu, 2);
}

TEST(GpuNicPairTest, Equality) {
  const GpuNicPair a =
      Pair(0, "0000:1b:00.0", "mlx5_0", PcieDistance::kPcieSwitch);
  GpuNicPair b = a;
  EXPECT_EQ(a, b);
  b.netdev = "ibp24s0";
  EXPECT_NE(a, b);
  b = a;
  b.distance = PcieDistance::kNuma;
  EXPECT_NE(a, b);
}

}  // namespace
}  // namespace fabricdiag::agent
