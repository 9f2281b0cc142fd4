#include "analysis/ecmp_imbalance.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

#include "tests/analysis/pfc_fabric_testing.h"

namespace fabricdiag::analysis {
namespace {

using ::fabricdiag::analysis::testing::Host;
using ::fabricdiag::analysis::testing::kHosts;
using ::fabricdiag::analysis::testing::TestFabric;
using ::fabricdiag::analysis::testing::Uplink;
using ::testing::DoubleNear;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;

constexpr double kInf = std::numeric_limits<double>::infinity();

std::vector<Finding> Analyze(const TestFabric& fabric,
                             const ExplainedByIncast& explained = nullptr) {
  const FabricView view = fabric.View();
  return EcmpImbalanceFindings(fabric.Input(view), explained);
}

void SetUplinks(TestFabric& fabric, const std::string& leaf,
                std::vector<double> tx) {
  for (int u = 0; u < static_cast<int>(tx.size()); ++u) {
    fabric.Port(leaf, Uplink(u)).s.tx_bytes = tx[u];
  }
}

// No switch reports its uplinks: only the host-side variant can see ECMP.
void NoSwitchTelemetry(TestFabric& fabric) {
  for (const char* leaf : {"leaf-0", "leaf-1"}) {
    for (int u = 0; u < 4; ++u) fabric.Remove(leaf, Uplink(u));
  }
}

TEST(EcmpImbalanceTest, PolarizedUplinksAreFound) {
  TestFabric fabric(1);
  SetUplinks(fabric, "leaf-0", {38.2e9, 4.1e9, 8e9, 10e9});
  const std::vector<Finding> found = Analyze(fabric);
  ASSERT_THAT(found, SizeIs(1));
  const Finding& f = found[0];
  EXPECT_EQ(f.kind, "ecmp_imbalance");
  EXPECT_EQ(f.severity, Severity::kWarning);
  EXPECT_EQ(f.node, "leaf-0");
  EXPECT_EQ(f.device, "uplinks");
  EXPECT_EQ(f.job, "");
  EXPECT_EQ(f.group, "");
  EXPECT_THAT(f.nodes, ElementsAre("leaf-0"));
  const double mean = (38.2e9 + 4.1e9 + 8e9 + 10e9) / 4;
  EXPECT_THAT(f.evidence.at("max_over_mean"), DoubleNear(38.2e9 / mean, 1e-9));
  EXPECT_THAT(f.evidence.at("mean_tx_bytes_per_second"), DoubleNear(mean, 1));
  EXPECT_EQ(f.evidence.at("uplinks"), 4);
  EXPECT_EQ(f.evidence_text.at("uplinks"),
            "swp49 38.2 GB/s (63%), swp50 4.1 GB/s (6.8%), swp51 8 GB/s (13%), "
            "swp52 10 GB/s (17%)");
  EXPECT_EQ(f.evidence_text.at("hot_uplinks"), "swp49");
  EXPECT_EQ(f.evidence.at("hot_uplink_count"), 1);
  EXPECT_THAT(f.evidence.at("hot_uplinks_share"),
              DoubleNear(38.2e9 / (4 * mean), 1e-9));
  EXPECT_EQ(f.evidence_text.at("coldest_uplink"), "swp50");
  EXPECT_THAT(f.summary,
              HasSubstr("leaf-0's ECMP uplinks are unbalanced: swp49 sends "
                        "38.2 GB/s, 2.53x the mean of 4 uplinks (15.1 GB/s), "
                        "while swp50 sends only 4.1 GB/s"));
}

TEST(EcmpImbalanceTest, HealthyFabricWithNoiseRaisesNothing) {
  for (uint32_t seed = 0; seed < 20; ++seed) {
    TestFabric fabric(seed);
    EXPECT_THAT(Analyze(fabric), IsEmpty()) << "seed " << seed;
    NoSwitchTelemetry(fabric);  // the host-side variant judges alone
    EXPECT_THAT(Analyze(fabric), IsEmpty()) << "seed " << seed;
  }
}

TEST(EcmpImbalanceTest, RatioBoundary) {
  TestFabric at(2);
  SetUplinks(at, "leaf-1", {15e9, 9e9, 8e9, 8e9});  // max/mean = 1.5
  const std::vector<Finding> found = Analyze(at);
  ASSERT_THAT(found, SizeIs(1));
  EXPECT_EQ(found[0].node, "leaf-1");
  EXPECT_DOUBLE_EQ(found[0].evidence.at("max_over_mean"), 1.5);

  TestFabric below(2);
  SetUplinks(below, "leaf-1", {14.9e9, 9.1e9, 8e9, 8e9});
  EXPECT_THAT(Analyze(below), IsEmpty());
}

TEST(EcmpImbalanceTest, IdleUplinksAreNotJudged) {
  // Mean must reach 10% of 50 GB/s = 5 GB/s.
  TestFabric at(3);
  SetUplinks(at, "leaf-0", {14e9, 2e9, 2e9, 2e9});  // mean 5 GB/s
  EXPECT_THAT(Analyze(at), SizeIs(1));
  TestFabric below(3);
  SetUplinks(below, "leaf-0", {13.9e9, 2e9, 2e9, 2e9});
  EXPECT_THAT(Analyze(below), IsEmpty());
}

TEST(EcmpImbalanceTest, UnknownLinkRateUsesTheByteFloor) {
  TestFabric fabric(4);
  for (int u = 0; u < 4; ++u) fabric.Port("leaf-0", Uplink(u)).s.link_rate = 0;
  SetUplinks(fabric, "leaf-0", {3e9, 0.5e9, 0.5e9, 1e9});  // mean 1.25 GB/s
  const std::vector<Finding> found = Analyze(fabric);
  ASSERT_THAT(found, SizeIs(1));
  EXPECT_EQ(found[0].evidence.count("link_rate_bytes_per_second"), 0);
  TestFabric below(4);
  for (int u = 0; u < 4; ++u) below.Port("leaf-0", Uplink(u)).s.link_rate = 0;
  SetUplinks(below, "leaf-0", {3e9, 0.5e9, 0.5e9, 0.9e9});
  EXPECT_THAT(Analyze(below), IsEmpty());
}

TEST(EcmpImbalanceTest, OnlyReportingUplinksCount) {
  TestFabric fabric(5);
  fabric.Remove("leaf-0", "swp51");
  fabric.Port("leaf-0", "swp52").s.tx_bytes = kAbsent;
  SetUplinks(fabric, "leaf-0", {30e9, 6e9});
  const std::vector<Finding> found = Analyze(fabric);
  ASSERT_THAT(found, SizeIs(1));
  EXPECT_EQ(found[0].evidence.at("uplinks"), 2);
  EXPECT_EQ(found[0].evidence_text.at("uplinks"),
            "swp49 30 GB/s (83%), swp50 6 GB/s (17%)");

  TestFabric one(5);
  for (int u = 1; u < 4; ++u) one.Remove("leaf-0", Uplink(u));
  one.Port("leaf-0", "swp49").s.tx_bytes = 40e9;
  EXPECT_THAT(Analyze(one), IsEmpty());
}

TEST(EcmpImbalanceTest, BothSwitchesAtOnceAreSorted) {
  TestFabric fabric(6);
  SetUplinks(fabric, "leaf-1", {20e9, 20e9, 20e9, 45e9});
  SetUplinks(fabric, "leaf-0", {20e9, 45e9, 20e9, 20e9});
  const std::vector<Finding> found = Analyze(fabric);
  ASSERT_THAT(found, SizeIs(2));
  EXPECT_EQ(found[0].node, "leaf-0");
  EXPECT_EQ(found[0].evidence_text.at("hot_uplinks"), "swp50");
  EXPECT_EQ(found[1].node, "leaf-1");
  EXPECT_EQ(found[1].evidence_text.at("hot_uplinks"), "swp52");
}

// Polarization onto two uplinks: the hottest of the two alternates from pass
// to pass while the fault lasts. One fault, one finding: the identity is the
// switch's ECMP group, the hot pair its evidence.
TEST(EcmpImbalanceTest, TwoHotUplinksWhoseHottestAlternatesAreOneFinding) {
  std::vector<Finding> passes;
  for (int pass = 0; pass < 6; ++pass) {
    TestFabric fabric(8);
    const double a = pass % 2 == 0 ? 40e9 : 34e9;
    const double b = pass % 2 == 0 ? 34e9 : 40e9;
    SetUplinks(fabric, "leaf-0", {a, 3e9, b, 3e9});
    const std::vector<Finding> found = Analyze(fabric);
    ASSERT_THAT(found, SizeIs(1)) << "pass " << pass;
    passes.push_back(found[0]);
  }
  for (const Finding& f : passes) {
    EXPECT_EQ(f.node, "leaf-0");
    EXPECT_EQ(f.device, "uplinks");
    EXPECT_EQ(f.group, "");
    EXPECT_EQ(f.evidence_text.at("hot_uplinks"), "swp49, swp51");
    EXPECT_EQ(f.evidence.at("hot_uplink_count"), 2);
    EXPECT_THAT(f.evidence.at("hot_uplinks_share"),
                DoubleNear(74e9 / 80e9, 1e-9));
    EXPECT_THAT(f.summary, HasSubstr("2 of them (swp49, swp51) carry 92%"));
  }
  EXPECT_THAT(passes[0].summary, HasSubstr("the hottest, swp49,"));
  EXPECT_THAT(passes[1].summary, HasSubstr("the hottest, swp51,"));
  // When one of the pair cools down, the hot set changes: the evidence
  // says so, the identity stays.
  TestFabric one(8);
  SetUplinks(one, "leaf-0", {40e9, 3e9, 8e9, 3e9});
  const std::vector<Finding> found = Analyze(one);
  ASSERT_THAT(found, SizeIs(1));
  EXPECT_EQ(found[0].device, "uplinks");
  EXPECT_EQ(found[0].evidence_text.at("hot_uplinks"), "swp49");
}

// The rail mlx5_3 (on leaf-0) of job moe-train-42: gpu-005's NIC slows down
// for 10x the CNPs of its rail peers.
void HotRailNic(TestFabric& fabric, double hot_cnp) {
  for (int h = 0; h < kHosts; ++h) {
    fabric.Port(Host(h), "mlx5_3").s.cnp_handled = 1800 + 50 * h;
  }
  fabric.Port("gpu-005", "mlx5_3").s.cnp_handled = hot_cnp;
}

TEST(EcmpImbalanceTest, HostSideFindsAPolarizedRailWithoutSwitchTelemetry) {
  TestFabric fabric(7);
  NoSwitchTelemetry(fabric);
  HotRailNic(fabric, 48e3);
  fabric.Port("gpu-005", "mlx5_3").s.tx_bytes = 22e9;
  const std::vector<Finding> found = Analyze(fabric);
  ASSERT_THAT(found, SizeIs(1));
  const Finding& f = found[0];
  EXPECT_EQ(f.kind, "ecmp_imbalance");
  EXPECT_EQ(f.severity, Severity::kWarning);
  EXPECT_EQ(f.job, "moe-train-42");
  EXPECT_EQ(f.group, "");
  EXPECT_EQ(f.node, "gpu-005");
  EXPECT_EQ(f.device, "mlx5_3");
  EXPECT_THAT(f.nodes, ElementsAre("gpu-005", "leaf-0"));
  EXPECT_DOUBLE_EQ(f.evidence.at("cnp_handled_per_second"), 48e3);
  // Median of 1800..2150 by 50 with 2050 replaced by 48k: (1950 + 2000) / 2.
  EXPECT_DOUBLE_EQ(f.evidence.at("rail_median_cnp_handled_per_second"), 1975);
  EXPECT_EQ(f.evidence.at("rail_nics"), 8);
  EXPECT_DOUBLE_EQ(f.evidence.at("tx_bytes_per_second"), 22e9);
  EXPECT_EQ(f.evidence_text.at("rail"), "mlx5_3");
  EXPECT_THAT(f.summary, HasSubstr("gpu-005 mlx5_3 is slowed by CNPs at 48k/s, "
                                   "24.3x the median of the 8 mlx5_3 NICs of "
                                   "job moe-train-42 (1.98k/s)"));
  EXPECT_THAT(f.summary,
              HasSubstr("ECMP hashing may be polarizing this rail's flows"));
}

TEST(EcmpImbalanceTest, HostSideDefersToSwitchTelemetry) {
  TestFabric fabric(8);
  HotRailNic(fabric, 48e3);  // leaf-0 reports its uplinks (balanced)
  EXPECT_THAT(Analyze(fabric), IsEmpty());
}

TEST(EcmpImbalanceTest, HostSideThresholds) {
  // Defaults: >= 4x the rail median and >= 1000 CNP/s.
  struct Case {
    double base;
    double hot;
    bool found;
  };
  for (const Case& c : {Case{100, 1000, true}, Case{100, 999, false},
                        Case{2000, 8000, true}, Case{2000, 7999, false}}) {
    TestFabric fabric(9);
    NoSwitchTelemetry(fabric);
    for (int h = 0; h < kHosts; ++h) {
      fabric.Port(Host(h), "mlx5_6").s.cnp_handled = c.base;
    }
    fabric.Port("gpu-001", "mlx5_6").s.cnp_handled = c.hot;
    const std::vector<Finding> found = Analyze(fabric);
    EXPECT_EQ(found.size(), c.found ? 1u : 0u) << c.base << " " << c.hot;
  }
}

TEST(EcmpImbalanceTest, HostSideNeedsEnoughRailPeers) {
  TestFabric fabric(10);
  NoSwitchTelemetry(fabric);
  for (int h = 2; h < kHosts; ++h) fabric.Remove(Host(h), "mlx5_3");
  fabric.Port("gpu-000", "mlx5_3").s.cnp_handled = 100;
  fabric.Port("gpu-001", "mlx5_3").s.cnp_handled = 50e3;
  EXPECT_THAT(Analyze(fabric), IsEmpty());
}

TEST(EcmpImbalanceTest, CallerDropsWhatIncastExplains) {
  TestFabric fabric(11);
  NoSwitchTelemetry(fabric);
  HotRailNic(fabric, 48e3);
  fabric.Add("leaf-1", "swp49", true).s.tx_bytes = 45e9;
  fabric.Add("leaf-1", "swp50", true).s.tx_bytes = 10e9;
  ASSERT_THAT(Analyze(fabric), SizeIs(2));
  const std::vector<Finding> kept = Analyze(fabric, [](const Finding& f) {
    return f.node == "gpu-005";  // a sender to a hot expert
  });
  ASSERT_THAT(kept, SizeIs(1));
  EXPECT_EQ(kept[0].node, "leaf-1");
  EXPECT_THAT(Analyze(fabric, [](const Finding&) { return true; }), IsEmpty());
}

TEST(EcmpImbalanceTest, HostileValuesNeverRaiseOrCrash) {
  TestFabric fabric(12);
  SetUplinks(fabric, "leaf-0", {kInf, 20e9, 20e9, 20e9});
  SetUplinks(fabric, "leaf-1", {-50e9, 20e9, 21e9, 20e9});
  fabric.Port("leaf-1", "swp50").s.link_rate = kInf;
  EXPECT_THAT(Analyze(fabric), IsEmpty());

  TestFabric hosts(13);
  NoSwitchTelemetry(hosts);
  for (int h = 0; h < kHosts; ++h) {
    hosts.Port(Host(h), "mlx5_2").s.cnp_handled = 2000;
  }
  hosts.Port("gpu-003", "mlx5_2").s.cnp_handled = kInf;
  hosts.Port("gpu-004", "mlx5_2").s.cnp_handled = -1e9;
  EXPECT_THAT(Analyze(hosts), IsEmpty());
}

TEST(EcmpImbalanceTest, EmptyOrMissingInputsRaiseNothing) {
  AnalysisInput in;
  EXPECT_THAT(EcmpImbalanceFindings(in), IsEmpty());
  FabricView empty;
  empty.Finish();
  AnalysisConfig config;
  in.view = &empty;
  in.config = &config;
  EXPECT_THAT(EcmpImbalanceFindings(in), IsEmpty());

  // A layout naming hosts that never reported, with a full topology.
  TestFabric fabric(14);
  in = fabric.Input(empty);
  EXPECT_THAT(EcmpImbalanceFindings(in), IsEmpty());

  // NaN everywhere.
  fabric.ForEachPort([](PortView& p) { p.s = PortSignals(); });
  EXPECT_THAT(Analyze(fabric), IsEmpty());
}

TEST(EcmpImbalanceTest, HostSideWorksWithoutTopology) {
  TestFabric fabric(15);
  HotRailNic(fabric, 48e3);
  const FabricView view = fabric.View();
  AnalysisInput in = fabric.Input(view);
  in.topology = nullptr;  // no switch is known to report uplinks
  const std::vector<Finding> found = EcmpImbalanceFindings(in);
  ASSERT_THAT(found, SizeIs(1));
  EXPECT_EQ(found[0].node, "gpu-005");
  EXPECT_THAT(found[0].nodes, ElementsAre("gpu-005"));
}

}  // namespace
}  // namespace fabricdiag::analysis
