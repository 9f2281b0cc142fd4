#include "common/clock.h"

#include <cstdint>

#include "absl/time/time.h"
#include "gtest/gtest.h"

namespace fabricdiag {
namespace {

constexpr int64_t kMono = 5'000'000'000;  // any monotonic reading
const absl::Time kOnGrid = absl::FromUnixSeconds(1795000000);

int64_t WaitMs(absl::Time wall_now, absl::Duration interval,
               absl::Duration offset = absl::ZeroDuration()) {
  return (NextGridTick(kMono, wall_now, interval, offset) - kMono) / 1'000'000;
}

TEST(NextGridTickTest, WaitsForTheNextWholeMultipleOfTheInterval) {
  EXPECT_EQ(WaitMs(kOnGrid + absl::Milliseconds(300), absl::Seconds(1)), 700);
  EXPECT_EQ(WaitMs(kOnGrid + absl::Milliseconds(100), absl::Milliseconds(500)),
            400);
  // On a grid point: the next one, a whole interval later.
  EXPECT_EQ(WaitMs(kOnGrid, absl::Seconds(1)), 1000);
}

TEST(NextGridTickTest, NeverTicksTwiceForOneGridPoint) {
  // Woke up a little before its grid point, or ran until just before the
  // next one: the grid point after.
  EXPECT_EQ(WaitMs(kOnGrid - absl::Milliseconds(2), absl::Seconds(1)), 1002);
  EXPECT_EQ(WaitMs(kOnGrid + absl::Milliseconds(960), absl::Seconds(1)), 1040);
  // A twentieth of an interval away still counts, and a long tick keeps
  // the next grid point: a 0.8 s analysis pass runs every second.
  EXPECT_EQ(WaitMs(kOnGrid + absl::Milliseconds(950), absl::Seconds(1)), 50);
  EXPECT_EQ(WaitMs(kOnGrid + absl::Milliseconds(800), absl::Seconds(1)), 200);
}

TEST(NextGridTickTest, AnOffsetShiftsTheGrid) {
  const absl::Duration second = absl::Seconds(1);
  EXPECT_EQ(WaitMs(kOnGrid, second, absl::Milliseconds(250)), 250);
  EXPECT_EQ(WaitMs(kOnGrid + absl::Milliseconds(100), second,
                   absl::Milliseconds(250)),
            150);
  // Modulo the interval, and negative is before the grid point.
  EXPECT_EQ(WaitMs(kOnGrid, second, absl::Milliseconds(1250)), 250);
  EXPECT_EQ(WaitMs(kOnGrid, second, absl::Milliseconds(-250)), 750);
}

TEST(NextGridTickTest, AgreesAcrossMachinesWhoseClocksAgree) {
  // Two agents that started at different instants tick at the same wall
  // times: both wait until the same grid point.
  const absl::Duration interval = absl::Milliseconds(500);
  const absl::Time a = kOnGrid + absl::Milliseconds(30);
  const absl::Time b = kOnGrid + absl::Milliseconds(420);
  EXPECT_EQ(a + absl::Milliseconds(WaitMs(a, interval)),
            b + absl::Milliseconds(WaitMs(b, interval)));
}

TEST(NextGridTickTest, OddIntervalsAndBadInput) {
  // 0.7 s: multiples of 0.7 s since the epoch, the same on every machine.
  const absl::Duration odd = absl::Milliseconds(700);
  const absl::Time t =
      absl::FromUnixNanos(7'000'000'000'000'000'000 + 100'000'000);
  EXPECT_EQ(WaitMs(t, odd), 600);
  // A zero or negative interval ticks at once, not never.
  EXPECT_EQ(
      NextGridTick(kMono, kOnGrid, absl::ZeroDuration(), absl::ZeroDuration()),
      kMono + 1);
  EXPECT_GE(
      NextGridTick(kMono, kOnGrid, -absl::Seconds(1), absl::ZeroDuration()),
      kMono);
  // Before the epoch (a clock that was never set).
  EXPECT_EQ(WaitMs(absl::FromUnixSeconds(-10) + absl::Milliseconds(300),
                   absl::Seconds(1)),
            700);
}

}  // namespace
}  // namespace fabricdiag
