#include "cluster/leader_handoff.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "absl/strings/str_cat.h"
#include "client/collector_list.h"
#include "common/clock.h"
#include "common/fnv1a.h"

namespace fabricdiag::cluster {
namespace {

using ::testing::HasSubstr;

// The lease and the members as the test sets them, counting the looks.
struct World {
  uint64_t term = 0;
  size_t live = 1;
  int looks = 0;
  FakeClock clock;
  LeaderHandoff handoff{[this] {
                          ++looks;
                          return term;
                        },
                        [this] { return live; }, clock};
};

// The first node in the share, and the first out of it, among gpu-NNNNN.
std::string NodeInShare(bool in) {
  for (int i = 0;; ++i) {
    std::string node = absl::StrCat("gpu-", i);
    if (LeaderHandoff::InShare(node) == in) return node;
  }
}

TEST(LeaderHandoffTest, TheShareIsOneNodeInKShareWhateverItsCollector) {
  int in = 0;
  // Independent of the hash that placed the node: about 1 / kShare of the
  // nodes of each of three collectors, and those of each spread over both
  // others.
  int in_by_collector[3] = {0, 0, 0};
  int moved_to[3][3] = {};
  int by_collector[3] = {0, 0, 0};
  for (int i = 0; i < 60000; ++i) {
    const std::string node = absl::StrCat("node-", i);
    const auto collector = static_cast<size_t>(Fnv1a64(node) % 3);
    ++by_collector[collector];
    if (LeaderHandoff::InShare(node)) {
      ++in;
      ++in_by_collector[collector];
      ++moved_to[collector][client::HandoffCollectorIndex(node, collector, 3)];
    }
  }
  const double share = 1.0 / LeaderHandoff::kShare;
  EXPECT_NEAR(in, 60000 * share, 60000 * share * 0.05);
  for (size_t k = 0; k < 3; ++k) {
    EXPECT_NEAR(static_cast<double>(in_by_collector[k]) / by_collector[k],
                share, 0.015)
        << k;
    for (size_t to = 0; to < 3; ++to) {
      if (to == k) {
        EXPECT_EQ(moved_to[k][to], 0);
      } else {
        EXPECT_NEAR(moved_to[k][to], in_by_collector[k] / 2.0,
                    in_by_collector[k] * 0.05)
            << k << " -> " << to;
      }
    }
  }
}

// Nothing is handed off by a collector that does not lead, nor by a
// leader alone in its cluster (nobody would take the agents).
TEST(LeaderHandoffTest, OnlyALeaderWithAnotherLiveCollectorHandsOff) {
  World w;
  const std::string node = NodeInShare(true);
  EXPECT_EQ(w.handoff.Epoch(), 0u);
  EXPECT_EQ(w.handoff.HandOff(node), std::nullopt);
  w.live = 3;
  w.clock.Advance(LeaderHandoff::kRefreshEvery);
  EXPECT_EQ(w.handoff.Epoch(), 0u);
  w.term = 4;
  w.live = 1;
  w.clock.Advance(LeaderHandoff::kRefreshEvery);
  EXPECT_EQ(w.handoff.Epoch(), 0u);
  EXPECT_EQ(w.handoff.HandOff(node), std::nullopt);
  w.live = 2;
  w.clock.Advance(LeaderHandoff::kRefreshEvery);
  EXPECT_EQ(w.handoff.Epoch(), 4u);
  std::optional<std::string> why = w.handoff.HandOff(node);
  ASSERT_TRUE(why.has_value());
  EXPECT_THAT(*why, HasSubstr("leads the cluster's analysis"));
  EXPECT_EQ(w.handoff.HandOff(NodeInShare(false)), std::nullopt);
  // Losing the lease stops it (after at most one refresh period).
  w.term = 0;
  w.clock.Advance(LeaderHandoff::kRefreshEvery);
  EXPECT_EQ(w.handoff.Epoch(), 0u);
  EXPECT_EQ(w.handoff.HandOff(NodeInShare(true)), std::nullopt);
}

// The lease and the members are looked at once per refresh period, not
// per report.
TEST(LeaderHandoffTest, EpochLooksAtTheLeaseOncePerRefreshPeriod) {
  World w;
  w.term = 2;
  w.live = 3;
  for (int i = 0; i < 100; ++i) EXPECT_EQ(w.handoff.Epoch(), 2u);
  EXPECT_EQ(w.looks, 1);
  w.term = 3;
  w.clock.Advance(LeaderHandoff::kRefreshEvery / 2);
  EXPECT_EQ(w.handoff.Epoch(), 2u);
  w.clock.Advance(LeaderHandoff::kRefreshEvery / 2);
  EXPECT_EQ(w.handoff.Epoch(), 3u);
  EXPECT_EQ(w.looks, 2);
}

// An agent handed off that comes back within kTakeBackWithin found no
// other collector: it is taken, also in a later term; later than that it
// is handed off again.
TEST(LeaderHandoffTest, AnAgentThatComesBackSoonIsTaken) {
  World w;
  w.term = 1;
  w.live = 3;
  const std::string node = NodeInShare(true);
  ASSERT_TRUE(w.handoff.HandOff(node).has_value());
  w.clock.Advance(absl::Seconds(5));
  EXPECT_EQ(w.handoff.HandOff(node), std::nullopt);
  w.term = 2;
  w.clock.Advance(LeaderHandoff::kTakeBackWithin - absl::Seconds(10));
  EXPECT_EQ(w.handoff.Epoch(), 2u);
  EXPECT_EQ(w.handoff.HandOff(node), std::nullopt);
  w.clock.Advance(absl::Seconds(10));
  EXPECT_TRUE(w.handoff.HandOff(node).has_value());
}

// Many nodes handed off long ago are forgotten, not kept for good.
TEST(LeaderHandoffTest, ForgetsNodesHandedOffLongAgo) {
  World w;
  w.term = 1;
  w.live = 2;
  int handed = 0;
  for (int i = 0; i < 30000; ++i) {
    const std::string node = absl::StrCat("n", i);
    if (w.handoff.HandOff(node).has_value()) ++handed;
    if (i % 1000 == 999) w.clock.Advance(absl::Minutes(1));
  }
  EXPECT_GT(handed, 30000 / LeaderHandoff::kShare * 9 / 10);
  // At most the last 10 minutes' worth (10,000 nodes' share) and a
  // pruning's slack: not all of them.
  EXPECT_LT(w.handoff.remembered(), static_cast<size_t>(handed) * 2 / 3);
  // The first nodes were handed off 29 minutes ago: handed off again.
  int again = 0;
  for (int i = 0; i < 1000; ++i) {
    if (w.handoff.HandOff(absl::StrCat("n", i)).has_value()) ++again;
  }
  EXPECT_GT(again, 100);
}

// A flood of Hellos under made-up names fills the memory up to its bound,
// no further: beyond it the leader takes the agents instead.
TEST(LeaderHandoffTest, AFloodOfNamesIsBoundedAndThenTaken) {
  World w;
  w.term = 1;
  w.live = 3;
  size_t handed = 0;
  size_t taken = 0;
  for (size_t i = 0; handed + taken < 2 * LeaderHandoff::kMaxRemembered; ++i) {
    const std::string node = absl::StrCat("flood-", i);
    if (!LeaderHandoff::InShare(node)) continue;
    if (w.handoff.HandOff(node).has_value()) {
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
  EXPECT_TRUE(w.handoff.HandOff(NodeInShare(true)).has_value());
  EXPECT_EQ(w.handoff.remembered(), 1u);
}

}  // namespace
}  // namespace fabricdiag::cluster
