#include "sim/counter_model.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/port_counters.h"
#include "sim/sysfs_files.h"
#include "tests/sim/sim_test_util.h"

namespace fabricdiag::sim {
namespace {

using testing::BuildFabric;

// The fault runs during [10, 20); the test samples t = 5, 15, 25.
constexpr double kBefore = 5, kDuring = 15, kAfter = 25;

class CounterModelTest : public ::testing::Test {
 protected:
  CounterModelTest() : fabric_(BuildFabric()) {}

  CounterModel Model(const std::string& scenario_text, uint64_t seed = 1) {
    auto s = ParseScenario(scenario_text);
    EXPECT_TRUE(s.ok()) << s.status();
    EXPECT_TRUE(ValidateScenarioNames(*s, fabric_).ok());
    auto m = CounterModel::Create(&fabric_, *s, seed);
    EXPECT_TRUE(m.ok()) << m.status();
    return *std::move(m);
  }
  size_t Nic(const char* host, const char* nic) {
    return *fabric_.FindNic(host, nic);
  }
  size_t Port(const char* sw, const char* port) {
    return *fabric_.FindPort(sw, port);
  }

  Fabric fabric_;
};

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2]
                      : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

TEST_F(CounterModelTest, HealthyLevels) {
  CounterModel m = Model("");
  for (double t : {0.0, 1.0, 7.0}) {
    FabricRates r = m.RatesAt(t, 1.0);
    for (const PortRates& nic : r.nics) {
      const auto& v = nic.per_second;
      EXPECT_GT(v[kTxBytes], 1e8);
      EXPECT_LE(v[kRxBytes], 0.95 * 50e9);
      EXPECT_GE(v[kNpCnpSent], 100);
      EXPECT_LE(v[kNpCnpSent], 400);
      EXPECT_LT(PauseFraction(nic, Side::kTx, kRocePriority), 0.002);
      EXPECT_EQ(v[kSymbolErrors], 0);
      EXPECT_EQ(v[kCrcErrors], 0);
      EXPECT_NEAR(v[kCorrectedBits] / v[kRxBits], 1e-9, 0.6e-9);
      EXPECT_TRUE(nic.link_up);
    }
  }
}

TEST_F(CounterModelTest, EpSkewIsSeededAndBounded) {
  CounterModel a = Model("", 7), b = Model("", 7), c = Model("", 8);
  bool differs = false;
  for (size_t i = 0; i < fabric_.nics().size(); ++i) {
    EXPECT_EQ(a.base().nic(i).ep_skew, b.base().nic(i).ep_skew);
    EXPECT_GE(a.base().nic(i).ep_skew, 0.7);
    EXPECT_LE(a.base().nic(i).ep_skew, 1.3);
    differs |= a.base().nic(i).ep_skew != c.base().nic(i).ep_skew;
    EXPECT_TRUE(a.base().nic(i).modelled);
    EXPECT_EQ(a.base().nic(i).peers.size(), 3u);  // the same rail elsewhere
  }
  EXPECT_TRUE(differs);
}

TEST_F(CounterModelTest, DpBurstsAtTheEndOfTheStep) {
  CounterModel m = Model("step_seconds: 10");
  const NicBase& b = m.base().nic(0);
  ASSERT_GT(b.dp_tx, 0);
  // Over a whole step, the mean; in the compute phase, no DP traffic.
  EXPECT_NEAR(b.TxBytesPerSecondOver(0, 10), b.MeanTxBytesPerSecond(),
              1e-6 * b.MeanTxBytesPerSecond());
  EXPECT_NEAR(b.TxBytesPerSecondOver(8, 1), b.dp_tx / 3, 1e-6 * b.dp_tx);
  EXPECT_NEAR(b.TxBytesPerSecondOver(1, 1), b.compute_tx / 7,
              1e-6 * b.compute_tx + 1);
}

TEST_F(CounterModelTest, NoModelMeansTenGigabytesPerSecond) {
  fabric_ = BuildFabric(R"(
job: j
gpus_per_node: 8
parallelism: {tp: 8, pp: 1, dp: 2}
hosts: [a, b]
)",
                        "");
  CounterModel m = Model("");
  FabricRates r = m.RatesAt(0, 1);
  for (const PortRates& nic : r.nics) {
    EXPECT_NEAR(nic.per_second[kTxBytes], 10e9, 0.051 * 10e9);
    EXPECT_NEAR(nic.per_second[kRxBytes], 10e9, 0.051 * 10e9);
  }
}

TEST_F(CounterModelTest, HotExpert) {
  CounterModel m = Model(
      "faults: [{kind: hot_expert, node: gpu-003, nic: mlx5_2, start: 10, "
      "end: 20}]");
  const size_t hot = Nic("gpu-003", "mlx5_2");
  std::vector<size_t> group = {Nic("gpu-000", "mlx5_2"),
                               Nic("gpu-001", "mlx5_2"),
                               Nic("gpu-002", "mlx5_2"), hot};
  for (double t : {kBefore, kDuring, kAfter}) {
    FabricRates r = m.RatesAt(t, 1.0);
    std::vector<double> rx;
    for (size_t i : group) rx.push_back(r.nics[i].per_second[kRxBytes]);
    const double ratio = r.nics[hot].per_second[kRxBytes] / Median(rx);
    const auto& v = r.nics[hot].per_second;
    if (t == kDuring) {
      EXPECT_GE(ratio, 4.0);
      EXPECT_GE(v[kNpCnpSent], 5e4);
      EXPECT_LE(v[kNpCnpSent], 2e5);
      EXPECT_GE(v[kNpEcnMarked], v[kNpCnpSent]);
      EXPECT_GE(PauseFraction(r.nics[hot], Side::kTx, 3), 0.05);
      EXPECT_LE(PauseFraction(r.nics[hot], Side::kTx, 3), 0.10);
      EXPECT_GT(v[kRxDiscardsPhy], 0);
      // The senders get the CNPs back.
      EXPECT_GT(r.nics[group[0]].per_second[kRpCnpHandled], 1e4);
    } else {
      EXPECT_LT(ratio, 2.0) << "t=" << t;
      EXPECT_LT(v[kNpCnpSent], 1000);
      EXPECT_EQ(v[kRxDiscardsPhy], 0);
    }
  }
}

TEST_F(CounterModelTest, PfcStormWithVictims) {
  CounterModel m = Model(
      "faults: [{kind: pfc_storm, node: gpu-001, nic: mlx5_0, start: 10, "
      "end: 20, priority: 3}]");
  const size_t stuck = Nic("gpu-001", "mlx5_0");
  const size_t victim = Nic("gpu-002", "mlx5_0");     // same leaf
  const size_t bystander = Nic("gpu-002", "mlx5_1");  // other leaf
  const size_t port = Port("leaf-0", "swp2");
  const size_t victim_port = Port("leaf-0", "swp3");
  const double rx_before =
      m.RatesAt(kBefore, 1).nics[stuck].per_second[kRxBytes];
  FabricRates r = m.RatesAt(kDuring, 1);
  EXPECT_GE(PauseFraction(r.nics[stuck], Side::kTx, 3), 0.9);
  EXPECT_LT(r.nics[stuck].per_second[kRxBytes], 0.1 * rx_before);
  EXPECT_GT(r.nics[stuck].per_second[kTxPauseFrames + 3], 1e4);
  EXPECT_GT(r.nics[stuck].per_second[kPauseStormWarning], 0);
  EXPECT_GE(PauseFraction(r.ports[port], Side::kRx, 3), 0.9);
  EXPECT_GE(PauseFraction(r.nics[victim], Side::kRx, 3), 0.3);
  EXPECT_LE(PauseFraction(r.nics[victim], Side::kRx, 3), 0.6);
  EXPECT_GE(PauseFraction(r.ports[victim_port], Side::kTx, 3), 0.3);
  EXPECT_LT(PauseFraction(r.nics[bystander], Side::kRx, 3), 0.002);
  for (double t : {kBefore, kAfter}) {
    FabricRates q = m.RatesAt(t, 1);
    EXPECT_LT(PauseFraction(q.nics[stuck], Side::kTx, 3), 0.002);
    EXPECT_LT(PauseFraction(q.nics[victim], Side::kRx, 3), 0.002);
    EXPECT_EQ(q.nics[stuck].per_second[kPauseStormWarning], 0);
  }
}

TEST_F(CounterModelTest, EcmpPolarization) {
  CounterModel m = Model(
      "faults: [{kind: ecmp_polarization, switch: leaf-0, start: 10, end: "
      "20}]");
  std::vector<size_t> uplinks = {
      Port("leaf-0", "swp49"), Port("leaf-0", "swp50"), Port("leaf-0", "swp51"),
      Port("leaf-0", "swp52")};
  for (double t : {kBefore, kDuring, kAfter}) {
    FabricRates r = m.RatesAt(t, 1.0);
    double total = 0, top = 0;
    for (size_t p : uplinks) {
      total += r.ports[p].per_second[kTxBytes];
      top = std::max(top, r.ports[p].per_second[kTxBytes]);
    }
    // 4 hosts behind leaf-0 of 8 host ports: half of their traffic leaves.
    double into = 0;
    for (size_t p : fabric_.switches()[0].members) {
      if (fabric_.ports()[p].nic) into += r.ports[p].per_second[kRxBytes];
    }
    EXPECT_NEAR(total, 0.5 * into, 0.06 * into) << "t=" << t;
    const double cnp =
        r.nics[Nic("gpu-000", "mlx5_0")].per_second[kRpCnpHandled];
    if (t == kDuring) {
      EXPECT_GE(top / total, 0.65);
      EXPECT_GE(cnp, 5e3);
    } else {
      EXPECT_LT(top / total, 0.35);
      EXPECT_LT(cnp, 1000);
    }
  }
}

// Flows piled onto 2 or 3 of the 4 uplinks: those carry most of the
// traffic, each far above the mean, the total unchanged, and which of them
// is hottest changes from second to second.
TEST_F(CounterModelTest, EcmpPolarizationOfSeveralUplinksAlternatesTheHottest) {
  const std::vector<size_t> uplinks = {
      Port("leaf-0", "swp49"), Port("leaf-0", "swp50"), Port("leaf-0", "swp51"),
      Port("leaf-0", "swp52")};
  for (int polarized : {2, 3}) {
    SCOPED_TRACE(polarized);
    CounterModel m = Model(absl::StrCat(
        "faults: [{kind: ecmp_polarization, switch: leaf-0, start: 10, end: "
        "20, uplinks: ",
        polarized, "}]"));
    std::set<size_t> hottest;
    for (double t = 10; t < 20; t += 0.5) {
      FabricRates r = m.RatesAt(t, 0.5);
      std::vector<double> tx;
      double total = 0;
      for (size_t p : uplinks) {
        tx.push_back(r.ports[p].per_second[kTxBytes]);
        total += tx.back();
      }
      const double mean = total / 4;
      const size_t top = static_cast<size_t>(
          std::max_element(tx.begin(), tx.end()) - tx.begin());
      hottest.insert(top);
      EXPECT_LT(top, static_cast<size_t>(polarized)) << "t=" << t;
      // The hottest is past the analyzer's 1.5x the mean (2.2x of 2, 1.6x
      // of 3), every hot one carries far more than any cold one.
      EXPECT_GE(tx[top] / mean, 1.55) << "t=" << t;
      for (int k = 0; k < polarized; ++k) {
        EXPECT_GT(tx[static_cast<size_t>(k)], 3 * tx[3]) << "t=" << t;
      }
    }
    EXPECT_EQ(hottest.size(), static_cast<size_t>(polarized));
  }
}

TEST_F(CounterModelTest, LinkFlapCountsEveryFlap) {
  CounterModel m = Model(
      "faults: [{kind: link_flap, node: gpu-000, nic: mlx5_0, start: 10, "
      "end: 18, period: 4}]");
  const size_t nic = Nic("gpu-000", "mlx5_0");
  const size_t port = Port("leaf-0", "swp1");
  PortCounters c, pc;
  int down_ticks = 0;
  for (int t = 0; t < 30; ++t) {
    FabricRates r = m.RatesAt(t, 1.0);
    if (!r.nics[nic].link_up) {
      ++down_ticks;
      EXPECT_GE(t, 10);
      EXPECT_LT(t, 18);
      EXPECT_EQ(r.nics[nic].per_second[kRxBytes], 0);
      EXPECT_FALSE(r.ports[port].link_up);
    }
    Accumulate(r.nics[nic], 1.0, &c);
    Accumulate(r.ports[port], 1.0, &pc);
  }
  EXPECT_EQ(down_ticks, 4);  // 2 of every 4 s, two periods
  EXPECT_EQ(c.value[kCarrierChanges], 4u);
  EXPECT_EQ(c.value[kLinkDowned], 2u);
  EXPECT_EQ(c.value[kLinkDownEvents], 2u);
  EXPECT_EQ(pc.value[kCarrierChanges], 4u);
  EXPECT_TRUE(c.link_up);
}

TEST_F(CounterModelTest, LinkErrors) {
  CounterModel m = Model(
      "faults: [{kind: link_errors, node: gpu-002, nic: mlx5_5, start: 10, "
      "end: 20}]");
  const size_t nic = Nic("gpu-002", "mlx5_5");
  for (double t : {kBefore, kDuring, kAfter}) {
    const FabricRates r = m.RatesAt(t, 1.0);
    const auto& v = r.nics[nic].per_second;
    const double ber = v[kCorrectedBits] / v[kRxBits];
    if (t == kDuring) {
      EXPECT_NEAR(v[kSymbolErrors], 50, 10.1);
      EXPECT_EQ(v[kSymbolErrorsPhy], v[kSymbolErrors]);
      EXPECT_NEAR(v[kCrcErrors], 20, 5.1);
      EXPECT_EQ(v[kRcvErrors], v[kCrcErrors]);
      EXPECT_GT(v[kPcsSymbolErrors], 0);
      EXPECT_NEAR(ber, 1e-4, 0.21e-4);
    } else {
      EXPECT_EQ(v[kSymbolErrors], 0);
      EXPECT_EQ(v[kCrcErrors], 0);
      EXPECT_LT(ber, 1e-8);
    }
  }
}

TEST_F(CounterModelTest, HalfSpeedCapsThroughput) {
  // Traffic heavy enough to hit a 200G cap: the flat 10 GB/s default would
  // not; use a short step so the modelled bytes arrive fast.
  CounterModel m = Model(
      "step_seconds: 0.05\nfaults: [{kind: half_speed, node: gpu-000, "
      "nic: mlx5_1, start: 10, end: 20}]");
  const size_t nic = Nic("gpu-000", "mlx5_1");
  const size_t port = Port("leaf-1", "swp1");
  FabricRates before = m.RatesAt(kBefore, 1), during = m.RatesAt(kDuring, 1);
  EXPECT_EQ(before.nics[nic].speed_gbps, 400);
  EXPECT_EQ(during.nics[nic].speed_gbps, 200);
  EXPECT_EQ(during.ports[port].speed_gbps, 200);
  EXPECT_LE(during.nics[nic].per_second[kRxBytes], 0.95 * 25e9);
  EXPECT_LE(during.nics[nic].per_second[kTxBytes], 0.95 * 25e9);
  EXPECT_GT(before.nics[nic].per_second[kRxBytes], 0.95 * 25e9);
  EXPECT_EQ(during.nics[nic].per_second[kRxBits], 200e9);
  EXPECT_EQ(m.RatesAt(kAfter, 1).nics[nic].speed_gbps, 400);
}

TEST_F(CounterModelTest, RetransmissionsAndStraggler) {
  CounterModel m = Model(R"(faults:
  - {kind: retransmissions, node: gpu-001, nic: mlx5_4, start: 10, end: 20}
  - {kind: straggler, node: gpu-002, nic: mlx5_6, start: 10, end: 20})");
  const size_t re = Nic("gpu-001", "mlx5_4");
  const size_t slow = Nic("gpu-002", "mlx5_6");
  for (double t : {kBefore, kDuring, kAfter}) {
    FabricRates r = m.RatesAt(t, 1.0);
    const auto& v = r.nics[re].per_second;
    double peers_tx = 0;
    for (size_t j : m.base().nic(slow).peers) {
      peers_tx += r.nics[j].per_second[kTxBytes];
    }
    peers_tx /= static_cast<double>(m.base().nic(slow).peers.size());
    const double share = r.nics[slow].per_second[kTxBytes] / peers_tx;
    if (t == kDuring) {
      for (Counter k : {kOutOfSequence, kPacketSeqErr, kLocalAckTimeoutErr}) {
        EXPECT_GE(v[k], 200);
        EXPECT_LE(v[k], 2000);
      }
      EXPECT_NEAR(share, 0.3, 0.12);
    } else {
      EXPECT_EQ(v[kOutOfSequence], 0);
      EXPECT_GT(share, 0.6);
    }
  }
}

TEST_F(CounterModelTest, NicGoneAndBack) {
  CounterModel m = Model(
      "faults: [{kind: nic_gone, node: gpu-003, nic: mlx5_0, start: 10, "
      "end: 20}]");
  const size_t nic = Nic("gpu-003", "mlx5_0");
  const size_t port = Port("leaf-0", "swp4");
  PortCounters c;
  uint64_t before_gone = 0;
  for (int t = 0; t < 25; ++t) {
    FabricRates r = m.RatesAt(t, 1.0);
    EXPECT_EQ(r.nics[nic].present, t < 10 || t >= 20) << t;
    EXPECT_EQ(r.ports[port].link_up, t < 10 || t >= 20) << t;
    if (t == 10) before_gone = c.value[kRxBytes];
    Accumulate(r.nics[nic], 1.0, &c);
    if (t == 20) {
      // Recreated like a driver reload: from zero, one tick's worth.
      EXPECT_GT(c.value[kRxBytes], 0u);
      EXPECT_LT(c.value[kRxBytes], before_gone / 5);
    }
  }
}

TEST_F(CounterModelTest, MonotonicOverAThousandTicksWithEveryFault) {
  CounterModel m = Model(R"(step_seconds: 3
faults:
  - {kind: hot_expert, node: gpu-003, nic: mlx5_2, start: 100, end: 300}
  - {kind: pfc_storm, node: gpu-001, nic: mlx5_0, start: 200, end: 400}
  - {kind: ecmp_polarization, switch: leaf-0, start: 300, end: 500}
  - {kind: link_flap, switch: leaf-1, port: swp2, start: 400, end: 600}
  - {kind: link_errors, node: gpu-000, nic: mlx5_3, start: 500, end: 700}
  - {kind: half_speed, node: gpu-000, nic: mlx5_4, start: 600}
  - {kind: retransmissions, node: gpu-002, nic: mlx5_2, start: 700}
  - {kind: straggler, node: gpu-002, nic: mlx5_7, start: 800}
  - {kind: nic_gone, node: gpu-001, nic: mlx5_6, start: 900, end: 950})");
  std::vector<PortCounters> nics(fabric_.nics().size());
  std::vector<PortCounters> ports(fabric_.ports().size());
  const size_t gone = Nic("gpu-001", "mlx5_6");
  for (int tick = 0; tick < 1000; ++tick) {
    FabricRates r = m.RatesAt(tick * 1.0, 1.0);
    for (size_t i = 0; i < nics.size(); ++i) {
      PortCounters before = nics[i];
      Accumulate(r.nics[i], 1.0, &nics[i]);
      const bool reborn = !before.present && nics[i].present;
      if (reborn) {
        EXPECT_EQ(i, gone);
        continue;
      }
      for (int k = 0; k < kNumCounters; ++k) {
        ASSERT_GE(nics[i].value[k], before.value[k])
            << "nic " << i << " counter " << k << " tick " << tick;
      }
    }
    for (size_t p = 0; p < ports.size(); ++p) {
      PortCounters before = ports[p];
      Accumulate(r.ports[p], 1.0, &ports[p]);
      for (int k = 0; k < kNumCounters; ++k) {
        ASSERT_GE(ports[p].value[k], before.value[k])
            << "port " << p << " counter " << k << " tick " << tick;
      }
    }
  }
  // Stayed far below the 32-bit width of the Q-counters.
  EXPECT_LT(nics[Nic("gpu-002", "mlx5_2")].value[kOutOfSequence],
            uint64_t{1} << 31);
  EXPECT_GT(nics[Nic("gpu-002", "mlx5_2")].value[kOutOfSequence], 10000u);
}

TEST(PortCountersTest, WidthsSaturateOrWrapWhereTheDriverPrintsThem) {
  PortRates r;
  r.per_second[kSymbolErrors] = 70000;        // 16-bit PMA: saturates
  r.per_second[kOutOfSequence] = 4294967000;  // 32-bit Q-counter: wraps
  r.per_second[kTxBytes] = 1.5;
  PortCounters c;
  Accumulate(r, 1.0, &c);
  EXPECT_EQ(c.value[kTxBytes], 1u);  // the half is carried
  Accumulate(r, 1.0, &c);
  EXPECT_EQ(c.value[kTxBytes], 3u);
  // The model keeps 64 bits; the files keep the widths of the counter table.
  EXPECT_EQ(c.value[kSymbolErrors], 140000u);
  std::map<std::string, std::string> files;
  for (const FileEntry& f : RdmaDeviceFiles(SimNic{}, 0, c, false)) {
    files[f.path] = f.content;
  }
  EXPECT_EQ(files["ports/1/counters/symbol_error"], "65535\n");
  EXPECT_EQ(files["ports/1/hw_counters/out_of_sequence"],
            absl::StrCat((2 * 4294967000ull) % (1ull << 32), "\n"));
  EXPECT_EQ(files["ports/1/counters/port_xmit_data"], "0\n");  // 3 bytes / 4
  r.per_second[kRxBytes] = -5;  // nonsense counts nothing
  Accumulate(r, 1.0, &c);
  EXPECT_EQ(c.value[kRxBytes], 0u);
}

}  // namespace
}  // namespace fabricdiag::sim
