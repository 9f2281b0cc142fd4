// FabricView's merge of sorted runs (AppendSorted, then Finish): the order
// one sort of every port gives, each port moved once.
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
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
    p.s.rx_bytes = tag;
  }
  return run;
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

}  // namespace
}  // namespace fabricdiag::analysis
