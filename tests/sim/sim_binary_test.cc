// The fabricdiag-sim process, run for real.
#include <filesystem>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/sim/sim_test_util.h"
#include "tests/testing/subprocess.h"

namespace fabricdiag::sim {
namespace {

using ::fabricdiag::testing::RunCommand;
using ::testing::HasSubstr;

TEST(SimBinaryTest, TicksWriteATreeAndExitZero) {
  testing::TempDir dir;
  const std::string layout = dir.Write("layout.yaml", testing::kMoeLayout);
  const std::string topology = dir.Write("topology.yaml", testing::kTwoLeaves);
  const std::string scenario = dir.Write(
      "scenario.yaml",
      "faults: [{kind: link_flap, switch: leaf-0, port: swp2, start: 1}]");
  auto r = RunCommand({FABRICDIAG_SIM_BINARY, "--layout=" + layout,
                       "--topology=" + topology, "--scenario=" + scenario,
                       "--out=" + dir.path() + "/out", "--ticks=2"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "t=1s link_flap leaf-0 swp2 starts\n");
  const std::string base = dir.path() + "/out/";
  EXPECT_TRUE(std::filesystem::exists(
      base +
      "gpu-003/sys/class/infiniband/mlx5_2/ports/1/counters/"
      "port_rcv_data"));
  EXPECT_TRUE(std::filesystem::is_directory(
      base + "gpu-003/sys/class/infiniband/mlx5_2/device/net/eth2"));
  EXPECT_EQ(testing::ReadText(base + "gpu-003/sys/class/infiniband/mlx5_2/"
                                     "ports/1/gid_attrs/ndevs/0"),
            "eth2\n");
  EXPECT_EQ(testing::ReadText(base + "gpu-003/sys/class/infiniband/mlx5_2/"
                                     "ports/1/rate"),
            "400 Gb/sec (4X NDR)\n");
  EXPECT_THAT(testing::ReadText(base + "leaf-0/ethtool/swp49"),
              HasSubstr("NIC statistics:\n     rx_bytes_phy: "));
  EXPECT_EQ(testing::ReadText(base + "leaf-0/sys/class/net/swp2/operstate"),
            "down\n");
}

TEST(SimBinaryTest, BadScenarioExitsTwoNamingTheField) {
  testing::TempDir dir;
  const std::string layout = dir.Write("layout.yaml", testing::kMoeLayout);
  const std::string scenario = dir.Write(
      "bad.yaml",
      "faults: [{kind: hot_expert, node: gpu-003, nic: mlx5_2, start: 9, "
      "end: 4}]");
  auto r = RunCommand({FABRICDIAG_SIM_BINARY, "--layout=" + layout,
                       "--scenario=" + scenario, "--out=" + dir.path() + "/out",
                       "--ticks=1"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("bad.yaml: faults[0].end: must be after start"));
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/out"));
}

TEST(SimBinaryTest, BadLayoutAndFlagsExitTwo) {
  testing::TempDir dir;
  const std::string layout =
      dir.Write("layout.yaml", "job: j\ngpus_per_node: 8\nparallelism: {}\n");
  auto r = RunCommand({FABRICDIAG_SIM_BINARY, "--layout=" + layout,
                       "--out=" + dir.path() + "/out", "--ticks=1"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("layout.yaml: parallelism"));

  r = RunCommand({FABRICDIAG_SIM_BINARY, "--layout=" + layout});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--out"));

  r = RunCommand({FABRICDIAG_SIM_BINARY, "--layout=/nonexistent.yaml",
                  "--out=" + dir.path() + "/out"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("/nonexistent.yaml"));
}

// The load-test mode: the streaming itself is covered by the virtual agents
// test; here, that the mode is reachable and fails clearly.
TEST(SimBinaryTest, VirtualAgentsNameTheCollectorThatDidNotAnswer) {
  // Port 1 on loopback: nothing listens there.
  auto r = RunCommand({FABRICDIAG_SIM_BINARY, "--virtual_agents=3",
                       "--collector=127.0.0.1:1", "--duration=1s"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_THAT(r.err, HasSubstr("127.0.0.1:1 acknowledged no report"));

  r = RunCommand({FABRICDIAG_SIM_BINARY, "--virtual_agents=-4"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--virtual_agents"));
}

}  // namespace
}  // namespace fabricdiag::sim
