#include "cluster/leader_handoff.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "client/collector_list.h"
#include "common/clock.h"
#include "common/fnv1a.h"

namespace fabricdiag::cluster {
namespace {

using ::testing::HasSubstr;

const std::vector<std::string> kList = {"10.0.0.1:9811", "10.0.0.2:9811",
                                        "10.0.0.3:9811"};
const std::vector<std::string> kNoList;

// Three collectors, live for long, announcing the addresses of kList; this
// one is col-a.
LeaderHandoff::View ThreeLive() {
  LeaderHandoff::View view;
  view.self = "col-a";
  view.live = {{"col-a", kList[0], absl::Hours(1), absl::Seconds(1)},
               {"col-b", kList[1], absl::Hours(1), absl::Seconds(1)},
               {"col-c", kList[2], absl::Hours(1), absl::Seconds(1)}};
  return view;
}

// The cluster as the test sets it, counting the looks.
struct World {
  LeaderHandoff::View view = ThreeLive();
  int looks = 0;
  std::vector<std::string> advertised;
  FakeClock clock;
  LeaderHandoff handoff{
      [this] {
        ++looks;
        return view;
      },
      [this](const std::string& a) { advertised.push_back(a); }, clock};
  // Starts the next round.
  void NextRound() {
    clock.Advance(LeaderHandoff::kRound);
    handoff.Epoch();
  }
};

// The first node in the share, and the first out of it, among gpu-NNNNN.
std::string NodeInShare(bool in) {
  for (int i = 0;; ++i) {
    std::string node = absl::StrCat("gpu-", i);
    if (LeaderHandoff::InShare(node) == in) return node;
  }
}

// The first node whose first choice of kList is `index`.
std::string NodePreferring(size_t index) {
  for (int i = 0;; ++i) {
    std::string node = absl::StrCat("gpu-", i);
    if (client::RankCollectors(node, kList)[0] == index) return node;
  }
}

// With every collector live and no leader, the collector preferred is the
// agent's own first choice; with col-a leading, col-a is the first choice
// of 0.8 / 2.8 of the nodes (weight 0.8 against 1 and 1), and only nodes
// that preferred col-a move, spread over both others.
TEST(LeaderHandoffTest, PreferredIsTheAgentsRankingWeightedForTheLeader) {
  LeaderHandoff::View view = ThreeLive();
  int firsts[3] = {0, 0, 0};
  int moved_to[3] = {0, 0, 0};
  for (int i = 0; i < 10000; ++i) {
    const std::string node = absl::StrCat("node-", i);
    const size_t own = client::RankCollectors(node, kList)[0];
    view.leader = "";
    ASSERT_EQ(LeaderHandoff::Preferred(node, kList, view), kList[own]);
    view.leader = "col-a";
    const std::optional<std::string> weighted =
        LeaderHandoff::Preferred(node, kList, view);
    ASSERT_TRUE(weighted.has_value());
    const size_t k = static_cast<size_t>(
        std::find(kList.begin(), kList.end(), *weighted) - kList.begin());
    ++firsts[k];
    if (k != own) {
      EXPECT_EQ(own, 0u) << node;
      ++moved_to[k];
    }
  }
  static_assert(LeaderHandoff::kLeaderWeight == 0.8, "the shares below");
  EXPECT_NEAR(firsts[0], 2857, 143);  // 10,000 x 0.8 / 2.8
  EXPECT_NEAR(firsts[1], 3571, 180);  // 10,000 x 1 / 2.8
  EXPECT_NEAR(firsts[2], 3571, 180);
  EXPECT_NEAR(moved_to[1], moved_to[2], (moved_to[1] + moved_to[2]) * 0.1);
}

// Entries that are no live, serving member are skipped: a dead one, one
// that announced no address yet, one live for less than kTargetAfter, one
// silent for longer than kTargetSilentAtMost; and without this collector in
// the list there is no answer.
TEST(LeaderHandoffTest, PreferredSkipsCollectorsThatCannotTakeTheAgent) {
  const std::string node = NodePreferring(1);
  const size_t second = client::RankCollectors(node, kList)[1];
  LeaderHandoff::View dead = ThreeLive();
  dead.live.erase(dead.live.begin() + 1);
  LeaderHandoff::View silent = ThreeLive();
  silent.live[1].address = "";
  LeaderHandoff::View young = ThreeLive();
  young.live[1].live_for = LeaderHandoff::kTargetAfter - absl::Seconds(1);
  LeaderHandoff::View quiet = ThreeLive();
  quiet.live[1].silent_for =
      LeaderHandoff::kTargetSilentAtMost + absl::Milliseconds(1);
  for (const LeaderHandoff::View& v : {dead, silent, young, quiet}) {
    EXPECT_EQ(LeaderHandoff::Preferred(node, kList, v), kList[second]);
  }
  // This collector is a target however young (it serves).
  LeaderHandoff::View self_young = ThreeLive();
  self_young.live[0].live_for = absl::ZeroDuration();
  EXPECT_EQ(LeaderHandoff::Preferred(NodePreferring(0), kList, self_young),
            kList[0]);
  EXPECT_EQ(LeaderHandoff::Preferred(node, {kList[1], kList[2]}, ThreeLive()),
            std::nullopt);
  LeaderHandoff::View unadvertised = ThreeLive();
  unadvertised.live[0].address = "";
  EXPECT_EQ(LeaderHandoff::Preferred(node, kList, unadvertised), std::nullopt);
}

// An agent that prefers another live collector is handed back there, with
// that entry as the target; one that prefers this one is kept.
TEST(LeaderHandoffTest, HandsBackAnAgentThatPrefersAnotherLiveCollector) {
  World w;
  ASSERT_NE(w.handoff.Epoch(), 0u);
  std::optional<collector::HandoffOrder> go =
      w.handoff.HandOff(NodePreferring(2), kList, 100);
  ASSERT_TRUE(go.has_value());
  EXPECT_EQ(go->target, kList[2]);
  EXPECT_THAT(go->reason, HasSubstr(kList[2]));
  EXPECT_EQ(w.handoff.HandOff(NodePreferring(0), kList, 100), std::nullopt);
}

// At most 1% of the streams held per round, rounded up: 300 streams, 3
// per round, whatever is waiting; the next round 3 more.
TEST(LeaderHandoffTest, HandBacksArePacedPerRound) {
  for (const auto& [streams, per_round] : std::vector<std::pair<uint64_t, int>>{
           {300, 3}, {150, 2}, {20, 1}, {0, 1}}) {
    World w;
    w.handoff.Epoch();
    std::vector<std::string> waiting;
    for (int i = 0; waiting.size() < 50; ++i) {
      const std::string node = absl::StrCat("n", i);
      if (client::RankCollectors(node, kList)[0] != 0) waiting.push_back(node);
    }
    for (int round = 0; round < 3; ++round) {
      int handed = 0;
      for (const std::string& node : waiting) {
        if (w.handoff.HandOff(node, kList, streams).has_value()) ++handed;
      }
      EXPECT_EQ(handed, per_round) << streams << " round " << round;
      w.NextRound();
    }
  }
}

// Alone in the cluster (or before anyone else is seen) nothing is asked:
// the epoch is 0. With others live it moves every round, and the view is
// looked at once per round, not per report.
TEST(LeaderHandoffTest, EpochMovesPerRoundWhileOthersAreLive) {
  World w;
  w.view.live.resize(1);
  EXPECT_EQ(w.handoff.Epoch(), 0u);
  EXPECT_EQ(w.handoff.HandOff(NodeInShare(true), kNoList, 10), std::nullopt);
  w.view = ThreeLive();
  w.clock.Advance(LeaderHandoff::kRound);
  const uint64_t first = w.handoff.Epoch();
  EXPECT_NE(first, 0u);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(w.handoff.Epoch(), first);
  EXPECT_EQ(w.looks, 2);
  w.clock.Advance(LeaderHandoff::kRound / 2);
  EXPECT_EQ(w.handoff.Epoch(), first);
  w.clock.Advance(LeaderHandoff::kRound / 2);
  EXPECT_NE(w.handoff.Epoch(), first);
  EXPECT_EQ(w.looks, 3);
}

// An agent handed back that comes back within the hand-back pause found its
// collector unwilling or unreachable: it is kept, and handed back again
// only after the pause, which doubles with every such return up to
// kHandBackPauseMax and starts over once the agent stayed away.
TEST(LeaderHandoffTest, AnAgentHandedBackThatReturnsSoonIsKept) {
  World w;
  w.handoff.Epoch();
  const std::string node = NodePreferring(1);
  const absl::Duration first = LeaderHandoff::kHandBackPauseFirst;
  ASSERT_EQ(first, absl::Seconds(5));
  ASSERT_EQ(LeaderHandoff::kHandBackPauseMax, absl::Seconds(30));
  ASSERT_TRUE(w.handoff.HandOff(node, kList, 1000).has_value());

  // Back after 1 s, and looked at again while it streams here: kept for
  // the rest of the first pause, one bounce.
  w.clock.Advance(absl::Seconds(1));
  EXPECT_EQ(w.handoff.HandOff(node, kList, 1000), std::nullopt);
  w.clock.Advance(absl::Seconds(3));
  EXPECT_EQ(w.handoff.HandOff(node, kList, 1000), std::nullopt);
  w.clock.Advance(absl::Seconds(1));  // 5 s after the hand-back
  ASSERT_TRUE(w.handoff.HandOff(node, kList, 1000).has_value());

  // Each time it comes back at once, the next pause is twice as long:
  // 10 s, 20 s, then 30 s at most.
  for (absl::Duration pause : {absl::Seconds(10), absl::Seconds(20),
                               absl::Seconds(30), absl::Seconds(30)}) {
    w.clock.Advance(absl::Milliseconds(500));
    EXPECT_EQ(w.handoff.HandOff(node, kList, 1000), std::nullopt);
    w.clock.Advance(pause - absl::Milliseconds(501));
    EXPECT_EQ(w.handoff.HandOff(node, kList, 1000), std::nullopt)
        << "still within " << pause;
    w.clock.Advance(absl::Milliseconds(1));
    ASSERT_TRUE(w.handoff.HandOff(node, kList, 1000).has_value())
        << "after " << pause;
  }

  // It stayed away this time; back a minute later (its collector died),
  // it is handed back with the first pause again.
  w.clock.Advance(absl::Minutes(1));
  ASSERT_TRUE(w.handoff.HandOff(node, kList, 1000).has_value());
  w.clock.Advance(absl::Seconds(1));
  EXPECT_EQ(w.handoff.HandOff(node, kList, 1000), std::nullopt);
  w.clock.Advance(first - absl::Seconds(1));
  EXPECT_TRUE(w.handoff.HandOff(node, kList, 1000).has_value());
}

// The address is announced through the members.
// Agents learn the leader's weight: its entry at kLeaderWeight, nothing
// when no leader is known or the leader is not in the agent's list. An
// agent ranking with these weights prefers what Preferred() says, so no
// collector hands it anywhere.
TEST(LeaderHandoffTest, WeightsNameTheLeadersEntry) {
  LeaderHandoff::View view = ThreeLive();
  EXPECT_TRUE(LeaderHandoff::WeightsIn(kList, view).empty());
  view.leader = "col-b";
  EXPECT_EQ(
      LeaderHandoff::WeightsIn(kList, view),
      (collector::CollectorWeights{{kList[1], LeaderHandoff::kLeaderWeight}}));
  EXPECT_TRUE(LeaderHandoff::WeightsIn({kList[0], kList[2]}, view).empty());
  view.leader = "col-gone";
  EXPECT_TRUE(LeaderHandoff::WeightsIn(kList, view).empty());

  view.leader = "col-b";
  for (int i = 0; i < 1000; ++i) {
    const std::string node = absl::StrCat("gpu-", i);
    client::CollectorChoice choice(node, kList);
    ASSERT_TRUE(choice.SetWeights(LeaderHandoff::WeightsIn(kList, view)).ok());
    EXPECT_EQ(kList[choice.ranking()[0]],
              LeaderHandoff::Preferred(node, kList, view))
        << node;
  }

  World world;
  world.view.leader = "col-c";
  EXPECT_TRUE(world.handoff.Weights(kList).empty());  // no view looked at
  world.handoff.Epoch();
  EXPECT_EQ(
      world.handoff.Weights(kList),
      (collector::CollectorWeights{{kList[2], LeaderHandoff::kLeaderWeight}}));
}

TEST(LeaderHandoffTest, AdvertisePassesTheAddressOn) {
  World w;
  w.handoff.Advertise("10.0.0.1:9811");
  EXPECT_EQ(w.advertised, std::vector<std::string>{"10.0.0.1:9811"});
}

TEST(LeaderHandoffTest, TheShareIsOneNodeInKShareWhateverItsCollector) {
  int in = 0;
  // Independent of the hash that placed the node: about 1 / kShare of the
  // nodes of each of three collectors.
  int in_by_collector[3] = {0, 0, 0};
  int by_collector[3] = {0, 0, 0};
  for (int i = 0; i < 60000; ++i) {
    const std::string node = absl::StrCat("node-", i);
    const size_t collector = client::RankCollectors(node, kList)[0];
    ++by_collector[collector];
    if (LeaderHandoff::InShare(node)) {
      ++in;
      ++in_by_collector[collector];
    }
  }
  const double share = 1.0 / LeaderHandoff::kShare;
  EXPECT_NEAR(in, 60000 * share, 60000 * share * 0.05);
  for (size_t k = 0; k < 3; ++k) {
    EXPECT_NEAR(static_cast<double>(in_by_collector[k]) / by_collector[k],
                share, 0.015)
        << k;
  }
}

// Agents without a list: nothing is handed off by a collector that does
// not lead; the leader hands off its share without a target, and never an
// agent with a list that prefers it.
TEST(LeaderHandoffTest, WithoutAListOnlyTheLeaderHandsOffItsShare) {
  World w;
  const std::string node = NodeInShare(true);
  w.handoff.Epoch();
  EXPECT_EQ(w.handoff.HandOff(node, kNoList, 10), std::nullopt);
  w.view.term = 4;
  w.view.leader = "col-a";
  w.NextRound();
  std::optional<collector::HandoffOrder> go =
      w.handoff.HandOff(node, kNoList, 10);
  ASSERT_TRUE(go.has_value());
  EXPECT_THAT(go->reason, HasSubstr("leads the cluster's analysis"));
  EXPECT_EQ(go->target, "");
  EXPECT_EQ(w.handoff.HandOff(NodeInShare(false), kNoList, 10), std::nullopt);
  // Losing the lease stops it (after at most one round).
  w.view.term = 0;
  w.NextRound();
  EXPECT_EQ(w.handoff.HandOff(NodeInShare(true), kNoList, 10), std::nullopt);
}

// An agent without a list handed off that comes back within
// kTakeBackWithin found no other collector: it is taken, also in a later
// term; later than that it is handed off again.
TEST(LeaderHandoffTest, AnAgentThatComesBackSoonIsTaken) {
  World w;
  w.view.term = 1;
  w.handoff.Epoch();
  const std::string node = NodeInShare(true);
  ASSERT_TRUE(w.handoff.HandOff(node, kNoList, 10).has_value());
  w.clock.Advance(absl::Seconds(5));
  EXPECT_EQ(w.handoff.HandOff(node, kNoList, 10), std::nullopt);
  w.view.term = 2;
  w.clock.Advance(LeaderHandoff::kTakeBackWithin - absl::Seconds(10));
  EXPECT_EQ(w.handoff.HandOff(node, kNoList, 10), std::nullopt);
  w.clock.Advance(absl::Seconds(10));
  EXPECT_TRUE(w.handoff.HandOff(node, kNoList, 10).has_value());
}

// Many nodes handed off long ago are forgotten, not kept for good.
TEST(LeaderHandoffTest, ForgetsNodesHandedOffLongAgo) {
  World w;
  w.view.term = 1;
  int handed = 0;
  for (int i = 0; i < 30000; ++i) {
    const std::string node = absl::StrCat("n", i);
    if (w.handoff.HandOff(node, kNoList, 10).has_value()) ++handed;
    if (i % 1000 == 999) w.clock.Advance(absl::Minutes(1));
  }
  EXPECT_GT(handed, 30000 / LeaderHandoff::kShare * 9 / 10);
  // At most the last 10 minutes' worth (10,000 nodes' share) and a
  // pruning's slack: not all of them.
  EXPECT_LT(w.handoff.remembered(), static_cast<size_t>(handed) * 2 / 3);
  // The first nodes were handed off 29 minutes ago: handed off again.
  int again = 0;
  for (int i = 0; i < 1000; ++i) {
    if (w.handoff.HandOff(absl::StrCat("n", i), kNoList, 10).has_value())
      ++again;
  }
  EXPECT_GT(again, 100);
}

// A flood of Hellos under made-up names fills the memory up to its bound,
// no further: beyond it the leader takes the agents instead.
TEST(LeaderHandoffTest, AFloodOfNamesIsBoundedAndThenTaken) {
  World w;
  w.view.term = 1;
  size_t handed = 0;
  size_t taken = 0;
  for (size_t i = 0; handed + taken < 2 * LeaderHandoff::kMaxRemembered; ++i) {
    const std::string node = absl::StrCat("flood-", i);
    if (!LeaderHandoff::InShare(node)) continue;
    if (w.handoff.HandOff(node, kNoList, 10).has_value()) {
      ++handed;
    } else {
      ++taken;
    }
  }
  EXPECT_EQ(handed, LeaderHandoff::kMaxRemembered);
  EXPECT_EQ(taken, LeaderHandoff::kMaxRemembered);
  EXPECT_EQ(w.handoff.remembered(), LeaderHandoff::kMaxRemembered);
  // Once they age out, they are forgotten and hand-offs resume.
  w.clock.Advance(LeaderHandoff::kTakeBackWithin);
  EXPECT_TRUE(w.handoff.HandOff(NodeInShare(true), kNoList, 10).has_value());
  EXPECT_EQ(w.handoff.remembered(), 1u);
}

}  // namespace
}  // namespace fabricdiag::cluster
