#include "collector/series_ring.h"

#include <gtest/gtest.h>

#include <cmath>

namespace fabricdiag::collector {
namespace {

constexpr uint64_t kChunk = SeriesRing::kChunkSamples;

TEST(SeriesRingTest, ReturnsWhatWasAppended) {
  SeriesRing ring(2);
  for (uint64_t k = 0; k < 100; ++k) ring.Append(k, static_cast<float>(k));
  EXPECT_EQ(ring.end(), 100u);
  for (uint64_t k = 0; k < 100; ++k) EXPECT_EQ(ring.At(k), k) << k;
  EXPECT_TRUE(std::isnan(ring.At(100)));
}

TEST(SeriesRingTest, KeepsAtLeastTheWindowAndEvictsOlder) {
  SeriesRing ring(10);  // >= 640 samples
  const uint64_t total = 5000;
  for (uint64_t k = 0; k < total; ++k) ring.Append(k, static_cast<float>(k));
  for (uint64_t k = total - 10 * kChunk; k < total; ++k) {
    ASSERT_EQ(ring.At(k), k) << k;
  }
  EXPECT_GE(total - ring.begin(), 10 * kChunk);
  EXPECT_LE(total - ring.begin(), 11 * kChunk);
  EXPECT_TRUE(std::isnan(ring.At(ring.begin() - 1)));
  EXPECT_TRUE(std::isnan(ring.At(0)));
}

TEST(SeriesRingTest, SkippedSamplesAreNaN) {
  SeriesRing ring(4);
  ring.Append(3, 1);
  ring.Append(7, 2);
  ring.Append(kChunk * 3 + 1, 3);  // skips whole chunks
  EXPECT_TRUE(std::isnan(ring.At(0)));
  EXPECT_EQ(ring.At(3), 1);
  for (uint64_t k = 4; k < 7; ++k) EXPECT_TRUE(std::isnan(ring.At(k))) << k;
  EXPECT_EQ(ring.At(7), 2);
  for (uint64_t k = 8; k <= kChunk * 3; ++k) {
    ASSERT_TRUE(std::isnan(ring.At(k))) << k;
  }
  EXPECT_EQ(ring.At(kChunk * 3 + 1), 3);
}

TEST(SeriesRingTest, RefusesOlderSamples) {
  SeriesRing ring(2);
  EXPECT_TRUE(ring.Append(5, 1));
  EXPECT_FALSE(ring.Append(5, 9));
  EXPECT_FALSE(ring.Append(4, 9));
  EXPECT_EQ(ring.At(5), 1);
}

TEST(SeriesRingTest, HugeJumpDoesNotLoopOrKeepStaleData) {
  SeriesRing ring(3);
  for (uint64_t k = 0; k < 300; ++k) ring.Append(k, 1);
  ring.Append(uint64_t{1} << 40, 7);
  EXPECT_EQ(ring.At(uint64_t{1} << 40), 7);
  EXPECT_TRUE(std::isnan(ring.At(299)));
}

TEST(SeriesRingTest, ConstantChunksCostNoArray) {
  SeriesRing idle(10);
  SeriesRing busy(10);
  for (uint64_t k = 0; k < 2000; ++k) {
    idle.Append(k, 0);
    busy.Append(k, static_cast<float>(k % 7));
  }
  // 10 closed + 1 open chunk headers only.
  EXPECT_LT(idle.MemoryBytes(), 300u);
  // Each varying chunk holds 64 floats.
  EXPECT_GT(busy.MemoryBytes(), 11 * kChunk * sizeof(float));
  EXPECT_LT(busy.MemoryBytes(), 11 * (kChunk * sizeof(float) + 32) + 300);
}

TEST(SeriesRingTest, NaNAndZeroSignsAreKeptExactly) {
  SeriesRing ring(2);
  ring.Append(0, 0.0f);
  ring.Append(1, -0.0f);
  ring.Append(2, std::nanf(""));
  EXPECT_FALSE(std::signbit(ring.At(0)));
  EXPECT_TRUE(std::signbit(ring.At(1)));
  EXPECT_TRUE(std::isnan(ring.At(2)));
}

}  // namespace
}  // namespace fabricdiag::collector
