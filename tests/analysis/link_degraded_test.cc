#include "analysis/link_degraded.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/analysis/link_test_fixture.h"

namespace fabricdiag::analysis {
namespace {

using link_testing::kNicRate;
using link_testing::kUplinkRate;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

class LinkDegradedTest : public link_testing::LinkFabricTest {
 protected:
  std::vector<Finding> Run() {
    return LinkFabricTest::Run(LinkDegradedFindings);
  }
  // Drivers that cannot tell the full-width rate: peers are the reference.
  void ForgetExpectedRates() {
    for (PortView& p : ports) p.s.expected_rate = 0;
  }
};

TEST(FormatLinkRateTest, GigabitsPerSecond) {
  EXPECT_EQ(FormatLinkRate(50e9), "400 Gb/s");
  EXPECT_EQ(FormatLinkRate(25e9), "200 Gb/s");
  EXPECT_EQ(FormatLinkRate(200e9), "1600 Gb/s");
  EXPECT_EQ(FormatLinkRate(1.5625e9), "12.5 Gb/s");
  EXPECT_EQ(FormatLinkRate(3.125e8), "2.5 Gb/s");
  EXPECT_EQ(FormatLinkRate(std::nan("")), "n/a");
}

TEST_F(LinkDegradedTest, HealthyFabricRaisesNothingWithOrWithoutExpected) {
  for (uint32_t seed = 1; seed <= 5; ++seed) {
    ports = HealthyPorts(seed);
    EXPECT_THAT(Run(), IsEmpty()) << "seed " << seed;
    // The 25 Gb/s eno1 and the 800 Gb/s uplinks are not compared with the
    // 400 Gb/s ports.
    ForgetExpectedRates();
    EXPECT_THAT(Run(), IsEmpty()) << "seed " << seed;
  }
}

TEST_F(LinkDegradedTest, BelowExpectedRateNamesBothRates) {
  Port("gpu-002", "mlx5_3").s.link_rate = kNicRate / 2;
  std::vector<Finding> found = Run();
  ASSERT_EQ(found.size(), 1u);
  const Finding& f = found[0];
  EXPECT_EQ(f.kind, "link_degraded");
  EXPECT_EQ(f.severity, Severity::kWarning);
  EXPECT_EQ(f.job, "dense-7");
  EXPECT_EQ(f.node, "gpu-002");
  EXPECT_THAT(f.nodes, ElementsAre("gpu-002", "leaf-0"));
  EXPECT_EQ(f.device, "mlx5_3");
  EXPECT_EQ(f.group, "");
  EXPECT_DOUBLE_EQ(f.evidence.at("link_rate_bytes_per_second"), 25e9);
  EXPECT_DOUBLE_EQ(f.evidence.at("expected_rate_bytes_per_second"), 50e9);
  EXPECT_DOUBLE_EQ(f.evidence.at("rate_fraction"), 0.5);
  EXPECT_FALSE(f.evidence.count("peer_median_link_rate_bytes_per_second"));
  EXPECT_EQ(f.summary,
            "gpu-002 mlx5_3 trained at 200 Gb/s instead of 400 Gb/s (half its "
            "lanes or a lower speed): reseat or replace the cable (switch "
            "leaf-0 swp12 per topology).");
}

TEST_F(LinkDegradedTest, WithoutExpectedRateComparesWithPeerMedian) {
  ForgetExpectedRates();
  Port("gpu-001", "mlx5_0").s.link_rate = kNicRate / 4;
  std::vector<Finding> found = Run();
  ASSERT_EQ(found.size(), 1u);
  const Finding& f = found[0];
  EXPECT_EQ(f.device, "mlx5_0");
  EXPECT_EQ(f.job, "moe-train-42");
  EXPECT_DOUBLE_EQ(f.evidence.at("peer_median_link_rate_bytes_per_second"),
                   kNicRate);
  EXPECT_DOUBLE_EQ(f.evidence.at("peer_ports"), 3);
  EXPECT_FALSE(f.evidence.count("expected_rate_bytes_per_second"));
  EXPECT_THAT(
      f.summary,
      HasSubstr("gpu-001 mlx5_0 trained at 100 Gb/s while the median of "
                "its 3 peer ports on gpu-001 is 400 Gb/s (a quarter "
                "of its lanes"));
}

TEST_F(LinkDegradedTest, SwitchPortsComparedWithTheirOwnKind) {
  Port("leaf-0", "swp5").s.link_rate = kNicRate / 2;      // a downlink
  Port("leaf-0", "swp51").s.link_rate = kUplinkRate / 2;  // an uplink
  std::vector<Finding> found = Run();
  ASSERT_EQ(found.size(), 2u);
  EXPECT_EQ(found[0].device, "swp5");
  EXPECT_THAT(found[0].nodes, ElementsAre("leaf-0", "gpu-001"));
  EXPECT_EQ(found[0].job, "moe-train-42");
  // swp1..swp16 are up; swp17..swp20 are down and do not count.
  EXPECT_DOUBLE_EQ(found[0].evidence.at("peer_ports"), 15);
  EXPECT_DOUBLE_EQ(
      found[0].evidence.at("peer_median_link_rate_bytes_per_second"), kNicRate);
  EXPECT_THAT(found[0].summary,
              HasSubstr("(host gpu-001 mlx5_0 per topology)"));
  EXPECT_EQ(found[1].device, "swp51");
  EXPECT_DOUBLE_EQ(found[1].evidence.at("peer_ports"), 3);
  EXPECT_THAT(found[1].summary,
              HasSubstr("trained at 400 Gb/s while the median of its 3 peer "
                        "ports on leaf-0 is 800 Gb/s"));
  EXPECT_THAT(found[1].nodes, ElementsAre("leaf-0"));
}

TEST_F(LinkDegradedTest, TooFewPeersSaysNothing) {
  ForgetExpectedRates();
  // gpu-004 keeps two RDMA ports: one peer cannot tell which is wrong.
  ports.erase(
      std::remove_if(ports.begin(), ports.end(),
                     [](const PortView& p) {
                       return p.node == "gpu-004" &&
                              (p.device == "mlx5_2" || p.device == "mlx5_3");
                     }),
      ports.end());
  Port("gpu-004", "mlx5_1").s.link_rate = kNicRate / 2;
  EXPECT_THAT(Run(), IsEmpty());
}

TEST_F(LinkDegradedTest, BoundaryAtMinRateFraction) {
  PortView& p = Port("gpu-000", "mlx5_1");
  p.s.link_rate = 0.9 * kNicRate;  // exactly min_rate_fraction: fine
  EXPECT_THAT(Run(), IsEmpty());
  p.s.link_rate = 0.89 * kNicRate;
  std::vector<Finding> found = Run();
  ASSERT_EQ(found.size(), 1u);
  EXPECT_THAT(found[0].summary, HasSubstr("fewer lanes or a lower speed"));
  config.link_degraded.min_rate_fraction = 0.5;
  EXPECT_THAT(Run(), IsEmpty());
}

TEST_F(LinkDegradedTest, SeveralDegradedPortsOnOneNodeAreAllFound) {
  ForgetExpectedRates();
  Port("gpu-003", "mlx5_0").s.link_rate = kNicRate / 2;
  Port("gpu-003", "mlx5_1").s.link_rate = kNicRate / 2;
  Port("gpu-000", "mlx5_3").s.link_rate = kNicRate / 4;
  EXPECT_THAT(link_testing::Keys(Run()),
              ElementsAre("link_degraded gpu-000 mlx5_3",
                          "link_degraded gpu-003 mlx5_0",
                          "link_degraded gpu-003 mlx5_1"));
}

TEST_F(LinkDegradedTest, DownUnknownAndHostileRatesNeverRaise) {
  EXPECT_THAT(LinkDegradedFindings(AnalysisInput{}), IsEmpty());
  PortView& down = Port("gpu-000", "mlx5_0");
  down.s.link_up = false;
  down.s.link_rate = 0;                       // link_flap reports it
  Port("gpu-000", "mlx5_1").s.link_rate = 0;  // unknown
  Port("gpu-000", "mlx5_2").s.link_rate = std::nan("");
  Port("gpu-000", "mlx5_3").s.link_rate = -50e9;
  Port("gpu-001", "mlx5_0").s.link_rate =
      std::numeric_limits<double>::infinity();
  Port("gpu-001", "mlx5_1").s.expected_rate = std::nan("");
  Port("gpu-001", "mlx5_2").s.expected_rate = -1;
  EXPECT_THAT(Run(), IsEmpty());
  for (PortView& p : ports) p.s = PortSignals();  // rate 0 = unknown
  EXPECT_THAT(Run(), IsEmpty());
}

// Each port is compared with the median of its node's other up ports of its
// kind: checked against that rule computed plainly (every peer gathered
// and sorted per port) over nodes of random rates, ties and down ports.
TEST(LinkDegradedPeersTest, ThePeerMedianIsTheMedianOfTheOtherPortsOfItsKind) {
  std::mt19937 rng(11);
  const double rates[] = {50e9, 25e9, 12.5e9, 50e9, 50e9, 100e9, 6.25e9};
  FabricView view;
  for (int n = 0; n < 300; ++n) {
    const int nics = 1 + static_cast<int>(rng() % 10);
    for (int i = 0; i < nics; ++i) {
      PortView& p = view.AddPort(absl::StrCat("gpu-", 1000 + n),
                                 absl::StrCat("mlx5_", i));
      // A plain netdev (its own device) is of another kind.
      p.netdev = rng() % 4 == 0 ? p.device : absl::StrCat("eth", i);
      p.s.link_rate = rates[rng() % std::size(rates)];
      p.s.link_up = rng() % 8 != 0;
    }
  }
  view.Finish();
  AnalysisInput in;
  in.view = &view;
  std::map<std::string, const Finding*> found;
  const std::vector<Finding> findings = LinkDegradedFindings(in);
  for (const Finding& f : findings) found[f.node + " " + f.device] = &f;

  const AnalysisConfig config;
  const double min_fraction = config.link_degraded.min_rate_fraction;
  int flagged = 0;
  for (const PortView& p : view.ports()) {
    if (!p.s.link_up) continue;
    std::vector<double> peers;
    for (const PortView& q : view.PortsOf(p.node)) {
      if (&q != &p && q.s.link_up &&
          (q.netdev == q.device) == (p.netdev == p.device)) {
        peers.push_back(q.s.link_rate);
      }
    }
    const std::string key = p.node + " " + p.device;
    std::sort(peers.begin(), peers.end());
    const size_t m = peers.size();
    const double median = m == 0       ? 0
                          : m % 2 == 1 ? peers[m / 2]
                                       : (peers[m / 2 - 1] + peers[m / 2]) / 2;
    const bool degraded = m >= static_cast<size_t>(kMinPeers) &&
                          p.s.link_rate < min_fraction * median;
    ASSERT_EQ(found.count(key), degraded ? 1u : 0u) << key;
    if (!degraded) continue;
    ++flagged;
    const Finding& f = *found[key];
    EXPECT_EQ(f.evidence.at("peer_median_link_rate_bytes_per_second"), median)
        << key;
    EXPECT_EQ(f.evidence.at("peer_ports"), static_cast<double>(m)) << key;
  }
  EXPECT_EQ(flagged, static_cast<int>(findings.size()));
  EXPECT_GT(flagged, 50) << "the draw should degrade many ports";
}

}  // namespace
}  // namespace fabricdiag::analysis
