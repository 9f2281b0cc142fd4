// The scenario builder itself: the clusters it builds have the shape and the
// fault signatures the suite relies on, so a suite failure means the
// analyzers, not the scenarios, are wrong.
#include "tests/testing/scenario_builder.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "analysis/analyzer_util.h"
#include "tests/testing/scenario_score.h"

namespace fabricdiag::analysis::scenario {
namespace {

using ::testing::DoubleNear;
using ::testing::ElementsAre;
using ::testing::SizeIs;

Cluster MustBuild(const ClusterSpec& spec) {
  absl::StatusOr<Cluster> c = Cluster::Build(spec);
  EXPECT_TRUE(c.ok()) << c.status();
  return *std::move(c);
}

const PortSignals& At(const FabricView& view, const std::string& node,
                      const std::string& device) {
  const PortView* p = view.Find(node, device);
  EXPECT_NE(p, nullptr) << node << " " << device;
  static const PortView kNone;
  return p == nullptr ? kNone.s : p->s;
}

TEST(ScenarioBuilderTest, TwoJobClusterHasJobsLeavesAndMirroredSwitchPorts) {
  Cluster c = MustBuild(TwoJobCluster(16));
  ASSERT_THAT(c.jobs(), SizeIs(2));
  EXPECT_EQ(c.jobs()[0].job(), "moe-train");
  EXPECT_EQ(c.jobs()[0].Degree(Dim::kEp), 8u);
  EXPECT_EQ(c.jobs()[1].Degree(Dim::kPp), 2u);
  EXPECT_EQ(c.jobs()[1].Degree(Dim::kDp), 4u);
  EXPECT_EQ(c.topology().switches_size(), 4);
  EXPECT_THAT(c.topology().switches(0).uplinks(),
              ElementsAre("swp49", "swp50", "swp51", "swp52"));
  EXPECT_EQ(c.topology().links_size(), 16 * 8);

  FabricView view = c.View({}, TrafficOptions{}, 1);
  // 16 x 8 NICs, 4 leaves x (32 host ports + 4 uplinks).
  EXPECT_THAT(view.ports(), SizeIs(128 + 4 * 36));
  const PortSignals& nic = At(view, "gpu-005", "mlx5_3");
  const PortView* sw = view.Find("leaf-1", "swp12");  // gpu-005 is 2nd on it
  ASSERT_NE(sw, nullptr);
  EXPECT_TRUE(sw->is_switch_port);
  EXPECT_THAT(sw->s.rx_bytes, DoubleNear(nic.tx_bytes, 0.01 * nic.tx_bytes));
  EXPECT_THAT(sw->s.tx_bytes, DoubleNear(nic.rx_bytes, 0.01 * nic.rx_bytes));
  EXPECT_EQ(view.Find("gpu-005", "eth3"), view.Find("gpu-005", "mlx5_3"));
}

TEST(ScenarioBuilderTest, HealthyTrafficIsWithinTheDocumentedNoise) {
  Cluster c = MustBuild(TwoJobCluster(16));
  for (uint32_t seed : {1u, 2u, 3u}) {
    FabricView view = c.View({}, TrafficOptions{}, seed);
    for (const PortView& p : view.ports()) {
      if (p.is_switch_port) continue;
      SCOPED_TRACE(p.node + " " + p.device);
      EXPECT_GE(p.s.rx_bytes, 5e9);
      EXPECT_LE(p.s.rx_bytes, 0.5 * kNicRate);
      EXPECT_LT(p.s.tx_pause_fraction[kRocePriority], 0.003);
      EXPECT_FALSE(Has(p.s.tx_pause_fraction[0]));  // PFC only on prio 3
      EXPECT_LE(p.s.cnp_sent, 500 * 1.3);
      EXPECT_LT(p.s.corrected_bits / p.s.received_bits, 1e-8);
      EXPECT_EQ(p.s.local_ack_timeout_err, 0);
    }
  }
}

TEST(ScenarioBuilderTest, RoutingSkewStaysWithEachMoeNic) {
  absl::StatusOr<Cluster> c = Cluster::Build(TwoJobCluster(16));
  ASSERT_TRUE(c.ok()) << c.status();
  TrafficOptions skew;
  skew.routing_skew_sigma = 0.3;
  double lo = 1e30, hi = 0;
  for (uint32_t seed : {1u, 2u}) {
    const FabricView plain = c->View({}, TrafficOptions{}, seed);
    const FabricView skewed = c->View({}, skew, seed);
    for (int n = 0; n < 8; ++n) {  // the MoE job
      for (int k = 0; k < kNicsPerNode; ++k) {
        const std::string dev = absl::StrCat("mlx5_", k);
        const double f = skewed.Find(c->HostName(n), dev)->s.rx_bytes /
                         plain.Find(c->HostName(n), dev)->s.rx_bytes;
        if (seed == 1) {
          lo = std::min(lo, f);
          hi = std::max(hi, f);
        }
      }
    }
    // The dense job is not skewed.
    EXPECT_EQ(skewed.Find("gpu-009", "mlx5_1")->s.rx_bytes,
              plain.Find("gpu-009", "mlx5_1")->s.rx_bytes);
  }
  EXPECT_GT(hi / lo, 2);  // sigma 0.3 over 64 NICs: more than 2x apart
  // The same factor in every pass.
  const double a = c->View({}, skew, 1).Find("gpu-002", "mlx5_2")->s.rx_bytes /
                   c->View({}, {}, 1).Find("gpu-002", "mlx5_2")->s.rx_bytes;
  const double b = c->View({}, skew, 9).Find("gpu-002", "mlx5_2")->s.rx_bytes /
                   c->View({}, {}, 9).Find("gpu-002", "mlx5_2")->s.rx_bytes;
  EXPECT_DOUBLE_EQ(a, b);
}

// A restarted collector holds only the reports the agents replayed: the
// window starts at first_report until it is full again, and a first_report
// past the newest report leaves that report alone.
TEST(ScenarioBuilderTest, FirstReportShortensTheWindow) {
  absl::StatusOr<Cluster> c = Cluster::Build(TwoJobCluster(16));
  ASSERT_TRUE(c.ok()) << c.status();
  TrafficOptions t;
  t.sample_jitter = true;
  t.last_report = 10;
  auto reports = [&](int first_report) {
    t.first_report = first_report;
    return c->View({}, t, 4).Find("gpu-004", "mlx5_0")->samples.reports;
  };
  EXPECT_EQ(reports(0), 5);
  EXPECT_EQ(reports(6), 5);
  EXPECT_EQ(reports(8), 3);
  EXPECT_EQ(reports(10), 1);
  EXPECT_EQ(reports(12), 1);
  t.first_report = 8;
  const SampleEvidence short_window =
      c->View({}, t, 4).Find("gpu-004", "mlx5_0")->samples;
  // Three intervals of 0.7 to 1.4 s each.
  EXPECT_GE(short_window.report_span_seconds, 3 * 0.7);
  EXPECT_LE(short_window.report_span_seconds, 3 * 1.4);
}

TEST(ScenarioBuilderTest, StaleReadsShowAsZerosThenALump) {
  absl::StatusOr<Cluster> c = Cluster::Build(TwoJobCluster(16));
  ASSERT_TRUE(c.ok()) << c.status();
  TrafficOptions t;
  t.stale_nodes = {"gpu-003"};
  t.sample_jitter = true;
  // Reports 1 and 2 are stale, 3 catches up.
  t.last_report = 2;
  t.newest_only = true;
  const FabricView newest = c->View({}, t, 4);
  EXPECT_EQ(newest.Find("gpu-003", "mlx5_0")->s.rx_bytes, 0);
  EXPECT_EQ(newest.Find("gpu-003", "mlx5_0")->samples.intervals, 0);
  const SampleEvidence fresh = newest.Find("gpu-004", "mlx5_0")->samples;
  EXPECT_EQ(fresh.reports, 1);
  EXPECT_EQ(fresh.intervals, 1);
  EXPECT_GE(fresh.span_seconds, 0.7);
  EXPECT_LE(fresh.span_seconds, 1.4);
  // A window whose stale reads come before their lump: the mean is about
  // right, and one interval spans three reports.
  t.newest_only = false;
  t.last_report = 5;
  const FabricView window = c->View({}, t, 4);
  const FabricView plain = c->View({}, {}, 4);
  const SampleEvidence e = window.Find("gpu-003", "mlx5_0")->samples;
  EXPECT_EQ(e.reports, 5);
  EXPECT_EQ(e.intervals, 3);
  EXPECT_GT(e.max_interval_seconds, 1.5 * e.median_interval_seconds);
  EXPECT_THAT(window.Find("gpu-003", "mlx5_0")->s.rx_bytes /
                  plain.Find("gpu-003", "mlx5_0")->s.rx_bytes,
              DoubleNear(1, 0.4));
  // Stale reads at the window's end, their lump not in yet: the mean is
  // low, and the samples that moved cover less of the window.
  t.last_report = 8;
  const FabricView late = c->View({}, t, 4);
  const SampleEvidence tail = late.Find("gpu-003", "mlx5_0")->samples;
  EXPECT_EQ(tail.intervals, 3);
  EXPECT_LT(tail.span_seconds, 0.8 * late.window_seconds);
  EXPECT_LT(late.Find("gpu-003", "mlx5_0")->s.rx_bytes,
            0.7 * plain.Find("gpu-003", "mlx5_0")->s.rx_bytes);
  // Jitter alone: up to 2x between intervals.
  const SampleEvidence j = late.Find("gpu-004", "mlx5_0")->samples;
  EXPECT_EQ(j.intervals, 5);
  EXPECT_LE(j.max_interval_seconds, 2 * j.median_interval_seconds);
}

TEST(ScenarioBuilderTest, FreshNoiseEveryPassSameForSameSeed) {
  Cluster c = MustBuild(TwoJobCluster(8));
  FabricView a = c.View({}, TrafficOptions{}, 1);
  FabricView b = c.View({}, TrafficOptions{}, 1);
  FabricView other = c.View({}, TrafficOptions{}, 2);
  EXPECT_EQ(At(a, "gpu-001", "mlx5_0").rx_bytes,
            At(b, "gpu-001", "mlx5_0").rx_bytes);
  EXPECT_NE(At(a, "gpu-001", "mlx5_0").rx_bytes,
            At(other, "gpu-001", "mlx5_0").rx_bytes);
}

TEST(ScenarioBuilderTest, HotExpertReceivesSixTimesItsGroup) {
  Cluster c = MustBuild(TwoJobCluster(16));
  const Fault f{FaultKind::kHotExpert, "gpu-001", "mlx5_2"};
  FabricView view = c.View({f}, TrafficOptions{}, 4);
  std::vector<double> others;
  for (int n = 0; n < 8; ++n) {
    if (n == 1) continue;
    others.push_back(At(view, c.HostName(n), "mlx5_2").rx_bytes);
  }
  const PortSignals& hot = At(view, "gpu-001", "mlx5_2");
  EXPECT_GT(hot.rx_bytes / Median(others), 4.5);
  EXPECT_LE(hot.rx_bytes, kNicRate);
  EXPECT_GT(hot.cnp_sent, 90e3);
  const FaultExpectation e = c.Expect(f);
  EXPECT_EQ(e.primary.kind, "hot_expert_incast");
  EXPECT_EQ(e.primary.group, "ep:2");
}

TEST(ScenarioBuilderTest, PfcStormPausesPartnerAndVictimsOfItsLeaf) {
  Cluster c = MustBuild(TwoJobCluster(16));
  // gpu-009 is the second host of leaf-2: mlx5_5 is on swp14.
  FabricView view =
      c.View({{FaultKind::kPfcStorm, "gpu-009", "mlx5_5"}}, {}, 5);
  EXPECT_EQ(At(view, "gpu-009", "mlx5_5").tx_pause_fraction[kRocePriority],
            0.95);
  EXPECT_EQ(At(view, "leaf-2", "swp14").rx_pause_fraction[kRocePriority], 0.95);
  EXPECT_GT(At(view, "leaf-2", "swp1").tx_pause_fraction[kRocePriority], 0.3);
  EXPECT_GT(At(view, "gpu-010", "mlx5_0").rx_pause_fraction[kRocePriority],
            0.3);
  // Another leaf is untouched.
  EXPECT_LT(At(view, "gpu-004", "mlx5_0").rx_pause_fraction[kRocePriority],
            0.003);
}

TEST(ScenarioBuilderTest, EcmpImbalanceSkewsOneLeafsUplinks) {
  Cluster c = MustBuild(TwoJobCluster(16));
  FabricView view = c.View({{FaultKind::kEcmpImbalance, "leaf-1", ""}}, {}, 6);
  const double hot = At(view, "leaf-1", "swp49").tx_bytes;
  const double cold = At(view, "leaf-1", "swp50").tx_bytes;
  EXPECT_THAT(hot / cold, DoubleNear(7, 0.01));
  const double a = At(view, "leaf-0", "swp49").tx_bytes;
  const double b = At(view, "leaf-0", "swp50").tx_bytes;
  EXPECT_LT(std::max(a, b) / std::min(a, b), 1.15);
  EXPECT_GT(a / At(view, "leaf-0", "swp49").link_rate, 0.1);
}

TEST(ScenarioBuilderTest, LinkFaultsShowAtBothEndsOfTheCable) {
  Cluster c = MustBuild(TwoJobCluster(16));
  FabricView view = c.View({{FaultKind::kLinkDegraded, "gpu-005", "mlx5_7"},
                            {FaultKind::kLinkFlap, "gpu-012", "mlx5_1"}},
                           {}, 7);
  EXPECT_EQ(At(view, "gpu-005", "mlx5_7").link_rate, kNicRate / 2);
  EXPECT_EQ(At(view, "leaf-1", "swp16").link_rate, kNicRate / 2);
  EXPECT_GT(At(view, "gpu-012", "mlx5_1").link_downed, 0);
  EXPECT_GT(At(view, "leaf-3", "swp2").carrier_changes, 0);
  const FaultExpectation e =
      c.Expect({FaultKind::kLinkDegraded, "gpu-005", "mlx5_7"});
  EXPECT_EQ(e.primary.device, "mlx5_7");
  ASSERT_FALSE(e.secondary.empty());
  EXPECT_EQ(e.secondary[0].node, "leaf-1");
  EXPECT_EQ(e.secondary[0].device, "swp16");
}

TEST(ScenarioBuilderTest, StragglerMovesThirtyPercentOfItsDpGroup) {
  Cluster c = MustBuild(TwoJobCluster(16));
  const Fault f{FaultKind::kStragglerNic, "gpu-006", "mlx5_0"};
  FabricView view = c.View({f}, {}, 8);
  std::vector<double> group;
  group.reserve(8);
  for (int n = 0; n < 8; ++n) {
    group.push_back(At(view, c.HostName(n), "mlx5_0").rx_bytes);
  }
  EXPECT_LT(At(view, "gpu-006", "mlx5_0").rx_bytes / Median(group), 0.45);
  EXPECT_EQ(c.Expect(f).primary.group, "dp:0");
}

TEST(ScenarioBuilderTest, BareNodesReportTrafficOnlyTheirSwitchPortsAll) {
  Cluster c = MustBuild(TwoJobCluster(16));
  TrafficOptions bare;
  bare.bare_nodes = {"gpu-011"};
  bare.frames_only_pause = true;
  FabricView view = c.View({}, bare, 9);
  const PortSignals& nic = At(view, "gpu-011", "mlx5_0");
  EXPECT_GT(nic.rx_bytes, 1e9);
  EXPECT_EQ(nic.link_rate, kNicRate);
  EXPECT_FALSE(Has(nic.cnp_sent));
  EXPECT_FALSE(Has(nic.rx_pause_frames[kRocePriority]));
  EXPECT_FALSE(Has(nic.symbol_errors));
  // gpu-011 is the 4th host of leaf-2: mlx5_0 is on swp25.
  const PortSignals& sw = At(view, "leaf-2", "swp25");
  EXPECT_TRUE(Has(sw.tx_pause_frames[kRocePriority]));
  EXPECT_FALSE(Has(sw.tx_pause_fraction[kRocePriority]));  // frames only
  EXPECT_TRUE(Has(At(view, "gpu-010", "mlx5_0").cnp_sent));
}

TEST(ScenarioBuilderTest, ManyJobClusterCoversEveryNode) {
  const ClusterSpec spec = ManyJobCluster(1024, 100);
  ASSERT_THAT(spec.jobs, SizeIs(100));
  int covered = 0;
  for (const JobSpec& j : spec.jobs) {
    EXPECT_GE(j.num_nodes, 8);
    EXPECT_LE(j.num_nodes, 64);
    covered += j.num_nodes;
  }
  EXPECT_EQ(covered, 1024);
  Cluster c = MustBuild(ManyJobCluster(128, 100));
  EXPECT_EQ(c.HostName(127), "gpu-127");
  EXPECT_EQ(c.num_leaves(), 8);
  // 128 host ports per leaf: the uplinks move past them.
  EXPECT_THAT(c.topology().switches(0).uplinks(),
              ElementsAre("swp129", "swp130", "swp131", "swp132"));
}

TEST(ScenarioBuilderTest, RejectsInconsistentSpecs) {
  ClusterSpec spec = TwoJobCluster(8);
  spec.jobs[1].first_node = 2;  // overlaps the MoE job
  EXPECT_FALSE(Cluster::Build(spec).ok());
  spec = TwoJobCluster(8);
  spec.jobs[1].num_nodes = 9;
  EXPECT_FALSE(Cluster::Build(spec).ok());
  spec.nodes = 0;
  EXPECT_FALSE(Cluster::Build(spec).ok());
}

// --- scoring ----------------------------------------------------------------

Finding MakeFinding(std::string kind, std::string node, std::string device) {
  Finding f;
  f.kind = std::move(kind);
  f.node = std::move(node);
  f.device = std::move(device);
  return f;
}

TEST(ScenarioScoreTest, SeparatesHitsMissesSecondaryAndFalsePositives) {
  FaultExpectation storm;
  storm.primary = {"pfc_storm", "gpu-009", "mlx5_5", ""};
  storm.secondary = {{"congestion", "gpu-010", "", ""}};
  FaultExpectation flap;
  flap.primary = {"link_flap", "gpu-012", "mlx5_1", ""};
  const std::vector<Finding> open = {
      MakeFinding("pfc_storm", "gpu-009", "mlx5_5"),
      MakeFinding("congestion", "gpu-010", "mlx5_3"),
      MakeFinding("congestion", "gpu-011", "mlx5_3"),
      MakeFinding("link_flap", "gpu-012", "mlx5_2"),
  };
  const ScenarioScore s = ScoreFindings({storm, flap}, open);
  EXPECT_EQ(s.expected, 2);
  EXPECT_EQ(s.found, 1);
  EXPECT_EQ(s.true_positive_findings, 1);
  ASSERT_THAT(s.missed, SizeIs(1));
  EXPECT_EQ(Describe(s.missed[0]), "link_flap gpu-012/mlx5_1");
  ASSERT_THAT(s.secondary, SizeIs(1));
  EXPECT_EQ(s.secondary[0].node, "gpu-010");
  ASSERT_THAT(s.false_positives, SizeIs(2));
  EXPECT_EQ(Describe(s.false_positives[0]), "congestion gpu-011/mlx5_3");
}

TEST(ScenarioScoreTest, EmptyDeviceMatchesAnyDeviceOfTheNode) {
  FaultExpectation ecmp;
  ecmp.primary = {"ecmp_imbalance", "leaf-1", "", ""};
  const ScenarioScore s = ScoreFindings(
      {ecmp},
      std::vector<Finding>{MakeFinding("ecmp_imbalance", "leaf-1", "swp49")});
  EXPECT_EQ(s.found, 1);
  EXPECT_TRUE(s.false_positives.empty());
}

}  // namespace
}  // namespace fabricdiag::analysis::scenario
