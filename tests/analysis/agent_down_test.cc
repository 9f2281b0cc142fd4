#include "analysis/agent_down.h"

#include <string>
#include <vector>

#include "analysis/analysis_config.h"
#include "analysis/finding.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace fabricdiag::analysis {
namespace {

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

TEST(AgentDownTest, Table) {
  const LivenessCase cases[] = {
      {"fresh", Node("a", absl::Seconds(1), absl::Seconds(1)), false},
      {"a restart: six missed", Node("a", absl::Seconds(6), absl::Seconds(1)),
       false},
      {"nine missed", Node("a", absl::Milliseconds(9999), absl::Seconds(1)),
       false},
      {"ten missed", Node("a", absl::Seconds(10), absl::Seconds(1)), true},
      {"long gone", Node("a", absl::Hours(2), absl::Seconds(1)), true},
      {"slow agent", Node("a", absl::Seconds(90), absl::Seconds(10)), false},
      {"slow agent down", Node("a", absl::Seconds(100), absl::Seconds(10)),
       true},
      {"fast agent",
       Node("a", absl::Milliseconds(2000), absl::Milliseconds(200)), true},
      {"unknown interval uses 1 s",
       Node("a", absl::Seconds(9), absl::ZeroDuration()), false},
      {"unknown interval down",
       Node("a", absl::Seconds(11), absl::ZeroDuration()), true},
      {"never reported",
       Node("a", absl::Hours(1), absl::Seconds(1), /*ever_reported=*/false),
       false},
      {"clock skew: report from the future",
       Node("a", -absl::Minutes(5), absl::Seconds(1)), false},
  };
  for (const LivenessCase& c : cases) {
    SCOPED_TRACE(c.name);
    std::vector<Finding> findings = AgentDownFindings({c.node}, kNow);
    EXPECT_THAT(findings, SizeIs(c.down ? 1 : 0));
    EXPECT_EQ(IsAgentUp(c.node, kNow), !c.down && c.node.ever_reported);
  }
}

// Quiet: missed its latest report, not down yet (a restarting agent).
TEST(AgentDownTest, QuietBetweenOneMissedReportAndDown) {
  const absl::Duration s = absl::Seconds(1);
  EXPECT_FALSE(IsAgentQuiet(Node("a", absl::Milliseconds(400), s), kNow));
  EXPECT_FALSE(IsAgentQuiet(Node("a", s, s), kNow));
  EXPECT_TRUE(IsAgentQuiet(Node("a", absl::Milliseconds(1100), s), kNow));
  EXPECT_TRUE(IsAgentQuiet(Node("a", absl::Seconds(6), s), kNow));
  EXPECT_FALSE(IsAgentQuiet(Node("a", absl::Seconds(10), s), kNow));  // down
  EXPECT_FALSE(IsAgentQuiet(
      Node("a", absl::Seconds(3), s, /*ever_reported=*/false), kNow));
}

// A node another collector vouched for until a while ago (its features
// stopped arriving) is judged as of then: silent for ten intervals by now,
// but up when last observed, it is not down, and it counts as quiet (its
// findings hold); one already down then stays down.
TEST(AgentDownTest, JudgedAsOfWhenItWasLastObserved) {
  const absl::Duration s = absl::Seconds(1);
  NodeLiveness unobserved = Node("a", absl::Seconds(30), s);
  unobserved.observed_until = kNow - absl::Seconds(28);
  EXPECT_TRUE(IsAgentUp(unobserved, kNow));
  EXPECT_TRUE(IsAgentQuiet(unobserved, kNow));
  EXPECT_THAT(AgentDownFindings({unobserved}, kNow), SizeIs(0));

  // Another collector's node in a slice an interval old: it reported just
  // before that slice, so it is not quiet, however old the slice is by now.
  NodeLiveness remote = Node("a", absl::Milliseconds(1700), s);
  remote.observed_until = kNow - absl::Milliseconds(1500);
  EXPECT_TRUE(IsAgentUp(remote, kNow));
  EXPECT_FALSE(IsAgentQuiet(remote, kNow));
  remote.last_report = kNow - absl::Milliseconds(2600);  // missed one then
  EXPECT_TRUE(IsAgentQuiet(remote, kNow));

  NodeLiveness was_down = Node("a", absl::Seconds(30), s);
  was_down.observed_until = kNow - absl::Seconds(15);
  EXPECT_FALSE(IsAgentUp(was_down, kNow));
  std::vector<Finding> down = AgentDownFindings({was_down}, kNow);
  ASSERT_THAT(down, SizeIs(1));
  // Its silence is told up to now.
  EXPECT_EQ(down[0].evidence.at("silence_seconds"), 30);

  // Observed until later than now (another collector's clock ahead): now.
  NodeLiveness ahead = Node("a", absl::Seconds(10), s);
  ahead.observed_until = kNow + absl::Minutes(1);
  EXPECT_FALSE(IsAgentUp(ahead, kNow));
}

TEST(AgentDownTest, ThresholdsComeFromTheConfig) {
  AgentDownConfig patient;
  patient.missed_intervals = 10;
  patient.default_interval_seconds = 2;
  AgentDownConfig eager;
  eager.missed_intervals = 3;
  const NodeLiveness silent_9s = Node("a", absl::Seconds(9), absl::Seconds(1));
  EXPECT_THAT(AgentDownFindings({silent_9s}, kNow, eager), SizeIs(1));
  EXPECT_THAT(AgentDownFindings({silent_9s}, kNow, patient), SizeIs(0));
  EXPECT_THAT(
      AgentDownFindings({Node("a", absl::Seconds(10), absl::Seconds(1))}, kNow,
                        patient),
      SizeIs(1));
  // An agent that did not say its interval is judged by the default.
  const NodeLiveness unknown =
      Node("a", absl::Seconds(19), absl::ZeroDuration());
  EXPECT_TRUE(IsAgentUp(unknown, kNow, patient));
  std::vector<Finding> down = AgentDownFindings(
      {Node("a", absl::Seconds(20), absl::ZeroDuration())}, kNow, patient);
  ASSERT_THAT(down, SizeIs(1));
  EXPECT_EQ(down[0].evidence.at("interval_seconds"), 2);
  EXPECT_EQ(down[0].evidence.at("missed_intervals"), 10);
}

TEST(AgentDownTest, FindingSpeaksOpsLanguage) {
  std::vector<Finding> findings =
      AgentDownFindings({Node("gpu-001", absl::Seconds(1), absl::Seconds(1)),
                         Node("gpu-003", absl::Seconds(12), absl::Seconds(1))},
                        kNow);
  ASSERT_THAT(findings, SizeIs(1));
  const Finding& f = findings[0];
  EXPECT_EQ(f.kind, "agent_down");
  EXPECT_EQ(f.severity, Severity::kWarning);
  EXPECT_EQ(f.node, "gpu-003");
  EXPECT_EQ(f.nodes, std::vector<std::string>{"gpu-003"});
  EXPECT_EQ(f.job, "");
  EXPECT_EQ(f.device, "");
  EXPECT_EQ(f.group, "");
  EXPECT_FALSE(f.immediate);
  EXPECT_EQ(f.summary,
            "gpu-003's agent has not reported for 12 s (12 intervals of 1 s); "
            "its NICs are not being watched. Check the fabricdiag-agent "
            "service on gpu-003.");
  EXPECT_EQ(f.evidence.at("silence_seconds"), 12);
  EXPECT_EQ(f.evidence.at("interval_seconds"), 1);
  EXPECT_EQ(f.evidence.at("missed_intervals"), 12);
  EXPECT_EQ(f.evidence_text.at("last_report"), "2026-11-18T11:06:28Z");
}

TEST(AgentDownTest, HumanDurations) {
  EXPECT_EQ(HumanDuration(absl::Milliseconds(250)), "250 ms");
  EXPECT_EQ(HumanDuration(absl::Seconds(12)), "12 s");
  EXPECT_EQ(HumanDuration(absl::Seconds(60)), "1 min");
  EXPECT_EQ(HumanDuration(absl::Seconds(245)), "4 min 5 s");
  EXPECT_EQ(HumanDuration(absl::Minutes(123)), "2 h 3 min");
  EXPECT_EQ(HumanDuration(absl::Hours(50)), "2 d 2 h");
  EXPECT_EQ(HumanDuration(-absl::Seconds(3)), "0 ms");
}

}  // namespace
}  // namespace fabricdiag::analysis
