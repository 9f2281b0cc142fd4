// The whole system with real processes on loopback: a collector, agents on
// fake sysfs trees, and the `fabricdiag` CLI. Covers, end to end:
// layouts through the CLI, findings as JSON and as metrics, kill -9
// and restart of the collector (state survives, agents reconnect and their
// replayed buffers leave no gap), and agent_down opening when an agent dies
// and resolving when it comes back.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
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
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/eventually.h"
#include "tests/testing/fake_sysfs.h"
#include "tests/testing/http_get.h"
#include "tests/testing/subprocess.h"
#include "tests/testing/test_pki.h"

namespace fabricdiag {
namespace {

using ::fabricdiag::agent::BuildRoceNode;
using ::fabricdiag::agent::ScopedTempDir;
using ::fabricdiag::testing::HttpGet;
using ::fabricdiag::testing::PortFromLog;
using ::fabricdiag::testing::RunCommand;
using ::fabricdiag::testing::RunResult;
using ::fabricdiag::testing::Subprocess;
using ::testing::AllOf;
using ::testing::HasSubstr;

const std::string kAgent = FABRICDIAG_AGENT_BINARY;
const std::string kCollector = FABRICDIAG_COLLECTOR_BINARY;
const std::string kCli = FABRICDIAG_CLI_BINARY;

// Polls `pred` every 50 ms for up to `timeout`.
// The predicates here run the CLI or scrape the collector: poll every 50 ms,
// and give a loaded machine 20 s.
bool Eventually(const std::function<bool()>& pred,
                absl::Duration timeout = absl::Seconds(20)) {
  return testing::Eventually(pred, timeout, absl::Milliseconds(50));
}

class SystemTest : public ::testing::Test {
 protected:
  void SetUp() override {
    token_file_ = state_.path() + "/token";
    std::ofstream(token_file_) << "0123456789abcdef0123456789abcdef\n";
    chmod(token_file_.c_str(), 0600);
    for (int i = 0; i < 2; ++i) {
      trees_.push_back(std::make_unique<ScopedTempDir>());
      ASSERT_TRUE(BuildRoceNode(trees_.back()->path(), 2).ok());
    }
  }

  void StartCollector(int grpc_port = 0,
                      const std::vector<std::string>& extra = {}) {
    std::vector<std::string> argv = wrapper_;
    argv.insert(
        argv.end(),
        {kCollector, absl::StrCat("--listen=127.0.0.1:", grpc_port),
         "--http_listen=127.0.0.1:0",
         "--state_dir=" +
             (state_dir_.empty() ? state_.path() + "/state" : state_dir_),
         "--auth_token_file=" + token_file_, "--analysis_interval=100ms"});
    argv.insert(argv.end(), extra.begin(), extra.end());
    collector_ = std::make_unique<Subprocess>(argv);
    ASSERT_TRUE(collector_->Start().ok());
    std::string line;
    ASSERT_TRUE(collector_->WaitForStderr("gRPC on port", &line))
        << collector_->Stderr();
    grpc_port_ = PortFromLog(line, "gRPC");
    http_port_ = PortFromLog(line, "HTTP");
    ASSERT_GT(grpc_port_, 0);
    ASSERT_GT(http_port_, 0);
  }

  // Agent i reads tree i and is node gpu-00i unless `extra` names another.
  std::unique_ptr<Subprocess> StartAgent(
      int i, const std::vector<std::string>& extra = {}) {
    std::vector<std::string> argv = {
        kAgent,
        absl::StrCat("--node=gpu-00", i),
        "--sysfs_root=" + trees_[i]->path(),
        "--ethtool_dir=" + trees_[i]->path(),
        "--listen=127.0.0.1:0",
        "--interval=100ms",
        absl::StrCat("--collector=127.0.0.1:", grpc_port_)};
    argv.insert(argv.end(), extra.begin(), extra.end());
    auto agent = std::make_unique<Subprocess>(argv);
    EXPECT_TRUE(agent->Start().ok());
    EXPECT_TRUE(agent->WaitForStderr("serving /metrics", nullptr));
    return agent;
  }

  RunResult Cli(std::vector<std::string> args) {
    std::vector<std::string> argv = {
        kCli, absl::StrCat("--collector=127.0.0.1:", grpc_port_),
        "--token_file=" + token_file_};
    argv.insert(argv.end(), cli_flags_.begin(), cli_flags_.end());
    argv.insert(argv.end(), args.begin(), args.end());
    return RunCommand(argv);
  }

  nlohmann::json Findings(const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args = {"findings", "--json"};
    args.insert(args.end(), extra.begin(), extra.end());
    RunResult r = Cli(args);
    if (r.exit_code != 0) return nlohmann::json::array();
    return nlohmann::json::parse(r.out, nullptr, /*allow_exceptions=*/false);
  }

  bool HasFinding(const nlohmann::json& findings, const std::string& kind,
                  const std::string& node) {
    if (!findings.is_array()) return false;
    for (const auto& f : findings) {
      if (f["kind"] == kind && f["node"] == node) return true;
    }
    return false;
  }

  // The node of `nodes --json` named `node`; null when absent.
  nlohmann::json Node(const std::string& node) {
    RunResult r = Cli({"nodes", "--json"});
    if (r.exit_code != 0) return nullptr;
    nlohmann::json nodes =
        nlohmann::json::parse(r.out, nullptr, /*allow_exceptions=*/false);
    if (!nodes.is_array()) return nullptr;
    for (const auto& n : nodes) {
      if (n["node"] == node) return n;
    }
    return nullptr;
  }

  // The value of the sample `series` (name and labels, as exposed) on the
  // collector's /metrics; -1 when absent.
  double MetricValue(const std::string& series) {
    for (absl::string_view line : absl::StrSplit(Metrics(), '\n')) {
      if (absl::StartsWith(line, series + " ")) {
        double v = 0;
        if (absl::SimpleAtod(line.substr(series.size() + 1), &v)) return v;
      }
    }
    return -1;
  }

  std::string Metrics() {
    absl::StatusOr<std::string> body = HttpGet(http_port_, "/metrics");
    return body.ok() ? *body : "";
  }

  std::string WriteLayout() {
    // tp=4 on 2-GPU nodes: every TP group spans both nodes.
    std::string path = state_.path() + "/layout.yaml";
    std::ofstream(path) << "job: e2e-job\n"
                           "gpus_per_node: 2\n"
                           "parallelism: {tp: 4, pp: 1, dp: 1}\n"
                           "hosts: [gpu-000, gpu-001]\n"
                           "rails: [mlx5_0, mlx5_1]\n";
    return path;
  }

  ScopedTempDir state_;
  std::string token_file_;
  std::vector<std::unique_ptr<ScopedTempDir>> trees_;
  std::unique_ptr<Subprocess> collector_;
  std::vector<std::string> cli_flags_;  // e.g. TLS flags
  std::vector<std::string> wrapper_;    // runs the collector, e.g. nsenter
  std::string state_dir_;               // default: state_.path() + "/state"
  int grpc_port_ = 0;
  int http_port_ = 0;
};

TEST_F(SystemTest, LayoutsFindingsRestartAndAgentDown) {
  StartCollector();
  std::unique_ptr<Subprocess> a0 = StartAgent(0);
  std::unique_ptr<Subprocess> a1 = StartAgent(1);

  // Both agents report.
  ASSERT_TRUE(Eventually([&] {
    RunResult r = Cli({"nodes", "--json"});
    return r.exit_code == 0 && absl::StrContains(r.out, "gpu-000") &&
           absl::StrContains(r.out, "gpu-001");
  })) << Cli({"nodes"}).out
      << collector_->Stderr();

  // A write without the token is refused; with it, the layout is applied
  // and the TP groups that cross nodes are reported at once.
  RunResult denied =
      RunCommand({kCli, absl::StrCat("--collector=127.0.0.1:", grpc_port_),
                  "layout", "apply", WriteLayout()});
  EXPECT_EQ(denied.exit_code, 1);
  EXPECT_THAT(denied.err, HasSubstr("unauthenticated"));
  RunResult applied = Cli({"layout", "apply", WriteLayout()});
  ASSERT_EQ(applied.exit_code, 0) << applied.err;
  EXPECT_THAT(applied.out, HasSubstr("tp_cross_node"));
  nlohmann::json findings = Findings({"--job=e2e-job"});
  ASSERT_TRUE(findings.is_array());
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0]["kind"], "tp_cross_node");
  EXPECT_EQ(findings[0]["group"], "tp:0");
  EXPECT_EQ(findings[0]["nodes"],
            nlohmann::json::array({"gpu-000", "gpu-001"}));
  EXPECT_THAT(Metrics(),
              HasSubstr("fabricdiag_finding_active{kind=\"tp_cross_node\""));

  // kill -9 the collector and restart it on the same port: the layout and
  // the finding history are still there and the agents reconnect.
  collector_->Signal(SIGKILL);
  ASSERT_TRUE(collector_->Wait(absl::Seconds(10)).has_value());
  const int port = grpc_port_;
  absl::SleepFor(absl::Milliseconds(300));  // agents buffer in the meantime
  StartCollector(port);
  RunResult list = Cli({"layout", "list"});
  EXPECT_EQ(list.exit_code, 0) << list.err;
  EXPECT_THAT(list.out, HasSubstr("e2e-job"));
  std::string metrics;
  ASSERT_TRUE(Eventually([&] {
    metrics = Metrics();
    return absl::StrContains(metrics,
                             "fabricdiag_agent_up{node=\"gpu-000\"} 1") &&
           absl::StrContains(metrics,
                             "fabricdiag_agent_up{node=\"gpu-001\"} 1");
  })) << metrics;
  // The agents' replay after the outage: no report missing.
  EXPECT_THAT(
      metrics,
      HasSubstr("fabricdiag_agent_missing_reports_total{node=\"gpu-000\"} 0"));

  // An agent dies: agent_down opens for it (and only it) ...
  a1->Signal(SIGKILL);
  ASSERT_TRUE(Eventually([&] {
    return HasFinding(Findings(), "agent_down", "gpu-001");
  })) << Findings().dump();
  EXPECT_FALSE(HasFinding(Findings(), "agent_down", "gpu-000"));
  EXPECT_TRUE(Eventually([&] {
    return absl::StrContains(Metrics(),
                             "fabricdiag_agent_up{node=\"gpu-001\"} 0");
  }));
  // A collector restart does not forget it: the node has not reported to
  // the new process either, so the finding stays open, same id.
  const std::string down_id = [&] {
    for (const auto& f : Findings()) {
      if (f["kind"] == "agent_down") return f["id"].get<std::string>();
    }
    return std::string();
  }();
  collector_->Signal(SIGKILL);
  ASSERT_TRUE(collector_->Wait(absl::Seconds(10)).has_value());
  StartCollector(port);
  absl::SleepFor(absl::Seconds(1));  // ten analysis passes
  bool still_open = false;
  for (const auto& f : Findings()) {
    if (f["kind"] == "agent_down" && f["node"] == "gpu-001") {
      still_open = f["id"] == down_id;
    }
  }
  EXPECT_TRUE(still_open) << Findings().dump();
  // ... and resolves when it comes back.
  a1 = StartAgent(1);
  ASSERT_TRUE(Eventually(
      [&] { return !HasFinding(Findings(), "agent_down", "gpu-001"); }));
  nlohmann::json all = Findings({"--all"});
  bool resolved = false;
  for (const auto& f : all) {
    if (f["kind"] == "agent_down" && f["node"] == "gpu-001" &&
        f["state"] == "resolved") {
      resolved = true;
    }
  }
  EXPECT_TRUE(resolved) << all.dump();

  // Deleting the layout resolves its finding.
  RunResult deleted = Cli({"layout", "delete", "e2e-job"});
  EXPECT_EQ(deleted.exit_code, 0) << deleted.err;
  EXPECT_TRUE(Eventually([&] { return Findings({"--job=e2e-job"}).empty(); }));

  collector_->Signal(SIGTERM);
  EXPECT_EQ(collector_->Wait(absl::Seconds(15)), std::optional<int>(0));
}

// The topology's hosts are the inventory: a host no agent reports from is
// agent_missing (after agent_missing.after_seconds, 2 s here), naming an
// agent that reports under a near name; `nodes forget` ends a
// decommissioned host's finding, and an agent renamed to the host's name
// ends the other.
TEST_F(SystemTest, TopologyHostsWithoutAnAgentAreAgentMissing) {
  const std::string config = state_.path() + "/analysis.yaml";
  std::ofstream(config) << "agent_missing: {after_seconds: 2}\n";
  const std::string topology = state_.path() + "/topology.yaml";
  std::ofstream(topology) << "switches:\n  - {name: leaf-0}\nlinks:\n"
                             "  - {host: gpu-000, nic: mlx5_0, switch: "
                             "leaf-0, port: swp1}\n"
                             "  - {host: gpu-001, nic: mlx5_0, switch: "
                             "leaf-0, port: swp2}\n"
                             "  - {host: gpu-002, nic: mlx5_0, switch: "
                             "leaf-0, port: swp3}\n";
  StartCollector(0, {"--analysis_config=" + config});
  RunResult applied = Cli({"topology", "apply", topology});
  ASSERT_EQ(applied.exit_code, 0) << applied.err;
  std::unique_ptr<Subprocess> a0 = StartAgent(0);
  std::unique_ptr<Subprocess> a1 =
      StartAgent(1, {"--node=GPU-001.dc1.example"});
  auto missing = [&](const std::string& node) -> nlohmann::json {
    for (const auto& f : Findings({"--kind=agent_missing"})) {
      if (f["node"] == node) return f;
    }
    return nullptr;
  };
  ASSERT_TRUE(Eventually(
      [&] {
        return !missing("gpu-001").is_null() && !missing("gpu-002").is_null();
      },
      absl::Seconds(15)))
      << Findings().dump() << collector_->Stderr();
  EXPECT_TRUE(missing("gpu-000").is_null()) << "its agent reports";
  const nlohmann::json renamed = missing("gpu-001");
  EXPECT_EQ(renamed["evidence"]["reporting_as"], "GPU-001.dc1.example")
      << renamed.dump();
  EXPECT_THAT(renamed["summary"].get<std::string>(),
              HasSubstr("give that agent --node=gpu-001"));
  EXPECT_THAT(missing("gpu-002")["summary"].get<std::string>(),
              HasSubstr("Start fabricdiag-agent on gpu-002"));
  EXPECT_THAT(Metrics(),
              HasSubstr("fabricdiag_finding_active{kind=\"agent_missing\""));

  // gpu-002 was decommissioned: forgotten, its finding resolves.
  RunResult forgot = Cli({"nodes", "forget", "gpu-002"});
  EXPECT_EQ(forgot.exit_code, 0) << forgot.err;
  EXPECT_TRUE(Eventually([&] { return missing("gpu-002").is_null(); }))
      << Findings().dump();
  // gpu-001's agent gets the topology's name: its finding resolves too.
  a1->Signal(SIGTERM);
  a1->Wait(absl::Seconds(10));
  a1 = StartAgent(1);
  EXPECT_TRUE(Eventually([&] { return missing("gpu-001").is_null(); }))
      << Findings().dump();
  EXPECT_TRUE(Findings({"--kind=agent_missing"}).empty());
}

TEST_F(SystemTest, HealthzAndPromtoolAcceptTheCollectorMetrics) {
  StartCollector();
  absl::StatusOr<std::string> health = HttpGet(http_port_, "/healthz");
  ASSERT_TRUE(health.ok()) << health.status();
  EXPECT_THAT(*health, HasSubstr("ok"));
  if (std::system("command -v promtool >/dev/null 2>&1") == 0) {
    const std::string path = state_.path() + "/collector.prom";
    std::ofstream(path) << Metrics();
    RunResult r =
        RunCommand({"/bin/sh", "-c", "promtool check metrics < " + path});
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_EQ(r.out + r.err, "");
  }
}

// Two collectors on one address would split the agents between them
// without a word: the second one must refuse to start, for the gRPC and the
// HTTP port alike.
TEST_F(SystemTest, SecondCollectorOnTheSamePortsRefusesToStart) {
  StartCollector();
  RunResult r = RunCommand(
      {kCollector, absl::StrCat("--listen=127.0.0.1:", grpc_port_),
       "--http_listen=127.0.0.1:0", "--state_dir=" + state_.path() + "/b1"},
      absl::Seconds(15));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err,
              HasSubstr(absl::StrCat("--listen=127.0.0.1:", grpc_port_)));
  r = RunCommand({kCollector, "--listen=127.0.0.1:0",
                  absl::StrCat("--http_listen=127.0.0.1:", http_port_),
                  "--state_dir=" + state_.path() + "/b2"},
                 absl::Seconds(15));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("Address already in use"));
  // The first one still serves.
  EXPECT_THAT(Cli({"nodes"}).exit_code, 0);
}

// A second collector on the same --state_dir would diverge from the first
// one: it must refuse to start, naming the holder, until the holder is
// gone, kill -9 included (the kernel drops the lock with the process).
TEST_F(SystemTest, SecondCollectorOnTheSameStateDirRefusesUntilTheFirstDies) {
  StartCollector();
  ASSERT_EQ(Cli({"layout", "apply", WriteLayout()}).exit_code, 0);
  RunResult r = RunCommand(
      {kCollector, "--listen=127.0.0.1:0", "--http_listen=127.0.0.1:0",
       "--state_dir=" + state_.path() + "/state"},
      absl::Seconds(15));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr(absl::StrCat(
                         "in use by another fabricdiag-collector (pid ",
                         collector_->pid(), ",")));
  EXPECT_EQ(Cli({"nodes"}).exit_code, 0);  // the first one still serves

  collector_->Signal(SIGKILL);
  ASSERT_TRUE(collector_->Wait(absl::Seconds(10)).has_value());
  StartCollector();
  RunResult list = Cli({"layout", "list"});
  EXPECT_EQ(list.exit_code, 0) << list.err;
  EXPECT_THAT(list.out, HasSubstr("e2e-job"));
}

// A full disk: a write that does not fit is refused (never a false
// acknowledgement), /healthz says so while it lasts and is healthy again
// after the next write that succeeds, and every acknowledged layout
// survives kill -9. So does an operator mark (marks.pb). The state directory is
// a 1 MiB tmpfs in a private mount namespace that a holder process keeps alive;
// collectors join it.
TEST_F(SystemTest, FullDiskRefusesWritesAndHealthzRecovers) {
  const std::string mnt = state_.path() + "/small";
  ASSERT_EQ(mkdir(mnt.c_str(), 0700), 0);
  const std::string script =
      "mount -t tmpfs -o size=1m fabricdiag-full \"$0\" && "
      "echo mounted >&2 && exec sleep 600";
  Subprocess holder({"/usr/bin/unshare", "--mount", "--propagation", "private",
                     "/bin/sh", "-c", script, mnt});
  ASSERT_TRUE(holder.Start().ok());
  ASSERT_TRUE(holder.WaitForStderr("mounted", nullptr)) << holder.Stderr();
  wrapper_ = {"/usr/bin/nsenter", absl::StrCat("--target=", holder.pid()),
              "--mount", "--"};
  state_dir_ = mnt + "/state";
  StartCollector();
  const RunResult kept = Cli(
      {"silence", "--matcher=kind=pfc_storm", "--for=1h", "--comment=kept"});
  ASSERT_EQ(kept.exit_code, 0) << kept.err;

  // Layouts of ~200 KB each until the 1 MiB file system is full.
  std::string hosts;
  for (int i = 0; i < 20000; ++i) {
    absl::StrAppend(&hosts, i == 0 ? "" : ", ", "host-", 10000 + i);
  }
  std::vector<std::string> acknowledged;
  RunResult refused;
  for (int i = 0; i < 12 && refused.exit_code != 1; ++i) {
    const std::string job = absl::StrCat("big-", i);
    const std::string path = state_.path() + "/" + job + ".yaml";
    std::ofstream(path) << "job: " << job
                        << "\ngpus_per_node: 8\n"
                           "parallelism: {tp: 8, pp: 1, dp: 20000}\n"
                           "hosts: ["
                        << hosts << "]\n";
    RunResult r = Cli({"--timeout=60s", "layout", "apply", path});
    if (r.exit_code == 0) {
      acknowledged.push_back(job);
    } else {
      refused = r;
    }
  }
  ASSERT_EQ(refused.exit_code, 1) << "the file system never filled up";
  EXPECT_THAT(refused.err, HasSubstr("No space left on device"));
  ASSERT_GE(acknowledged.size(), 2u);

  absl::StatusOr<std::string> health = HttpGet(http_port_, "/healthz");
  ASSERT_FALSE(health.ok());
  EXPECT_THAT(health.status().message(),
              AllOf(HasSubstr("503"), HasSubstr("No space left on device")));
  RunResult list = Cli({"layout", "list"});
  for (const std::string& job : acknowledged) {
    EXPECT_THAT(list.out, HasSubstr(job));
  }

  // An operator mark on the disk filled to the last page (a layout left
  // some): refused, marks.pb and the marks served as they were.
  const std::string filler = mnt + "/filler";
  RunCommand({"/usr/bin/nsenter", absl::StrCat("--target=", holder.pid()),
              "--mount", "--", "/bin/sh", "-c",
              "dd if=/dev/zero of=\"$0\" bs=4096 2>/dev/null; true", filler});
  RunResult mark = Cli(
      {"silence", "--matcher=node=leaf-3", "--for=1h", "--comment=refused"});
  EXPECT_EQ(mark.exit_code, 1) << mark.out;
  EXPECT_THAT(mark.err, HasSubstr("No space left on device"));
  EXPECT_THAT(Cli({"silences"}).out,
              AllOf(HasSubstr("kept"), ::testing::Not(HasSubstr("refused"))));
  RunCommand({"/usr/bin/nsenter", absl::StrCat("--target=", holder.pid()),
              "--mount", "--", "/bin/rm", "-f", filler});

  // Room again: the next write that succeeds makes /healthz healthy.
  ASSERT_EQ(Cli({"layout", "delete", acknowledged.back()}).exit_code, 0);
  acknowledged.pop_back();
  mark =
      Cli({"silence", "--matcher=node=leaf-4", "--for=1h", "--comment=after"});
  EXPECT_EQ(mark.exit_code, 0) << mark.err;
  health = HttpGet(http_port_, "/healthz");
  EXPECT_TRUE(health.ok()) << health.status();

  // Everything acknowledged survives kill -9; nothing refused appears.
  collector_->Signal(SIGKILL);
  ASSERT_TRUE(collector_->Wait(absl::Seconds(10)).has_value());
  StartCollector();
  list = Cli({"layout", "list"});
  EXPECT_EQ(list.exit_code, 0) << list.err;
  for (const std::string& job : acknowledged) {
    EXPECT_THAT(list.out, HasSubstr(job));
  }
  EXPECT_THAT(
      list.out,
      ::testing::Not(HasSubstr(absl::StrCat("big-", acknowledged.size() + 1))));
  // So does every mark written before and after the full disk.
  EXPECT_THAT(Cli({"silences"}).out,
              AllOf(HasSubstr("kept"), HasSubstr("after"),
                    ::testing::Not(HasSubstr("refused"))));
  collector_->Signal(SIGTERM);
  EXPECT_EQ(collector_->Wait(absl::Seconds(15)), std::optional<int>(0));
  holder.Signal(SIGKILL);
  holder.Wait(absl::Seconds(10));
}

// `n` clients that send one header line and then nothing, spread over
// 127.0.0.2-127.0.0.9 (each address stays under the per-client cap).
std::vector<int> OpenSlowClients(int port, int n) {
  std::vector<int> fds;
  for (int i = 0; i < n; ++i) {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in local{};
    local.sin_family = AF_INET;
    local.sin_addr.s_addr = htonl(INADDR_LOOPBACK + 2 + i % 8);
    sockaddr_in server{};
    server.sin_family = AF_INET;
    server.sin_port = htons(static_cast<uint16_t>(port));
    server.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    const std::string line = "GET /metrics HTTP/1.1\r\nHost: x\r\n";
    if (fd < 0 ||
        ::bind(fd, reinterpret_cast<sockaddr*>(&local), sizeof(local)) != 0 ||
        ::connect(fd, reinterpret_cast<sockaddr*>(&server), sizeof(server)) !=
            0 ||
        ::write(fd, line.data(), line.size()) !=
            static_cast<ssize_t>(line.size())) {
      ADD_FAILURE() << "slow client " << i << ": " << std::strerror(errno);
      if (fd >= 0) ::close(fd);
      continue;
    }
    fds.push_back(fd);
  }
  return fds;
}

// Connections the server still holds open (a read would block).
int StillOpen(const std::vector<int>& fds) {
  int open = 0;
  for (int fd : fds) {
    char c;
    if (::recv(fd, &c, 1, MSG_DONTWAIT) < 0 && errno == EAGAIN) ++open;
  }
  return open;
}

// 200 slow clients (a header line, then silence) used to stop the agent's
// /metrics with 2 and the collector's /metrics and /healthz with 4. They
// now cost only their sockets: Prometheus and the health checker are
// answered at once, by both binaries.
TEST_F(SystemTest, SlowHttpClientsDoNotStarveMetricsOrHealthz) {
  StartCollector();
  std::unique_ptr<Subprocess> agent = StartAgent(0);
  std::string line;
  ASSERT_TRUE(agent->WaitForStderr("serving /metrics", &line));
  const int agent_port = PortFromLog(line, "serving /metrics");
  ASSERT_GT(agent_port, 0) << line;

  std::vector<int> slow = OpenSlowClients(http_port_, 200);
  std::vector<int> slow_agent = OpenSlowClients(agent_port, 200);
  absl::SleepFor(absl::Milliseconds(300));  // let both servers accept them
  for (int round = 0; round < 3; ++round) {
    for (const auto& [port, path] :
         std::vector<std::pair<int, std::string>>{{http_port_, "/healthz"},
                                                  {http_port_, "/metrics"},
                                                  {agent_port, "/metrics"}}) {
      const absl::Time start = absl::Now();
      absl::StatusOr<std::string> body = HttpGet(port, path);
      EXPECT_TRUE(body.ok()) << path << ": " << body.status();
      EXPECT_LT(absl::Now() - start, absl::Seconds(5)) << path;
    }
  }
  // The slow clients were really held, not turned away.
  EXPECT_EQ(StillOpen(slow), 200);
  EXPECT_EQ(StillOpen(slow_agent), 200);
  for (int fd : slow) ::close(fd);
  for (int fd : slow_agent) ::close(fd);
}

// Who may speak for a node: with --ingest_token_file an agent needs the
// token, and while one agent streams as a node a second one with the same
// --node is refused, on both sides, counted, and shown by `nodes`.
TEST_F(SystemTest, IngestNeedsTheTokenAndOneLiveAgentPerNode) {
  StartCollector(0, {"--ingest_token_file=" + token_file_});
  std::unique_ptr<Subprocess> rogue = StartAgent(0);  // no token
  EXPECT_TRUE(rogue->WaitForStderr("ingest token", nullptr)) << rogue->Stderr();
  const std::string unauthenticated =
      "fabricdiag_ingest_rejected_streams_total{reason=\"unauthenticated\"}";
  EXPECT_TRUE(Eventually([&] { return MetricValue(unauthenticated) >= 1; }));
  EXPECT_TRUE(Node("gpu-000").is_null());
  rogue.reset();

  std::unique_ptr<Subprocess> first =
      StartAgent(0, {"--ingest_token_file=" + token_file_});
  ASSERT_TRUE(Eventually([&] {
    nlohmann::json n = Node("gpu-000");
    return n.is_object() && n["up"] == true && n["reports"] > 2;
  })) << first->Stderr()
      << collector_->Stderr();
  const std::string peer = Node("gpu-000")["peer"];
  EXPECT_THAT(peer, HasSubstr("127.0.0.1"));

  // Same --node, another tree (so another device list), another process.
  std::unique_ptr<Subprocess> twin =
      StartAgent(1, {"--node=gpu-000", "--ingest_token_file=" + token_file_});
  EXPECT_TRUE(
      twin->WaitForStderr("two agents run with the same --node", nullptr))
      << twin->Stderr();
  EXPECT_TRUE(collector_->WaitForStderr("duplicate_node", nullptr))
      << collector_->Stderr();
  const std::string duplicate =
      "fabricdiag_ingest_rejected_streams_total{reason=\"duplicate_node\"}";
  EXPECT_TRUE(Eventually([&] { return MetricValue(duplicate) >= 1; }));
  nlohmann::json n = Node("gpu-000");
  ASSERT_TRUE(n.is_object());
  EXPECT_GE(n["duplicate_streams"], 1);
  EXPECT_THAT(n["last_duplicate_peer"].get<std::string>(),
              HasSubstr("127.0.0.1"));
  // The first agent keeps the node: same peer, still reporting.
  EXPECT_EQ(n["peer"], peer);
  const uint64_t reports = n["reports"];
  EXPECT_TRUE(Eventually([&] {
    nlohmann::json now = Node("gpu-000");
    return now.is_object() && now["reports"] > reports + 5 &&
           now["peer"] == peer;
  }));
  EXPECT_THAT(Cli({"nodes"}).out, HasSubstr("warning: gpu-000: "));

  // When the first agent is gone for good, the second one takes over.
  first->Signal(SIGKILL);
  EXPECT_TRUE(Eventually(
      [&] {
        nlohmann::json now = Node("gpu-000");
        return now.is_object() && now["up"] == true && now["peer"] != peer;
      },
      absl::Seconds(30)))
      << twin->Stderr();
}

// With mutual TLS the node an agent reports as must be named in its client
// certificate (CN or DNS subject alternative name).
TEST_F(SystemTest, MutualTlsAgentsReportOnlyAsThemselves) {
  const std::string pki_dir = state_.path() + "/pki";
  ASSERT_EQ(mkdir(pki_dir.c_str(), 0700), 0);
  absl::StatusOr<fabricdiag::testing::TestPki> pki =
      fabricdiag::testing::MakeTestPki(pki_dir, {"gpu-000", "ops"});
  ASSERT_TRUE(pki.ok()) << pki.status();
  StartCollector(
      0, {"--tls_cert=" + pki->server.cert, "--tls_key=" + pki->server.key,
          "--tls_client_ca=" + pki->ca_cert});
  cli_flags_ = {"--tls_ca=" + pki->ca_cert,
                "--tls_cert=" + pki->clients["ops"].cert,
                "--tls_key=" + pki->clients["ops"].key};
  const std::vector<std::string> tls = {
      "--tls_ca=" + pki->ca_cert, "--tls_cert=" + pki->clients["gpu-000"].cert,
      "--tls_key=" + pki->clients["gpu-000"].key};
  std::unique_ptr<Subprocess> honest = StartAgent(0, tls);
  ASSERT_TRUE(Eventually([&] {
    nlohmann::json n = Node("gpu-000");
    return n.is_object() && n["up"] == true;
  })) << honest->Stderr()
      << collector_->Stderr();
  // gpu-000's certificate does not make its holder gpu-001.
  std::unique_ptr<Subprocess> impostor = StartAgent(1, tls);
  EXPECT_TRUE(impostor->WaitForStderr("identity_mismatch", nullptr))
      << impostor->Stderr();
  EXPECT_TRUE(Eventually([&] {
    return MetricValue(
               "fabricdiag_ingest_rejected_streams_total{reason="
               "\"identity_mismatch\"}") >= 1;
  }));
  EXPECT_TRUE(Node("gpu-001").is_null());
  // Without a client certificate there is no connection at all.
  cli_flags_ = {"--tls_ca=" + pki->ca_cert};
  EXPECT_EQ(Cli({"nodes"}).exit_code, 1);
}

// Scoped tokens through the real CLI and HTTP: a read token reads but
// cannot silence (the message names the scope), no token cannot even read,
// an admin token silences as its token's name; /metrics stays open.
TEST_F(SystemTest, ScopedTokensReadCannotSilenceAdminCan) {
  auto write = [this](const std::string& name, const std::string& text) {
    const std::string path = state_.path() + "/" + name;
    std::ofstream(path) << text;
    chmod(path.c_str(), 0600);
    return path;
  };
  token_file_ = write("tokens",
                      "ops admin admin-0123456789abcdef\n"
                      "grafana read read-0123456789abcdef\n");
  const std::string read = write("read", "read-0123456789abcdef\n");
  const std::string admin = write("admin", "admin-0123456789abcdef\n");
  StartCollector();
  const std::vector<std::string> silence = {"silence", "--matcher=node=gpu-000",
                                            "--for=1h", "--comment=RMA-7"};

  cli_flags_ = {"--token_file=" + read};
  RunResult r = Cli({"findings", "--json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  r = Cli(silence);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err,
              AllOf(HasSubstr("permission denied"), HasSubstr("\"grafana\""),
                    HasSubstr("needs the admin scope")));

  cli_flags_ = {"--token_file="};
  r = Cli({"findings"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("unauthenticated"));

  cli_flags_ = {"--token_file=" + admin};
  r = Cli(silence);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = Cli({"silences", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("\"who\":\"ops\""));

  absl::StatusOr<std::string> api = HttpGet(http_port_, "/api/v1/findings");
  ASSERT_FALSE(api.ok());
  EXPECT_THAT(api.status().message(), HasSubstr("401"));
  // /metrics is open, and counts the refusals above.
  EXPECT_GE(MetricValue("fabricdiag_api_refused_total{reason=\"scope\"}"), 1);
  EXPECT_GE(
      MetricValue("fabricdiag_api_refused_total{reason=\"unauthenticated\"}"),
      2);
}

TEST_F(SystemTest, CollectorRefusesBadConfigurationClearly) {
  RunResult r = RunCommand({kCollector, "--listen=nonsense"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--listen"));
  const std::string file = state_.path() + "/not-a-dir";
  std::ofstream(file) << "x";
  r = RunCommand({kCollector, "--listen=127.0.0.1:0",
                  "--http_listen=127.0.0.1:0", "--state_dir=" + file});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("--state_dir"));
  const std::string short_token = state_.path() + "/short";
  std::ofstream(short_token) << "abc\n";
  chmod(short_token.c_str(), 0600);
  r = RunCommand({kCollector, "--listen=127.0.0.1:0",
                  "--http_listen=127.0.0.1:0",
                  "--state_dir=" + state_.path() + "/s2",
                  "--auth_token_file=" + short_token});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("at least 16 characters"));
  // A token anyone on the host can read is refused, with the fix.
  const std::string open_token = state_.path() + "/open";
  std::ofstream(open_token) << "0123456789abcdef0123456789abcdef\n";
  chmod(open_token.c_str(), 0644);
  r = RunCommand({kCollector, "--listen=127.0.0.1:0",
                  "--http_listen=127.0.0.1:0",
                  "--state_dir=" + state_.path() + "/s3",
                  "--auth_token_file=" + open_token});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("chmod 600 " + open_token));
}

}  // namespace
}  // namespace fabricdiag
