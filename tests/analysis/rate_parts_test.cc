// The rate analyzers cut where their data is (the port part on each
// collector's own nodes, job and switch parts shard by shard, each shard
// given only the signals it reads) find what they find over the whole
// fabric, once the parts' excuses are merged.
#include "analysis/rate_parts.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "analysis/analysis_config.h"
#include "analysis/analyzer.h"
#include "analysis/cabling_mismatch.h"
#include "analysis/congestion.h"
#include "analysis/link_degraded.h"
#include "analysis/link_errors.h"
#include "analysis/link_flap.h"
#include "analysis/retransmissions.h"
#include "analysis/shard_map.h"
#include "tests/analysis/shard_findings.h"
#include "tests/testing/scenario_builder.h"

namespace fabricdiag::analysis::scenario {
namespace {

using testing::FindingKeys;
using testing::ShardView;

// The whole nodes of `view` whose collector (one of `collectors`, by the
// node's position in the sorted view) is `collector`.
FabricView CollectorView(const FabricView& view, int collectors,
                         int collector) {
  absl::flat_hash_map<std::string, int> of;
  std::vector<uint32_t> ports;
  for (uint32_t i = 0; i < view.ports().size(); ++i) {
    const std::string& node = view.ports()[i].node;
    auto [it, added] = of.try_emplace(node, static_cast<int>(of.size()));
    if (it->second % collectors == collector) ports.push_back(i);
  }
  return testing::PortsOf(view, ports);
}

class RatePartsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<Cluster> c = Cluster::Build(TwoJobCluster(64));
    ASSERT_TRUE(c.ok()) << c.status();
    cluster_.emplace(*std::move(c));
    baselines_ = cluster_->Watched({}, 7, config_);
    topology_.emplace(&cluster_->topology());
    for (const LayoutModel& m : cluster_->jobs()) layouts_.push_back(&m);
  }

  AnalysisInput Input(const FabricView& view,
                      const CongestionBaselines* congestion = nullptr) const {
    AnalysisInput in = cluster_->Input(&view, &config_, &baselines_);
    in.topology_index = &*topology_;
    in.congestion_baselines = congestion;
    return in;
  }

  const AnalysisConfig config_;
  std::optional<Cluster> cluster_;
  StragglerBaselines baselines_;
  std::optional<TopologyIndex> topology_;
  std::vector<const LayoutModel*> layouts_;
};

TEST_F(RatePartsTest, ShardByShardThePartsFindWhatTheWholeFabricFinds) {
  const FabricView view = cluster_->View(testing::EveryRateFault(), {}, 4);
  const std::vector<Finding> whole = RunRateAnalyzers(Input(view));
  const std::set<std::string> want = FindingKeys(whole);
  std::set<std::string> kinds;
  for (const Finding& f : whole) kinds.insert(f.kind);
  EXPECT_THAT(kinds, ::testing::IsSupersetOf(
                         {"hot_expert_incast", "pfc_storm", "ecmp_imbalance",
                          "straggler_nic", "link_flap", "link_degraded",
                          "link_errors", "retransmissions", "congestion"}))
      << absl::StrJoin(want, "\n");

  for (const ShardCounts counts :
       {ShardCounts{1, 1}, ShardCounts{2, 3}, ShardCounts{}}) {
    for (const int collectors : {1, 3}) {
      SCOPED_TRACE(absl::StrCat(counts.jobs, " job shards, ", counts.switches,
                                " switch shards, ", collectors, " collectors"));
      // Each collector's port part compares congestion with the fabric's
      // medians, not its own ports'.
      const CongestionBaselines congestion = CongestionBaselinesOf(view);
      std::vector<RatePart> parts;
      for (int c = 0; c < collectors; ++c) {
        const FabricView own = CollectorView(view, collectors, c);
        parts.push_back(RunPortPart(Input(own, &congestion)));
      }
      for (const ShardPorts& s :
           AssignShards(view, layouts_, *topology_, counts)) {
        const FabricView shard = ShardView(view, s.ports, s.kind);
        parts.push_back(s.kind == ShardKind::kJobs
                            ? RunJobPart(Input(shard))
                            : RunSwitchPart(Input(shard)));
      }
      RateExcuses excuses;
      for (const RatePart& p : parts) excuses.Merge(p.excuses);
      std::set<std::string> found;
      std::set<std::string> excused;
      for (RatePart& p : parts) {
        const std::set<std::string> before = FindingKeys(p.findings);
        Excuse(excuses, &p.findings);
        const std::set<std::string> after = FindingKeys(p.findings);
        for (const std::string& k : after) {
          EXPECT_TRUE(found.insert(k).second) << "found by two parts: " << k;
        }
        for (const std::string& k : before) {
          if (after.count(k) == 0) excused.insert(k);
        }
      }
      EXPECT_EQ(found, want);
      // What the excuses dropped is what the whole fabric drops: the hot
      // NIC's congestion, the stragglers a storm, a flap and a slow link
      // explain; none is dropped for nothing.
      std::set<std::string> excused_kinds;
      for (const std::string& k : excused) {
        excused_kinds.insert(k.substr(0, k.find(' ')));
      }
      EXPECT_THAT(excused_kinds,
                  ::testing::IsSupersetOf({"congestion", "straggler_nic"}))
          << absl::StrJoin(excused, "\n");
      for (const std::string& k : excused) {
        EXPECT_EQ(want.count(k), 0u) << k;
      }
    }
  }
}

// However a view is cut into runs of whole nodes (a run ends with the node
// its count reaches: a host's 8 ports or a switch's dozens), the port part
// finds what its analyzers find over the whole view at once, in the same
// order and words, and excuses the same stragglers.
TEST_F(RatePartsTest, RunByRunThePortPartFindsWhatItsAnalyzersFindOverTheView) {
  const FabricView faulty = cluster_->View(testing::EveryRateFault(), {}, 4);
  // The same ports with no expected link rate: a slow link is then told
  // from its node's other ports of its kind, which a run must not cut.
  FabricView unexpected;
  for (const PortView& p : faulty.ports()) {
    PortView& q = unexpected.AddPort(p.node, p.device);
    q = p;
    q.s.expected_rate = kAbsent;
  }
  unexpected.Finish();
  const std::vector<const FabricView*> views = {&faulty, &unexpected};
  for (const FabricView* view : views) {
    SCOPED_TRACE(view == &faulty ? "expected rates" : "no expected rates");
    const CongestionBaselines congestion = CongestionBaselinesOf(*view);
    const AnalysisInput in = Input(*view, &congestion);
    std::vector<Finding> want;
    for (const auto analyzer :
         {&CongestionFindings, &LinkErrorsFindings, &LinkFlapFindings,
          &LinkDegradedFindings, &RetransmissionsFindings,
          &CablingMismatchFindings}) {
      for (Finding& f : analyzer(in)) want.push_back(std::move(f));
    }
    std::set<std::string> kinds;
    std::set<std::string> slow;  // the nodes of the slow links found
    for (const Finding& f : want) {
      kinds.insert(f.kind);
      if (f.kind == "link_degraded") slow.insert(f.node);
    }
    EXPECT_THAT(kinds, ::testing::IsSupersetOf({"congestion", "link_errors",
                                                "link_flap", "link_degraded",
                                                "retransmissions"}));
    // A host's and a switch's (among its dozens of ports).
    EXPECT_THAT(slow, ::testing::Contains(::testing::StartsWith("gpu-")));
    EXPECT_THAT(slow, ::testing::Contains(::testing::StartsWith("leaf-")));
    ASSERT_GT(view->ports().size(), 600u);
    const auto same = [](const std::vector<Finding>& got,
                         const std::vector<Finding>& expected) {
      ASSERT_EQ(got.size(), expected.size());
      for (size_t i = 0; i < got.size(); ++i) {
        const Finding& g = got[i];
        const Finding& e = expected[i];
        EXPECT_EQ(std::tie(g.kind, g.node, g.device, g.summary, g.severity),
                  std::tie(e.kind, e.node, e.device, e.summary, e.severity))
            << i;
        EXPECT_EQ(g.evidence, e.evidence) << i;
      }
    };
    std::set<RateExcuses::Port> flapped_or_slow;
    for (const Finding& f : want) {
      if (f.kind == "link_flap" || f.kind == "link_degraded") {
        flapped_or_slow.emplace(f.node, f.device);
      }
    }
    for (const size_t run : {size_t{1}, size_t{5}, size_t{13}, size_t{64},
                             size_t{500}, kJudgedPortsPerRun, SIZE_MAX}) {
      SCOPED_TRACE(absl::StrCat(run, " ports a run"));
      const RatePart part = RunPortPart(in, run);
      same(part.findings, want);
      EXPECT_EQ(part.excuses.straggler, flapped_or_slow);
    }
    // Without the fabric's medians: the view's own, as congestion alone
    // takes them.
    AnalysisInput alone = in;
    alone.congestion_baselines = nullptr;
    same(RunPortPart(alone, 7).findings, want);
  }
}

TEST_F(RatePartsTest, CollectorsHistogramsMergedGiveTheFabricsMedians) {
  const FabricView view =
      cluster_->View({{FaultKind::kCongestion, "gpu-045", "mlx5_3"},
                      {FaultKind::kCongestion, "gpu-012", "mlx5_6"},
                      {FaultKind::kHotExpert, "gpu-001", "mlx5_2"}},
                     {}, 9);
  const CongestionBaselines exact = CongestionBaselinesOf(view);
  constexpr int kCollectors = 3;
  CongestionHistograms merged;
  for (int c = 0; c < kCollectors; ++c) {
    merged.Merge(CongestionHistogramsOf(CollectorView(view, kCollectors, c)));
  }
  const CongestionBaselines approx = merged.Baselines();
  EXPECT_EQ(approx.hosts.ports, exact.hosts.ports);
  EXPECT_EQ(approx.switches.ports, exact.switches.ports);
  EXPECT_GT(exact.hosts.median, 0);
  EXPECT_NEAR(approx.hosts.median, exact.hosts.median,
              exact.hosts.median * 0.005);
  EXPECT_NEAR(approx.switches.median, exact.switches.median,
              exact.switches.median * 0.005);

  // Each collector's port part against the merged medians finds the
  // whole fabric's congestion findings, and no other.
  auto identities = [](const std::vector<Finding>& found) {
    std::set<std::string> out;
    for (const Finding& f : found) {
      if (f.kind == "congestion") out.insert(f.node + " " + f.device);
    }
    return out;
  };
  std::set<std::string> found;
  for (int c = 0; c < kCollectors; ++c) {
    const FabricView own = CollectorView(view, kCollectors, c);
    for (const std::string& k :
         identities(RunPortPart(Input(own, &approx)).findings)) {
      found.insert(k);
    }
  }
  const std::set<std::string> want =
      identities(RunPortPart(Input(view)).findings);
  EXPECT_EQ(found, want);
  EXPECT_EQ(want.size(), 3u) << absl::StrJoin(want, "\n");
}

}  // namespace
}  // namespace fabricdiag::analysis::scenario
