// findings, watch and nodes against the in-memory client.
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_split.h"
#include "absl/synchronization/notification.h"
#include "cli/commands.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cli/finding_fixtures.h"
#include "tests/cli/test_env.h"
#include "tests/client/fake_collector_client.h"

namespace fabricdiag::cli {
namespace {

using client::testing::FakeCollectorClient;
using ::testing::AllOf;
using testing::At;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing::kExampleUnixSeconds;
using testing::MakeFinding;
using ::testing::Not;
using testing::TestEnv;

std::vector<std::string> Lines(const std::string& text) {
  return absl::StrSplit(text, '\n', absl::SkipEmpty());
}

class FindingsCommandsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    client.findings.push_back(
        MakeFinding("f-1", "congestion", v1::SEVERITY_WARNING, 0));
    client.findings.push_back(
        MakeFinding("f-2", "pfc_storm", v1::SEVERITY_CRITICAL, 60));
    v1::Finding resolved =
        MakeFinding("f-3", "link_flap", v1::SEVERITY_INFO, 0);
    resolved.set_state(v1::FINDING_STATE_RESOLVED);
    resolved.set_resolved_unix_nanos(At(30));
    resolved.set_job("");
    resolved.set_group("");
    client.findings.push_back(resolved);
  }
  FakeCollectorClient client;
  TestEnv t;
  CommandOptions options;
};

TEST_F(FindingsCommandsTest, TableMostSevereFirstWithAges) {
  EXPECT_EQ(FindingsCommand(client, options, t.env), kExitOk);
  EXPECT_EQ(t.out.str(),
            "SEVERITY  KIND        JOB           GROUP  NODE     DEVICE  AGE  "
            "SUMMARY\n"
            "critical  pfc_storm   moe-train-42  -      gpu-003  mlx5_2  5s   "
            "pfc_storm on gpu-003 mlx5_2\n"
            "warning   congestion  moe-train-42  -      gpu-003  mlx5_2  65s  "
            "congestion on gpu-003 mlx5_2\n");
  EXPECT_EQ(client.last_findings_request.state(), v1::FINDING_STATE_ACTIVE);
  EXPECT_FALSE(client.last_findings_request.all());
}

TEST_F(FindingsCommandsTest, AllAddsStateColumnAndResolved) {
  options.all = true;
  EXPECT_EQ(FindingsCommand(client, options, t.env), kExitOk);
  EXPECT_TRUE(client.last_findings_request.all());
  const std::vector<std::string> lines = Lines(t.out.str());
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_THAT(lines[0], HasSubstr("SEVERITY  STATE     KIND"));
  EXPECT_THAT(lines[3], AllOf(HasSubstr("info      resolved  link_flap")));
}

TEST_F(FindingsCommandsTest, FiltersGoToTheCollector) {
  options.job = "moe-train-42";
  options.kind = "pfc_storm";
  EXPECT_EQ(FindingsCommand(client, options, t.env), kExitOk);
  EXPECT_EQ(client.last_findings_request.job(), "moe-train-42");
  EXPECT_EQ(client.last_findings_request.kind(), "pfc_storm");
  EXPECT_EQ(Lines(t.out.str()).size(), 2u);
}

// The collector answers 1,000 findings a page: the CLI follows every page.
TEST_F(FindingsCommandsTest, FollowsEveryPage) {
  client.findings_page_size = 1;
  options.all = true;
  options.json = true;
  EXPECT_EQ(FindingsCommand(client, options, t.env), kExitOk);
  EXPECT_EQ(client.findings_calls, 3);
  EXPECT_EQ(nlohmann::json::parse(t.out.str()).size(), 3u);
}

TEST_F(FindingsCommandsTest, WindowAndFiltersGoToTheCollector) {
  options.since = "2h";
  options.until = "2026-11-22T03:30:00Z";
  options.node = "gpu-003";
  options.device = "mlx5_2";
  options.severity = "warning";
  EXPECT_EQ(FindingsCommand(client, options, t.env), kExitOk) << t.err.str();
  const v1::ListFindingsRequest& r = client.last_findings_request;
  EXPECT_EQ(r.since_unix_nanos(),
            absl::ToUnixNanos(t.clock.Now() - absl::Hours(2)));
  EXPECT_EQ(r.until_unix_nanos(),
            absl::ToUnixNanos(absl::FromUnixSeconds(kExampleUnixSeconds) +
                              absl::Minutes(30)));
  EXPECT_EQ(r.node(), "gpu-003");
  EXPECT_EQ(r.device(), "mlx5_2");
  EXPECT_EQ(r.min_severity(), v1::SEVERITY_WARNING);
  // A window lists resolved findings: the table says each one's state.
  EXPECT_THAT(t.out.str(), HasSubstr("STATE"));
}

// Each bad flag: exit 2 naming it, and nothing asked of the collector.
TEST_F(FindingsCommandsTest, BadFlagsAreExitTwoNamingTheFlag) {
  struct Case {
    CommandOptions options;
    std::string error;
  };
  std::vector<Case> cases(6);
  cases[0].options.kind = "pfc_strom";
  cases[0].error =
      "fabricdiag: --kind: unknown finding kind \"pfc_strom\"; known kinds: "
      "agent_down, agent_missing, cabling_mismatch, congestion, "
      "ecmp_imbalance, "
      "hot_expert_incast, link_degraded, link_errors, link_flap, pfc_storm, "
      "retransmissions, straggler_nic, tp_cross_node\n";
  cases[1].options.severity = "loud";
  cases[1].error =
      "fabricdiag: --severity: unknown severity \"loud\" (one of info, "
      "warning, critical)\n";
  cases[2].options.since = "yesterday";
  cases[2].error =
      "fabricdiag: --since: \"yesterday\" is neither a duration ago (2h, "
      "30m, 7d) nor an RFC 3339 time (2026-11-29T10:00:00Z)\n";
  cases[3].options.until = "2026-11-22 03:00";
  cases[3].error = "fabricdiag: --until: \"2026-11-22 03:00\" is neither";
  cases[4].options.since = "1h";
  cases[4].options.until = "2h";
  cases[4].error =
      "fabricdiag: --until: 2h (2026-11-22T01:01:05Z) is before --since 1h "
      "(2026-11-22T02:01:05Z)\n";
  cases[5].options.since = "-1h";
  cases[5].error = "fabricdiag: --since: \"-1h\" is neither";
  for (const Case& c : cases) {
    TestEnv env;
    EXPECT_EQ(FindingsCommand(client, c.options, env.env), kExitInvalid)
        << c.error;
    EXPECT_THAT(env.err.str(), ::testing::StartsWith(c.error));
    EXPECT_EQ(env.out.str(), "");
  }
  EXPECT_EQ(client.calls, 0);
}

// The collector judges the job (only it knows the jobs): its
// InvalidArgument is exit 2; NotFound is 3; the rest 1.
TEST_F(FindingsCommandsTest, CollectorErrorsMapToExitStatuses) {
  client.fail = absl::InvalidArgumentError(
      "collector fake:9811: invalid argument: job: unknown job \"typo\" (no "
      "layout and no finding names it); known jobs: moe-train-42");
  options.job = "typo";
  EXPECT_EQ(FindingsCommand(client, options, t.env), kExitInvalid);
  EXPECT_THAT(t.err.str(), HasSubstr("known jobs: moe-train-42"));
  TestEnv missing;
  client.fail = absl::NotFoundError("collector fake:9811: not found");
  EXPECT_EQ(FindingsCommand(client, options, missing.env), kExitNotFound);
}

TEST_F(FindingsCommandsTest, JsonIsAnArrayOfInterfaceObjects) {
  options.json = true;
  options.all = true;
  EXPECT_EQ(FindingsCommand(client, options, t.env), kExitOk);
  const nlohmann::json j = nlohmann::json::parse(t.out.str());
  ASSERT_TRUE(j.is_array());
  ASSERT_EQ(j.size(), 3u);
  EXPECT_EQ(j[0]["id"], "f-2");
  EXPECT_EQ(j[0]["severity"], "critical");
  EXPECT_EQ(j[0]["first_seen"], "2026-11-22T03:01:00Z");
  EXPECT_EQ(j[2]["state"], "resolved");
  EXPECT_EQ(j[2]["resolved_at"], "2026-11-22T03:00:30Z");
  EXPECT_EQ(j[2]["job"], "");
}

TEST_F(FindingsCommandsTest, EmptyJsonIsEmptyArrayAndTableSaysSo) {
  client.findings.clear();
  EXPECT_EQ(FindingsCommand(client, options, t.env), kExitOk);
  EXPECT_EQ(t.out.str(), "no active findings\n");
  TestEnv json_env;
  options.json = true;
  EXPECT_EQ(FindingsCommand(client, options, json_env.env), kExitOk);
  EXPECT_EQ(json_env.out.str(), "[]\n");
}

// A collector that cannot see the cluster's findings: a line first, the
// table still; --json stays an array whose findings say it, the line on
// stderr.
TEST_F(FindingsCommandsTest, StaleFindingsAreSaidToBeStale) {
  client.staleness.set_stale(true);
  client.staleness.set_age_seconds(42.7);
  EXPECT_EQ(FindingsCommand(client, options, t.env), kExitOk);
  const std::vector<std::string> lines = Lines(t.out.str());
  ASSERT_EQ(lines.size(), 4u) << t.out.str();
  EXPECT_EQ(lines[0],
            "findings stale: this collector has not seen the cluster's "
            "findings for 42 s; what it shows may be out of date (its "
            "/healthz says why)");
  EXPECT_THAT(lines[1], HasSubstr("SEVERITY"));

  TestEnv json_env;
  options.json = true;
  EXPECT_EQ(FindingsCommand(client, options, json_env.env), kExitOk);
  const nlohmann::json j = nlohmann::json::parse(json_env.out.str());
  ASSERT_TRUE(j.is_array());
  ASSERT_EQ(j.size(), 2u);
  EXPECT_EQ(j[0]["stale_seconds"], 42);
  EXPECT_EQ(j[1]["stale_seconds"], 42);
  EXPECT_THAT(json_env.err.str(), HasSubstr("findings stale: "));
}

TEST_F(FindingsCommandsTest, CurrentFindingsSayNothingOfStaleness) {
  client.staleness.set_age_seconds(0.4);
  EXPECT_EQ(FindingsCommand(client, options, t.env), kExitOk);
  EXPECT_THAT(t.out.str(), Not(HasSubstr("stale")));
  options.json = true;
  TestEnv json_env;
  EXPECT_EQ(FindingsCommand(client, options, json_env.env), kExitOk);
  EXPECT_FALSE(
      nlohmann::json::parse(json_env.out.str())[0].contains("stale_seconds"));
  EXPECT_THAT(json_env.err.str(), IsEmpty());
}

TEST_F(FindingsCommandsTest, HostileSummaryCannotDrawOnTheTerminal) {
  client.findings[0].set_summary("evil\x1b[2J\nFAKE LINE");
  EXPECT_EQ(FindingsCommand(client, options, t.env), kExitOk);
  EXPECT_THAT(t.out.str(), Not(HasSubstr("\x1b")));
  EXPECT_THAT(t.out.str(), HasSubstr("evil?[2J?FAKE LINE"));
  EXPECT_EQ(Lines(t.out.str()).size(), 3u);
}

TEST_F(FindingsCommandsTest, CollectorDownIsExitOne) {
  client.fail = absl::UnavailableError(
      "cannot reach collector fake:9811: connection refused");
  EXPECT_EQ(FindingsCommand(client, options, t.env), kExitCollector);
  EXPECT_EQ(t.err.str(),
            "fabricdiag: cannot reach collector fake:9811: connection "
            "refused\n");
  EXPECT_THAT(t.out.str(), IsEmpty());
}

v1::FindingEvent Event(v1::FindingEvent::Kind kind, const v1::Finding& f) {
  v1::FindingEvent e;
  e.set_kind(kind);
  *e.mutable_finding() = f;
  return e;
}

// Records what had been flushed each time the stream was synced, so a test
// can tell whether a line reached the pipe at once.
class SyncRecordingBuf : public std::stringbuf {
 public:
  std::vector<std::string> synced;

 protected:
  int sync() override {
    synced.push_back(str());
    return 0;
  }
};

TEST_F(FindingsCommandsTest, WatchPrintsAndFlushesEachEventUntilInterrupted) {
  absl::Notification interrupted;
  t.env.interrupted = &interrupted;
  FakeCollectorClient::WatchSession session;
  session.events = {Event(v1::FindingEvent::SNAPSHOT, client.findings[0]),
                    Event(v1::FindingEvent::OPENED, client.findings[1])};
  v1::Finding resolved = client.findings[1];
  resolved.set_state(v1::FINDING_STATE_RESOLVED);
  resolved.set_resolved_unix_nanos(At(90));
  session.events.push_back(Event(v1::FindingEvent::RESOLVED, resolved));
  // Ctrl-C while streaming: the interrupt is set and the call is cancelled.
  session.interrupt = &interrupted;
  session.end = absl::CancelledError("watch cancelled");
  client.watch_sessions.push_back(session);
  SyncRecordingBuf buf;
  std::ostream out(&buf);
  t.env.out = &out;
  options.job = "moe-train-42";

  EXPECT_EQ(WatchCommand(client, options, t.env), kExitOk);
  EXPECT_EQ(client.watch_calls, 1);
  EXPECT_EQ(client.last_watch_job, "moe-train-42");
  EXPECT_THAT(t.err.str(), IsEmpty());
  const std::vector<std::string> lines = Lines(buf.str());
  ASSERT_EQ(lines.size(), 3u) << buf.str();
  EXPECT_EQ(lines[0],
            "2026-11-22T03:00:05Z SNAPSHOT warning congestion node=gpu-003 "
            "device=mlx5_2 job=moe-train-42 group=- f-1: congestion on "
            "gpu-003 mlx5_2");
  EXPECT_THAT(lines[1], HasSubstr("2026-11-22T03:01:05Z OPENED critical "
                                  "pfc_storm"));
  EXPECT_THAT(lines[2], HasSubstr("2026-11-22T03:01:30Z RESOLVED critical"));
  // Every line was flushed as soon as it was written.
  ASSERT_GE(buf.synced.size(), 3u);
  EXPECT_EQ(Lines(buf.synced[0]).size(), 1u);
  EXPECT_EQ(Lines(buf.synced[1]).size(), 2u);
  EXPECT_EQ(Lines(buf.synced[2]).size(), 3u);
}

TEST_F(FindingsCommandsTest, WatchPrintsUpdatesOnSeverityChangeOrEvery30s) {
  absl::Notification interrupted;
  t.env.interrupted = &interrupted;
  client.after_last_session = &interrupted;
  const int64_t t0 = absl::ToUnixNanos(absl::FromUnixSeconds(1'800'000'000));
  auto at = [&](v1::FindingEvent::Kind kind, int seconds, v1::Severity sev) {
    v1::Finding f = client.findings[0];
    f.set_severity(sev);
    f.set_last_seen_unix_nanos(t0 + int64_t{seconds} * 1'000'000'000);
    if (kind == v1::FindingEvent::RESOLVED) {
      f.set_resolved_unix_nanos(f.last_seen_unix_nanos());
    }
    return Event(kind, f);
  };
  FakeCollectorClient::WatchSession session;
  session.events = {
      at(v1::FindingEvent::OPENED, 0, v1::SEVERITY_WARNING),
      at(v1::FindingEvent::UPDATED, 1, v1::SEVERITY_WARNING),    // quiet
      at(v1::FindingEvent::UPDATED, 29, v1::SEVERITY_WARNING),   // quiet
      at(v1::FindingEvent::UPDATED, 30, v1::SEVERITY_WARNING),   // 30 s on
      at(v1::FindingEvent::UPDATED, 31, v1::SEVERITY_CRITICAL),  // escalated
      at(v1::FindingEvent::UPDATED, 32, v1::SEVERITY_CRITICAL),  // quiet
      at(v1::FindingEvent::RESOLVED, 33, v1::SEVERITY_CRITICAL),
  };
  client.watch_sessions.push_back(session);
  ASSERT_EQ(WatchCommand(client, options, t.env), kExitOk);
  std::vector<std::string> events;
  for (const std::string& line : Lines(t.out.str())) {
    events.push_back(line.substr(21, line.find(' ', 21) - 21));
  }
  EXPECT_THAT(events, ElementsAre("OPENED", "UPDATED", "UPDATED", "RESOLVED"));

  // --json is for programs: every event.
  options.json = true;
  t.out.str("");
  absl::Notification interrupted_again;
  t.env.interrupted = &interrupted_again;
  client.after_last_session = &interrupted_again;
  client.watch_calls = 0;
  client.watch_sessions = {session};
  ASSERT_EQ(WatchCommand(client, options, t.env), kExitOk);
  EXPECT_EQ(Lines(t.out.str()).size(), 7u);
}

v1::FindingEvent StalenessEvent(bool stale, double age_seconds) {
  v1::FindingEvent e;
  e.set_kind(v1::FindingEvent::STALENESS);
  e.mutable_staleness()->set_stale(stale);
  e.mutable_staleness()->set_age_seconds(age_seconds);
  return e;
}

// The findings turn stale and current again while watched: a line each,
// not mistaken for a finding.
TEST_F(FindingsCommandsTest, WatchSaysWhenTheFindingsTurnStaleAndBack) {
  absl::Notification interrupted;
  t.env.interrupted = &interrupted;
  client.after_last_session = &interrupted;
  FakeCollectorClient::WatchSession session;
  session.events = {Event(v1::FindingEvent::SNAPSHOT, client.findings[1]),
                    StalenessEvent(true, 5.6), StalenessEvent(false, 0.2),
                    Event(v1::FindingEvent::RESOLVED, client.findings[1])};
  client.watch_sessions.push_back(session);
  ASSERT_EQ(WatchCommand(client, options, t.env), kExitOk);
  const std::vector<std::string> lines = Lines(t.out.str());
  ASSERT_EQ(lines.size(), 4u) << t.out.str();
  EXPECT_EQ(lines[1],
            "2026-11-22T03:01:05Z STALE findings stale: this collector has "
            "not seen the cluster's findings for 5 s; what it shows may be "
            "out of date (its /healthz says why)");
  EXPECT_EQ(lines[2],
            "2026-11-22T03:01:05Z CURRENT findings current again: this "
            "collector sees the cluster's findings");
  EXPECT_THAT(lines[3], HasSubstr("RESOLVED critical pfc_storm"));

  options.json = true;
  t.out.str("");
  absl::Notification interrupted_again;
  t.env.interrupted = &interrupted_again;
  client.after_last_session = &interrupted_again;
  client.watch_calls = 0;
  client.watch_sessions = {session};
  ASSERT_EQ(WatchCommand(client, options, t.env), kExitOk);
  const std::vector<std::string> json = Lines(t.out.str());
  ASSERT_EQ(json.size(), 4u);
  EXPECT_EQ(
      nlohmann::json::parse(json[1]),
      nlohmann::json::parse(
          R"({"event": "STALENESS", "stale": true, "age_seconds": 5.6})"));
  EXPECT_EQ(nlohmann::json::parse(json[2])["stale"], false);
}

TEST_F(FindingsCommandsTest, WatchInterruptedBeforeStartReturnsAtOnce) {
  absl::Notification interrupted;
  interrupted.Notify();
  t.env.interrupted = &interrupted;
  EXPECT_EQ(WatchCommand(client, options, t.env), kExitOk);
  EXPECT_EQ(client.watch_calls, 0);
}

TEST_F(FindingsCommandsTest, WatchJsonIsNdjsonWithEventField) {
  absl::Notification interrupted;
  t.env.interrupted = &interrupted;
  client.after_last_session = &interrupted;
  options.json = true;
  FakeCollectorClient::WatchSession session;
  session.events = {Event(v1::FindingEvent::OPENED, client.findings[1]),
                    Event(v1::FindingEvent::UPDATED, client.findings[1])};
  client.watch_sessions.push_back(session);
  EXPECT_EQ(WatchCommand(client, options, t.env), kExitOk);
  const std::vector<std::string> lines = Lines(t.out.str());
  ASSERT_EQ(lines.size(), 2u);
  const nlohmann::json first = nlohmann::json::parse(lines[0]);
  EXPECT_EQ(first["event"], "OPENED");
  EXPECT_EQ(first["id"], "f-2");
  EXPECT_EQ(first["kind"], "pfc_storm");
  EXPECT_EQ(nlohmann::json::parse(lines[1])["event"], "UPDATED");
}

TEST_F(FindingsCommandsTest, WatchReconnectsAfterTheCollectorGoesAway) {
  absl::Notification interrupted;
  t.env.interrupted = &interrupted;
  client.after_last_session = &interrupted;
  FakeCollectorClient::WatchSession first;
  first.events = {Event(v1::FindingEvent::OPENED, client.findings[0])};
  first.end = absl::UnavailableError(
      "cannot reach collector fake:9811: connection lost");
  FakeCollectorClient::WatchSession refused;  // collector still restarting
  refused.connected = false;
  refused.end = absl::UnavailableError(
      "cannot reach collector fake:9811: connection refused");
  FakeCollectorClient::WatchSession back;
  back.events = {Event(v1::FindingEvent::SNAPSHOT, client.findings[0])};
  back.end = absl::OkStatus();  // the collector shut down cleanly
  client.watch_sessions = {first, refused, back};

  EXPECT_EQ(WatchCommand(client, options, t.env), kExitOk);
  EXPECT_EQ(client.watch_calls, 4);
  EXPECT_EQ(Lines(t.out.str()).size(), 2u);
  // One message per outage, not one per attempt.
  EXPECT_EQ(t.err.str(),
            "fabricdiag: lost the watch on collector fake:9811: cannot reach "
            "collector fake:9811: connection lost; reconnecting (Ctrl-C to "
            "stop)\n"
            "fabricdiag: reconnected to collector fake:9811\n"
            "fabricdiag: lost the watch on collector fake:9811: the collector "
            "ended the stream; reconnecting (Ctrl-C to stop)\n");
}

TEST_F(FindingsCommandsTest, WatchUnreachableAtStartIsExitOne) {
  FakeCollectorClient::WatchSession refused;
  refused.connected = false;
  refused.end = absl::UnavailableError(
      "cannot reach collector fake:9811: connection refused");
  client.watch_sessions = {refused};
  EXPECT_EQ(WatchCommand(client, options, t.env), kExitCollector);
  EXPECT_EQ(client.watch_calls, 1);
  EXPECT_EQ(t.err.str(),
            "fabricdiag: cannot reach collector fake:9811: connection "
            "refused\n");
}

TEST_F(FindingsCommandsTest, WatchStopsOnPermanentErrors) {
  FakeCollectorClient::WatchSession denied;
  denied.connected = true;
  denied.end = absl::UnauthenticatedError(
      "collector fake:9811: unauthenticated: bad token");
  client.watch_sessions = {denied, denied};
  EXPECT_EQ(WatchCommand(client, options, t.env), kExitCollector);
  EXPECT_EQ(client.watch_calls, 1);
  EXPECT_THAT(t.err.str(), HasSubstr("unauthenticated"));
}

TEST_F(FindingsCommandsTest, NodesTableAndJson) {
  v1::NodeStatus* up = client.nodes.add_nodes();
  up->set_node("gpu-001");
  up->set_up(true);
  up->set_last_report_unix_nanos(At(64));
  up->add_rdma_devices("mlx5_0");
  up->add_rdma_devices("mlx5_1");
  up->add_netdevs("eth0");
  up->set_series(300);
  up->set_agent_version("0.1.0");
  v1::NodeStatus* down = client.nodes.add_nodes();
  down->set_node("gpu-000");
  down->set_up(false);
  down->set_last_report_unix_nanos(At(0));
  down->set_gaps(7);
  EXPECT_EQ(NodesCommand(client, options, t.env), kExitOk);
  EXPECT_EQ(
      t.out.str(),
      "NODE     STATUS  LAST_REPORT           AGE  SERIES  GAPS  NETDEVS  "
      "DEVICES\n"
      "gpu-000  down    2026-11-22T03:00:00Z  65s  0       7     0        "
      "-\n"
      "gpu-001  up      2026-11-22T03:01:04Z  1s   300     0     1        "
      "mlx5_0,mlx5_1\n");

  TestEnv json_env;
  options.json = true;
  EXPECT_EQ(NodesCommand(client, options, json_env.env), kExitOk);
  const nlohmann::json j = nlohmann::json::parse(json_env.out.str());
  ASSERT_EQ(j.size(), 2u);
  EXPECT_EQ(j[0]["node"], "gpu-000");
  EXPECT_EQ(j[0]["up"], false);
  EXPECT_EQ(j[0]["gaps"], 7);
  EXPECT_EQ(j[1]["last_report_age_seconds"], 1);
  EXPECT_THAT(j[1]["rdma_devices"].get<std::vector<std::string>>(),
              ElementsAre("mlx5_0", "mlx5_1"));
}

// ...and those whose agents their collector handed to another one are on
// their way, said apart.
TEST_F(FindingsCommandsTest, NodesOfAQuietCollectorAreUnobservedNotDown) {
  v1::NodeStatus* own = client.nodes.add_nodes();
  own->set_node("gpu-001");
  own->set_up(true);
  own->set_last_report_unix_nanos(At(64));
  own->set_collector("col-a");
  // col-b's features stopped arriving at 0:30; gpu-002 was up then.
  for (const char* name : {"gpu-002", "gpu-003"}) {
    v1::NodeStatus* lost = client.nodes.add_nodes();
    lost->set_node(name);
    lost->set_up(true);
    lost->set_last_report_unix_nanos(At(29));
    lost->set_collector("col-b");
    lost->set_remote(true);
    lost->set_unobserved(true);
    lost->set_unobserved_since_unix_nanos(At(30));
  }
  client.nodes.mutable_nodes(2)->set_unobserved_since_unix_nanos(At(35));
  // col-b handed gpu-004's agent to another collector at 0:50, where it has
  // not reported yet; col-a handed gpu-005's at 0:55.
  for (const auto& [name, from, at] :
       std::vector<std::tuple<std::string, std::string, int>>{
           {"gpu-004", "col-b", 50}, {"gpu-005", "col-a", 55}}) {
    v1::NodeStatus* moving = client.nodes.add_nodes();
    moving->set_node(name);
    moving->set_up(true);
    moving->set_last_report_unix_nanos(At(at - 1));
    moving->set_collector(from);
    moving->set_remote(from != "col-a");
    moving->set_unobserved(true);
    moving->set_unobserved_since_unix_nanos(At(at - 1));
    moving->set_handed_off_unix_nanos(At(at));
  }
  EXPECT_EQ(NodesCommand(client, options, t.env), kExitOk);
  EXPECT_EQ(t.out.str(),
            "NODE     STATUS      LAST_REPORT           AGE  SERIES  GAPS  "
            "NETDEVS  DEVICES  COLLECTOR\n"
            "gpu-001  up          2026-11-22T03:01:04Z  1s   0       0     "
            "0        -        col-a\n"
            "gpu-002  unobserved  2026-11-22T03:00:29Z  36s  -       -     "
            "-        -        col-b\n"
            "gpu-003  unobserved  2026-11-22T03:00:29Z  36s  -       -     "
            "-        -        col-b\n"
            "gpu-004  unobserved  2026-11-22T03:00:49Z  16s  -       -     "
            "-        -        col-b\n"
            "gpu-005  unobserved  2026-11-22T03:00:54Z  11s  0       0     "
            "0        -        col-a\n"
            "moving: 1 node(s) handed off by collector col-a since "
            "2026-11-22T03:00:55Z (10s ago): their agents are on their way "
            "to another collector, so their state is as of their last "
            "report, not down\n"
            "moving: 1 node(s) handed off by collector col-b since "
            "2026-11-22T03:00:50Z (15s ago): their agents are on their way "
            "to another collector, so their state is as of their last "
            "report, not down\n"
            "unobserved: 2 node(s) of collector col-b since "
            "2026-11-22T03:00:30Z (35s ago): its features stopped reaching "
            "this collector, so their state is as of then, not down (its "
            "/healthz says why)\n");

  TestEnv json_env;
  options.json = true;
  EXPECT_EQ(NodesCommand(client, options, json_env.env), kExitOk);
  const nlohmann::json j = nlohmann::json::parse(json_env.out.str());
  ASSERT_EQ(j.size(), 5u);
  EXPECT_EQ(j[0]["unobserved"], false);
  EXPECT_TRUE(j[0]["unobserved_since"].is_null());
  EXPECT_TRUE(j[1]["handed_off"].is_null());
  EXPECT_EQ(j[3]["unobserved"], true);
  EXPECT_EQ(j[3]["handed_off"], "2026-11-22T03:00:50Z");
  EXPECT_EQ(j[4]["handed_off"], "2026-11-22T03:00:55Z");
  EXPECT_EQ(j[4]["series"], 0);
  EXPECT_EQ(j[1]["unobserved"], true);
  EXPECT_EQ(j[1]["up"], true);
  EXPECT_EQ(j[1]["collector"], "col-b");
  EXPECT_EQ(j[1]["unobserved_since"], "2026-11-22T03:00:30Z");
  EXPECT_EQ(j[2]["unobserved_since"], "2026-11-22T03:00:35Z");
}

TEST_F(FindingsCommandsTest, NoNodesSaysSo) {
  EXPECT_EQ(NodesCommand(client, options, t.env), kExitOk);
  EXPECT_EQ(t.out.str(), "no agents have reported to collector fake:9811\n");
}

}  // namespace
}  // namespace fabricdiag::cli
