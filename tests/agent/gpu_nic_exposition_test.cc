// The GPU to NIC pairing on /metrics and in the --once JSON.
#include <string>

#include "agent/exposition.h"
#include "agent/gpu_nic_pairing.h"
#include "agent/sample.h"
#include "agent/snapshot_json.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace fabricdiag::agent {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

GpuNicPair Pair(int gpu, const std::string& pci, const std::string& device,
                const std::string& netdev, PcieDistance distance) {
  GpuNicPair p;
  p.gpu = gpu;
  p.gpu_pci = pci;
  p.device = device;
  p.netdev = netdev;
  p.distance = distance;
  return p;
}

Snapshot TwoGpus() {
  Snapshot snap;
  snap.gpu_nics = {
      Pair(0, "0000:1b:00.0", "mlx5_0", "ibp24s0", PcieDistance::kPcieSwitch),
      Pair(1, "0000:9d:00.0", "", "", PcieDistance::kNone)};
  return snap;
}

TEST(GpuNicExpositionTest, InfoFamilyWithHelp) {
  ExpositionRenderer renderer;
  std::string text;
  renderer.Render(TwoGpus(), AgentHealth{}, &text);
  EXPECT_THAT(text, HasSubstr("# HELP fabricdiag_gpu_nic_info Each GPU"));
  EXPECT_THAT(text, HasSubstr("# TYPE fabricdiag_gpu_nic_info gauge\n"));
  EXPECT_THAT(text, HasSubstr("fabricdiag_gpu_nic_info{gpu=\"0\",pci=\"0000:"
                              "1b:00.0\",device=\"mlx5_0\",netdev=\"ibp24s0\","
                              "distance=\"pcie_switch\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("fabricdiag_gpu_nic_info{gpu=\"1\",pci=\"0000:"
                              "9d:00.0\",device=\"\",netdev=\"\",distance="
                              "\"none\"} 1\n"));
}

TEST(GpuNicExpositionTest, NoGpuNoFamily) {
  ExpositionRenderer renderer;
  std::string text;
  renderer.Render(Snapshot{}, AgentHealth{}, &text);
  EXPECT_THAT(text, Not(HasSubstr("fabricdiag_gpu_nic_info")));
}

TEST(GpuNicExpositionTest, ChangedPairingIsRenderedAfresh) {
  // The prepared text is reused while the labels stay the same; a rescan
  // that changes the pairing must show.
  ExpositionRenderer renderer;
  std::string text;
  Snapshot snap = TwoGpus();
  renderer.Render(snap, AgentHealth{}, &text);
  snap.gpu_nics[1].device = "mlx5_6";
  snap.gpu_nics[1].distance = PcieDistance::kNuma;
  renderer.Render(snap, AgentHealth{}, &text);
  EXPECT_THAT(text, HasSubstr("device=\"mlx5_6\",netdev=\"\",distance="
                              "\"numa\"} 1\n"));
  EXPECT_THAT(text, Not(HasSubstr("distance=\"none\"")));
  snap.gpu_nics.clear();
  renderer.Render(snap, AgentHealth{}, &text);
  EXPECT_THAT(text, Not(HasSubstr("fabricdiag_gpu_nic_info")));
}

TEST(GpuNicJsonTest, OnceJsonListsThePairs) {
  const nlohmann::json j =
      nlohmann::json::parse(SnapshotToJson(TwoGpus(), "gpu-000"));
  ASSERT_TRUE(j.contains("gpu_nics"));
  ASSERT_EQ(j["gpu_nics"].size(), 2U);
  EXPECT_EQ(j["gpu_nics"][0], nlohmann::json({{"gpu", 0},
                                              {"pci", "0000:1b:00.0"},
                                              {"device", "mlx5_0"},
                                              {"netdev", "ibp24s0"},
                                              {"distance", "pcie_switch"}}));
  EXPECT_EQ(j["gpu_nics"][1]["device"], "");
  EXPECT_EQ(j["gpu_nics"][1]["distance"], "none");
  const nlohmann::json none =
      nlohmann::json::parse(SnapshotToJson(Snapshot{}, "gpu-000"));
  EXPECT_EQ(none["gpu_nics"], nlohmann::json::array());
}

}  // namespace
}  // namespace fabricdiag::agent
