#include "client/collector_list.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"

namespace fabricdiag::client {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(ParseCollectorListTest, AcceptsOneOrMoreHostPorts) {
  EXPECT_THAT(*ParseCollectorList("c0:9811"), ElementsAre("c0:9811"));
  EXPECT_THAT(*ParseCollectorList("c0:9811, 10.0.0.2:9811,[fd00::3]:9811"),
              ElementsAre("c0:9811", "10.0.0.2:9811", "[fd00::3]:9811"));
}

TEST(ParseCollectorListTest, NamesTheBadEntry) {
  absl::StatusOr<std::vector<std::string>> bad_port =
      ParseCollectorList("c0:9811,c1:98110");
  EXPECT_EQ(bad_port.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad_port.status().message(),
              HasSubstr("--collector=c1:98110: the port must be"));
  EXPECT_THAT(ParseCollectorList("c0:9811,c1").status().message(),
              HasSubstr("--collector=c1: expected HOST:PORT"));
  EXPECT_THAT(ParseCollectorList("c0:9811,,c1:9811").status().message(),
              HasSubstr("entry 2 is empty"));
  EXPECT_THAT(ParseCollectorList("c0:9811,c0:9811").status().message(),
              HasSubstr("\"c0:9811\" is listed twice"));
}

// The published FNV-1a 64 test vectors: a different hash (or a signed-char
// slip) fails here before it silently moves nodes between collectors.
TEST(Fnv1a64Test, MatchesTheReferenceVectors) {
  EXPECT_EQ(Fnv1a64(""), 0xcbf29ce484222325u);
  EXPECT_EQ(Fnv1a64("a"), 0xaf63dc4c8601ec8cu);
  EXPECT_EQ(Fnv1a64("foobar"), 0x85944171f73967e8u);
  EXPECT_EQ(Fnv1a64("\xff"), 0xaf64724c8602eb6eu);
}

// Fixed node names against a fixed list size: the start index is part of
// the deployment (which collector holds which node's history), so a change
// here must be deliberate.
TEST(PreferredCollectorIndexTest, IsFnv1aOfTheNodeModuloTheListSize) {
  EXPECT_EQ(PreferredCollectorIndex("gpu-001", 3), 2u);
  EXPECT_EQ(PreferredCollectorIndex("gpu-002", 3), 0u);
  EXPECT_EQ(PreferredCollectorIndex("gpu-003", 3), 1u);
  EXPECT_EQ(PreferredCollectorIndex("gpu-017", 3), 1u);
  EXPECT_EQ(PreferredCollectorIndex("node-a", 2), 1u);
  EXPECT_EQ(PreferredCollectorIndex("node-b", 2), 0u);
  EXPECT_EQ(PreferredCollectorIndex("gpu-001", 1), 0u);
}

TEST(PreferredCollectorIndexTest, SpreadsNodesOverTheCollectors) {
  std::vector<int> per_collector(4);
  for (int i = 0; i < 400; ++i) {
    char node[16];
    snprintf(node, sizeof(node), "gpu-%03d", i);
    ++per_collector[PreferredCollectorIndex(node, 4)];
  }
  for (int n : per_collector) {
    EXPECT_GT(n, 60);
    EXPECT_LT(n, 140);
  }
}

std::string NodeName(int i) {
  char node[16];
  snprintf(node, sizeof(node), "gpu-%05d", i);
  return node;
}

const std::vector<std::string> kThree = {"10.0.0.1:9811", "10.0.0.2:9811",
                                         "10.0.0.3:9811"};

// The bytes hashed are part of the deployment (which collector holds which
// node's history, and what a collector computes for an agent of another
// version): pinned.
TEST(RendezvousTest, HashesTheNodeAZeroByteAndTheEntry) {
  EXPECT_EQ(RendezvousHash("gpu-001", "c0:9811"),
            Fmix64(Fnv1a64(std::string("gpu-001\0c0:9811", 15))));
  EXPECT_NE(RendezvousHash("gpu-001", "c0:9811"),
            RendezvousHash("gpu-001c", "0:9811"));
  // Computed independently (Python, the published FNV-1a and fmix64).
  EXPECT_EQ(RendezvousHash("gpu-001", "c0:9811"), 0x104980c84d205d41u);
  EXPECT_THAT(RankCollectors("gpu-001", kThree), ElementsAre(2, 0, 1));
  EXPECT_THAT(RankCollectors("gpu-002", kThree), ElementsAre(0, 2, 1));
}

TEST(RendezvousTest, ListsOfOneOrNone) {
  EXPECT_THAT(RankCollectors("gpu-001", {"c0:9811"}), ElementsAre(0));
  EXPECT_TRUE(RankCollectors("gpu-001", {}).empty());
}

// The ranking is the order of the weighted score, whatever the list order.
TEST(RendezvousTest, RankingFollowsTheScoreNotTheListOrder) {
  for (int i = 0; i < 200; ++i) {
    const std::string node = NodeName(i);
    const std::vector<size_t> order = RankCollectors(node, kThree);
    ASSERT_EQ(order.size(), 3u);
    for (size_t k = 1; k < order.size(); ++k) {
      EXPECT_GT(RendezvousScore(node, kThree[order[k - 1]], 1.0),
                RendezvousScore(node, kThree[order[k]], 1.0));
    }
    const std::vector<std::string> reversed(kThree.rbegin(), kThree.rend());
    EXPECT_EQ(kThree[order[0]], reversed[RankCollectors(node, reversed)[0]]);
  }
}

// 10,000 nodes: each collector's first choices within 5% of an even share.
TEST(RendezvousTest, FirstChoicesSpreadEvenly) {
  for (size_t count : {2u, 3u, 5u}) {
    std::vector<std::string> list;
    for (size_t k = 0; k < count; ++k)
      list.push_back(absl::StrCat("c", k, ":9811"));
    std::vector<int> first(count);
    for (int i = 0; i < 10000; ++i)
      ++first[RankCollectors(NodeName(i), list)[0]];
    const double even = 10000.0 / static_cast<double>(count);
    for (size_t k = 0; k < count; ++k) {
      EXPECT_NEAR(first[k], even, even * 0.05) << count << " " << k;
    }
  }
}

// A collector dies: only its nodes move (every other node's first live
// choice is unchanged), and they spread over every survivor evenly: within
// 4 standard deviations of a fair draw, 4.5% of an even share with 3
// collectors (failing over to the next in the list, as before, put them
// all on one).
TEST(RendezvousTest, ADeadCollectorsNodesSpreadOverAllSurvivors) {
  for (size_t count : {3u, 5u}) {
    std::vector<std::string> list;
    for (size_t k = 0; k < count; ++k)
      list.push_back(absl::StrCat("col-", k, ":9811"));
    for (size_t dead = 0; dead < count; ++dead) {
      std::vector<int> moved_to(count);
      int moved = 0;
      for (int i = 0; i < 10000; ++i) {
        const std::vector<size_t> order = RankCollectors(NodeName(i), list);
        const size_t live_first = order[0] == dead ? order[1] : order[0];
        if (order[0] != dead) continue;  // stays: no other node moves
        ++moved;
        ++moved_to[live_first];
      }
      EXPECT_EQ(moved_to[dead], 0);
      const double p = 1.0 / static_cast<double>(count - 1);
      const double even = moved * p;
      const double tolerance = 4 * std::sqrt(moved * p * (1 - p));
      for (size_t k = 0; k < count; ++k) {
        if (k == dead) continue;
        EXPECT_NEAR(moved_to[k], even, tolerance)
            << count << " dead " << dead << " to " << k;
      }
    }
  }
}

// A collector of weight w gets w / (sum of weights) of the first choices:
// the analysis leader's lighter share.
TEST(RendezvousTest, AWeightScalesTheShare) {
  int light = 0;
  for (int i = 0; i < 10000; ++i) {
    const std::string node = NodeName(i);
    double best = 0;
    size_t pick = 0;
    for (size_t k = 0; k < kThree.size(); ++k) {
      const double score =
          RendezvousScore(node, kThree[k], k == 0 ? 2.0 / 3.0 : 1.0);
      if (score > best) {
        best = score;
        pick = k;
      }
    }
    if (pick == 0) ++light;
  }
  // (2/3) / (2/3 + 2) = 25%.
  EXPECT_NEAR(light, 2500, 125);
}

// The placement a cluster uses: one collector (the analysis leader)
// weighted 2/3, the others 1, the agents ranking with the weights the
// collectors send. Removing any one of three moves only that collector's
// nodes (every other node's collector stays), and they split over the two
// survivors in proportion to the weights the agents hold: 50/50 (each
// within 45-55%) when the leader dies, (2/3 : 1) = 40/60 (each within 5
// points) when another one does.
TEST(CollectorChoiceTest, ADeadCollectorsNodesSplitByTheWeights) {
  constexpr double kLeader = 2.0 / 3.0;
  for (size_t dead = 0; dead < 3; ++dead) {
    std::vector<int> moved_to(3);
    int moved = 0;
    for (int i = 0; i < 10000; ++i) {
      CollectorChoice choice(NodeName(i), kThree);
      ASSERT_TRUE(choice.SetWeights({{kThree[0], kLeader}}).ok());
      // Where the collectors place it: its weighted first choice.
      if (choice.current() != choice.ranking()[0]) {
        choice.HandedOff(kThree[choice.ranking()[0]]);
      }
      const size_t first = choice.current();
      ASSERT_EQ(first, choice.ranking()[0]);
      if (first != dead) {
        // Not this collector's: its agent never moves.
        continue;
      }
      ++moved;
      const size_t next = choice.Failed(/*worked=*/true);
      ASSERT_NE(next, dead);
      ++moved_to[next];
    }
    ASSERT_GT(moved, 2000) << dead;
    const double leader_share = dead == 0 ? 0.0 : kLeader / (kLeader + 1.0);
    for (size_t k = 0; k < 3; ++k) {
      if (k == dead) continue;
      const double want =
          dead == 0 ? 0.5 : (k == 0 ? leader_share : 1.0 - leader_share);
      EXPECT_NEAR(static_cast<double>(moved_to[k]) / moved, want, 0.05)
          << "dead " << dead << " to " << k;
    }
  }
}

// Every node's first choice with weights is its highest weighted score,
// and the weights change the first choice of only some nodes: the leader's
// share of 10,000 is (2/3) / (2/3 + 2) = 25%.
TEST(CollectorChoiceTest, WeightsRankAsTheCollectorsScore) {
  int on_leader = 0;
  for (int i = 0; i < 10000; ++i) {
    const std::string node = NodeName(i);
    CollectorChoice choice(node, kThree);
    EXPECT_EQ(choice.current(), RankCollectors(node, kThree)[0]);
    ASSERT_TRUE(choice.SetWeights({{kThree[0], 2.0 / 3.0}}).ok());
    const std::vector<size_t> ranked =
        RankCollectors(node, kThree, {2.0 / 3.0, 1.0, 1.0});
    EXPECT_EQ(choice.ranking(), ranked);
    // The current collector stays until a collector hands the agent over.
    EXPECT_EQ(choice.current(), RankCollectors(node, kThree)[0]);
    if (ranked[0] == 0) ++on_leader;
  }
  EXPECT_NEAR(on_leader, 2500, 125);
}

// The defect this replaces: an agent the leader's weight sent elsewhere
// moved, when that collector died, to the entry after it in its unweighted
// ranking, its third choice. With the weights it goes to its weighted
// second choice, which for a good part of them is another collector.
TEST(CollectorChoiceTest,
     AnAgentPlacedByTheWeightFailsOverToItsWeightedSecond) {
  int placed_by_weight = 0;
  int not_the_old_rule = 0;
  for (int i = 0; i < 2000; ++i) {
    const std::string node = NodeName(i);
    const std::vector<size_t> unweighted = RankCollectors(node, kThree);
    if (unweighted[0] != 0) continue;
    CollectorChoice choice(node, kThree);
    ASSERT_TRUE(choice.SetWeights({{kThree[0], 2.0 / 3.0}}).ok());
    const std::vector<size_t> weighted = choice.ranking();
    if (weighted[0] == 0) continue;
    ++placed_by_weight;
    // The leader hands it to its weighted first choice ...
    ASSERT_EQ(choice.HandedOff(kThree[weighted[0]]), weighted[0]);
    // ... which dies: its weighted second choice.
    const size_t next = choice.Failed(/*worked=*/true);
    EXPECT_EQ(next, weighted[1]) << node;
    const size_t at = static_cast<size_t>(
        std::find(unweighted.begin(), unweighted.end(), weighted[0]) -
        unweighted.begin());
    if (next != unweighted[(at + 1) % 3]) ++not_the_old_rule;
  }
  EXPECT_GT(placed_by_weight, 50);
  EXPECT_GT(not_the_old_rule, placed_by_weight / 4);
}

TEST(CollectorChoiceTest, FailsOverFromTheTopAndTriesTheFailedOnesLast) {
  // gpu-001 ranks kThree as 2, 0, 1.
  CollectorChoice choice("gpu-001", kThree);
  ASSERT_EQ(choice.current(), 2u);
  EXPECT_EQ(choice.HandedOff(kThree[1]), 1u);  // handed to its third
  EXPECT_EQ(choice.Failed(true), 2u);          // dies: the top again
  EXPECT_EQ(choice.Failed(false), 0u);         // not reachable: next
  // All three failed since the last that worked: over again from the top,
  // the one that just failed last.
  EXPECT_EQ(choice.Failed(false), 2u);
  EXPECT_EQ(choice.Failed(false), 1u);
  // A hand-off to an entry not in the list: the first other one.
  EXPECT_EQ(choice.HandedOff("10.9.9.9:1"), 2u);
  EXPECT_EQ(choice.HandedOff(""), 0u);
}

// Cut-off collectors refuse without a target: the agent goes through its
// whole list, never back and forth between its first two, and starts over
// (the first refusal's collector first) once every one refused.
TEST(CollectorChoiceTest, RefusalsInARowGoThroughTheWholeList) {
  // gpu-001 ranks kThree as 2, 0, 1.
  CollectorChoice choice("gpu-001", kThree);
  ASSERT_EQ(choice.current(), 2u);
  EXPECT_EQ(choice.HandedOff(""), 0u);
  EXPECT_EQ(choice.HandedOff(""), 1u);
  EXPECT_EQ(choice.HandedOff(""), 2u);
  EXPECT_EQ(choice.HandedOff(""), 0u);
  // A collector that names a target: every collector is worth a try again.
  EXPECT_EQ(choice.HandedOff(kThree[2]), 2u);
  EXPECT_EQ(choice.HandedOff(""), 0u);
  EXPECT_EQ(choice.HandedOff(""), 1u);
}

TEST(CollectorChoiceTest, ListsOfOneStay) {
  CollectorChoice one("gpu-001", {"c0:9811"});
  EXPECT_EQ(one.Failed(true), 0u);
  EXPECT_EQ(one.HandedOff("c1:9811"), 0u);
  EXPECT_EQ(one.current_entry(), "c0:9811");
}

// Weights come from the network: a bad one is refused, named, and leaves
// the rest applied.
TEST(CollectorChoiceTest, RefusesBadWeights) {
  CollectorChoice choice("gpu-001", kThree);
  const std::vector<size_t> before = choice.ranking();
  for (double bad : {0.0, -1.0, std::nan(""), HUGE_VAL}) {
    absl::Status status = choice.SetWeights({{kThree[2], bad}});
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_EQ(choice.ranking(), before) << bad;
  }
  absl::Status status =
      choice.SetWeights({{"10.9.9.9:1", 0.5}, {kThree[2], 1e-9}});
  EXPECT_THAT(status.message(), HasSubstr("10.9.9.9:1"));
  // gpu-001's first choice (entry 2) weighed down to nothing is last.
  EXPECT_EQ(choice.ranking().back(), 2u);
}

}  // namespace
}  // namespace fabricdiag::client
