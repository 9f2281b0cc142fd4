// The backoff step an agent waits between streams: failures grow it, a
// hand-off by a collector that works does not inherit them, and hand-offs
// in a row within a minute grow it again.
#include "agent/reconnect_pacing.h"

#include <gtest/gtest.h>

#include <cstdint>

#include "absl/time/time.h"

namespace fabricdiag::agent {
namespace {

int64_t At(absl::Duration d) { return absl::ToInt64Nanoseconds(d); }

TEST(ReconnectPacingTest, FailuresGrowTheStepUntilACollectorAnswers) {
  ReconnectPacing pacing;
  for (int i = 0; i < 5; ++i) EXPECT_EQ(pacing.Next(false, false, 0), i);
  // A stream that worked and then broke starts over.
  EXPECT_EQ(pacing.Next(true, false, 0), 0);
  EXPECT_EQ(pacing.Next(false, false, 0), 1);
}

// Every collector restarted: the agent failed for a while, then a
// collector that works hands it to its preferred one, a minute after an
// earlier hand-off or less. It moves at once, not after the failures'
// backoff (which grows to 30 s).
TEST(ReconnectPacingTest, AHandOffAfterFailuresMovesAtOnce) {
  ReconnectPacing pacing;
  EXPECT_EQ(pacing.Next(true, true, At(absl::Seconds(0))), 0);
  for (int i = 0; i < 8; ++i) pacing.Next(false, false, At(absl::Seconds(10)));
  EXPECT_EQ(pacing.Next(true, true, At(absl::Seconds(40))), 1)
      << "the second hand-off within a minute, not the ninth failure";
  // A failure at the collector it was handed to counts from the top.
  EXPECT_EQ(pacing.Next(false, false, At(absl::Seconds(41))), 0);
}

TEST(ReconnectPacingTest, HandOffsInARowWithinAMinuteGrowTheStep) {
  ReconnectPacing pacing;
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(pacing.Next(true, true, At(absl::Seconds(5 * i))), i);
  }
  // A minute after the last one: the shortest again.
  EXPECT_EQ(pacing.Next(true, true, At(absl::Seconds(25 + 60))), 0);
  // The step stops growing.
  for (int i = 1; i <= 100; ++i) {
    pacing.Next(true, true, At(absl::Seconds(85) + absl::Milliseconds(i)));
  }
  EXPECT_EQ(pacing.Next(true, true, At(absl::Seconds(86))),
            ReconnectPacing::kMaxStep);
}

}  // namespace
}  // namespace fabricdiag::agent
