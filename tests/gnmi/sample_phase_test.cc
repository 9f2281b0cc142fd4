#include "gnmi/sample_phase.h"

#include "gtest/gtest.h"

namespace fabricdiag::gnmi {
namespace {

constexpr absl::Duration kInterval = absl::Milliseconds(500);
// A grid point: a whole multiple of the interval since the Unix epoch.
const absl::Time kGrid = absl::FromUnixSeconds(1'800'000'000);

// `n` samples, one per interval, each `offset` past a grid point.
void ArriveAt(SamplePhase* phase, absl::Duration offset, int n) {
  for (int i = 0; i < n; ++i) phase->Arrived(kGrid + i * kInterval + offset);
}

TEST(SamplePhaseTest, SamplesJustAfterTheGridPointAreMovedBeforeIt) {
  SamplePhase phase(kInterval);
  ArriveAt(&phase, absl::Milliseconds(20), SamplePhase::kWindow - 1);
  EXPECT_FALSE(phase.ShouldRealign()) << "one window is needed to decide";
  EXPECT_EQ(phase.MedianWait(), absl::ZeroDuration());
  ArriveAt(&phase, absl::Milliseconds(20), 1);
  EXPECT_EQ(phase.MedianWait(), absl::Milliseconds(480));
  ASSERT_TRUE(phase.ShouldRealign());

  // Asked 20 ms past a grid point: start at three quarters of the interval
  // (375 ms past it), so that the first sample, one interval later, comes
  // 125 ms before a grid point.
  const absl::Duration delay = phase.Realign(kGrid + absl::Milliseconds(20));
  EXPECT_EQ(delay, absl::Milliseconds(355));
  EXPECT_EQ(phase.realigns(), 1);
  EXPECT_FALSE(phase.ShouldRealign()) << "the old window is forgotten";

  // Samples that now arrive 125 ms (plus transit) before the grid point
  // stay where they are.
  ArriveAt(&phase, absl::Milliseconds(380), 2 * SamplePhase::kWindow);
  EXPECT_EQ(phase.MedianWait(), absl::Milliseconds(120));
  EXPECT_FALSE(phase.ShouldRealign());
}

TEST(SamplePhaseTest, SamplesBeforeTheGridPointAreLeftAlone) {
  for (int past_ms : {250, 300, 499}) {
    SamplePhase phase(kInterval);
    ArriveAt(&phase, absl::Milliseconds(past_ms), SamplePhase::kWindow);
    EXPECT_FALSE(phase.ShouldRealign()) << past_ms << " ms past the grid";
  }
  SamplePhase phase(kInterval);
  ArriveAt(&phase, absl::Milliseconds(249), SamplePhase::kWindow);
  EXPECT_TRUE(phase.ShouldRealign()) << "251 ms of 500 to wait";
}

TEST(SamplePhaseTest, OneLateSampleDoesNotDecide) {
  SamplePhase phase(kInterval);
  ArriveAt(&phase, absl::Milliseconds(400), SamplePhase::kWindow - 3);
  ArriveAt(&phase, absl::Milliseconds(10), 3);  // a slow network moment
  EXPECT_FALSE(phase.ShouldRealign());
}

TEST(SamplePhaseTest, ATargetThatKeepsItsOwnScheduleIsTriedAFewTimesOnly) {
  SamplePhase phase(kInterval);
  for (int i = 0; i < SamplePhase::kMaxRealigns; ++i) {
    ArriveAt(&phase, absl::Milliseconds(5), SamplePhase::kWindow);
    ASSERT_TRUE(phase.ShouldRealign()) << "try " << i;
    phase.Realign(kGrid);
  }
  ArriveAt(&phase, absl::Milliseconds(5), SamplePhase::kWindow);
  EXPECT_FALSE(phase.ShouldRealign());
  EXPECT_EQ(phase.realigns(), SamplePhase::kMaxRealigns);
  EXPECT_EQ(phase.MedianWait(), absl::Milliseconds(495))
      << "still shown, for the metric";
}

TEST(SamplePhaseTest, ARestartForgetsTheOldPhase) {
  SamplePhase phase(kInterval);
  ArriveAt(&phase, absl::Milliseconds(5), SamplePhase::kWindow);
  phase.Restarted();
  EXPECT_FALSE(phase.ShouldRealign());
  EXPECT_EQ(phase.realigns(), 0) << "a reconnect is not a try";
}

TEST(SamplePhaseTest, TheDelayIsNeverZeroNorMoreThanAnInterval) {
  const absl::Duration three_quarters = kInterval - kInterval / 4;
  SamplePhase at_the_moment(kInterval);
  EXPECT_EQ(at_the_moment.Realign(kGrid + three_quarters), kInterval);
  SamplePhase just_after(kInterval);
  EXPECT_EQ(just_after.Realign(kGrid + three_quarters + absl::Milliseconds(1)),
            kInterval - absl::Milliseconds(1));
  SamplePhase before_the_epoch(kInterval);
  // 100 ms before the epoch is 400 ms past a grid point.
  EXPECT_EQ(
      before_the_epoch.Realign(absl::UnixEpoch() - absl::Milliseconds(100)),
      absl::Milliseconds(475));
}

}  // namespace
}  // namespace fabricdiag::gnmi
