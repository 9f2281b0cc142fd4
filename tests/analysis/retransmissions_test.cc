#include "analysis/retransmissions.h"

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

class RetransmissionsTest : public link_testing::LinkFabricTest {
 protected:
  std::vector<Finding> Run() {
    return LinkFabricTest::Run(RetransmissionsFindings);
  }
  // Silences every retransmission signal of a port.
  static void Quiet(PortView& p) {
    p.s.out_of_sequence = p.s.packet_seq_err = p.s.local_ack_timeout_err =
        p.s.rnr_nak_retry_err = p.s.duplicate_request =
            p.s.implied_nak_seq_err = p.s.adaptive_retrans = 0;
  }
};

TEST_F(RetransmissionsTest, HealthyFabricWithNoiseRaisesNothing) {
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    ports = HealthyPorts(seed);
    EXPECT_THAT(Run(), IsEmpty()) << "seed " << seed;
  }
}

TEST_F(RetransmissionsTest, AckTimeoutsNameTheCauseAndThePath) {
  PortView& p = Port("gpu-000", "mlx5_1");
  Quiet(p);
  p.s.local_ack_timeout_err = 900;
  p.s.packet_seq_err = 100;
  std::vector<Finding> found = Run();
  ASSERT_EQ(found.size(), 1u);
  const Finding& f = found[0];
  EXPECT_EQ(f.kind, "retransmissions");
  EXPECT_EQ(f.severity, Severity::kWarning);
  EXPECT_EQ(f.job, "moe-train-42");
  EXPECT_EQ(f.node, "gpu-000");
  EXPECT_THAT(f.nodes, ElementsAre("gpu-000", "leaf-0"));
  EXPECT_EQ(f.device, "mlx5_1");
  EXPECT_EQ(f.group, "");
  EXPECT_DOUBLE_EQ(f.evidence.at("retransmission_events_per_second"), 1000);
  EXPECT_DOUBLE_EQ(f.evidence.at("local_ack_timeout_err_per_second"), 900);
  EXPECT_DOUBLE_EQ(f.evidence.at("packet_seq_err_per_second"), 100);
  EXPECT_DOUBLE_EQ(f.evidence.at("out_of_sequence_per_second"), 0);
  EXPECT_DOUBLE_EQ(f.evidence.at("retries_exceeded_per_second"), 0);
  EXPECT_EQ(f.evidence_text.at("dominant_signal"), "local_ack_timeout_err");
  EXPECT_THAT(f.summary,
              HasSubstr("gpu-000 mlx5_1 sees 1k/s retransmission events, "
                        "mostly local ACK timeouts: packets lost in the "
                        "fabric"));
  EXPECT_THAT(f.summary, HasSubstr("(900/s)"));
  EXPECT_THAT(f.summary,
              HasSubstr("check link_errors and pfc_storm findings on its path "
                        "(switch leaf-0 swp2 per topology)"));
}

TEST_F(RetransmissionsTest, RetriesExceededIsCriticalEvenWhenQuiet) {
  PortView& p = Port("gpu-003", "mlx5_3");
  Quiet(p);
  p.s.retries_exceeded = 0.2;
  std::vector<Finding> found = Run();
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].severity, Severity::kCritical);
  EXPECT_EQ(found[0].job, "dense-7");
  EXPECT_DOUBLE_EQ(found[0].evidence.at("retries_exceeded_per_second"), 0.2);
  EXPECT_THAT(found[0].summary,
              HasSubstr("sees QPs exceeding their retry limit (0.2/s): an "
                        "RDMA connection failed"));
}

TEST_F(RetransmissionsTest, ThresholdIsOnTheSumAndInclusive) {
  PortView& p = Port("gpu-002", "mlx5_2");
  Quiet(p);
  p.s.out_of_sequence = 4;
  p.s.duplicate_request = 3;
  p.s.adaptive_retrans = 3;  // 10/s in all, none alone near it
  std::vector<Finding> found = Run();
  ASSERT_EQ(found.size(), 1u);
  EXPECT_DOUBLE_EQ(found[0].evidence.at("retransmission_events_per_second"),
                   10);
  EXPECT_THAT(found[0].summary, HasSubstr("out-of-sequence packets"));
  p.s.adaptive_retrans = 2.9;
  EXPECT_THAT(Run(), IsEmpty());
}

TEST_F(RetransmissionsTest, ThresholdComesFromTheConfig) {
  config.retransmissions.events_per_second = 1000;
  PortView& p = Port("gpu-001", "mlx5_2");
  p.s.packet_seq_err = 500;
  EXPECT_THAT(Run(), IsEmpty());
  config.retransmissions.events_per_second = 100;
  EXPECT_EQ(Run().size(), 1u);
}

TEST_F(RetransmissionsTest, RnrPointsAtTheReceiverNotTheFabric) {
  PortView& p = Port("gpu-001", "mlx5_0");
  p.s.rnr_nak_retry_err = 300;
  std::vector<Finding> found = Run();
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].evidence_text.at("dominant_signal"), "rnr_nak_retry_err");
  EXPECT_THAT(found[0].summary, HasSubstr("RNR NAKs: the receiver"));
  EXPECT_THAT(found[0].summary, Not(HasSubstr("pfc_storm")));
}

TEST_F(RetransmissionsTest, SeveralPortsSortedByNodeAndDevice) {
  Port("gpu-004", "mlx5_0").s.duplicate_request = 50;  // no job, no topology
  Port("gpu-000", "mlx5_3").s.implied_nak_seq_err = 20;
  Port("gpu-000", "mlx5_0").s.adaptive_retrans = 40;
  std::vector<Finding> found = Run();
  EXPECT_THAT(link_testing::Keys(found),
              ElementsAre("retransmissions gpu-000 mlx5_0",
                          "retransmissions gpu-000 mlx5_3",
                          "retransmissions gpu-004 mlx5_0"));
  EXPECT_EQ(found[2].job, "");
  EXPECT_THAT(found[2].nodes, ElementsAre("gpu-004"));
  EXPECT_THAT(found[2].summary, Not(HasSubstr("per topology")));
  EXPECT_THAT(found[2].summary, HasSubstr("duplicate requests"));
}

TEST_F(RetransmissionsTest, AbsentAndHostileValuesNeverRaise) {
  EXPECT_THAT(RetransmissionsFindings(AnalysisInput{}), IsEmpty());
  for (PortView& p : ports) p.s = PortSignals();  // NaN everywhere
  EXPECT_THAT(Run(), IsEmpty());

  ports = HealthyPorts(5);
  const double inf = std::numeric_limits<double>::infinity();
  Port("gpu-001", "mlx5_1").s.out_of_sequence = inf;
  Port("gpu-001", "mlx5_2").s.local_ack_timeout_err = -1e6;  // reset
  Port("gpu-001", "mlx5_3").s.retries_exceeded = inf;
  Port("gpu-002", "mlx5_0").s.retries_exceeded = -1;
  Port("gpu-002", "mlx5_1").s.retries_exceeded = std::nan("");
  EXPECT_THAT(Run(), IsEmpty());
}

}  // namespace
}  // namespace fabricdiag::analysis
