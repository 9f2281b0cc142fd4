#include "agent/rate.h"

#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/agent/sample_testing.h"

namespace fabricdiag::agent {
namespace {

using ::testing::Optional;

TEST(CounterDeltaTest, IncreaseIsPlainDifference) {
  bool wrapped = true;
  EXPECT_THAT(CounterDelta(100, 250, 32, &wrapped), Optional(150u));
  EXPECT_FALSE(wrapped);
  EXPECT_THAT(CounterDelta(7, 7, 64, &wrapped), Optional(0u));
}

TEST(CounterDeltaTest, ThirtyTwoBitWrapNearTheTopIsAWrap) {
  bool wrapped = false;
  // mlx5 Q-counters are 32-bit: 0xFFFFFF00 -> 0x100 is 0x200 increments.
  EXPECT_THAT(CounterDelta(0xFFFFFF00u, 0x100u, 32, &wrapped),
              Optional(0x200u));
  EXPECT_TRUE(wrapped);
}

TEST(CounterDeltaTest, DecreaseFromLowValueIsAReset) {
  bool wrapped = true;
  EXPECT_EQ(CounterDelta(1000, 10, 32, &wrapped), std::nullopt);
  EXPECT_FALSE(wrapped);
}

TEST(CounterDeltaTest, DecreaseThatWouldImplyAHugeDeltaIsAReset) {
  // Previous in the top half, but the "wrapped" distance would be most of
  // the range: a clear followed by a burst, not a wrap.
  EXPECT_EQ(CounterDelta(0x80000001u, 0x7FFFFFF0u, 32, nullptr), std::nullopt);
}

TEST(CounterDeltaTest, SixtyFourBitDecreaseIsAlwaysAReset) {
  const uint64_t max = std::numeric_limits<uint64_t>::max();
  EXPECT_EQ(CounterDelta(max - 5, 3, 64, nullptr), std::nullopt);
}

TEST(CounterDeltaTest, ValueAboveDeclaredWidthIsAReset) {
  EXPECT_EQ(CounterDelta(uint64_t{1} << 40, 5, 32, nullptr), std::nullopt);
}

TEST(CounterDeltaTest, SixteenBitWrap) {
  bool wrapped = false;
  EXPECT_THAT(CounterDelta(65530, 4, 16, &wrapped), Optional(10u));
  EXPECT_TRUE(wrapped);
}

Sample Counter(Subsystem subsystem, const std::string& name, uint64_t raw,
               uint32_t width, double scale = 1.0) {
  SeriesDesc d;
  d.subsystem = subsystem;
  d.device = "mlx5_0";
  d.port = 1;
  d.name = name;
  d.width_bits = width;
  d.scale = scale;
  return Sample::Of(std::move(d), raw);
}

Snapshot At(int64_t seconds, std::vector<Sample> samples) {
  Snapshot snap;
  snap.monotonic_nanos = seconds * 1'000'000'000;
  snap.samples = std::move(samples);
  return snap;
}

TEST(RateCalculatorTest, FirstSampleHasNoRateSecondHasScaledRate) {
  RateCalculator rates;
  auto r0 = rates.Update(At(10, {Counter(Subsystem::kRdmaPortCounters,
                                         "port_xmit_data", 1000, 64, 4)}));
  ASSERT_EQ(r0.size(), 1u);
  EXPECT_EQ(r0[0].per_second, std::nullopt);

  auto r1 = rates.Update(At(12, {Counter(Subsystem::kRdmaPortCounters,
                                         "port_xmit_data", 3000, 64, 4)}));
  ASSERT_EQ(r1.size(), 1u);
  // 2000 words * 4 bytes over 2 s.
  EXPECT_THAT(r1[0].per_second, Optional(4000.0));
  EXPECT_THAT(r1[0].delta, Optional(2000u));
}

TEST(RateCalculatorTest, ResetIsReportedAndYieldsNoRate) {
  RateCalculator rates;
  rates.Update(
      At(1, {Counter(Subsystem::kEthtool, "rx_prio3_pause", 5000, 64)}));
  auto r = rates.Update(
      At(2, {Counter(Subsystem::kEthtool, "rx_prio3_pause", 10, 64)}));
  EXPECT_TRUE(r[0].reset);
  EXPECT_EQ(r[0].per_second, std::nullopt);
  EXPECT_EQ(rates.resets(), 1u);
  // The next interval measures from the reset value again.
  r = rates.Update(
      At(3, {Counter(Subsystem::kEthtool, "rx_prio3_pause", 30, 64)}));
  EXPECT_THAT(r[0].per_second, Optional(20.0));
}

TEST(RateCalculatorTest, HwCounterWrapGivesTrueRate) {
  RateCalculator rates;
  rates.Update(At(1, {Counter(Subsystem::kRdmaPortHwCounters, "out_of_sequence",
                              0xFFFFFFF0u, 32)}));
  auto r = rates.Update(At(2, {Counter(Subsystem::kRdmaPortHwCounters,
                                       "out_of_sequence", 0x10u, 32)}));
  EXPECT_TRUE(r[0].wrapped);
  EXPECT_THAT(r[0].per_second, Optional(32.0));
  EXPECT_EQ(rates.wraps(), 1u);
}

TEST(RateCalculatorTest, PmaCountersSaturateAndNeverWrap) {
  RateCalculator rates;
  // symbol_error is 16-bit and saturating: a decrease is a clear.
  rates.Update(At(
      1, {Counter(Subsystem::kRdmaPortCounters, "symbol_error", 65530, 16)}));
  auto r = rates.Update(
      At(2, {Counter(Subsystem::kRdmaPortCounters, "symbol_error", 4, 16)}));
  EXPECT_TRUE(r[0].reset);
  EXPECT_FALSE(r[0].wrapped);
}

TEST(RateCalculatorTest, SaturatedCounterHasNoRate) {
  RateCalculator rates;
  Sample s = Counter(Subsystem::kRdmaPortCounters, "port_xmit_wait", 100, 32);
  rates.Update(At(1, {s}));
  s.raw = 0xFFFFFFFFu;
  s.saturated = true;
  auto r = rates.Update(At(2, {s}));
  EXPECT_EQ(r[0].per_second, std::nullopt);
  EXPECT_FALSE(r[0].reset);
  // Cleared by an admin: a reset, not a huge negative or wrapped rate.
  s.raw = 3;
  s.saturated = false;
  r = rates.Update(At(3, {s}));
  EXPECT_TRUE(r[0].reset);
  EXPECT_EQ(r[0].per_second, std::nullopt);
}

TEST(RateCalculatorTest, GaugesGetNoRate) {
  RateCalculator rates;
  Sample g = Edited(Counter(Subsystem::kNetdevAttribute, "mtu", 9000, 64),
                    [](SeriesDesc& d) { d.kind = Kind::kGauge; });
  rates.Update(At(1, {g}));
  g.raw = 1500;
  auto r = rates.Update(At(2, {g}));
  EXPECT_EQ(r[0].per_second, std::nullopt);
  EXPECT_FALSE(r[0].reset);
  EXPECT_EQ(rates.resets(), 0u);
}

TEST(RateCalculatorTest, VanishedSeriesStartsAfresh) {
  RateCalculator rates;
  Sample s = Counter(Subsystem::kRdmaPortCounters, "port_rcv_data", 100, 64, 4);
  rates.Update(At(1, {s}));
  rates.Update(At(2, {}));  // the NIC disappeared
  s.raw = 50;               // and came back with fresh counters
  auto r = rates.Update(At(3, {s}));
  EXPECT_FALSE(r[0].reset);
  EXPECT_EQ(r[0].per_second, std::nullopt);
  EXPECT_EQ(rates.resets(), 0u);
}

TEST(RateCalculatorTest, SeriesAreKeyedByDevicePortAndName) {
  RateCalculator rates;
  Sample a = Counter(Subsystem::kRdmaPortCounters, "port_rcv_data", 100, 64);
  Sample b = Edited(a, [](SeriesDesc& d) { d.device = "mlx5_1"; });
  b.raw = 1'000'000;
  rates.Update(At(1, {a, b}));
  a.raw = 200;
  b.raw = 1'000'100;
  auto r = rates.Update(At(2, {b, a}));  // order changed
  EXPECT_THAT(r[0].per_second, Optional(100.0));
  EXPECT_THAT(r[1].per_second, Optional(100.0));
}

// Sources rebuild their series descriptions on every rescan: the new
// objects describe the same series, so the rates must carry on.
TEST(RateCalculatorTest, RatesCarryOnWhenDescriptionsAreRebuilt) {
  RateCalculator rates;
  Sample before =
      Counter(Subsystem::kRdmaPortCounters, "port_rcv_data", 100, 64);
  rates.Update(At(1, {before}));
  Sample rebuilt =
      Counter(Subsystem::kRdmaPortCounters, "port_rcv_data", 300, 64);
  ASSERT_NE(before.desc, rebuilt.desc);
  auto r = rates.Update(At(2, {rebuilt}));
  EXPECT_THAT(r[0].per_second, Optional(200.0));
}

// A different series in the position a series held before is not mistaken
// for it, and the previous snapshot's descriptions stay valid even when
// nothing else holds them any more.
TEST(RateCalculatorTest, AnotherSeriesInTheSamePositionIsNotMatched) {
  RateCalculator rates;
  {
    Sample a = Counter(Subsystem::kRdmaPortCounters, "port_rcv_data", 100, 64);
    rates.Update(At(1, {a}));
  }  // `a` and its description are gone; the calculator keeps its own
  Sample b = Counter(Subsystem::kRdmaPortCounters, "port_xmit_data", 500, 64);
  auto r = rates.Update(At(2, {b}));
  EXPECT_EQ(r[0].per_second, std::nullopt);
  b.raw = 700;
  r = rates.Update(At(3, {b}));
  EXPECT_THAT(r[0].per_second, Optional(200.0));
}

// A byte counter of `device` port `port` (0: a netdev) at `raw`.
Sample Bytes(Subsystem subsystem, const std::string& device, uint32_t port,
             const std::string& name, uint64_t raw, double scale = 1) {
  SeriesDesc d;
  d.subsystem = subsystem;
  d.device = device;
  d.port = port;
  d.name = name;
  d.scale = scale;
  d.unit = "bytes";
  return Sample::Of(std::move(d), raw);
}

// A snapshot at `seconds` whose RDMA port mlx5_0/1 and netdev eth0 run at
// `gbps` (0: speed unknown).
Snapshot AtSpeed(int64_t seconds, double gbps, std::vector<Sample> samples) {
  Snapshot snap = At(seconds, std::move(samples));
  RdmaPortInfo port;
  port.device = "mlx5_0";
  port.port = 1;
  if (gbps > 0) port.rate_bytes_per_second = gbps * 1e9 / 8;
  snap.rdma_ports.push_back(port);
  NetdevInfo netdev;
  netdev.name = "eth0";
  netdev.speed_bytes_per_second = gbps * 1e9 / 8;
  snap.netdevs.push_back(netdev);
  return snap;
}

TEST(RateCalculatorTest, ByteRateAboveThePortsLineRateIsRefusedAndCounted) {
  RateCalculator rates;
  // port_xmit_data counts 4-octet words; a 400G port carries 50 GB/s.
  auto xmit = [](uint64_t bytes) {
    return Bytes(Subsystem::kRdmaPortCounters, "mlx5_0", 1, "port_xmit_data",
                 bytes / 4, 4);
  };
  auto phy = [](uint64_t bytes) {
    return Bytes(Subsystem::kEthtool, "eth0", 0, "tx_bytes_phy", bytes);
  };
  uint64_t a = 0;
  uint64_t b = 0;
  rates.Update(AtSpeed(1, 400, {xmit(a), phy(b)}));
  auto r = rates.Update(
      AtSpeed(2, 400, {xmit(a += 45'000'000'000), phy(b += 48'000'000'000)}));
  EXPECT_THAT(r[0].per_second, Optional(45e9));
  EXPECT_THAT(r[1].per_second, Optional(48e9));
  // 210 and 215 GB/s: more than the port can carry. No rate, no delta.
  r = rates.Update(
      AtSpeed(3, 400, {xmit(a += 210'000'000'000), phy(b += 215'000'000'000)}));
  EXPECT_EQ(r[0].per_second, std::nullopt);
  EXPECT_EQ(r[0].delta, std::nullopt);
  EXPECT_EQ(r[1].per_second, std::nullopt);
  EXPECT_FALSE(r[0].reset);
  EXPECT_EQ(rates.above_line_rate(), 2u);
  EXPECT_EQ(rates.resets(), 0u);
  // The values are the next interval's baseline; 53 GB/s (a read 60 ms
  // late) is within the slack, 56 GB/s is not.
  r = rates.Update(
      AtSpeed(4, 400, {xmit(a += 53'000'000'000), phy(b += 56'000'000'000)}));
  EXPECT_THAT(r[0].per_second, Optional(53e9));
  EXPECT_EQ(r[1].per_second, std::nullopt);
  EXPECT_EQ(rates.above_line_rate(), 3u);
}

// A driver that refreshes its statistics less often than they are read: the
// counter sits still for a read, then jumps by two intervals' bytes. On a
// port at 95% of its line rate the jump is 190% over its own interval, 95%
// over the time since the counter last moved: it is kept, so the interval's
// zero and the jump together give the port's true mean.
TEST(RateCalculatorTest, AJumpAfterACounterSatStillIsJudgedSinceItLastMoved) {
  RateCalculator rates;
  auto phy = [](uint64_t bytes) {
    return Bytes(Subsystem::kEthtool, "eth0", 0, "rx_bytes_phy", bytes);
  };
  uint64_t b = 0;
  rates.Update(AtSpeed(1, 400, {phy(b)}));
  auto r = rates.Update(AtSpeed(2, 400, {phy(b += 47'500'000'000)}));
  EXPECT_THAT(r[0].per_second, Optional(47.5e9));
  r = rates.Update(AtSpeed(3, 400, {phy(b)}));  // not refreshed
  EXPECT_THAT(r[0].per_second, Optional(0.0));
  r = rates.Update(AtSpeed(4, 400, {phy(b += 95'000'000'000)}));
  EXPECT_THAT(r[0].per_second, Optional(95e9));
  EXPECT_THAT(r[0].delta, Optional(95'000'000'000u));
  EXPECT_EQ(rates.above_line_rate(), 0u);
  // Still for five reads (an idle port): the stillness counts for at most
  // kStatsRefreshMaxNanos (2 s), so 100 GB in one interval (50 GB/s over
  // 2 s) is possible, 120 GB is not, however long the port was idle.
  for (int64_t t = 5; t <= 9; ++t) rates.Update(AtSpeed(t, 400, {phy(b)}));
  r = rates.Update(AtSpeed(10, 400, {phy(b += 100'000'000'000)}));
  EXPECT_THAT(r[0].per_second, Optional(100e9));
  for (int64_t t = 11; t <= 15; ++t) rates.Update(AtSpeed(t, 400, {phy(b)}));
  r = rates.Update(AtSpeed(16, 400, {phy(b += 120'000'000'000)}));
  EXPECT_EQ(r[0].per_second, std::nullopt);
  EXPECT_EQ(rates.above_line_rate(), 1u);
  // A counter that moves at every read is judged over its last interval:
  // the refused value was the baseline, so it moved at the last read.
  r = rates.Update(AtSpeed(17, 400, {phy(b += 60'000'000'000)}));
  EXPECT_EQ(r[0].per_second, std::nullopt);
  EXPECT_EQ(rates.above_line_rate(), 2u);
}

TEST(RateCalculatorTest, LineRateIsTheFastestSpeedSeenAndUnknownIsNoLimit) {
  RateCalculator rates;
  auto phy = [](uint64_t bytes) {
    return Bytes(Subsystem::kEthtool, "eth0", 0, "rx_bytes_phy", bytes);
  };
  auto other = [](uint64_t bytes) {
    return Bytes(Subsystem::kNetdevStatistics, "eth9", 0, "rx_bytes", bytes);
  };
  rates.Update(AtSpeed(1, 0, {phy(0), other(0)}));
  // No speed known yet: nothing to compare with.
  auto r = rates.Update(
      AtSpeed(2, 0, {phy(210'000'000'000), other(210'000'000'000)}));
  EXPECT_THAT(r[0].per_second, Optional(210e9));
  rates.Update(AtSpeed(3, 400, {phy(250'000'000'000), other(210'000'000'000)}));
  // Renegotiated down to 100G: the interval may still have run at 400G.
  r = rates.Update(
      AtSpeed(4, 100, {phy(295'000'000'000), other(210'000'000'000)}));
  EXPECT_THAT(r[0].per_second, Optional(45e9));
  // A netdev the snapshots never gave a speed for has no limit.
  r = rates.Update(
      AtSpeed(5, 100, {phy(295'000'000'000), other(420'000'000'000)}));
  EXPECT_THAT(r[1].per_second, Optional(210e9));
  EXPECT_EQ(rates.above_line_rate(), 0u);
}

}  // namespace
}  // namespace fabricdiag::agent
