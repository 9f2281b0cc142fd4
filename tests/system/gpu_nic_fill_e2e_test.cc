// A layout's missing NICs filled from the agents' GPU-NIC pairing, with real
// processes on loopback: a collector, two agents on DGX H100-like fake
// sysfs PCI trees (tests/fixtures/pci/dgx-h100.txt: 8 GPUs, each below the
// PCIe switch of its ConnectX-7), and the `fabricdiag` CLI. The layout
// names no NIC (no rails, no ranks) and is applied before the agents
// report: `layout show` then says each rank's NIC and that the agent paired
// it, `layout check` finds none unknown, and the analysis sees the NICs
// (the layout's group member series and the job page name them).
#include <sys/stat.h>

#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/agent/pci_fake_tree.h"
#include "tests/testing/eventually.h"
#include "tests/testing/fake_sysfs.h"
#include "tests/testing/http_get.h"
#include "tests/testing/subprocess.h"

namespace fabricdiag {
namespace {

using ::fabricdiag::agent::BuildPciTreeFromFixture;
using ::fabricdiag::agent::kDgxH100PairedNic;
using ::fabricdiag::agent::ScopedTempDir;
using ::fabricdiag::testing::HttpGet;
using ::fabricdiag::testing::PortFromLog;
using ::fabricdiag::testing::RunCommand;
using ::fabricdiag::testing::RunResult;
using ::fabricdiag::testing::Subprocess;
using ::testing::HasSubstr;

const std::string kAgent = FABRICDIAG_AGENT_BINARY;
const std::string kCollector = FABRICDIAG_COLLECTOR_BINARY;
const std::string kCli = FABRICDIAG_CLI_BINARY;

class GpuNicFillTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // No ethtool statistics: no ioctl on this host.
    ASSERT_EQ(mkdir((dir_.path() + "/no-ethtool").c_str(), 0700), 0);
    collector_ = std::make_unique<Subprocess>(std::vector<std::string>{
        kCollector, "--listen=127.0.0.1:0", "--http_listen=127.0.0.1:0",
        "--state_dir=" + dir_.path() + "/state", "--analysis_interval=100ms"});
    ASSERT_TRUE(collector_->Start().ok());
    std::string line;
    ASSERT_TRUE(collector_->WaitForStderr("gRPC on port", &line))
        << collector_->Stderr();
    grpc_port_ = PortFromLog(line, "gRPC");
    http_port_ = PortFromLog(line, "HTTP");
    ASSERT_GT(grpc_port_, 0);
    ASSERT_GT(http_port_, 0);
  }

  // An agent as node `node` on a DGX H100-like tree of its own.
  void StartAgent(const std::string& node) {
    trees_.push_back(std::make_unique<ScopedTempDir>());
    const std::string tree = trees_.back()->path();
    ASSERT_TRUE(BuildPciTreeFromFixture(tree, "dgx-h100.txt").ok());
    auto agent = std::make_unique<Subprocess>(std::vector<std::string>{
        kAgent, "--node=" + node, "--sysfs_root=" + tree,
        "--ethtool_dir=" + dir_.path() + "/no-ethtool", "--listen=127.0.0.1:0",
        "--interval=100ms",
        absl::StrCat("--collector=127.0.0.1:", grpc_port_)});
    ASSERT_TRUE(agent->Start().ok());
    ASSERT_TRUE(agent->WaitForStderr("serving /metrics", nullptr))
        << agent->Stderr();
    agents_.push_back(std::move(agent));
  }

  RunResult Cli(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {
        kCli, absl::StrCat("--collector=127.0.0.1:", grpc_port_)};
    argv.insert(argv.end(), args.begin(), args.end());
    return RunCommand(argv);
  }

  nlohmann::json ShowJson() {
    RunResult r = Cli({"layout", "show", "fill-e2e", "--json"});
    if (r.exit_code != 0) return nullptr;
    return nlohmann::json::parse(r.out, nullptr, /*allow_exceptions=*/false);
  }

  ScopedTempDir dir_;
  std::unique_ptr<Subprocess> collector_;
  std::vector<std::unique_ptr<ScopedTempDir>> trees_;
  std::vector<std::unique_ptr<Subprocess>> agents_;
  int grpc_port_ = 0;
  int http_port_ = 0;
};

TEST_F(GpuNicFillTest, LayoutWithoutNicsGetsThoseTheAgentsPair) {
  // 16 ranks on 2 DGX nodes, tp=8 dp=2; neither rails nor ranks.
  const std::string layout = dir_.path() + "/layout.yaml";
  std::ofstream(layout) << "job: fill-e2e\n"
                           "gpus_per_node: 8\n"
                           "parallelism: {tp: 8, pp: 1, dp: 2}\n"
                           "hosts: [gpu-000, gpu-001]\n";
  RunResult applied = Cli({"layout", "apply", layout});
  ASSERT_EQ(applied.exit_code, 0) << applied.err;

  // Before any agent reports, every NIC is unknown and check says so.
  RunResult early = Cli({"layout", "check", "fill-e2e"});
  EXPECT_EQ(early.exit_code, 3) << early.out << early.err;
  EXPECT_THAT(early.out, HasSubstr("16 ranks have no known NIC"));

  // The pairings arrive after the layout: it is not applied again.
  StartAgent("gpu-000");
  StartAgent("gpu-001");
  nlohmann::json shown;
  ASSERT_TRUE(testing::Eventually(
      [&] {
        shown = ShowJson();
        return shown.is_object() && shown.contains("nic_sources") &&
               shown["nic_sources"]["agent"] == 16;
      },
      absl::Seconds(20), absl::Milliseconds(100)))
      << shown.dump();
  EXPECT_EQ(shown["nic_sources"]["unknown"], 0);
  // The layout as declared is printed as declared.
  EXPECT_TRUE(shown["ranks"].empty()) << shown.dump();
  EXPECT_TRUE(shown["rails"].empty()) << shown.dump();
  ASSERT_EQ(shown["nics"].size(), 16U);
  for (int r = 0; r < 16; ++r) {
    const nlohmann::json& n = shown["nics"][r];
    EXPECT_EQ(n["rank"], r);
    EXPECT_EQ(n["host"], r < 8 ? "gpu-000" : "gpu-001");
    EXPECT_EQ(n["gpu"], r % 8);
    EXPECT_EQ(n["nic"], kDgxH100PairedNic[r % 8]) << n.dump();
    EXPECT_EQ(n["source"], "agent");
    EXPECT_EQ(n["distance"], "pcie_switch");
  }
  RunResult yaml = Cli({"layout", "show", "fill-e2e"});
  EXPECT_EQ(yaml.exit_code, 0) << yaml.err;
  EXPECT_THAT(yaml.out, HasSubstr("  - {rank: 9, host: gpu-001, gpu: 1, nic: "
                                  "mlx5_3, source: agent, distance: "
                                  "pcie_switch}\n"));

  RunResult check = Cli({"layout", "check", "fill-e2e"});
  EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
  EXPECT_THAT(check.out, HasSubstr("layout fill-e2e: 16 of 16 ranks have a "
                                   "known NIC (0 declared in ranks, 0 from "
                                   "rails, 16 paired by the agent)\n"));

  // The analysis reads the filled NICs: the group member series and the
  // job page name them.
  std::string metrics;
  EXPECT_TRUE(testing::Eventually(
      [&] {
        metrics = HttpGet(http_port_, "/metrics").value_or("");
        return metrics.find(
                   "fabricdiag_layout_group_member{job=\"fill-e2e\","
                   "group=\"dp:3\",node=\"gpu-001\",device=\"mlx5_5\""
                   "} 1") != std::string::npos;
      },
      absl::Seconds(20), absl::Milliseconds(100)))
      << metrics;
  absl::StatusOr<std::string> page =
      HttpGet(http_port_, "/api/v1/jobs/fill-e2e?dim=tp&group=tp:1");
  ASSERT_TRUE(page.ok()) << page.status();
  const nlohmann::json job = nlohmann::json::parse(*page);
  ASSERT_EQ(job["groups"].size(), 1U) << job.dump();
  ASSERT_EQ(job["groups"][0]["members"].size(), 8U) << job.dump();
  EXPECT_EQ(job["groups"][0]["members"][0]["host"], "gpu-001");
  EXPECT_EQ(job["groups"][0]["members"][0]["nic"], "mlx5_0");
}

}  // namespace
}  // namespace fabricdiag
