// The real `fabricdiag` binary against a fake gRPC collector on loopback.
#include <netinet/in.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cli/fake_collector.h"
#include "tests/cli/test_env.h"
#include "tests/testing/subprocess.h"

namespace fabricdiag::cli {
namespace {

using fabricdiag::testing::RunCommand;
using fabricdiag::testing::RunResult;
using fabricdiag::testing::Subprocess;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::EndsWith;
using testing::FakeCollector;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing::kValidLayoutYaml;
using ::testing::Not;
using ::testing::StartsWith;
using testing::WriteTempFile;

const char kCli[] = FABRICDIAG_CLI_BINARY;

std::vector<std::string> Lines(const std::string& text) {
  return absl::StrSplit(text, '\n', absl::SkipEmpty());
}

// Polls the child's stdout until it has `n` lines (the child writes them
// as events arrive; there is nothing else to wait on).
bool WaitForStdoutLines(const Subprocess& p, size_t n, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (Lines(p.Stdout()).size() < n) {
    if (absl::Now() > deadline) return false;
    absl::SleepFor(absl::Milliseconds(20));
  }
  return true;
}

// A port nothing listens on, held (bound, not listening) for the object's
// lifetime: connecting is refused, and a server of a test running in
// parallel cannot take the port meanwhile.
class RefusingPort {
 public:
  RefusingPort() : fd_(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
      port_ = ntohs(addr.sin_port);
    }
  }
  ~RefusingPort() { ::close(fd_); }
  RefusingPort(const RefusingPort&) = delete;
  RefusingPort& operator=(const RefusingPort&) = delete;
  int port() const { return port_; }

 private:
  int fd_;
  int port_ = 0;
};

v1::Finding Finding(const std::string& id, v1::FindingState state) {
  v1::Finding f;
  f.set_id(id);
  f.set_kind("pfc_storm");
  f.set_severity(v1::SEVERITY_CRITICAL);
  f.set_state(state);
  f.set_job("moe-train-42");
  f.set_node("gpu-003");
  f.add_nodes("gpu-003");
  f.set_device("mlx5_2");
  f.set_summary("gpu-003 mlx5_2 transmits PFC pause");
  (*f.mutable_evidence())["tx_pause_fraction"] = 0.94;
  (*f.mutable_evidence())["priority"] = 3;
  f.set_first_seen_unix_nanos(1795316400LL * 1000000000LL);
  f.set_last_seen_unix_nanos(1795316405LL * 1000000000LL);
  return f;
}

class CliE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(collector.Start().ok());
    token_file = WriteTempFile("token", "s3cret\n");
  }
  RunResult Cli(std::vector<std::string> args, bool with_token = true) {
    std::vector<std::string> argv = {kCli,
                                     "--collector=" + collector.address()};
    if (with_token) argv.push_back("--token_file=" + token_file);
    argv.insert(argv.end(), args.begin(), args.end());
    return RunCommand(argv, absl::Seconds(30));
  }
  FakeCollector collector{"s3cret"};
  std::string token_file;
};

TEST_F(CliE2eTest, LayoutRoundTrip) {
  const std::string file = WriteTempFile("l.yaml", kValidLayoutYaml);
  RunResult r = Cli({"layout", "apply", file});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "layout moe-train-42 applied (new)\n");
  EXPECT_TRUE(collector.HasLayout("moe-train-42"));
  EXPECT_THAT(collector.write_authorizations(), ElementsAre("Bearer s3cret"));

  r = Cli({"layout", "apply", file});
  EXPECT_EQ(r.out, "layout moe-train-42 applied (replaced)\n");

  r = Cli({"layout", "list"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, AllOf(HasSubstr("JOB "), HasSubstr("moe-train-42  16 ")));

  // Flags after the command word work too (absl parses them anywhere).
  r = Cli({"layout", "show", "moe-train-42", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["parallelism"]["ep"], 4);

  r = Cli({"layout", "delete", "moe-train-42"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "layout moe-train-42 deleted\n");
  EXPECT_FALSE(collector.HasLayout("moe-train-42"));

  // Gone: not found (3), not a collector failure (1).
  r = Cli({"layout", "show", "moe-train-42"});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_THAT(r.err, AllOf(HasSubstr(collector.address()),
                           HasSubstr("not found"), HasSubstr("moe-train-42")));
}

TEST_F(CliE2eTest, LayoutApplyFromStdinShowsFindingsFromTheCollector) {
  // tp=4 over 2-GPU hosts: the fake raises tp_cross_node at once.
  const std::string file = WriteTempFile(
      "l.yaml",
      "job: x\ngpus_per_node: 2\nparallelism: {tp: 4, pp: 1, dp: 1}\n"
      "hosts: [a, b]\n");
  RunResult r = RunCommand(
      {"/bin/sh", "-c",
       absl::StrCat(kCli, " --collector=", collector.address(),
                    " --token_file=", token_file, " layout apply - < ", file)});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, AllOf(HasSubstr("layout x applied (new)"),
                           HasSubstr("tp_cross_node"), HasSubstr("tp:0")));
}

TEST_F(CliE2eTest, InvalidLayoutNeverReachesTheCollector) {
  const std::string file =
      WriteTempFile("l.yaml",
                    "job: x\ngpus_per_node: 8\nparallelism: {tp: 3, pp: 1, dp: "
                    "1}\nhosts: [a]\n");
  RunResult r = Cli({"layout", "apply", file});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr(file));
  EXPECT_THAT(collector.write_authorizations(), IsEmpty());
}

TEST_F(CliE2eTest, MissingTokenIsUnauthenticatedExitOne) {
  const std::string file = WriteTempFile("l.yaml", kValidLayoutYaml);
  RunResult r = Cli({"layout", "apply", file}, /*with_token=*/false);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(
      r.err, AllOf(HasSubstr("unauthenticated"), HasSubstr(collector.address()),
                   HasSubstr("--token_file")));
  EXPECT_FALSE(collector.HasLayout("moe-train-42"));

  const std::string wrong = WriteTempFile("wrong", "nope");
  r = RunCommand({kCli, "--collector=" + collector.address(),
                  "--token_file=" + wrong, "layout", "delete", "x"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("wrong bearer token"));
}

TEST_F(CliE2eTest, UnreadableTokenFileIsExitTwo) {
  RunResult r =
      RunCommand({kCli, "--collector=" + collector.address(),
                  "--token_file=/nonexistent/token", "layout", "list"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--token_file: cannot open /nonexistent/token"));
}

TEST_F(CliE2eTest, FindingsJsonAndTopology) {
  collector.AddFinding(Finding("f-000123", v1::FINDING_STATE_ACTIVE));
  collector.AddFinding(Finding("f-000100", v1::FINDING_STATE_RESOLVED));
  RunResult r = Cli({"findings", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j.size(), 1u);
  EXPECT_EQ(j[0]["id"], "f-000123");
  EXPECT_EQ(j[0]["evidence"]["priority"], 3);
  EXPECT_EQ(j[0]["last_seen"], "2026-11-22T03:00:05Z");

  r = Cli({"--all", "findings", "--json", "--kind=pfc_storm"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out).size(), 2u);

  const std::string topo =
      WriteTempFile("t.yaml",
                    "switches: [{name: leaf-0, uplinks: [swp49]}]\nlinks:\n"
                    "  - {host: a, nic: mlx5_0, switch: leaf-0, port: swp1}\n");
  r = Cli({"topology", "apply", topo});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = Cli({"topology", "show"});
  EXPECT_THAT(r.out, HasSubstr("name: leaf-0"));
}

TEST_F(CliE2eTest, Nodes) {
  v1::NodeStatus n;
  n.set_node("gpu-007");
  n.set_up(true);
  n.set_last_report_unix_nanos(absl::ToUnixNanos(absl::Now()));
  n.add_rdma_devices("mlx5_0");
  n.set_series(150);
  collector.AddNode(n);
  RunResult r = Cli({"nodes"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, AllOf(HasSubstr("NODE"), HasSubstr("gpu-007  up"),
                           HasSubstr("mlx5_0")));
  r = Cli({"nodes", "--json"});
  EXPECT_EQ(nlohmann::json::parse(r.out)[0]["series"], 150);
  EXPECT_TRUE(nlohmann::json::parse(r.out)[0]["collector"].is_null());
  EXPECT_THAT(r.out, Not(HasSubstr("COLLECTOR")));
}

// A collector of a cluster lists the other collectors' nodes too, with
// their liveness only.
TEST_F(CliE2eTest, NodesOfACluster) {
  v1::NodeStatus own;
  own.set_node("gpu-001");
  own.set_up(true);
  own.set_last_report_unix_nanos(absl::ToUnixNanos(absl::Now()));
  own.add_rdma_devices("mlx5_0");
  own.set_series(150);
  own.set_collector("col-a");
  collector.AddNode(own);
  v1::NodeStatus other;
  other.set_node("gpu-002");
  other.set_up(true);
  other.set_last_report_unix_nanos(absl::ToUnixNanos(absl::Now()));
  other.set_collector("col-b");
  other.set_remote(true);
  collector.AddNode(other);
  RunResult r = Cli({"nodes"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("COLLECTOR"));
  std::vector<std::string> lines = absl::StrSplit(r.out, '\n');
  ASSERT_GE(lines.size(), 3u) << r.out;
  EXPECT_THAT(lines[1], AllOf(StartsWith("gpu-001  up"), HasSubstr(" 150 "),
                              EndsWith("col-a")));
  EXPECT_THAT(lines[2], AllOf(StartsWith("gpu-002  up"), HasSubstr(" - "),
                              EndsWith("col-b")));
  r = Cli({"nodes", "--json"});
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j[0]["collector"], "col-a");
  EXPECT_EQ(j[0]["remote"], false);
  EXPECT_EQ(j[0]["series"], 150);
  EXPECT_EQ(j[1]["collector"], "col-b");
  EXPECT_EQ(j[1]["remote"], true);
  EXPECT_TRUE(j[1]["series"].is_null());
  EXPECT_TRUE(j[1]["gaps"].is_null());
  EXPECT_EQ(j[1]["up"], true);
}

TEST_F(CliE2eTest, WatchStreamsEventsUntilSigint) {
  collector.AddFinding(Finding("f-1", v1::FINDING_STATE_ACTIVE));
  Subprocess watch({kCli, "--collector=" + collector.address(), "watch",
                    "--json", "--job=moe-train-42"});
  ASSERT_TRUE(watch.Start().ok());
  ASSERT_TRUE(collector.WaitForWatchers(1, absl::Seconds(20)));
  v1::FindingEvent e;
  e.set_kind(v1::FindingEvent::OPENED);
  *e.mutable_finding() = Finding("f-2", v1::FINDING_STATE_ACTIVE);
  collector.Publish(e);
  e.set_kind(v1::FindingEvent::UPDATED);
  collector.Publish(e);
  e.set_kind(v1::FindingEvent::RESOLVED);
  e.mutable_finding()->set_state(v1::FINDING_STATE_RESOLVED);
  collector.Publish(e);
  v1::FindingEvent other = e;  // another job: filtered by the collector
  other.mutable_finding()->set_job("other");
  collector.Publish(other);
  ASSERT_TRUE(WaitForStdoutLines(watch, 4, absl::Seconds(20)))
      << watch.Stdout() << watch.Stderr();

  watch.Signal(SIGINT);
  EXPECT_EQ(watch.Wait(absl::Seconds(20)), 0) << watch.Stderr();
  const std::vector<std::string> lines = Lines(watch.Stdout());
  ASSERT_EQ(lines.size(), 4u);
  std::vector<std::string> events;
  for (const std::string& line : lines) {
    events.push_back(nlohmann::json::parse(line)["event"]);
  }
  EXPECT_THAT(events, ElementsAre("SNAPSHOT", "OPENED", "UPDATED", "RESOLVED"));
  EXPECT_EQ(nlohmann::json::parse(lines[3])["resolved_at"], nullptr);
  // The RPC was cancelled, not abandoned.
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (collector.cancelled_watches() < 1 && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(20));
  }
  EXPECT_EQ(collector.cancelled_watches(), 1);
}

TEST_F(CliE2eTest, WatchReconnectsWhenTheCollectorRestarts) {
  Subprocess watch({kCli, "--collector=" + collector.address(), "watch"});
  ASSERT_TRUE(watch.Start().ok());
  ASSERT_TRUE(collector.WaitForWatchers(1, absl::Seconds(20)));
  const int port = collector.port();
  collector.Shutdown();
  ASSERT_TRUE(watch.WaitForStderr("lost the watch", nullptr)) << watch.Stderr();

  FakeCollector restarted;
  ASSERT_TRUE(restarted.Start(port).ok());
  ASSERT_TRUE(watch.WaitForStderr("reconnected", nullptr, absl::Seconds(30)))
      << watch.Stderr();
  ASSERT_TRUE(restarted.WaitForWatchers(1, absl::Seconds(20)));
  v1::FindingEvent e;
  e.set_kind(v1::FindingEvent::OPENED);
  *e.mutable_finding() = Finding("f-9", v1::FINDING_STATE_ACTIVE);
  restarted.Publish(e);
  ASSERT_TRUE(WaitForStdoutLines(watch, 1, absl::Seconds(20)));
  EXPECT_THAT(watch.Stdout(), HasSubstr("OPENED critical pfc_storm"));
  watch.Signal(SIGINT);
  EXPECT_EQ(watch.Wait(absl::Seconds(20)), 0);
}

TEST(CliE2eNoCollectorTest, UnreachableCollectorIsExitOneNamingTheAddress) {
  RefusingPort refusing;
  ASSERT_GT(refusing.port(), 0);
  const std::string address = absl::StrCat("127.0.0.1:", refusing.port());
  for (std::vector<std::string> args : {std::vector<std::string>{"findings"},
                                        {"nodes", "--json"},
                                        {"layout", "list"},
                                        {"watch"}}) {
    std::vector<std::string> argv = {kCli, "--collector=" + address};
    argv.insert(argv.end(), args.begin(), args.end());
    RunResult r = RunCommand(argv, absl::Seconds(30));
    EXPECT_EQ(r.exit_code, 1) << args[0];
    EXPECT_EQ(r.err, absl::StrCat("fabricdiag: cannot reach collector ",
                                  address, ": connection refused\n"))
        << args[0];
    EXPECT_THAT(r.out, IsEmpty());
  }
}

// With a list, each command uses the first collector that answers: a dead
// one ahead of a live one costs a refused connection, not the command.
TEST_F(CliE2eTest, ListSkipsACollectorThatRefuses) {
  RefusingPort refusing;
  ASSERT_GT(refusing.port(), 0);
  const std::string dead = absl::StrCat("127.0.0.1:", refusing.port());
  for (std::vector<std::string> args :
       {std::vector<std::string>{"nodes", "--json"}, {"layout", "list"}}) {
    std::vector<std::string> argv = {
        kCli, absl::StrCat("--collector=", dead, ",", collector.address())};
    argv.insert(argv.end(), args.begin(), args.end());
    RunResult r = RunCommand(argv, absl::Seconds(30));
    EXPECT_EQ(r.exit_code, 0) << args[0] << ": " << r.err;
    EXPECT_THAT(r.err, IsEmpty());
  }
  // An application error of the live collector is its answer, not a reason
  // to look elsewhere.
  RunResult r = RunCommand(
      {kCli, absl::StrCat("--collector=", collector.address(), ",", dead),
       "layout", "show", "no-such-job"},
      absl::Seconds(30));
  EXPECT_EQ(r.exit_code, 3);  // not found
  EXPECT_THAT(r.err, HasSubstr(collector.address()));
  EXPECT_THAT(r.err, Not(HasSubstr(dead)));
}

TEST(CliE2eNoCollectorTest, NoCollectorOfTheListAnsweringNamesEveryAddress) {
  RefusingPort first;
  RefusingPort second;
  ASSERT_GT(first.port(), 0);
  ASSERT_GT(second.port(), 0);
  const std::string a = absl::StrCat("127.0.0.1:", first.port());
  const std::string b = absl::StrCat("127.0.0.1:", second.port());
  for (std::vector<std::string> args :
       {std::vector<std::string>{"findings"}, {"watch"}}) {
    std::vector<std::string> argv = {kCli,
                                     absl::StrCat("--collector=", a, ",", b)};
    argv.insert(argv.end(), args.begin(), args.end());
    RunResult r = RunCommand(argv, absl::Seconds(30));
    EXPECT_EQ(r.exit_code, 1) << args[0];
    EXPECT_EQ(r.err, absl::StrCat("fabricdiag: no collector answered: "
                                  "cannot reach collector ",
                                  a,
                                  ": connection refused; cannot reach "
                                  "collector ",
                                  b, ": connection refused\n"))
        << args[0];
  }
}

TEST(CliE2eNoCollectorTest, UsageErrorsAreExitTwo) {
  RunResult r = RunCommand({kCli, "frobnicate"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, AllOf(HasSubstr("unknown command \"frobnicate\""),
                           HasSubstr("usage:")));
  r = RunCommand({kCli, "--no_such_flag", "nodes"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("unknown flag --no_such_flag"));
  r = RunCommand({kCli, "nodes", "--timeout=soon"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--timeout"));
  r = RunCommand({kCli});
  EXPECT_EQ(r.exit_code, 2);
  r = RunCommand({kCli, "--help"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_THAT(r.out, HasSubstr("usage: fabricdiag"));
}

TEST(CliE2eNoCollectorTest, PlanRunsOffline) {
  const std::string file = WriteTempFile("l.yaml", kValidLayoutYaml);
  RunResult r =
      RunCommand({kCli, "--collector=127.0.0.1:1", "plan", file, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["ranks"], 16);
}

// Hostile files within the 16 MiB size limit are refused before a parser
// builds anything: 15 MB of "[" took 3.5 GB and 17 s, 5M flow values 1.4 GB
// and 10 s, in yaml-cpp's scanner, which reads a flow collection ahead.
// Each runs in its own process; RUSAGE_CHILDREN reports the largest.
TEST(CliInputLimitsTest, HostileYamlIsRefusedWithoutBuildingIt) {
  const std::string brackets =
      WriteTempFile("brackets.yaml", std::string(15000000, '['));
  RunResult r = RunCommand({kCli, "plan", brackets}, absl::Seconds(60));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("nests deeper than 32 levels (line 1)"));

  std::string flat = "hosts: [";
  for (int i = 0; i < 2000000; ++i) flat += "a, ";
  flat += "]\n";
  r = RunCommand({kCli, "plan", WriteTempFile("flat.yaml", flat)},
                 absl::Seconds(60));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("has more than 1000000 values"));

  struct rusage usage {};
  ASSERT_EQ(getrusage(RUSAGE_CHILDREN, &usage), 0);
  EXPECT_LT(usage.ru_maxrss, 512 * 1024) << "KiB";  // ASan builds included
}

}  // namespace
}  // namespace fabricdiag::cli
