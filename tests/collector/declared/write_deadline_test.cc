#include "collector/declared/write_deadline.h"

#include <chrono>

#include "gtest/gtest.h"

namespace fabricdiag::collector {
namespace {

const absl::Time kNow = absl::FromUnixSeconds(1'800'000'000);

TEST(WriteDeadlineTest, ARequestWithoutDeadlineHasNone) {
  EXPECT_EQ(FromChronoDeadline(std::chrono::system_clock::time_point::max()),
            absl::InfiniteFuture());
  EXPECT_EQ(AnswerBy(absl::InfiniteFuture(), kNow), absl::InfiniteFuture());
}

TEST(WriteDeadlineTest, AChronoDeadlineKeepsItsInstant) {
  const absl::Time t = kNow + absl::Milliseconds(1500);
  EXPECT_EQ(FromChronoDeadline(absl::ToChronoTime(t)), t);
}

TEST(WriteDeadlineTest, TheAnswerLeavesATenthOfTheTimeAtMost200Ms) {
  EXPECT_EQ(AnswerBy(kNow + absl::Seconds(1), kNow),
            kNow + absl::Milliseconds(900));
  EXPECT_EQ(AnswerBy(kNow + absl::Milliseconds(100), kNow),
            kNow + absl::Milliseconds(90));
  EXPECT_EQ(AnswerBy(kNow + absl::Seconds(10), kNow),
            kNow + absl::Milliseconds(9800));
  EXPECT_EQ(AnswerBy(kNow + absl::Seconds(60), kNow),
            kNow + absl::Milliseconds(59800));
}

TEST(WriteDeadlineTest, APassedDeadlineStaysPassed) {
  EXPECT_EQ(AnswerBy(kNow - absl::Seconds(1), kNow), kNow - absl::Seconds(1));
  EXPECT_EQ(AnswerBy(kNow, kNow), kNow);
}

TEST(WriteDeadlineTest, TheEarlierOfTheCallersAndTheStoresOwnWins) {
  const WriteDeadline callers =
      ChooseWriteDeadline(kNow, absl::Seconds(15), kNow + absl::Seconds(1));
  EXPECT_EQ(callers.at, kNow + absl::Seconds(1));
  EXPECT_TRUE(callers.caller);

  const WriteDeadline own =
      ChooseWriteDeadline(kNow, absl::Seconds(15), kNow + absl::Seconds(30));
  EXPECT_EQ(own.at, kNow + absl::Seconds(15));
  EXPECT_FALSE(own.caller);

  const WriteDeadline none =
      ChooseWriteDeadline(kNow, absl::Seconds(15), absl::InfiniteFuture());
  EXPECT_EQ(none.at, kNow + absl::Seconds(15));
  EXPECT_FALSE(none.caller);

  // A tie is the store's own: the caller still listens when it passes.
  const WriteDeadline tie =
      ChooseWriteDeadline(kNow, absl::Seconds(15), kNow + absl::Seconds(15));
  EXPECT_FALSE(tie.caller);

  const WriteDeadline passed =
      ChooseWriteDeadline(kNow, absl::Seconds(15), kNow - absl::Seconds(1));
  EXPECT_EQ(passed.at, kNow - absl::Seconds(1));
  EXPECT_TRUE(passed.caller);
}

}  // namespace
}  // namespace fabricdiag::collector
