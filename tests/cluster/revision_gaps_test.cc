// Which revisions a bucket's watcher passed over (cluster/kv_watch.h): none
// while its replay brings each key's newest value up to the floor, every
// one after it.
#include <gtest/gtest.h>

#include <optional>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "cluster/kv_watch.h"

namespace fabricdiag::cluster {
namespace {

TEST(RevisionGapsTest, TheReplayUpToTheFloorPassesOverNothing) {
  RevisionGaps gaps(uint64_t{10});
  // Each key's newest value: older revisions are superseded by design.
  EXPECT_TRUE(gaps.Before(3).empty());
  EXPECT_TRUE(gaps.Before(7).empty());
  EXPECT_TRUE(gaps.Before(10).empty());
  gaps.Replayed();
  EXPECT_TRUE(gaps.Before(11).empty());
  EXPECT_TRUE(gaps.Before(12).empty());
}

TEST(RevisionGapsTest, RevisionsSkippedAfterTheFloorAreNamed) {
  RevisionGaps gaps(uint64_t{4});
  EXPECT_TRUE(gaps.Before(2).empty());
  // Written while the watcher was being created: after the floor, so the
  // revisions between are checked even before the replay's end.
  const RevisionGaps::Range first = gaps.Before(6);
  EXPECT_EQ(first.first, 5u);
  EXPECT_EQ(first.end, 6u);
  gaps.Replayed();
  EXPECT_TRUE(gaps.Before(7).empty());
  const RevisionGaps::Range second = gaps.Before(10);
  EXPECT_FALSE(second.empty());
  EXPECT_EQ(second.first, 8u);
  EXPECT_EQ(second.end, 10u);
  // Delivered again (a libnats consumer recreated under the watcher):
  // nothing new was passed over.
  EXPECT_TRUE(gaps.Before(9).empty());
  EXPECT_TRUE(gaps.Before(10).empty());
  EXPECT_TRUE(gaps.Before(11).empty());
}

TEST(RevisionGapsTest, AnUnknownFloorStartsTheChecksAtTheReplaysEnd) {
  RevisionGaps gaps(absl::UnavailableError("no server"));
  EXPECT_TRUE(gaps.Before(5).empty());
  EXPECT_TRUE(gaps.Before(9).empty());
  gaps.Replayed();
  EXPECT_TRUE(gaps.Before(10).empty());
  const RevisionGaps::Range passed = gaps.Before(13);
  EXPECT_EQ(passed.first, 11u);
  EXPECT_EQ(passed.end, 13u);
  // A second end of replay moves nothing.
  gaps.Replayed();
  EXPECT_EQ(gaps.Before(15).first, 14u);
}

TEST(RevisionGapsTest, AnEmptyBucketsFloorIsZero) {
  RevisionGaps gaps(uint64_t{0});
  gaps.Replayed();
  EXPECT_TRUE(gaps.Before(1).empty());
  const RevisionGaps::Range passed = gaps.Before(3);
  EXPECT_EQ(passed.first, 2u);
  EXPECT_EQ(passed.end, 3u);
}

TEST(ReadFirstHeldRevisionTest, ReadsJetStreamsAnswers) {
  const RevisionGaps::Range range{5, 9};
  const auto read = [&](absl::string_view answer) {
    return ReadFirstHeldRevision(answer, range);
  };
  absl::StatusOr<std::optional<uint64_t>> held =
      read(R"({"type":"io.nats.jetstream.api.v1.stream_msg_get_response",)"
           R"("message":{"subject":"$KV.b.k","seq":6,"data":"eA==",)"
           R"("time":"2026-12-02T08:00:00Z"}})");
  ASSERT_TRUE(held.ok()) << held.status();
  EXPECT_EQ(*held, std::optional<uint64_t>(6));
  // The next message after the range: nothing passed over is held.
  held = read(R"({"message":{"subject":"$KV.b.k","seq":9}})");
  ASSERT_TRUE(held.ok());
  EXPECT_FALSE(held->has_value());
  held = read(
      R"({"error":{"code":404,"err_code":10037,"description":"no message found"}})");
  ASSERT_TRUE(held.ok());
  EXPECT_FALSE(held->has_value());
  held = read(
      R"({"error":{"code":404,"err_code":10059,"description":"stream not found"}})");
  ASSERT_FALSE(held.ok());
  EXPECT_EQ(held.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(held.status().message(), "stream not found");
}

TEST(ReadFirstHeldRevisionTest, AnythingElseIsAnErrorNeverANo) {
  const RevisionGaps::Range range{5, 9};
  for (const absl::string_view hostile : {
           "", "not json", "[1,2,3]", "{}", R"({"message":null})",
           R"({"message":{"seq":"6"}})", R"({"message":{"seq":-6}})",
           R"({"message":{"seq":6.5}})",
           R"({"message":{"seq":4}})",  // before the range it asked from
           R"({"error":"no"})", R"({"error":{"err_code":"10037"}})",
           R"({"error":{"code":500}})",
           R"({"message":{"seq":6})",  // cut short
       }) {
    const absl::StatusOr<std::optional<uint64_t>> held =
        ReadFirstHeldRevision(hostile, range);
    EXPECT_FALSE(held.ok()) << hostile;
  }
}

}  // namespace
}  // namespace fabricdiag::cluster
