#include "agent/report_buffer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <thread>

namespace fabricdiag::agent {
namespace {

using ::testing::ElementsAre;

ReportBuffer::ReportPtr MakeReport(uint64_t seq, uint64_t schema_id = 1) {
  auto r = std::make_shared<v1::Report>();
  r->set_seq(seq);
  r->set_schema_id(schema_id);
  return r;
}

std::vector<uint64_t> Seqs(const std::vector<ReportBuffer::ReportPtr>& v) {
  std::vector<uint64_t> out;
  for (const auto& r : v) out.push_back(r->seq());
  return out;
}

TEST(ReportBufferTest, DefaultHoldsTenMinutesAtOneHertz) {
  ReportBuffer buffer;
  EXPECT_EQ(buffer.capacity(), 600u);
}

TEST(ReportBufferTest, AfterReturnsReportsInSeqOrder) {
  ReportBuffer buffer(10);
  for (uint64_t s = 1; s <= 5; ++s) ASSERT_TRUE(buffer.Push(MakeReport(s)));
  EXPECT_THAT(Seqs(buffer.After(0, 100)), ElementsAre(1, 2, 3, 4, 5));
  EXPECT_THAT(Seqs(buffer.After(2, 2)), ElementsAre(3, 4));
  EXPECT_TRUE(buffer.After(5, 100).empty());
  EXPECT_TRUE(buffer.HasAfter(4));
  EXPECT_FALSE(buffer.HasAfter(5));
}

TEST(ReportBufferTest, OverflowDropsOldestAndCounts) {
  ReportBuffer buffer(3);
  for (uint64_t s = 1; s <= 7; ++s) ASSERT_TRUE(buffer.Push(MakeReport(s)));
  EXPECT_EQ(buffer.size(), 3u);
  EXPECT_EQ(buffer.dropped(), 4u);
  EXPECT_THAT(Seqs(buffer.After(0, 100)), ElementsAre(5, 6, 7));
}

TEST(ReportBufferTest, AckRemovesEverythingUpToSeq) {
  ReportBuffer buffer(10);
  for (uint64_t s = 1; s <= 5; ++s) ASSERT_TRUE(buffer.Push(MakeReport(s)));
  EXPECT_EQ(buffer.Ack(3), 3u);
  EXPECT_THAT(Seqs(buffer.After(0, 100)), ElementsAre(4, 5));
  EXPECT_EQ(buffer.Ack(3), 0u);  // a repeated Ack is harmless
  EXPECT_EQ(buffer.Ack(0), 0u);
  EXPECT_EQ(buffer.dropped(), 0u);  // acked reports are not "dropped"
}

TEST(ReportBufferTest, AckBeyondLastSeqEmptiesTheBuffer) {
  ReportBuffer buffer(10);
  for (uint64_t s = 1; s <= 3; ++s) ASSERT_TRUE(buffer.Push(MakeReport(s)));
  EXPECT_EQ(buffer.Ack(UINT64_MAX), 3u);
  EXPECT_EQ(buffer.size(), 0u);
  // Numbering continues after the acked range.
  EXPECT_TRUE(buffer.Push(MakeReport(4)));
}

TEST(ReportBufferTest, RefusesNullAndNonIncreasingSeq) {
  ReportBuffer buffer(10);
  EXPECT_FALSE(buffer.Push(nullptr));
  EXPECT_TRUE(buffer.Push(MakeReport(5)));
  EXPECT_FALSE(buffer.Push(MakeReport(5)));
  EXPECT_FALSE(buffer.Push(MakeReport(2)));
  EXPECT_EQ(buffer.size(), 1u);
}

TEST(ReportBufferTest, ZeroCapacityStillKeepsTheNewestReport) {
  ReportBuffer buffer(0);
  ASSERT_TRUE(buffer.Push(MakeReport(1)));
  ASSERT_TRUE(buffer.Push(MakeReport(2)));
  EXPECT_THAT(Seqs(buffer.After(0, 10)), ElementsAre(2));
}

TEST(ReportBufferTest, SchemaIdsListsReferencedSchemasOnce) {
  ReportBuffer buffer(3);
  buffer.Push(MakeReport(1, 1));
  buffer.Push(MakeReport(2, 2));
  buffer.Push(MakeReport(3, 2));
  EXPECT_THAT(buffer.SchemaIds(), ElementsAre(1, 2));
  buffer.Push(MakeReport(4, 3));  // drops seq 1, the only user of schema 1
  EXPECT_THAT(buffer.SchemaIds(), ElementsAre(2, 3));
}

TEST(ReportBufferTest, ConcurrentPushAndAckKeepOrderAndBounds) {
  ReportBuffer buffer(50);
  constexpr uint64_t kReports = 20000;
  std::thread producer([&] {
    for (uint64_t s = 1; s <= kReports; ++s) buffer.Push(MakeReport(s));
  });
  uint64_t acked_up_to = 0;
  while (acked_up_to < kReports) {
    auto batch = buffer.After(acked_up_to, 16);
    for (size_t i = 1; i < batch.size(); ++i) {
      ASSERT_LT(batch[i - 1]->seq(), batch[i]->seq());
    }
    ASSERT_LE(buffer.size(), 50u);
    if (!batch.empty()) {
      acked_up_to = batch.back()->seq();
      buffer.Ack(acked_up_to);
    }
  }
  producer.join();
  EXPECT_EQ(buffer.size(), 0u);
}

}  // namespace
}  // namespace fabricdiag::agent
