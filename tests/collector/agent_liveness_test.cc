#include "collector/agent_liveness.h"

#include <unistd.h>

#include <filesystem>
#include <string>

#include "collector/findings_store.h"
#include "collector/state_store.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace fabricdiag::collector {
namespace {

using ::testing::IsEmpty;
using ::testing::SizeIs;

const absl::Time kNow = absl::FromUnixSeconds(1795000000);

NodeLiveness Node(const std::string& name, absl::Duration ago,
                  absl::Duration interval, bool ever_reported = true) {
  NodeLiveness n;
  n.node = name;
  n.last_report = kNow - ago;
  n.interval = interval;
  n.ever_reported = ever_reported;
  return n;
}

struct LivenessCase {
  std::string name;
  NodeLiveness node;
  bool down;
};

TEST(AgentLivenessTest, Table) {
  const LivenessCase cases[] = {
      {"fresh", Node("a", absl::Seconds(1), absl::Seconds(1)), false},
      {"two missed", Node("a", absl::Milliseconds(2999), absl::Seconds(1)),
       false},
      {"three missed", Node("a", absl::Seconds(3), absl::Seconds(1)), true},
      {"long gone", Node("a", absl::Hours(2), absl::Seconds(1)), true},
      {"slow agent", Node("a", absl::Seconds(20), absl::Seconds(10)), false},
      {"slow agent down", Node("a", absl::Seconds(30), absl::Seconds(10)),
       true},
      {"fast agent",
       Node("a", absl::Milliseconds(600), absl::Milliseconds(200)), true},
      {"unknown interval uses 1 s",
       Node("a", absl::Seconds(2), absl::ZeroDuration()), false},
      {"unknown interval down",
       Node("a", absl::Seconds(4), absl::ZeroDuration()), true},
      {"never reported",
       Node("a", absl::Hours(1), absl::Seconds(1), /*ever_reported=*/false),
       false},
      {"clock skew: report from the future",
       Node("a", -absl::Minutes(5), absl::Seconds(1)), false},
  };
  for (const LivenessCase& c : cases) {
    SCOPED_TRACE(c.name);
    std::vector<analysis::Finding> reports = AgentDownFindings({c.node}, kNow);
    EXPECT_THAT(reports, SizeIs(c.down ? 1 : 0));
    EXPECT_EQ(IsAgentUp(c.node, kNow), !c.down && c.node.ever_reported);
  }
}

TEST(AgentLivenessTest, FindingSpeaksOpsLanguage) {
  std::vector<analysis::Finding> reports =
      AgentDownFindings({Node("gpu-001", absl::Seconds(1), absl::Seconds(1)),
                         Node("gpu-003", absl::Seconds(12), absl::Seconds(1))},
                        kNow);
  ASSERT_THAT(reports, SizeIs(1));
  const analysis::Finding& r = reports[0];
  EXPECT_EQ(r.kind, "agent_down");
  EXPECT_EQ(r.severity, analysis::Severity::kWarning);
  EXPECT_EQ(r.node, "gpu-003");
  EXPECT_EQ(r.nodes, std::vector<std::string>{"gpu-003"});
  EXPECT_EQ(r.job, "");
  EXPECT_EQ(r.device, "");
  EXPECT_EQ(r.summary,
            "gpu-003's agent has not reported for 12 s (12 intervals of 1 s); "
            "its NICs are not being watched. Check the fabricdiag-agent "
            "service on gpu-003.");
  EXPECT_EQ(r.evidence.at("silence_seconds"), 12);
  EXPECT_EQ(r.evidence.at("interval_seconds"), 1);
  EXPECT_EQ(r.evidence.at("missed_intervals"), 12);
  EXPECT_EQ(r.evidence_text.at("last_report"), "2026-11-18T11:06:28Z");
}

TEST(AgentLivenessTest, HumanDurations) {
  EXPECT_EQ(HumanDuration(absl::Milliseconds(250)), "250 ms");
  EXPECT_EQ(HumanDuration(absl::Seconds(12)), "12 s");
  EXPECT_EQ(HumanDuration(absl::Seconds(60)), "1 min");
  EXPECT_EQ(HumanDuration(absl::Seconds(245)), "4 min 5 s");
  EXPECT_EQ(HumanDuration(absl::Minutes(123)), "2 h 3 min");
  EXPECT_EQ(HumanDuration(absl::Hours(50)), "2 d 2 h");
  EXPECT_EQ(HumanDuration(-absl::Seconds(3)), "0 ms");
}

class ScopedTempDir {
 public:
  ScopedTempDir() {
    std::string tmpl = testing::TempDir() + "agent_liveness_test_XXXXXX";
    path_ = mkdtemp(tmpl.data());
  }
  ~ScopedTempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

TEST(AgentLivenessTest, AgentDownOpensAndResolvesWhenTheAgentReturns) {
  ScopedTempDir tmp;
  FakeClock clock(kNow);
  absl::StatusOr<std::unique_ptr<StateStore>> state =
      StateStore::Open(tmp.path(), &clock);
  ASSERT_TRUE(state.ok()) << state.status();
  FindingsStore findings(state->get(), {});
  ASSERT_TRUE(findings.Load().ok());

  NodeLiveness node = Node("gpu-003", absl::ZeroDuration(), absl::Seconds(1));
  auto pass = [&]() {
    return findings.Update(AgentDownFindings({node}, clock.Now()), clock.Now(),
                           kAgentLivenessSource);
  };
  ASSERT_TRUE(pass().ok());
  EXPECT_THAT(findings.Active(), IsEmpty());
  for (int i = 0; i < 5; ++i) {
    clock.Advance(absl::Seconds(1));
    ASSERT_TRUE(pass().ok());
  }
  std::vector<v1::Finding> active = findings.Active();
  ASSERT_THAT(active, SizeIs(1));
  EXPECT_EQ(active[0].kind(), "agent_down");
  EXPECT_EQ(active[0].first_seen_unix_nanos(),
            absl::ToUnixNanos(kNow + absl::Seconds(3)));

  node.last_report = clock.Now();  // the agent is back
  ASSERT_TRUE(pass().ok());
  EXPECT_THAT(findings.Active(), IsEmpty());
  EXPECT_EQ(findings.Counters().resolved_by_kind["agent_down"], 1u);
}

TEST(AgentLivenessTest, AFindingRemembersTheNodeAcrossARestart) {
  NodeLiveness node =
      Node("gpu-003", absl::Seconds(10), absl::Milliseconds(250));
  std::vector<analysis::Finding> down = AgentDownFindings({node}, kNow);
  ASSERT_THAT(down, SizeIs(1));
  v1::Finding f;
  f.set_kind(kAgentDownKind);
  f.set_node(down[0].node);
  f.mutable_evidence()->insert(down[0].evidence.begin(),
                               down[0].evidence.end());
  f.mutable_evidence_text()->insert(down[0].evidence_text.begin(),
                                    down[0].evidence_text.end());
  std::optional<NodeLiveness> back = LivenessFromFinding(f);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->node, "gpu-003");
  EXPECT_EQ(back->last_report, node.last_report);
  EXPECT_EQ(back->interval, absl::Milliseconds(250));
  EXPECT_TRUE(back->ever_reported);
  // Still down later, from what the finding recorded.
  EXPECT_THAT(AgentDownFindings({*back}, kNow + absl::Seconds(5)), SizeIs(1));

  f.mutable_evidence_text()->at("last_report") = "yesterday";
  EXPECT_FALSE(LivenessFromFinding(f).has_value());
  f.mutable_evidence_text()->clear();
  EXPECT_FALSE(LivenessFromFinding(f).has_value());
}

}  // namespace
}  // namespace fabricdiag::collector
