#include "analysis/link_flap.h"

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

class LinkFlapTest : public link_testing::LinkFabricTest {
 protected:
  std::vector<Finding> Run() { return LinkFabricTest::Run(LinkFlapFindings); }
};

TEST_F(LinkFlapTest, HealthyFabricRaisesNothingUncabledSwitchPortsAreDown) {
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    ports = HealthyPorts(seed);
    // swp17..swp20 are down in every one: unused ports, not faults.
    ASSERT_FALSE(Port("leaf-0", "swp17").s.link_up);
    EXPECT_THAT(Run(), IsEmpty()) << "seed " << seed;
  }
}

TEST_F(LinkFlapTest, DownHostNicIsCriticalAndImmediate) {
  PortView& p = Port("gpu-001", "mlx5_3");
  p.s.link_up = false;
  p.s.link_rate = 0;
  std::vector<Finding> found = Run();
  ASSERT_EQ(found.size(), 1u);
  const Finding& f = found[0];
  EXPECT_EQ(f.kind, "link_flap");
  EXPECT_EQ(f.severity, Severity::kCritical);
  EXPECT_TRUE(f.immediate);
  EXPECT_EQ(f.job, "moe-train-42");
  EXPECT_EQ(f.node, "gpu-001");
  EXPECT_THAT(f.nodes, ElementsAre("gpu-001", "leaf-0"));
  EXPECT_EQ(f.device, "mlx5_3");
  EXPECT_EQ(f.group, "");
  EXPECT_DOUBLE_EQ(f.evidence.at("link_up"), 0);
  EXPECT_FALSE(f.evidence.count("flaps_in_window"));
  EXPECT_EQ(f.evidence_text.at("link_partner"), "leaf-0 swp8");
  EXPECT_THAT(f.summary, HasSubstr("every connection over it is broken"));
  EXPECT_THAT(f.summary, HasSubstr("gpu-001 mlx5_3 is down (switch leaf-0 "
                                   "swp8 per topology)"));
}

TEST_F(LinkFlapTest, FlapsAreWarningsOpenedImmediately) {
  Port("gpu-002", "mlx5_0").s.link_downed = 0.4;  // 2 in 5 s
  std::vector<Finding> found = Run();
  ASSERT_EQ(found.size(), 1u);
  const Finding& f = found[0];
  EXPECT_EQ(f.severity, Severity::kWarning);
  EXPECT_TRUE(f.immediate);
  EXPECT_EQ(f.job, "dense-7");
  EXPECT_DOUBLE_EQ(f.evidence.at("flaps_in_window"), 2);
  EXPECT_DOUBLE_EQ(f.evidence.at("link_downed_per_second"), 0.4);
  EXPECT_DOUBLE_EQ(f.evidence.at("link_up"), 1);
  EXPECT_THAT(f.summary, HasSubstr("gpu-002 mlx5_0 flapped 2 times in the "
                                   "last 5 s (switch leaf-0 swp9 per "
                                   "topology)"));
  EXPECT_THAT(f.summary, HasSubstr("reseat or replace the cable/optic"));
}

TEST_F(LinkFlapTest, CarrierChangesCountTwicePerFlap) {
  // Two carrier transitions in 5 s (down, up) are one flap.
  Port("gpu-000", "eno1").s.carrier_changes = 0.4;
  std::vector<Finding> found = Run();
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].device, "eno1");
  EXPECT_EQ(found[0].job, "");
  EXPECT_THAT(found[0].nodes, ElementsAre("gpu-000"));
  EXPECT_DOUBLE_EQ(found[0].evidence.at("flaps_in_window"), 1);
  EXPECT_THAT(found[0].summary, HasSubstr("flapped once in the last 5 s"));
}

TEST_F(LinkFlapTest, SourcesOfTheSameFlapAreNotAdded) {
  PortView& p = Port("gpu-003", "mlx5_1");
  p.s.link_down_events = 0.2;  // 1 flap
  p.s.carrier_changes = 0.4;   // the same flap seen by the netdev
  std::vector<Finding> found = Run();
  ASSERT_EQ(found.size(), 1u);
  EXPECT_DOUBLE_EQ(found[0].evidence.at("flaps_in_window"), 1);
  EXPECT_DOUBLE_EQ(found[0].evidence.at("carrier_changes_per_second"), 0.4);
  EXPECT_DOUBLE_EQ(found[0].evidence.at("link_down_events_per_second"), 0.2);
}

TEST_F(LinkFlapTest, FlapsScaleWithTheWindow) {
  window_seconds = 10;
  Port("gpu-003", "mlx5_1").s.link_downed = 0.3;
  std::vector<Finding> found = Run();
  ASSERT_EQ(found.size(), 1u);
  EXPECT_DOUBLE_EQ(found[0].evidence.at("flaps_in_window"), 3);
  EXPECT_THAT(found[0].summary, HasSubstr("3 times in the last 10 s"));
}

TEST_F(LinkFlapTest, SmallestRateIsAFlapZeroIsNot) {
  PortView& p = Port("gpu-000", "mlx5_0");
  p.s.link_downed = 1e-9;
  ASSERT_EQ(Run().size(), 1u);
  EXPECT_DOUBLE_EQ(Run()[0].evidence.at("flaps_in_window"), 1);
  p.s.link_downed = 0;
  EXPECT_THAT(Run(), IsEmpty());
}

TEST_F(LinkFlapTest, DownAfterFlappingIsOneCriticalFinding) {
  PortView& p = Port("gpu-000", "mlx5_2");
  p.s.link_up = false;
  p.s.link_downed = 0.2;
  std::vector<Finding> found = Run();
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].severity, Severity::kCritical);
  EXPECT_DOUBLE_EQ(found[0].evidence.at("flaps_in_window"), 1);
  EXPECT_THAT(found[0].summary, HasSubstr("is down after it flapped once"));
}

TEST_F(LinkFlapTest, SwitchPortsDownOnlyWhenTheTopologyCablesThem) {
  Port("leaf-0", "swp6").s.link_up = false;   // cabled to gpu-001 mlx5_1
  Port("leaf-0", "swp50").s.link_up = false;  // an uplink
  std::vector<Finding> found = Run();
  EXPECT_THAT(link_testing::Keys(found),
              ElementsAre("link_flap leaf-0 swp50", "link_flap leaf-0 swp6"));
  EXPECT_THAT(found[0].nodes, ElementsAre("leaf-0"));
  EXPECT_THAT(found[0].summary, HasSubstr("lost one of its uplinks"));
  EXPECT_EQ(found[1].severity, Severity::kCritical);
  EXPECT_EQ(found[1].job, "moe-train-42");
  EXPECT_THAT(found[1].nodes, ElementsAre("leaf-0", "gpu-001"));
  EXPECT_THAT(found[1].summary,
              HasSubstr("(host gpu-001 mlx5_1 per topology)"));

  // An uncabled port that flaps is in use after all: report the flap.
  Port("leaf-0", "swp18").s.carrier_changes = 0.4;
  EXPECT_EQ(Run().size(), 3u);
}

TEST_F(LinkFlapTest, AbsentAndHostileValuesNeverRaise) {
  EXPECT_THAT(LinkFlapFindings(AnalysisInput{}), IsEmpty());
  for (PortView& p : ports) {
    const bool up = p.s.link_up;
    p.s = PortSignals();  // NaN everywhere
    p.s.link_up = up;
  }
  EXPECT_THAT(Run(), IsEmpty());

  ports = HealthyPorts(4);
  Port("gpu-001", "mlx5_0").s.link_downed =
      std::numeric_limits<double>::infinity();
  Port("gpu-001", "mlx5_1").s.carrier_changes = -2;  // counter reset
  Port("gpu-001", "mlx5_2").s.link_down_events = std::nan("");
  EXPECT_THAT(Run(), IsEmpty());
}

TEST_F(LinkFlapTest, UnknownWindowStillReportsTheFlap) {
  window_seconds = std::nan("");
  Port("gpu-002", "mlx5_3").s.link_downed = 0.2;
  std::vector<Finding> found = Run();
  ASSERT_EQ(found.size(), 1u);
  EXPECT_FALSE(found[0].evidence.count("flaps_in_window"));
  EXPECT_THAT(found[0].summary, HasSubstr("gpu-002 mlx5_3 flapped (switch"));
  window_seconds = 0;
  EXPECT_EQ(Run().size(), 1u);
}

}  // namespace
}  // namespace fabricdiag::analysis
