// Agent failover between two real collectors on loopback (docs/agent.md,
// "Several collectors"): the agent streams to the collector its node name
// hashes to, that collector is killed with SIGKILL, and within a bounded
// time the agent streams to the other one, which then holds every report
// the first had not, with no gap in seq. Also the CLI with a list whose
// first entry is dead.
#include <signal.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "client/collector_list.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/eventually.h"
#include "tests/testing/fake_sysfs.h"
#include "tests/testing/http_get.h"
#include "tests/testing/subprocess.h"

namespace fabricdiag {
namespace {

using ::fabricdiag::agent::BuildRoceNode;
using ::fabricdiag::agent::ScopedTempDir;
using ::fabricdiag::testing::HttpGet;
using ::fabricdiag::testing::RunCommand;
using ::fabricdiag::testing::RunResult;
using ::fabricdiag::testing::Subprocess;
using ::testing::HasSubstr;

const std::string kAgent = FABRICDIAG_AGENT_BINARY;
const std::string kCollector = FABRICDIAG_COLLECTOR_BINARY;
const std::string kCli = FABRICDIAG_CLI_BINARY;

constexpr char kNode[] = "gpu-001";
// Every wait is bounded by this; failover itself takes one backoff step
// (250 ms +-20%) plus a connect on loopback.
constexpr absl::Duration kBound = absl::Seconds(10);

int PortFromLog(const std::string& line, const std::string& what) {
  std::smatch m;
  std::regex re(what + " on port ([0-9]+)");
  int port = 0;
  if (std::regex_search(line, m, re)) (void)absl::SimpleAtoi(m[1].str(), &port);
  return port;
}

bool Eventually(const std::function<bool()>& pred) {
  return testing::Eventually(pred, kBound, absl::Milliseconds(50));
}

// The sample `series` (name and labels as exposed) in a /metrics body; -1
// when absent.
double Sample(const std::string& body, const std::string& series) {
  for (absl::string_view line : absl::StrSplit(body, '\n')) {
    if (absl::StartsWith(line, series + " ")) {
      double v = 0;
      if (absl::SimpleAtod(line.substr(series.size() + 1), &v)) return v;
    }
  }
  return -1;
}

struct Collector {
  std::unique_ptr<ScopedTempDir> state;
  std::unique_ptr<Subprocess> process;
  std::string address;  // 127.0.0.1:GRPC_PORT
};

class FailoverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(BuildRoceNode(tree_.path(), 2).ok());
    for (int i = 0; i < 2; ++i) {
      Collector c;
      c.state = std::make_unique<ScopedTempDir>();
      c.process = std::make_unique<Subprocess>(std::vector<std::string>{
          kCollector, "--listen=127.0.0.1:0", "--http_listen=127.0.0.1:0",
          "--state_dir=" + c.state->path(), "--analysis_interval=100ms"});
      ASSERT_TRUE(c.process->Start().ok());
      std::string line;
      ASSERT_TRUE(c.process->WaitForStderr("gRPC on port", &line, kBound))
          << c.process->Stderr();
      const int port = PortFromLog(line, "gRPC");
      ASSERT_GT(port, 0);
      c.address = absl::StrCat("127.0.0.1:", port);
      collectors_.push_back(std::move(c));
    }
  }

  void StartAgent() {
    agent_ = std::make_unique<Subprocess>(std::vector<std::string>{
        kAgent, absl::StrCat("--node=", kNode), "--sysfs_root=" + tree_.path(),
        "--ethtool_dir=" + tree_.path(), "--listen=127.0.0.1:0",
        "--interval=100ms",
        absl::StrCat("--collector=", collectors_[0].address, ",",
                     collectors_[1].address)});
    ASSERT_TRUE(agent_->Start().ok());
    std::string line;
    ASSERT_TRUE(agent_->WaitForStderr("serving /metrics", &line, kBound))
        << agent_->Stderr();
    agent_port_ = PortFromLog(line, "serving /metrics");
    ASSERT_GT(agent_port_, 0);
  }

  // The entry the agent ranks first (rendezvous hashing over the entries as
  // written, which hold this run's ports).
  size_t Preferred() const {
    return client::RankCollectors(
        kNode, {collectors_[0].address, collectors_[1].address})[0];
  }

  std::string AgentMetrics() {
    absl::StatusOr<std::string> body = HttpGet(agent_port_, "/metrics");
    return body.ok() ? *body : "";
  }

  // kNode in `nodes --json` of the collector at `address`; null when the
  // collector does not answer or does not know the node.
  nlohmann::json NodeAt(const std::string& address) {
    RunResult r = RunCommand(
        {kCli, "--collector=" + address, "--timeout=2s", "nodes", "--json"},
        kBound);
    if (r.exit_code != 0) return nullptr;
    nlohmann::json nodes =
        nlohmann::json::parse(r.out, nullptr, /*allow_exceptions=*/false);
    if (!nodes.is_array()) return nullptr;
    for (const auto& n : nodes) {
      if (n["node"] == kNode) return n;
    }
    return nullptr;
  }

  uint64_t Reports(const nlohmann::json& node) {
    return node.is_object() ? node["reports"].get<uint64_t>() : 0;
  }

  ScopedTempDir tree_;
  std::vector<Collector> collectors_;
  std::unique_ptr<Subprocess> agent_;
  int agent_port_ = 0;
};

TEST_F(FailoverTest, AgentMovesToTheOtherCollectorWithoutAGap) {
  StartAgent();
  Collector& first = collectors_[Preferred()];
  Collector& second = collectors_[1 - Preferred()];
  const std::string info =
      "fabricdiag_agent_stream_collector_info{collector=\"";

  // The hash picks the first; the other one never hears of the node.
  std::string metrics;
  ASSERT_TRUE(Eventually([&] {
    metrics = AgentMetrics();
    return Sample(metrics, "fabricdiag_agent_stream_connected") == 1 &&
           Reports(NodeAt(first.address)) >= 5;
  })) << metrics
      << agent_->Stderr();
  EXPECT_EQ(Sample(metrics, info + first.address + "\"}"), 1) << metrics;
  EXPECT_EQ(Sample(metrics, "fabricdiag_agent_stream_failovers_total"), 0);
  EXPECT_TRUE(NodeAt(second.address).is_null());

  // Freeze the agent so that what the first collector holds is final, then
  // read it: `a` reports, seq 1..a (no gap).
  agent_->Signal(SIGSTOP);
  uint64_t a = 0;
  ASSERT_TRUE(Eventually([&] {
    // Stable across two reads: nothing was still in flight.
    const uint64_t before = Reports(NodeAt(first.address));
    absl::SleepFor(absl::Milliseconds(200));
    a = Reports(NodeAt(first.address));
    return a > 0 && a == before;
  }));
  nlohmann::json at_first = NodeAt(first.address);
  ASSERT_TRUE(at_first.is_object());
  EXPECT_EQ(at_first["gaps"], 0) << at_first.dump();

  // Freeze the first collector too and let the agent run: it keeps
  // sampling and sending, and nothing more is acknowledged, so at the
  // failover the agent holds reports the first never stored. They must
  // reach the second.
  first.process->Signal(SIGSTOP);
  agent_->Signal(SIGCONT);
  ASSERT_TRUE(Eventually([&] {
    metrics = AgentMetrics();
    return Sample(metrics, "fabricdiag_agent_stream_reports_buffered") >= 5;
  })) << metrics;
  first.process->Signal(SIGKILL);
  ASSERT_TRUE(first.process->Wait(kBound).has_value());

  // Within the bound the agent streams to the other collector.
  ASSERT_TRUE(Eventually([&] {
    metrics = AgentMetrics();
    return Sample(metrics, info + second.address + "\"}") == 1 &&
           Sample(metrics, "fabricdiag_agent_stream_connected") == 1 &&
           NodeAt(second.address).is_object();
  })) << metrics
      << agent_->Stderr();
  EXPECT_EQ(Sample(metrics, "fabricdiag_agent_stream_failovers_total"), 1);

  // No seq lost: the agent's Hello tells the second how far the first
  // acknowledged, and the second counts as gaps every report between that
  // and the first one it holds, and every hole after it. Timing cannot make
  // this pass or fail: the reports the first never stored are all held.
  nlohmann::json at_second;
  ASSERT_TRUE(Eventually([&] {
    at_second = NodeAt(second.address);
    return Reports(at_second) >= 5;
  })) << "first held "
      << a << ", second " << at_second.dump();
  EXPECT_EQ(at_second["gaps"], 0) << at_second.dump();
  metrics = AgentMetrics();
  EXPECT_EQ(Sample(metrics, "fabricdiag_agent_stream_reports_dropped_total"),
            0);

  agent_->Signal(SIGTERM);
  EXPECT_EQ(agent_->Wait(kBound), 0);
}

TEST_F(FailoverTest, CliUsesTheFirstCollectorThatAnswers) {
  StartAgent();
  Collector& live = collectors_[Preferred()];
  Collector& dead = collectors_[1 - Preferred()];
  ASSERT_TRUE(Eventually([&] { return NodeAt(live.address).is_object(); }));
  dead.process->Signal(SIGKILL);
  ASSERT_TRUE(dead.process->Wait(kBound).has_value());

  RunResult r = RunCommand(
      {kCli, absl::StrCat("--collector=", dead.address, ",", live.address),
       "nodes"},
      kBound);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr(kNode));

  live.process->Signal(SIGKILL);
  ASSERT_TRUE(live.process->Wait(kBound).has_value());
  r = RunCommand(
      {kCli, absl::StrCat("--collector=", dead.address, ",", live.address),
       "nodes"},
      kBound);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("no collector answered"));
  EXPECT_THAT(r.err, HasSubstr(dead.address));
  EXPECT_THAT(r.err, HasSubstr(live.address));
}

}  // namespace
}  // namespace fabricdiag
