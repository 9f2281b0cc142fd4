// The real fabricdiag-agent binary on the fake PCI trees of
// tests/fixtures/pci: the pairing in the --once JSON.
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/agent/pci_fake_tree.h"
#include "tests/testing/fake_sysfs.h"
#include "tests/testing/subprocess.h"

namespace fabricdiag::agent {
namespace {

using ::fabricdiag::testing::RunCommand;
using ::fabricdiag::testing::RunResult;

const std::string kAgent = FABRICDIAG_AGENT_BINARY;

// The --once JSON of the agent on the tree `fixture` describes.
nlohmann::json Once(const std::string& fixture) {
  ScopedTempDir tree;
  ScopedTempDir ethtool;  // no ethtool statistics: no ioctl on this host
  EXPECT_TRUE(BuildPciTreeFromFixture(tree.path(), fixture).ok());
  RunResult r = RunCommand({kAgent, "--once", "--node=gpu-000",
                            "--sysfs_root=" + tree.path(),
                            "--ethtool_dir=" + ethtool.path()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return nlohmann::json::parse(r.out, nullptr, /*allow_exceptions=*/false);
}

nlohmann::json GpuNicSource(const nlohmann::json& snap) {
  for (const auto& s : snap["sources"]) {
    if (s["source"] == "gpu_nic") return s;
  }
  return nullptr;
}

TEST(GpuNicAgentTest, OnceOnADgxH100TreeListsEveryGpusNic) {
  const nlohmann::json snap = Once("dgx-h100.txt");
  ASSERT_TRUE(snap.is_object());
  ASSERT_EQ(snap["gpu_nics"].size(), 8U) << snap["gpu_nics"].dump();
  const char* const want[][3] = {
      {"0000:1b:00.0", "mlx5_0", "ibp24s0"},
      {"0000:43:00.0", "mlx5_3", "ibp64s0"},
      {"0000:52:00.0", "mlx5_4", "ibp79s0"},
      {"0000:61:00.0", "mlx5_5", "ibp94s0"},
      {"0000:9d:00.0", "mlx5_6", "ibp154s0"},
      {"0000:c3:00.0", "mlx5_9", "ibp192s0"},
      {"0000:d1:00.0", "mlx5_10", "ibp206s0"},
      {"0000:df:00.0", "mlx5_11", "ibp220s0"},
  };
  for (int i = 0; i < 8; ++i) {
    const nlohmann::json& p = snap["gpu_nics"][i];
    EXPECT_EQ(p["gpu"], i);
    EXPECT_EQ(p["pci"], want[i][0]);
    EXPECT_EQ(p["device"], want[i][1]);
    EXPECT_EQ(p["netdev"], want[i][2]);
    EXPECT_EQ(p["distance"], "pcie_switch");
  }
  const nlohmann::json source = GpuNicSource(snap);
  ASSERT_TRUE(source.is_object());
  EXPECT_EQ(source["ok"], true) << source.dump();
}

TEST(GpuNicAgentTest, OnceOnAHostWithoutGpusHasNoPairsAndNoError) {
  const nlohmann::json snap = Once("no-gpu.txt");
  ASSERT_TRUE(snap.is_object());
  EXPECT_EQ(snap["gpu_nics"], nlohmann::json::array());
  const nlohmann::json source = GpuNicSource(snap);
  ASSERT_TRUE(source.is_object());
  EXPECT_EQ(source["ok"], true) << source.dump();
  EXPECT_EQ(source["errors"], 0);
}

TEST(GpuNicAgentTest, OnceOnGarbageReportsTheErrorsAndStillPairs) {
  const nlohmann::json snap = Once("garbage.txt");
  ASSERT_TRUE(snap.is_object());
  EXPECT_EQ(snap["gpu_nics"].size(), 2U);
  const nlohmann::json source = GpuNicSource(snap);
  ASSERT_TRUE(source.is_object());
  EXPECT_EQ(source["ok"], false);
  EXPECT_EQ(source["errors"], 3);
  EXPECT_TRUE(source.contains("last_error"));
}

}  // namespace
}  // namespace fabricdiag::agent
