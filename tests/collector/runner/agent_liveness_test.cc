#include "collector/runner/agent_liveness.h"

#include <unistd.h>

#include <filesystem>
#include <string>

#include "analysis/agent_down.h"
#include "collector/findings/findings_store.h"
#include "collector/state/state_store.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/temp_dir.h"

namespace fabricdiag::collector {
namespace {

using ::testing::IsEmpty;
using ::testing::SizeIs;

const absl::Time kNow = absl::FromUnixSeconds(1795000000);

using ScopedTempDir = ::fabricdiag::testing::TempDir;

// The collector's loop: the analyzer's findings through the store.
TEST(AgentLivenessTest, AgentDownOpensAndResolvesWhenTheAgentReturns) {
  ScopedTempDir tmp;
  FakeClock clock(kNow);
  absl::StatusOr<std::unique_ptr<StateStore>> state =
      StateStore::Open(tmp.path(), &clock);
  ASSERT_TRUE(state.ok()) << state.status();
  FindingsStore findings(state->get(), {});
  ASSERT_TRUE(findings.Load().ok());

  analysis::NodeLiveness node{"gpu-003", kNow, absl::Seconds(1),
                              /*ever_reported=*/true};
  auto pass = [&]() {
    return findings.Update(analysis::AgentDownFindings({node}, clock.Now()),
                           clock.Now(), kAgentLivenessSource);
  };
  ASSERT_TRUE(pass().ok());
  EXPECT_THAT(findings.Active(), IsEmpty());
  for (int i = 0; i < 12; ++i) {
    clock.Advance(absl::Seconds(1));
    ASSERT_TRUE(pass().ok());
  }
  std::vector<v1::Finding> active = findings.Active();
  ASSERT_THAT(active, SizeIs(1));
  EXPECT_EQ(active[0].kind(), "agent_down");
  EXPECT_EQ(active[0].first_seen_unix_nanos(),
            absl::ToUnixNanos(kNow + absl::Seconds(10)));

  node.last_report = clock.Now();  // the agent is back
  ASSERT_TRUE(pass().ok());
  EXPECT_THAT(findings.Active(), IsEmpty());
  EXPECT_EQ(findings.Counters().resolved_by_kind["agent_down"], 1u);
}

TEST(AgentLivenessTest, AFindingRemembersTheNodeAcrossARestart) {
  const analysis::NodeLiveness node{"gpu-003", kNow - absl::Seconds(10),
                                    absl::Milliseconds(250),
                                    /*ever_reported=*/true};
  std::vector<analysis::Finding> down =
      analysis::AgentDownFindings({node}, kNow);
  ASSERT_THAT(down, SizeIs(1));
  v1::Finding f;
  f.set_kind(analysis::kAgentDownKind);
  f.set_node(down[0].node);
  f.mutable_evidence()->insert(down[0].evidence.begin(),
                               down[0].evidence.end());
  f.mutable_evidence_text()->insert(down[0].evidence_text.begin(),
                                    down[0].evidence_text.end());
  std::optional<analysis::NodeLiveness> back = LivenessFromFinding(f);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->node, "gpu-003");
  EXPECT_EQ(back->last_report, node.last_report);
  EXPECT_EQ(back->interval, absl::Milliseconds(250));
  EXPECT_TRUE(back->ever_reported);
  // Still down later, from what the finding recorded.
  EXPECT_THAT(analysis::AgentDownFindings({*back}, kNow + absl::Seconds(5)),
              SizeIs(1));

  f.mutable_evidence_text()->at("last_report") = "yesterday";
  EXPECT_FALSE(LivenessFromFinding(f).has_value());
  f.mutable_evidence_text()->clear();
  EXPECT_FALSE(LivenessFromFinding(f).has_value());
}

// fabricdiag_agent_up and `fabricdiag nodes` say "down" exactly when
// agent_down opens: an agent restart of a few seconds is neither.
TEST(AgentLivenessTest, UpFollowsTheAgentDownRule) {
  const analysis::AgentDownConfig config;  // 10 intervals
  const NodeUpRule up = AgentUpRule(config);
  NodeInfo info;
  info.node = "gpu-003";
  info.interval_ms = 1000;
  info.last_report = kNow;
  for (int silent = 0; silent <= 12; ++silent) {
    const absl::Time now = kNow + absl::Seconds(silent);
    const bool down =
        !analysis::AgentDownFindings({LivenessOf(info)}, now, config).empty();
    EXPECT_EQ(up(info, now), !down) << silent << " s silent";
    EXPECT_EQ(up(info, now), silent < 10) << silent << " s silent";
  }
  // An agent at 100 ms is down after 1 s.
  info.interval_ms = 100;
  EXPECT_TRUE(up(info, kNow + absl::Milliseconds(900)));
  EXPECT_FALSE(up(info, kNow + absl::Seconds(1)));
  // A node that never reported is not up.
  info.last_report = absl::InfinitePast();
  EXPECT_FALSE(up(info, kNow));
}

}  // namespace
}  // namespace fabricdiag::collector
