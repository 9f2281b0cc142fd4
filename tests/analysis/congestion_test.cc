#include "analysis/congestion.h"

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
using ::fabricdiag::analysis::testing::kNicsPerHost;
using ::fabricdiag::analysis::testing::Nic;
using ::fabricdiag::analysis::testing::TestFabric;
using ::testing::DoubleNear;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;
using ::testing::StartsWith;

constexpr double kInf = std::numeric_limits<double>::infinity();

std::vector<Finding> Analyze(const TestFabric& fabric) {
  const FabricView view = fabric.View();
  return CongestionFindings(fabric.Input(view));
}

// Every host NIC at `cnp` CNPs/s (a flat, known baseline).
void FlatBaseline(TestFabric& fabric, double cnp) {
  for (int h = 0; h < kHosts; ++h) {
    for (int k = 0; k < kNicsPerHost; ++k) {
      fabric.Port(Host(h), Nic(k)).s.cnp_sent = cnp;
    }
  }
}

TEST(CongestionTest, HotNicIsFoundWithItsPath) {
  TestFabric fabric(1);
  PortView& hot = fabric.Port("gpu-005", "mlx5_3");  // leaf-0 swp24
  hot.s.cnp_sent = 85e3;
  hot.s.rx_bytes = 21e9;
  const std::vector<Finding> found = Analyze(fabric);
  ASSERT_THAT(found, SizeIs(1));
  const Finding& f = found[0];
  EXPECT_EQ(f.kind, "congestion");
  EXPECT_EQ(f.severity, Severity::kWarning);
  EXPECT_EQ(f.node, "gpu-005");
  EXPECT_EQ(f.device, "mlx5_3");
  EXPECT_EQ(f.job, "moe-train-42");
  EXPECT_EQ(f.group, "");
  EXPECT_THAT(f.nodes, ElementsAre("gpu-005", "leaf-0"));
  EXPECT_DOUBLE_EQ(f.evidence.at("cnp_sent_per_second"), 85e3);
  EXPECT_EQ(f.evidence.at("baseline_ports"), 64);
  const double median = f.evidence.at("fabric_median_per_second");
  EXPECT_GT(median, 500);
  EXPECT_LT(median, 3000);
  EXPECT_THAT(f.evidence.at("ratio_to_median"),
              DoubleNear(85e3 / median, 1e-9));
  EXPECT_DOUBLE_EQ(f.evidence.at("rx_bytes_per_second"), 21e9);
  EXPECT_EQ(f.evidence_text.at("link_partner"), "leaf-0 swp24");
  EXPECT_THAT(f.summary, StartsWith("gpu-005 mlx5_3 (link partner leaf-0 "
                                    "swp24) sends CNPs at 85k/s, "));
  EXPECT_THAT(f.summary, HasSubstr("the median of 64 NIC ports"));
  EXPECT_THAT(f.summary, HasSubstr("while receiving 21 GB/s"));
  EXPECT_THAT(f.summary, HasSubstr("ECN-marked"));
}

TEST(CongestionTest, HealthyFabricWithNoiseRaisesNothing) {
  for (uint32_t seed = 0; seed < 20; ++seed) {
    TestFabric fabric(seed);
    EXPECT_THAT(Analyze(fabric), IsEmpty()) << "seed " << seed;
  }
}

TEST(CongestionTest, BothThresholdsMustHold) {
  struct Case {
    double baseline;
    double hot;
    bool found;
  };
  // Defaults: >= 10k/s and >= 5x the median.
  for (const Case& c : {Case{2000, 10000, true}, Case{2000, 9999, false},
                        Case{10000, 50000, true}, Case{10000, 49999, false},
                        Case{100, 9999, false}}) {
    TestFabric fabric(2);
    FlatBaseline(fabric, c.baseline);
    fabric.Port("gpu-002", "mlx5_7").s.cnp_sent = c.hot;
    const std::vector<Finding> found = Analyze(fabric);
    if (!c.found) {
      EXPECT_THAT(found, IsEmpty()) << c.baseline << " " << c.hot;
      continue;
    }
    ASSERT_THAT(found, SizeIs(1)) << c.baseline << " " << c.hot;
    EXPECT_EQ(found[0].device, "mlx5_7");
    EXPECT_DOUBLE_EQ(found[0].evidence.at("fabric_median_per_second"),
                     c.baseline);
  }
}

TEST(CongestionTest, EcnMarksStandInForMissingCnpCounters) {
  TestFabric fabric(3);
  PortView& p = fabric.Port("gpu-006", "mlx5_0");
  p.s.cnp_sent = kAbsent;  // e.g. a NIC without congestion counters
  p.s.ecn_marked = 120e3;
  const std::vector<Finding> found = Analyze(fabric);
  ASSERT_THAT(found, SizeIs(1));
  EXPECT_DOUBLE_EQ(found[0].evidence.at("ecn_marked_per_second"), 120e3);
  EXPECT_EQ(found[0].evidence.count("cnp_sent_per_second"), 0);
  EXPECT_THAT(found[0].summary,
              HasSubstr("receives ECN-marked packets at 120k/s"));
}

TEST(CongestionTest, HotSwitchPortIsFound) {
  TestFabric fabric(4);
  PortView& p = fabric.Port("leaf-1", "swp49");
  p.s.ecn_marked = 200e3;
  p.s.tx_bytes = 48e9;
  const std::vector<Finding> found = Analyze(fabric);
  ASSERT_THAT(found, SizeIs(1));
  const Finding& f = found[0];
  EXPECT_EQ(f.node, "leaf-1");
  EXPECT_EQ(f.device, "swp49");
  EXPECT_EQ(f.job, "");
  EXPECT_THAT(f.nodes, ElementsAre("leaf-1"));  // an uplink: no host link
  EXPECT_EQ(f.evidence.at("baseline_ports"), 72);
  EXPECT_DOUBLE_EQ(f.evidence.at("tx_bytes_per_second"), 48e9);
  EXPECT_THAT(f.summary,
              HasSubstr("leaf-1 swp49 counts ECN-marked packets at 200k/s"));
  EXPECT_THAT(f.summary, HasSubstr("median of 72 switch ports"));
}

TEST(CongestionTest, HotSwitchDownlinkNamesItsHost) {
  TestFabric fabric(5);
  fabric.Port("leaf-0", "swp9").s.ecn_marked = 90e3;  // gpu-002 mlx5_0
  const std::vector<Finding> found = Analyze(fabric);
  ASSERT_THAT(found, SizeIs(1));
  EXPECT_THAT(found[0].nodes, ElementsAre("leaf-0", "gpu-002"));
  EXPECT_EQ(found[0].evidence_text.at("link_partner"), "gpu-002 mlx5_0");
}

TEST(CongestionTest, TooFewReportingPortsHaveNoBaseline) {
  TestFabric fabric(6);
  fabric.ForEachPort([](PortView& p) {
    p.s.cnp_sent = kAbsent;
    p.s.ecn_marked = kAbsent;
  });
  fabric.Port("gpu-000", "mlx5_0").s.cnp_sent = 100;
  fabric.Port("gpu-000", "mlx5_1").s.cnp_sent = 90e3;
  EXPECT_THAT(Analyze(fabric), IsEmpty());
  fabric.Port("gpu-000", "mlx5_2").s.cnp_sent = 120;
  EXPECT_THAT(Analyze(fabric), SizeIs(1));
}

TEST(CongestionTest, ZeroMedianIsSaidInWords) {
  TestFabric fabric(7);
  FlatBaseline(fabric, 0);
  fabric.Port("gpu-004", "mlx5_4").s.cnp_sent = 20e3;
  const std::vector<Finding> found = Analyze(fabric);
  ASSERT_THAT(found, SizeIs(1));
  EXPECT_EQ(found[0].evidence.count("ratio_to_median"), 0);
  EXPECT_THAT(found[0].summary,
              HasSubstr("where the median of 64 NIC ports is 0"));
}

TEST(CongestionTest, HostileValuesNeverRaiseOrCrash) {
  TestFabric fabric(8);
  fabric.Port("gpu-001", "mlx5_1").s.cnp_sent = kInf;
  fabric.Port("gpu-001", "mlx5_2").s.cnp_sent = -1e6;
  fabric.Port("gpu-001", "mlx5_3").s.cnp_sent = kAbsent;
  fabric.Port("gpu-001", "mlx5_3").s.ecn_marked = kInf;
  fabric.Port("leaf-0", "swp3").s.ecn_marked = kInf;
  fabric.Port("leaf-0", "swp4").s.ecn_marked = -kInf;
  EXPECT_THAT(Analyze(fabric), IsEmpty());

  AnalysisInput in;
  EXPECT_THAT(CongestionFindings(in), IsEmpty());
  FabricView empty;
  empty.Finish();
  AnalysisConfig config;
  in.view = &empty;
  in.config = &config;
  EXPECT_THAT(CongestionFindings(in), IsEmpty());
}

TEST(CongestionTest, NanEverywhereRaisesNothing) {
  TestFabric fabric(9);
  fabric.ForEachPort([](PortView& p) { p.s = PortSignals(); });
  EXPECT_THAT(Analyze(fabric), IsEmpty());
}

TEST(CongestionTest, WorksWithoutTopologyOrLayouts) {
  TestFabric fabric(10);
  fabric.Port("gpu-005", "mlx5_3").s.cnp_sent = 85e3;
  const FabricView view = fabric.View();
  AnalysisInput in = fabric.Input(view);
  in.topology = nullptr;
  in.layouts.clear();
  const std::vector<Finding> found = CongestionFindings(in);
  ASSERT_THAT(found, SizeIs(1));
  EXPECT_EQ(found[0].job, "");
  EXPECT_THAT(found[0].nodes, ElementsAre("gpu-005"));
  EXPECT_EQ(found[0].evidence_text.count("link_partner"), 0);
}

TEST(CongestionTest, SeveralHotspotsAreSorted) {
  TestFabric fabric(11);
  fabric.Port("gpu-006", "mlx5_1").s.cnp_sent = 60e3;
  fabric.Port("gpu-002", "mlx5_5").s.cnp_sent = 70e3;
  fabric.Port("leaf-0", "swp50").s.ecn_marked = 80e3;
  const std::vector<Finding> found = Analyze(fabric);
  ASSERT_THAT(found, SizeIs(3));
  EXPECT_EQ(found[0].node, "gpu-002");
  EXPECT_EQ(found[1].node, "gpu-006");
  EXPECT_EQ(found[2].node, "leaf-0");
}

}  // namespace
}  // namespace fabricdiag::analysis
