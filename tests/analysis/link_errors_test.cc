#include "analysis/link_errors.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/analysis/link_test_fixture.h"

namespace fabricdiag::analysis {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

constexpr double kInf = std::numeric_limits<double>::infinity();

class LinkErrorsTest : public link_testing::LinkFabricTest {
 protected:
  std::vector<Finding> Run() { return LinkFabricTest::Run(LinkErrorsFindings); }
};

TEST_F(LinkErrorsTest, HealthyFabricWithNoiseRaisesNothing) {
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    ports = HealthyPorts(seed);
    EXPECT_THAT(Run(), IsEmpty()) << "seed " << seed;
  }
}

TEST_F(LinkErrorsTest, CrcErrorsNameBothEndsOfTheCable) {
  Port("gpu-003", "mlx5_2").s.crc_errors = 12;
  std::vector<Finding> found = Run();
  ASSERT_EQ(found.size(), 1u);
  const Finding& f = found[0];
  EXPECT_EQ(f.kind, "link_errors");
  EXPECT_EQ(f.severity, Severity::kWarning);
  EXPECT_EQ(f.job, "dense-7");
  EXPECT_EQ(f.node, "gpu-003");
  EXPECT_THAT(f.nodes, ElementsAre("gpu-003", "leaf-0"));
  EXPECT_EQ(f.device, "mlx5_2");
  EXPECT_EQ(f.group, "");
  EXPECT_FALSE(f.immediate);
  EXPECT_DOUBLE_EQ(f.evidence.at("crc_errors_per_second"), 12);
  EXPECT_TRUE(f.evidence.count("symbol_errors_per_second"));
  EXPECT_TRUE(f.evidence.count("rx_errors_per_second"));
  EXPECT_NEAR(f.evidence.at("pre_fec_ber"), 1e-9, 1.5e-9);
  EXPECT_DOUBLE_EQ(f.evidence.at("post_fec_ber"), 0);
  EXPECT_EQ(f.evidence_text.at("link_partner"), "leaf-0 swp15");
  EXPECT_THAT(f.summary, HasSubstr("12/s CRC errors (limit 1/s)"));
  EXPECT_THAT(f.summary,
              HasSubstr("reseat or replace the cable/optic of gpu-003 mlx5_2 "
                        "(switch leaf-0 swp15 per topology)"));
}

TEST_F(LinkErrorsTest, PostFecBerAboveLimitIsCriticalFramesLost) {
  PortView& p = Port("gpu-001", "mlx5_0");
  p.s.received_bits = 3.2e11;
  p.s.pcs_symbol_errors = 32;  // post-FEC BER 1e-10, 100x the IEEE target
  std::vector<Finding> found = Run();
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].severity, Severity::kCritical);
  EXPECT_EQ(found[0].job, "moe-train-42");
  EXPECT_DOUBLE_EQ(found[0].evidence.at("post_fec_ber"), 1e-10);
  EXPECT_THAT(found[0].summary, HasSubstr("post-FEC BER of 1e-10"));
  EXPECT_THAT(found[0].summary, HasSubstr("frames are being lost"));
}

TEST_F(LinkErrorsTest, PreFecBerAboveLimitIsAWarning) {
  PortView& p = Port("gpu-002", "mlx5_1");
  p.s.received_bits = 3.2e11;
  p.s.corrected_bits = 3.2e11 * 5e-6;
  std::vector<Finding> found = Run();
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].severity, Severity::kWarning);
  EXPECT_NEAR(found[0].evidence.at("pre_fec_ber"), 5e-6, 1e-12);
  EXPECT_THAT(found[0].summary, HasSubstr("pre-FEC BER of 5e-6 (limit 1e-6)"));
  EXPECT_THAT(found[0].summary, HasSubstr("FEC still corrects"));
}

TEST_F(LinkErrorsTest, ThresholdsAreInclusive) {
  PortView& p = Port("gpu-000", "mlx5_0");
  p.s.symbol_errors = 1.0;  // exactly errors_per_second
  EXPECT_EQ(Run().size(), 1u);
  p.s.symbol_errors = 0.99;
  EXPECT_THAT(Run(), IsEmpty());

  // 3.2e5 / 3.2e11 rounds to exactly the double 1e-6.
  p.s.received_bits = 3.2e11;
  p.s.corrected_bits = 3.2e5;
  EXPECT_EQ(Run().size(), 1u);
  p.s.corrected_bits = 3.19e5;
  EXPECT_THAT(Run(), IsEmpty());

  p.s.received_bits = 1e12;
  p.s.pcs_symbol_errors = 1;  // exactly post_fec_ber = 1e-12
  ASSERT_EQ(Run().size(), 1u);
  EXPECT_EQ(Run()[0].severity, Severity::kCritical);
  p.s.pcs_symbol_errors = 0.99;
  EXPECT_THAT(Run(), IsEmpty());
}

TEST_F(LinkErrorsTest, CrcAtHundredTimesTheThresholdIsCritical) {
  PortView& p = Port("gpu-000", "mlx5_3");
  p.s.crc_errors = 99;
  ASSERT_EQ(Run().size(), 1u);
  EXPECT_EQ(Run()[0].severity, Severity::kWarning);
  p.s.crc_errors = 100;
  ASSERT_EQ(Run().size(), 1u);
  EXPECT_EQ(Run()[0].severity, Severity::kCritical);
  EXPECT_THAT(Run()[0].summary, HasSubstr("frames are being lost"));
}

TEST_F(LinkErrorsTest, SummaryNamesTheWorstCounterEvidenceHasAll) {
  PortView& p = Port("gpu-002", "mlx5_0");
  p.s.symbol_errors = 5;
  p.s.rx_errors = 30;
  p.s.crc_errors = 2;
  std::vector<Finding> found = Run();
  ASSERT_EQ(found.size(), 1u);
  EXPECT_THAT(found[0].summary, HasSubstr("30/s receive errors"));
  EXPECT_THAT(found[0].summary, Not(HasSubstr("symbol errors")));
  EXPECT_DOUBLE_EQ(found[0].evidence.at("symbol_errors_per_second"), 5);
  EXPECT_DOUBLE_EQ(found[0].evidence.at("rx_errors_per_second"), 30);
  EXPECT_DOUBLE_EQ(found[0].evidence.at("crc_errors_per_second"), 2);
}

TEST_F(LinkErrorsTest, SwitchPortsPartnerIsTheHostNicAndItsJob) {
  Port("leaf-0", "swp3").s.symbol_errors = 4;
  std::vector<Finding> found = Run();
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].node, "leaf-0");
  EXPECT_EQ(found[0].device, "swp3");
  EXPECT_THAT(found[0].nodes, ElementsAre("leaf-0", "gpu-000"));
  EXPECT_EQ(found[0].job, "moe-train-42");
  EXPECT_THAT(found[0].summary,
              HasSubstr("cable/optic of leaf-0 swp3 (host gpu-000 mlx5_2 per "
                        "topology)"));
}

TEST_F(LinkErrorsTest, WithoutTopologyTheSummaryNamesOnlyThePort) {
  with_topology = false;
  Port("gpu-003", "mlx5_2").s.crc_errors = 12;
  std::vector<Finding> found = Run();
  ASSERT_EQ(found.size(), 1u);
  EXPECT_THAT(found[0].nodes, ElementsAre("gpu-003"));
  EXPECT_EQ(found[0].job, "dense-7");
  EXPECT_THAT(found[0].summary, Not(HasSubstr("per topology")));
  EXPECT_FALSE(found[0].evidence_text.count("link_partner"));
}

TEST_F(LinkErrorsTest, NoJobWhenNoneOrSeveralJobsUseTheNic) {
  Port("gpu-004", "mlx5_0").s.crc_errors = 5;  // no job, not in topology
  AddLayout(link_testing::LayoutYaml("shadow-1", "gpu-000", "gpu-001"));
  Port("gpu-000", "mlx5_0").s.crc_errors = 5;  // two jobs share it
  std::vector<Finding> found = Run();
  ASSERT_EQ(found.size(), 2u);
  EXPECT_EQ(found[0].node, "gpu-000");
  EXPECT_EQ(found[0].job, "");
  EXPECT_EQ(found[1].node, "gpu-004");
  EXPECT_EQ(found[1].job, "");
  EXPECT_THAT(found[1].nodes, ElementsAre("gpu-004"));
}

TEST_F(LinkErrorsTest, SeveralFaultsSortedAndIndependentOfInputOrder) {
  Port("leaf-0", "swp9").s.crc_errors = 3;
  Port("gpu-001", "mlx5_2").s.pcs_symbol_errors = 1e3;
  Port("gpu-000", "mlx5_1").s.symbol_errors = 2;
  const std::vector<std::string> expected = {"link_errors gpu-000 mlx5_1",
                                             "link_errors gpu-001 mlx5_2",
                                             "link_errors leaf-0 swp9"};
  EXPECT_EQ(link_testing::Keys(Run()), expected);
  std::reverse(ports.begin(), ports.end());
  EXPECT_EQ(link_testing::Keys(Run()), expected);
}

TEST_F(LinkErrorsTest, AbsentSignalsNeverRaiseAFinding) {
  for (PortView& p : ports) p.s = PortSignals();  // every signal NaN
  EXPECT_THAT(Run(), IsEmpty());
  // Errors without a BER denominator, or with a zero one, are no BER.
  PortView& p = Port("gpu-000", "mlx5_0");
  p.s.corrected_bits = 1e9;
  p.s.pcs_symbol_errors = 1e6;
  EXPECT_THAT(Run(), IsEmpty());
  p.s.received_bits = 0;
  EXPECT_THAT(Run(), IsEmpty());
}

TEST_F(LinkErrorsTest, HostileValuesNeitherCrashNorRaise) {
  EXPECT_THAT(LinkErrorsFindings(AnalysisInput{}), IsEmpty());
  ports.clear();
  EXPECT_THAT(Run(), IsEmpty());

  ports = HealthyPorts(3);
  PortView& p = Port("gpu-001", "mlx5_1");
  p.s.crc_errors = kInf;
  p.s.symbol_errors = -50;  // a counter reset, not errors
  p.s.rx_errors = std::nan("");
  p.s.corrected_bits = kInf;
  Port("gpu-001", "mlx5_2").s.received_bits = kInf;
  Port("gpu-001", "mlx5_3").s.received_bits = -3.2e11;
  Port("gpu-001", "mlx5_3").s.pcs_symbol_errors = 10;
  EXPECT_THAT(Run(), IsEmpty());
}

}  // namespace
}  // namespace fabricdiag::analysis
