// FabricView's merge of sorted runs (AppendSorted, then Finish): the order
// one sort of every port gives, each port moved once; a view rewritten in
// place (BeginRewrite, RewritePort); and the port storage large views leave
// for the next ones.
#include <cmath>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/types/span.h"
#include "analysis/fabric_view.h"
#include "gtest/gtest.h"

namespace fabricdiag::analysis {
namespace {

std::vector<PortView> SortedRun(const std::vector<std::pair<int, int>>& ports,
                                double tag) {
  std::vector<PortView> run;
  for (const auto& [node, device] : ports) {
    PortView& p = run.emplace_back();
    p.node = absl::StrFormat("n-%03d", node);
    p.device = absl::StrCat("mlx5_", device);
    p.netdev = absl::StrCat("eth", device);
    p.s.rx_bytes = tag;
  }
  return run;
}

// The view's indexes agree with its ports: each port is what Find() gives
// for its device and its netdev (the first of equal ports), and PortsOf()
// its node's ports, all of them and only those. Finish() builds them as
// the merge moves the ports, or after a sort.
void ExpectIndexed(const FabricView& v) {
  const absl::Span<const PortView> ports = v.ports();
  for (size_t i = 0; i < ports.size(); ++i) {
    const PortView& p = ports[i];
    SCOPED_TRACE(absl::StrCat(p.node, "/", p.device));
    size_t first = i;
    while (first > 0 && ports[first - 1].node == p.node &&
           ports[first - 1].device == p.device) {
      --first;
    }
    EXPECT_EQ(v.Find(p.node, p.device), &ports[first]);
    EXPECT_EQ(v.Find(p.node, p.netdev), &ports[first]);
    size_t begin = i;
    size_t end = i;
    while (begin > 0 && ports[begin - 1].node == p.node) --begin;
    while (end < ports.size() && ports[end].node == p.node) ++end;
    const absl::Span<const PortView> of = v.PortsOf(p.node);
    EXPECT_EQ(of.data(), &ports[begin]);
    EXPECT_EQ(of.size(), end - begin);
  }
}

std::vector<std::string> Keys(const FabricView& v) {
  std::vector<std::string> out;
  for (const PortView& p : v.ports()) {
    out.push_back(absl::StrCat(p.node, "/", p.device, "=", p.s.rx_bytes));
  }
  return out;
}

TEST(FabricViewRunsTest, InterleavedRunsMergeAsOneSort) {
  for (uint32_t seed = 1; seed <= 30; ++seed) {
    SCOPED_TRACE(seed);
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int> pick(0, 4);
    FabricView merged;
    FabricView sorted;
    for (int r = 0; r < 1 + pick(rng); ++r) {
      std::vector<std::pair<int, int>> keys;
      for (int n = 0; n < 40; ++n) {
        // Nodes dealt to runs, as collectors' slices.
        if (pick(rng) != 0) continue;
        for (int d = 0; d < pick(rng); ++d) keys.emplace_back(n, d);
      }
      for (const auto& [n, d] : keys) {
        sorted.AddPort(absl::StrFormat("n-%03d", n), absl::StrCat("mlx5_", d))
            .s.rx_bytes = n * 10 + d;
      }
      std::vector<PortView> run = SortedRun(keys, 0);
      for (size_t i = 0; i < run.size(); ++i) {
        run[i].s.rx_bytes = keys[i].first * 10 + keys[i].second;
      }
      merged.AppendSorted(std::move(run));
    }
    merged.Finish();
    sorted.Finish();
    EXPECT_EQ(Keys(merged), Keys(sorted));
    ExpectIndexed(merged);
    for (const PortView& p : sorted.ports()) {
      ASSERT_NE(merged.Find(p.node, p.device), nullptr);
      EXPECT_EQ(merged.PortsOf(p.node).size(), sorted.PortsOf(p.node).size());
    }
  }
}

TEST(FabricViewRunsTest, RunsInOrderAreConcatenated) {
  FabricView v;
  v.AppendSorted(SortedRun({{1, 0}, {1, 1}}, 1));
  v.AppendSorted(SortedRun({}, 9));
  v.AppendSorted(SortedRun({{2, 0}, {3, 0}}, 2));
  v.Finish();
  EXPECT_EQ(Keys(v),
            (std::vector<std::string>{"n-001/mlx5_0=1", "n-001/mlx5_1=1",
                                      "n-002/mlx5_0=2", "n-003/mlx5_0=2"}));
  EXPECT_EQ(v.PortsOf("n-001").size(), 2u);
}

// Two collectors' chunks: each one's runs follow each other, and the two
// interleave.
TEST(FabricViewRunsTest, ChainsOfRunsInterleave) {
  FabricView v;
  v.AppendSorted(SortedRun({{0, 0}, {2, 0}}, 1));
  v.AppendSorted(SortedRun({{4, 0}, {6, 0}}, 1));
  v.AppendSorted(SortedRun({{1, 0}, {1, 1}, {3, 0}}, 2));
  v.AppendSorted(SortedRun({}, 9));
  v.AppendSorted(SortedRun({{5, 0}, {7, 0}}, 2));
  v.Finish();
  EXPECT_EQ(Keys(v),
            (std::vector<std::string>{
                "n-000/mlx5_0=1", "n-001/mlx5_0=2", "n-001/mlx5_1=2",
                "n-002/mlx5_0=1", "n-003/mlx5_0=2", "n-004/mlx5_0=1",
                "n-005/mlx5_0=2", "n-006/mlx5_0=1", "n-007/mlx5_0=2"}));
  EXPECT_EQ(v.PortsOf("n-001").size(), 2u);
  ExpectIndexed(v);
}

// Equal ports (a node in two runs) keep the order of their runs.
TEST(FabricViewRunsTest, EqualPortsKeepTheOrderOfTheirRuns) {
  FabricView v;
  v.AppendSorted(SortedRun({{1, 0}, {3, 0}}, 1));
  v.AppendSorted(SortedRun({{0, 0}, {1, 0}, {3, 0}}, 2));
  v.AppendSorted(SortedRun({{1, 0}, {2, 0}}, 3));
  v.Finish();
  EXPECT_EQ(Keys(v), (std::vector<std::string>{
                         "n-000/mlx5_0=2", "n-001/mlx5_0=1", "n-001/mlx5_0=2",
                         "n-001/mlx5_0=3", "n-002/mlx5_0=3", "n-003/mlx5_0=1",
                         "n-003/mlx5_0=2"}));
  ExpectIndexed(v);
}

// Ports AddPort()ed before and after runs, and a run out of order: sorted.
TEST(FabricViewRunsTest, AddedPortsAndUnsortedRunsAreSorted) {
  FabricView v;
  v.AddPort("n-005", "mlx5_0").s.rx_bytes = 5;
  v.AppendSorted(SortedRun({{3, 0}, {1, 0}}, 1));  // out of order
  v.AddPort("n-000", "mlx5_0").s.rx_bytes = 0;
  v.AppendSorted(SortedRun({{4, 0}}, 4));
  v.Finish();
  EXPECT_EQ(Keys(v), (std::vector<std::string>{
                         "n-000/mlx5_0=0", "n-001/mlx5_0=1", "n-003/mlx5_0=1",
                         "n-004/mlx5_0=4", "n-005/mlx5_0=5"}));
  EXPECT_EQ(v.Find("n-004", "mlx5_0")->s.rx_bytes, 4);
}

// Ports added one by one: in order they are indexed as they stand (equal
// ports keep the order they were added in); out of order anywhere (a node
// before the one it follows, a device before the one it follows on its
// node, at the first or at the last port) they are sorted first.
TEST(FabricViewRunsTest, AddedPortsAreIndexedAsTheyStandOrSorted) {
  const std::vector<std::pair<int, int>> ports = {{0, 0}, {0, 1}, {0, 1},
                                                  {1, 0}, {2, 0}, {2, 3}};
  std::vector<std::string> want;
  want.reserve(ports.size());
  for (const auto& [node, device] : ports) {
    want.push_back(absl::StrFormat("n-%03d/mlx5_%d", node, device));
  }
  const std::vector<std::vector<int>> orders = {
      {0, 1, 2, 3, 4, 5}, {1, 0, 2, 3, 4, 5}, {0, 1, 2, 4, 3, 5},
      {0, 1, 2, 3, 5, 4}, {5, 4, 3, 2, 1, 0}, {0, 3, 1, 2, 4, 5}};
  for (const std::vector<int>& order : orders) {
    SCOPED_TRACE(absl::StrCat("order ", absl::StrJoin(order, ",")));
    FabricView v;
    for (int k : order) {
      const auto& [node, device] = ports[k];
      PortView& p = v.AddPort(absl::StrFormat("n-%03d", node),
                              absl::StrCat("mlx5_", device));
      p.netdev = absl::StrCat("eth", device);
      p.s.rx_bytes = k;
    }
    v.Finish();
    std::vector<std::string> got;
    for (const PortView& p : v.ports()) {
      got.push_back(absl::StrCat(p.node, "/", p.device));
    }
    EXPECT_EQ(got, want);
    ExpectIndexed(v);
  }
  FabricView in_order;
  for (int k = 0; k < 6; ++k) {
    in_order
        .AddPort(absl::StrFormat("n-%03d", ports[k].first),
                 absl::StrCat("mlx5_", ports[k].second))
        .s.rx_bytes = k;
  }
  in_order.Finish();
  for (int k = 0; k < 6; ++k) EXPECT_EQ(in_order.ports()[k].s.rx_bytes, k);
}

// Runs alone (no AddPort()), one of them out of order: the merge finds it
// out as it moves the ports and sorts the view, whether the runs are
// merged (they interleave) or concatenated (they follow each other), and
// through TakeRuns() into another view.
TEST(FabricViewRunsTest, RunsOutOfOrderAreSortedByTheMerge) {
  const std::vector<std::string> want = {"n-001/mlx5_0=1", "n-002/mlx5_0=2",
                                         "n-003/mlx5_0=1", "n-003/mlx5_1=1",
                                         "n-004/mlx5_0=2"};
  FabricView merged;
  merged.AppendSorted(SortedRun({{3, 1}, {1, 0}, {3, 0}}, 1));
  merged.AppendSorted(SortedRun({{2, 0}, {4, 0}}, 2));
  merged.Finish();
  EXPECT_EQ(Keys(merged), want);
  ASSERT_NE(merged.Find("n-003", "mlx5_1"), nullptr);
  EXPECT_EQ(merged.PortsOf("n-003").size(), 2u);
  ExpectIndexed(merged);

  FabricView concatenated;
  concatenated.AppendSorted(SortedRun({{2, 0}, {1, 0}}, 1));
  concatenated.AppendSorted(SortedRun({{3, 0}}, 3));
  concatenated.Finish();
  EXPECT_EQ(Keys(concatenated),
            (std::vector<std::string>{"n-001/mlx5_0=1", "n-002/mlx5_0=1",
                                      "n-003/mlx5_0=3"}));
  EXPECT_EQ(concatenated.Find("n-001", "mlx5_0")->s.rx_bytes, 1);
  ExpectIndexed(concatenated);

  FabricView given;
  given.AppendSorted(SortedRun({{4, 0}, {2, 0}}, 2));
  given.AppendSorted(SortedRun({{3, 1}, {1, 0}, {3, 0}}, 1));
  FabricView taken;
  for (std::vector<PortView>& run : given.TakeRuns()) {
    taken.AppendSorted(std::move(run));
  }
  taken.Finish();
  EXPECT_EQ(Keys(taken), want);
  ExpectIndexed(taken);
}

// A finished view taken apart and appended again: the same ports.
TEST(FabricViewRunsTest, TakePortsOfAFinishedViewGivesItsPorts) {
  FabricView v;
  v.AddPort("n-002", "mlx5_0");
  v.AddPort("n-001", "mlx5_0");
  v.Finish();
  FabricView w;
  w.AppendSorted(v.TakePorts());
  w.Finish();
  EXPECT_TRUE(v.ports().empty());
  EXPECT_EQ(v.PortsOf("n-001").size(), 0u);
  EXPECT_EQ(Keys(w),
            (std::vector<std::string>{"n-001/mlx5_0=nan", "n-002/mlx5_0=nan"}));
}

// Rewrites `v` with `ports` (node, device, netdev, rx_bytes) in order.
void Rewrite(
    FabricView* v,
    const std::vector<std::tuple<int, int, std::string, double>>& ports) {
  v->BeginRewrite();
  for (const auto& [node, device, netdev, rx] : ports) {
    PortView& p = v->RewritePort(absl::StrFormat("n-%03d", node),
                                 absl::StrCat("mlx5_", device), netdev);
    p.s.rx_bytes = rx;
  }
  v->Finish();
}

// A view built again in place: the ports that come back where they were
// keep their memory, the others are added, and each time the view reads as
// if built anew (its fields reset, its indexes right).
TEST(FabricViewRewriteTest, PortsThatComeBackAreRewrittenInPlace) {
  FabricView v;
  Rewrite(&v, {{1, 0, "eth0", 1}, {1, 1, "eth1", 2}, {2, 0, "eth0", 3}});
  ExpectIndexed(v);
  const PortView* first = &v.ports()[0];
  v.BeginRewrite();
  PortView& p = v.RewritePort("n-001", "mlx5_0", "eth0");
  EXPECT_EQ(&p, first);
  EXPECT_TRUE(std::isnan(p.s.rx_bytes));  // reset, as a new port's
  p.s.rx_bytes = 10;
  p.is_switch_port = true;
  v.RewritePort("n-001", "mlx5_1", "eth9").s.rx_bytes = 20;  // new netdev
  v.RewritePort("n-002", "mlx5_0", "eth0").s.rx_bytes = 30;
  v.Finish();
  EXPECT_EQ(&v.ports()[0], first);
  EXPECT_EQ(Keys(v),
            (std::vector<std::string>{"n-001/mlx5_0=10", "n-001/mlx5_1=20",
                                      "n-002/mlx5_0=30"}));
  ExpectIndexed(v);
  EXPECT_EQ(v.Find("n-001", "eth9"), &v.ports()[1]);
  EXPECT_EQ(v.Find("n-001", "eth1"), nullptr);
  Rewrite(&v, {{1, 0, "eth0", 1}, {1, 1, "eth9", 2}, {2, 0, "eth0", 3}});
  EXPECT_FALSE(v.ports()[0].is_switch_port);
}

TEST(FabricViewRewriteTest, AViewThatChangedIsIndexedAgain) {
  FabricView v;
  Rewrite(&v, {{1, 0, "eth0", 1}, {2, 0, "eth0", 2}, {3, 0, "eth0", 3}});
  // A port gone from the middle, one new at the end.
  Rewrite(&v, {{1, 0, "eth0", 1}, {3, 0, "eth0", 3}, {4, 1, "eth1", 4}});
  EXPECT_EQ(Keys(v),
            (std::vector<std::string>{"n-001/mlx5_0=1", "n-003/mlx5_0=3",
                                      "n-004/mlx5_1=4"}));
  EXPECT_EQ(v.Find("n-002", "mlx5_0"), nullptr);
  ExpectIndexed(v);
  // Fewer ports: the rest go.
  Rewrite(&v, {{1, 0, "eth0", 5}});
  EXPECT_EQ(Keys(v), (std::vector<std::string>{"n-001/mlx5_0=5"}));
  EXPECT_EQ(v.Find("n-003", "mlx5_0"), nullptr);
  ExpectIndexed(v);
  // More ports: added after those that came back.
  Rewrite(&v, {{1, 0, "eth0", 6}, {1, 1, "eth1", 7}});
  EXPECT_EQ(Keys(v),
            (std::vector<std::string>{"n-001/mlx5_0=6", "n-001/mlx5_1=7"}));
  ExpectIndexed(v);
  // Out of order: sorted by Finish(), as added ports are.
  Rewrite(&v, {{2, 0, "eth0", 8}, {1, 0, "eth0", 9}});
  EXPECT_EQ(Keys(v),
            (std::vector<std::string>{"n-001/mlx5_0=9", "n-002/mlx5_0=8"}));
  ExpectIndexed(v);
  // Nothing.
  Rewrite(&v, {});
  EXPECT_TRUE(v.ports().empty());
  EXPECT_EQ(v.Find("n-001", "mlx5_0"), nullptr);
}

TEST(FabricViewRewriteTest, AViewNotFinishedOrWithRunsStartsEmpty) {
  FabricView v;
  v.AddPort("n-001", "mlx5_0");  // not Finish()ed
  Rewrite(&v, {{2, 0, "eth0", 1}});
  EXPECT_EQ(Keys(v), (std::vector<std::string>{"n-002/mlx5_0=1"}));
  ExpectIndexed(v);
  v.AppendSorted(SortedRun({{3, 0}}, 2));  // runs not merged yet
  Rewrite(&v, {{4, 0, "eth0", 3}});
  EXPECT_EQ(Keys(v), (std::vector<std::string>{"n-004/mlx5_0=3"}));
  ExpectIndexed(v);
  // AddPort() in a rewrite ends it where it is.
  v.BeginRewrite();
  v.RewritePort("n-004", "mlx5_0", "eth0").s.rx_bytes = 4;
  PortView& added = v.AddPort("n-000", "mlx5_0");
  added.netdev = "eth0";
  added.s.rx_bytes = 5;
  v.Finish();
  EXPECT_EQ(Keys(v),
            (std::vector<std::string>{"n-000/mlx5_0=5", "n-004/mlx5_0=4"}));
  ExpectIndexed(v);
  // So do TakePorts() and TakeRuns(): what was rewritten, not the rest.
  Rewrite(&v, {{0, 0, "eth0", 1}, {4, 0, "eth0", 2}});
  v.BeginRewrite();
  v.RewritePort("n-000", "mlx5_0", "eth0").s.rx_bytes = 6;
  std::vector<PortView> taken = v.TakePorts();
  ASSERT_EQ(taken.size(), 1u);
  EXPECT_EQ(taken[0].s.rx_bytes, 6);
  Rewrite(&v, {{0, 0, "eth0", 1}, {4, 0, "eth0", 2}});
  v.BeginRewrite();
  v.RewritePort("n-000", "mlx5_0", "eth0").s.rx_bytes = 7;
  std::vector<std::vector<PortView>> runs = v.TakeRuns();
  ASSERT_EQ(runs.size(), 1u);
  ASSERT_EQ(runs[0].size(), 1u);
  EXPECT_EQ(runs[0][0].s.rx_bytes, 7);
}

// A view as large as the ones a pass builds: `ports` ports over nodes
// n-<first>, n-<first + 2>, ... (8 each), sorted.
std::vector<PortView> LargeRun(size_t ports, int first) {
  std::vector<PortView> run;
  run.reserve(ports);
  for (size_t i = 0; i < ports; ++i) {
    PortView& p = run.emplace_back();
    p.node = absl::StrFormat("n-%07d", first + 2 * static_cast<int>(i / 8));
    p.device = absl::StrCat("mlx5_", i % 8);
  }
  return run;
}

// The largest view of this file, for the bound on what is kept.
constexpr size_t kLargest = 2 * kSparePortsMin + 1;

// The kept storage is the process's: each test starts with none, whatever
// ran before it.
class FabricViewSpareTest : public testing::Test {
 protected:
  void SetUp() override { FreeSparePorts(); }
};

TEST_F(FabricViewSpareTest, ALargeViewsStorageServesTheNextView) {
  const SparePortStats before = GetSparePortStats();
  const PortView* first = nullptr;
  {
    FabricView v;
    v.ReservePorts(kSparePortsMin);
    v.AddPort("n-1", "mlx5_0");
    first = v.ports().data();
    v.Finish();
  }
  EXPECT_EQ(GetSparePortStats().kept, before.kept + 1);
  FabricView w;
  w.ReservePorts(kSparePortsMin);
  w.AddPort("n-2", "mlx5_1").s.rx_bytes = 7;
  EXPECT_EQ(w.ports().data(), first);
  EXPECT_EQ(GetSparePortStats().reused, before.reused + 1);
  w.Finish();
  // Nothing of the view before.
  EXPECT_EQ(Keys(w), (std::vector<std::string>{"n-2/mlx5_1=7"}));
  EXPECT_EQ(w.Find("n-1", "mlx5_0"), nullptr);
}

// A view assigned over (a pass's slice replaced by the next one's) gives
// its storage as a view that ends does; the view it takes is whole.
TEST_F(FabricViewSpareTest, AssigningOverALargeViewKeepsItsStorage) {
  FabricView replaced;
  replaced.ReservePorts(kSparePortsMin);
  replaced.AddPort("n-1", "mlx5_0");
  replaced.Finish();
  FabricView next;
  next.AddPort("n-2", "mlx5_1").s.rx_bytes = 7;
  next.Finish();

  SparePortStats before = GetSparePortStats();
  replaced = std::move(next);
  EXPECT_EQ(GetSparePortStats().kept, before.kept + 1);
  EXPECT_EQ(Keys(replaced), (std::vector<std::string>{"n-2/mlx5_1=7"}));
  EXPECT_EQ(replaced.Find("n-1", "mlx5_0"), nullptr);
  ASSERT_NE(replaced.Find("n-2", "mlx5_1"), nullptr);
  // The moved-from view is what is checked here.
  EXPECT_TRUE(next.ports().empty());  // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(next.Find("n-2", "mlx5_1"), nullptr);

  // Copy-assigned over: kept too, and the copy stands alone.
  FabricView again;
  again.ReservePorts(kSparePortsMin);
  again.AddPort("n-3", "mlx5_2");
  before = GetSparePortStats();
  again = replaced;
  EXPECT_EQ(GetSparePortStats().kept, before.kept + 1);
  EXPECT_EQ(Keys(again), (std::vector<std::string>{"n-2/mlx5_1=7"}));
  EXPECT_NE(again.Find("n-2", "mlx5_1"), replaced.Find("n-2", "mlx5_1"));
}

TEST_F(FabricViewSpareTest, AMergeOfRunsTakesKeptStorageAndKeepsTheRuns) {
  // Two runs of interleaved nodes, each large: the merge needs room for
  // both, then keeps each run's storage.
  {
    FabricView first;
    first.ReservePorts(kLargest);
  }
  const SparePortStats before = GetSparePortStats();
  FabricView v;
  v.AppendSorted(LargeRun(kSparePortsMin, 0));
  v.AppendSorted(LargeRun(kSparePortsMin, 1));
  v.Finish();
  const SparePortStats after = GetSparePortStats();
  EXPECT_EQ(after.reused, before.reused + 1);
  EXPECT_EQ(after.kept, before.kept + 2);
  ASSERT_EQ(v.ports().size(), 2 * kSparePortsMin);
  for (size_t i = 1; i < v.ports().size(); ++i) {
    ASSERT_LT(std::tie(v.ports()[i - 1].node, v.ports()[i - 1].device),
              std::tie(v.ports()[i].node, v.ports()[i].device))
        << i;
  }
  EXPECT_EQ(v.PortsOf("n-0000001").size(), 8u);
}

TEST_F(FabricViewSpareTest, SmallViewsAreNotKeptAndFewLargeOnesAre) {
  SparePortStats before = GetSparePortStats();
  {
    FabricView small;
    small.ReservePorts(1000);
    small.AddPort("n-1", "mlx5_0");
  }
  EXPECT_EQ(GetSparePortStats().kept, before.kept);
  // More large views than are kept, alive at once and then ended: the
  // smallest kept ones are freed.
  {
    std::vector<FabricView> views(kSparePortVectors + 2);
    for (size_t i = 0; i < views.size(); ++i) {
      views[i].ReservePorts(kSparePortsMin + i);
      views[i].AddPort("n-1", "mlx5_0");
    }
  }
  const SparePortStats after = GetSparePortStats();
  EXPECT_EQ(after.kept, before.kept + kSparePortVectors + 2);
  EXPECT_GE(after.dropped, before.dropped + 2);
  EXPECT_GT(after.held_bytes, 0u);
  EXPECT_LE(after.held_bytes, kSparePortVectors * kLargest * sizeof(PortView));
}

// A size no view takes any more (the merged fabric of a collector that
// stopped leading the analysis) is freed after a few passes.
TEST_F(FabricViewSpareTest, StorageNoViewTakesIsFreed) {
  {
    FabricView merged;
    merged.ReservePorts(kLargest);
    FabricView local;
    local.ReservePorts(kSparePortsMin);
  }
  const SparePortStats before = GetSparePortStats();
  for (uint64_t pass = 0; pass <= kSpareAgeGives; ++pass) {
    FabricView local;
    local.ReservePorts(kSparePortsMin);
    local.AddPort("n-1", "mlx5_0");
  }
  SparePortStats after = GetSparePortStats();
  EXPECT_GE(after.dropped, before.dropped + 1);
  // The vector the passes kept taking stays.
  EXPECT_EQ(after.reused, before.reused + kSpareAgeGives + 1);
  EXPECT_GE(after.held_bytes, kSparePortsMin * sizeof(PortView));
  EXPECT_LT(after.held_bytes, kLargest * sizeof(PortView));
  {
    FabricView merged;
    merged.ReservePorts(kLargest);
  }
  EXPECT_EQ(GetSparePortStats().reused, after.reused);

  FreeSparePorts();
  EXPECT_EQ(GetSparePortStats().held_bytes, 0u);
}

}  // namespace
}  // namespace fabricdiag::analysis
