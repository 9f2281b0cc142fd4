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

ReportBuffer::Limits Limits(size_t reports, size_t bytes) {
  ReportBuffer::Limits limits;
  limits.max_reports = reports;
  limits.max_bytes = bytes;
  return limits;
}

// Limits of `n` reports and no practical byte bound.
ReportBuffer::Limits Reports(size_t n) { return Limits(n, size_t{1} << 40); }

// A report of `series` values, the size of a real one of that many series.
ReportBuffer::ReportPtr MakeBigReport(uint64_t seq, int series) {
  auto r = std::make_shared<v1::Report>();
  r->set_seq(seq);
  r->set_schema_id(1);
  for (int i = 0; i < series; ++i) {
    r->add_raw(uint64_t{1} << 40);
    r->add_rate(1.5);
  }
  return r;
}

TEST(ReportBufferTest, DefaultHoldsTenMinutesAtOneHertzIn64MiB) {
  ReportBuffer buffer;
  EXPECT_EQ(buffer.limits().max_reports, 600u);
  EXPECT_EQ(buffer.limits().max_bytes, size_t{64} << 20);
}

// A node with 20,000 counters makes reports of hundreds of KB: the byte
// bound, not the count, keeps the buffer's memory bounded, dropping the
// oldest first and counting them.
TEST(ReportBufferTest, BytesBoundTheBufferWhateverTheReportSize) {
  const size_t one = MakeBigReport(1, 20000)->SpaceUsedLong();
  ASSERT_GT(one, 20000u * 16);
  ReportBuffer buffer(Limits(600, 10 * one + one / 2));
  for (uint64_t s = 1; s <= 100; ++s) {
    ASSERT_TRUE(buffer.Push(MakeBigReport(s, 20000)));
    ASSERT_LE(buffer.bytes(), buffer.limits().max_bytes);
  }
  EXPECT_EQ(buffer.size(), 10u);
  EXPECT_EQ(buffer.bytes(), 10 * one);
  EXPECT_EQ(buffer.dropped(), 90u);
  EXPECT_EQ(buffer.After(0, 1).front()->seq(), 91u);
  // Acknowledged reports give their bytes back.
  buffer.Ack(95);
  EXPECT_EQ(buffer.bytes(), 5 * one);
  EXPECT_EQ(buffer.dropped(), 90u);
}

// The newest report is kept even when it alone is over the bound: dropping
// it would lose the present for nothing.
TEST(ReportBufferTest, ANewestReportLargerThanTheBoundIsKeptAlone) {
  ReportBuffer buffer(Limits(600, 1000));
  ASSERT_TRUE(buffer.Push(MakeReport(1)));
  ASSERT_TRUE(buffer.Push(MakeBigReport(2, 5000)));
  EXPECT_EQ(buffer.size(), 1u);
  EXPECT_EQ(buffer.dropped(), 1u);
  EXPECT_EQ(buffer.After(0, 9).front()->seq(), 2u);
  ASSERT_TRUE(buffer.Push(MakeReport(3)));
  EXPECT_EQ(buffer.size(), 1u);
  EXPECT_EQ(buffer.After(0, 9).front()->seq(), 3u);
}

TEST(ReportBufferTest, AfterReturnsReportsInSeqOrder) {
  ReportBuffer buffer(Reports(10));
  for (uint64_t s = 1; s <= 5; ++s) ASSERT_TRUE(buffer.Push(MakeReport(s)));
  EXPECT_THAT(Seqs(buffer.After(0, 100)), ElementsAre(1, 2, 3, 4, 5));
  EXPECT_THAT(Seqs(buffer.After(2, 2)), ElementsAre(3, 4));
  EXPECT_TRUE(buffer.After(5, 100).empty());
  EXPECT_TRUE(buffer.HasAfter(4));
  EXPECT_FALSE(buffer.HasAfter(5));
}

TEST(ReportBufferTest, OverflowDropsOldestAndCounts) {
  ReportBuffer buffer(Reports(3));
  for (uint64_t s = 1; s <= 7; ++s) ASSERT_TRUE(buffer.Push(MakeReport(s)));
  EXPECT_EQ(buffer.size(), 3u);
  EXPECT_EQ(buffer.dropped(), 4u);
  EXPECT_THAT(Seqs(buffer.After(0, 100)), ElementsAre(5, 6, 7));
}

TEST(ReportBufferTest, AckRemovesEverythingUpToSeq) {
  ReportBuffer buffer(Reports(10));
  for (uint64_t s = 1; s <= 5; ++s) ASSERT_TRUE(buffer.Push(MakeReport(s)));
  EXPECT_EQ(buffer.Ack(3), 3u);
  EXPECT_THAT(Seqs(buffer.After(0, 100)), ElementsAre(4, 5));
  EXPECT_EQ(buffer.Ack(3), 0u);  // a repeated Ack is harmless
  EXPECT_EQ(buffer.Ack(0), 0u);
  EXPECT_EQ(buffer.dropped(), 0u);  // acked reports are not "dropped"
}

TEST(ReportBufferTest, AckBeyondLastSeqEmptiesTheBuffer) {
  ReportBuffer buffer(Reports(10));
  for (uint64_t s = 1; s <= 3; ++s) ASSERT_TRUE(buffer.Push(MakeReport(s)));
  EXPECT_EQ(buffer.Ack(UINT64_MAX), 3u);
  EXPECT_EQ(buffer.size(), 0u);
  // Numbering continues after the acked range.
  EXPECT_TRUE(buffer.Push(MakeReport(4)));
}

TEST(ReportBufferTest, RefusesNullAndNonIncreasingSeq) {
  ReportBuffer buffer(Reports(10));
  EXPECT_FALSE(buffer.Push(nullptr));
  EXPECT_TRUE(buffer.Push(MakeReport(5)));
  EXPECT_FALSE(buffer.Push(MakeReport(5)));
  EXPECT_FALSE(buffer.Push(MakeReport(2)));
  EXPECT_EQ(buffer.size(), 1u);
}

TEST(ReportBufferTest, ZeroCapacityStillKeepsTheNewestReport) {
  ReportBuffer buffer(Reports(0));
  ASSERT_TRUE(buffer.Push(MakeReport(1)));
  ASSERT_TRUE(buffer.Push(MakeReport(2)));
  EXPECT_THAT(Seqs(buffer.After(0, 10)), ElementsAre(2));
}

TEST(ReportBufferTest, SchemaIdsListsReferencedSchemasOnce) {
  ReportBuffer buffer(Reports(3));
  buffer.Push(MakeReport(1, 1));
  buffer.Push(MakeReport(2, 2));
  buffer.Push(MakeReport(3, 2));
  EXPECT_THAT(buffer.SchemaIds(), ElementsAre(1, 2));
  buffer.Push(MakeReport(4, 3));  // drops seq 1, the only user of schema 1
  EXPECT_THAT(buffer.SchemaIds(), ElementsAre(2, 3));
}

TEST(ReportBufferTest, ConcurrentPushAndAckKeepOrderAndBounds) {
  ReportBuffer buffer(Reports(50));
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
