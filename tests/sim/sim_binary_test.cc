// The fabricdiag-sim process, run for real.
#include <filesystem>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/sim/sim_test_util.h"
#include "tests/testing/http_get.h"
#include "tests/testing/subprocess.h"
#include "tests/testing/temp_dir.h"

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

  // A bad --collector list is refused before anything streams, naming the
  // entry.
  r = RunCommand({FABRICDIAG_SIM_BINARY, "--virtual_agents=3",
                  "--collector=127.0.0.1:1,,127.0.0.1:2", "--duration=1s"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr("entry 2 is empty"));
  r = RunCommand({FABRICDIAG_SIM_BINARY, "--virtual_agents=3",
                  "--collector=127.0.0.1:1,127.0.0.1:70000", "--duration=1s"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr("127.0.0.1:70000: the port must be"));

  r = RunCommand({FABRICDIAG_SIM_BINARY, "--virtual_agents=-4"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--virtual_agents"));

  for (const char* prefix : {"-x", "a b", "rack/7-"}) {
    r = RunCommand({FABRICDIAG_SIM_BINARY, "--virtual_agents=3",
                    std::string("--virtual_agent_prefix=") + prefix,
                    "--collector=127.0.0.1:1", "--duration=1s"});
    EXPECT_EQ(r.exit_code, 2) << prefix;
    EXPECT_THAT(r.err, HasSubstr("--virtual_agent_prefix: does not make "
                                 "valid node names"));
  }
}

// A collector of its own in `dir`, started; its ports once it listens.
struct TestCollector {
  explicit TestCollector(const testing::TempDir& dir)
      : process({FABRICDIAG_COLLECTOR_BINARY, "--listen=127.0.0.1:0",
                 "--http_listen=127.0.0.1:0",
                 "--state_dir=" + dir.path() + "/state"}) {
    EXPECT_TRUE(process.Start().ok());
    std::string line;
    EXPECT_TRUE(process.WaitForStderr("gRPC on port", &line));
    grpc = fabricdiag::testing::PortFromLog(line, "gRPC");
    http = fabricdiag::testing::PortFromLog(line, "HTTP");
  }
  std::string Flag() const {
    return absl::StrCat("--collector=127.0.0.1:", grpc);
  }

  fabricdiag::testing::Subprocess process;
  int grpc = 0;
  int http = 0;
};

// Agents named by --virtual_agent_prefix: the collector lists them so.
TEST(SimBinaryTest, VirtualAgentPrefixNamesTheNodes) {
  testing::TempDir dir;
  TestCollector collector(dir);
  ASSERT_GT(collector.grpc, 0);
  const int http = collector.http;
  auto r = RunCommand({FABRICDIAG_SIM_BINARY, "--virtual_agents=2",
                       "--virtual_agent_prefix=rack7-", collector.Flag(),
                       "--duration=2s"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  absl::StatusOr<std::string> metrics =
      fabricdiag::testing::HttpGet(http, "/metrics");
  ASSERT_TRUE(metrics.ok()) << metrics.status();
  EXPECT_THAT(*metrics, HasSubstr("node=\"rack7-00001\""));
  EXPECT_THAT(*metrics, ::testing::Not(HasSubstr("vnode-")));
}

// With a layout, the virtual agents are the simulated fabric's hosts, under
// their names; what they cannot be is refused before anything streams.
TEST(SimBinaryTest, VirtualAgentsOfAFabricAreItsHosts) {
  testing::TempDir dir;
  const std::string layout = dir.Write("layout.yaml", testing::kMoeLayout);
  TestCollector collector(dir);
  ASSERT_GT(collector.grpc, 0);
  const std::string target = collector.Flag();
  const int http = collector.http;
  auto r = RunCommand({FABRICDIAG_SIM_BINARY, "--virtual_agents=4",
                       "--layout=" + layout, target, "--duration=2s"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("virtual agents: 4 for"));
  absl::StatusOr<std::string> metrics =
      fabricdiag::testing::HttpGet(http, "/metrics");
  ASSERT_TRUE(metrics.ok()) << metrics.status();
  EXPECT_THAT(*metrics, HasSubstr("node=\"gpu-003\""));
  EXPECT_THAT(*metrics, ::testing::Not(HasSubstr("vnode-")));

  r = RunCommand({FABRICDIAG_SIM_BINARY, "--virtual_agents=5",
                  "--layout=" + layout, target, "--duration=1s"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr("5 agents, but the simulated fabric has 4"));
  r = RunCommand({FABRICDIAG_SIM_BINARY, "--virtual_agents=4",
                  "--layout=" + layout, "--virtual_agent_prefix=rack7-", target,
                  "--duration=1s"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr("--virtual_agent_prefix: not with --layout"));
  r = RunCommand({FABRICDIAG_SIM_BINARY, "--virtual_agents=4",
                  "--layout=" + dir.path() + "/absent.yaml", target,
                  "--duration=1s"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr("absent.yaml: cannot open"));
  const std::string scenario = dir.Write(
      "scenario.yaml",
      "faults: [{kind: straggler, node: gpu-009, nic: mlx5_0, start: 0}]");
  r = RunCommand({FABRICDIAG_SIM_BINARY, "--virtual_agents=4",
                  "--layout=" + layout, "--scenario=" + scenario, target,
                  "--duration=1s"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr("scenario.yaml: "));
}

// With --virtual_switch_agents every switch of the topology streams too,
// after the hosts, under its name and with its ports.
TEST(SimBinaryTest, VirtualSwitchAgentsAreTheTopologysSwitches) {
  testing::TempDir dir;
  const std::string layout = dir.Write("layout.yaml", testing::kMoeLayout);
  const std::string topology = dir.Write("topology.yaml", R"(
switches:
  - {name: leaf-0, uplinks: [swp9, swp10]}
links:
  - {host: gpu-000, nic: mlx5_0, switch: leaf-0, port: swp1}
  - {host: gpu-001, nic: mlx5_0, switch: leaf-0, port: swp2}
)");
  TestCollector collector(dir);
  ASSERT_GT(collector.grpc, 0);
  auto r =
      RunCommand({FABRICDIAG_SIM_BINARY, "--virtual_agents=2",
                  "--virtual_switch_agents", "--layout=" + layout,
                  "--topology=" + topology, collector.Flag(), "--duration=2s"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("virtual agents: 3 for"));
  absl::StatusOr<std::string> metrics =
      fabricdiag::testing::HttpGet(collector.http, "/metrics");
  ASSERT_TRUE(metrics.ok()) << metrics.status();
  EXPECT_THAT(*metrics, HasSubstr("node=\"leaf-0\""));
  EXPECT_THAT(*metrics, ::testing::Not(HasSubstr("node=\"gpu-002\"")));

  r = RunCommand({FABRICDIAG_SIM_BINARY, "--virtual_agents=2",
                  "--virtual_switch_agents", "--layout=" + layout,
                  collector.Flag(), "--duration=1s"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr("--virtual_switch_agents: needs --topology"));
}

}  // namespace
}  // namespace fabricdiag::sim
