#include "collector/store/rate_history.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <utility>
#include <vector>

namespace fabricdiag::collector {
namespace {

constexpr uint64_t kFrame = RateHistory::kFrameSamples;

// Appends one value for each slot at sample k.
void Sample(RateHistory& h, uint64_t k, const std::vector<float>& values) {
  ASSERT_TRUE(h.Begin(k));
  for (size_t s = 0; s < values.size(); ++s) {
    h.Put(static_cast<uint32_t>(s), values[s]);
  }
}

TEST(RateHistoryTest, ReturnsWhatWasPut) {
  RateHistory h(2);
  h.Resize(3);
  for (uint64_t k = 0; k < 100; ++k) {
    Sample(h, k, {static_cast<float>(k), 7.f, k % 2 == 0 ? 1.f : 2.f});
  }
  EXPECT_EQ(h.end(), 100u);
  for (uint64_t k = 0; k < 100; ++k) {
    EXPECT_EQ(h.At(0, k), k) << k;
    EXPECT_EQ(h.At(1, k), 7.f) << k;
    EXPECT_EQ(h.At(2, k), k % 2 == 0 ? 1.f : 2.f) << k;
  }
  EXPECT_TRUE(std::isnan(h.At(0, 100)));
  EXPECT_TRUE(std::isnan(h.At(3, 5)));  // no such slot
}

TEST(RateHistoryTest, KeepsAtLeastTheWindowAndEvictsOlder) {
  RateHistory h(10);  // >= 640 samples
  h.Resize(1);
  const uint64_t total = 5000;
  for (uint64_t k = 0; k < total; ++k) Sample(h, k, {static_cast<float>(k)});
  for (uint64_t k = total - 10 * kFrame; k < total; ++k) {
    ASSERT_EQ(h.At(0, k), k) << k;
  }
  EXPECT_GE(total - h.begin(), 10 * kFrame);
  EXPECT_LE(total - h.begin(), 11 * kFrame);
  EXPECT_TRUE(std::isnan(h.At(0, h.begin() - 1)));
  EXPECT_TRUE(std::isnan(h.At(0, 0)));
}

TEST(RateHistoryTest, SkippedSamplesAndUnreportedSlotsAreNaN) {
  RateHistory h(4);
  h.Resize(2);
  Sample(h, 3, {1, 5});
  Sample(h, 7, {2, 5});
  ASSERT_TRUE(h.Begin(8));
  h.Put(0, 2);                        // slot 1 not in this report
  Sample(h, kFrame * 3 + 1, {3, 5});  // skips whole frames
  EXPECT_TRUE(std::isnan(h.At(0, 0)));
  EXPECT_EQ(h.At(0, 3), 1);
  for (uint64_t k = 4; k < 7; ++k) EXPECT_TRUE(std::isnan(h.At(0, k))) << k;
  EXPECT_EQ(h.At(0, 7), 2);
  EXPECT_EQ(h.At(1, 7), 5);
  EXPECT_EQ(h.At(0, 8), 2);
  EXPECT_TRUE(std::isnan(h.At(1, 8)));
  for (uint64_t k = 9; k <= kFrame * 3; ++k) {
    ASSERT_TRUE(std::isnan(h.At(0, k))) << k;
  }
  EXPECT_EQ(h.At(0, kFrame * 3 + 1), 3);
  EXPECT_EQ(h.At(1, kFrame * 3 + 1), 5);
}

TEST(RateHistoryTest, RefusesOlderSamplesAndSecondPuts) {
  RateHistory h(2);
  h.Resize(1);
  EXPECT_TRUE(h.Begin(5));
  h.Put(0, 1);
  h.Put(0, 9);  // a second value for the same sample is ignored
  EXPECT_FALSE(h.Begin(5));
  EXPECT_FALSE(h.Begin(4));
  EXPECT_EQ(h.At(0, 5), 1);
}

TEST(RateHistoryTest, HugeJumpDoesNotLoopOrKeepStaleData) {
  RateHistory h(3);
  h.Resize(1);
  for (uint64_t k = 0; k < 300; ++k) Sample(h, k, {1});
  Sample(h, uint64_t{1} << 40, {7});
  EXPECT_EQ(h.At(0, uint64_t{1} << 40), 7);
  EXPECT_TRUE(std::isnan(h.At(0, 299)));
  // A frame slot last used for old data is not read for a new index.
  EXPECT_TRUE(std::isnan(h.At(0, (uint64_t{1} << 40) - kFrame)));
}

TEST(RateHistoryTest, SlotsAddedLaterReadNaNBefore) {
  RateHistory h(2);
  h.Resize(1);
  for (uint64_t k = 0; k < 70; ++k) Sample(h, k, {1});
  h.Resize(2);  // a NIC appeared mid-frame
  for (uint64_t k = 70; k < 80; ++k) Sample(h, k, {1, 4});
  EXPECT_TRUE(std::isnan(h.At(1, 10)));  // an older frame
  EXPECT_TRUE(std::isnan(h.At(1, 69)));  // earlier in this frame
  EXPECT_EQ(h.At(1, 70), 4);
  EXPECT_EQ(h.At(1, 79), 4);
}

TEST(RateHistoryTest, ConstantFramesCostNoBlock) {
  RateHistory idle(10);
  RateHistory busy(10);
  idle.Resize(100);
  busy.Resize(100);
  std::vector<float> zeros(100, 0.f);
  std::vector<float> moving(100);
  for (uint64_t k = 0; k < 2000; ++k) {
    for (size_t s = 0; s < 100; ++s) moving[s] = static_cast<float>(k % 7 + s);
    Sample(idle, k, zeros);
    Sample(busy, k, moving);
  }
  // 11 frames x (4-byte cell + 1 bit) per series, and the fixed parts.
  EXPECT_LT(idle.MemoryBytes(), 100 * 11 * 5 + 2000);
  // Each varying frame holds kFrame floats per series (+ a little slack).
  EXPECT_GT(busy.MemoryBytes(), 100 * 11 * kFrame * sizeof(float));
  EXPECT_LT(busy.MemoryBytes(),
            100 * 11 * (kFrame * sizeof(float) + 16) + 4000);
}

// A node's first report may fall anywhere in a frame, and dropped reports
// leave holes: samples never begun are skipped by the readers, so they do
// not turn a constant series into a block.
TEST(RateHistoryTest, UnbegunSamplesDoNotCostABlock) {
  RateHistory h(10);
  h.Resize(100);
  std::vector<float> zeros(100, 0.f);
  for (uint64_t k = 37; k < 2000; k += (k % 5 == 0 ? 3 : 1)) {
    Sample(h, k, zeros);
  }
  EXPECT_LT(h.MemoryBytes(), 100 * 11 * 5 + 2000);
  EXPECT_EQ(h.At(0, 1999), 0.f);
  EXPECT_TRUE(std::isnan(h.At(0, 1996)));  // a hole
}

TEST(RateHistoryTest, NaNAndZeroSignsAreKeptExactly) {
  RateHistory h(2);
  h.Resize(1);
  Sample(h, 0, {0.0f});
  Sample(h, 1, {-0.0f});
  Sample(h, 2, {std::nanf("")});
  Sample(h, 3, {-std::nanf("")});
  EXPECT_FALSE(std::signbit(h.At(0, 0)));
  EXPECT_TRUE(std::signbit(h.At(0, 1)));
  EXPECT_TRUE(std::isnan(h.At(0, 2)));
  EXPECT_TRUE(std::isnan(h.At(0, 3)));
}

TEST(RateHistoryTest, AccumulateSkipsNaNHolesAndEvictedSamples) {
  RateHistory h(2);
  h.Resize(2);
  for (uint64_t k = 0; k < 10; ++k) {
    if (k == 4) continue;  // a hole
    Sample(h, k, {static_cast<float>(k), k == 6 ? std::nanf("") : 3.f});
  }
  double sum = 0;
  uint64_t n = 0;
  h.Accumulate(0, 0, 10, &sum, &n);
  EXPECT_EQ(n, 9u);
  EXPECT_EQ(sum, 45 - 4);
  sum = 0;
  n = 0;
  h.Accumulate(1, 2, 8, &sum, &n);  // k 2,3,5,7 (4 is a hole, 6 NaN)
  EXPECT_EQ(n, 4u);
  EXPECT_EQ(sum, 12);
  sum = 0;
  n = 0;
  h.Accumulate(1, 20, 30, &sum, &n);  // beyond the end
  h.Accumulate(5, 0, 10, &sum, &n);   // no such slot
  EXPECT_EQ(n, 0u);
}

// Random reports (gaps, slots missing from a report, constants, NaN, slots
// added later) against a plain map: every held sample must read back, and
// Accumulate must match a sum over the map.
TEST(RateHistoryTest, MatchesAReferenceModelOnRandomReports) {
  std::mt19937_64 rng(42);
  for (int trial = 0; trial < 20; ++trial) {
    RateHistory h(3);
    std::map<std::pair<uint32_t, uint64_t>, float> model;
    size_t series = 4;
    h.Resize(series);
    uint64_t k = 0;
    for (int step = 0; step < 600; ++step) {
      k += (rng() % 10 == 0) ? 1 + rng() % 80 : 1;  // sometimes a gap
      if (rng() % 50 == 0) {
        series += 1 + rng() % 3;
        h.Resize(series);
      }
      ASSERT_TRUE(h.Begin(k));
      for (uint32_t s = 0; s < series; ++s) {
        if (rng() % 8 == 0) continue;  // not in this report
        float v;
        switch (rng() % 4) {
          case 0:
            v = 0.f;
            break;
          case 1:
            v = static_cast<float>(s);
            break;
          case 2:
            v = std::nanf("");
            break;
          default:
            v = static_cast<float>(rng() % 1000);
        }
        h.Put(s, v);
        if (!std::isnan(v)) model[{s, k}] = v;
      }
      if (step % 37 != 0) continue;
      for (uint32_t s = 0; s < series; ++s) {
        for (uint64_t q = h.begin(); q < h.end(); ++q) {
          auto it = model.find({s, q});
          const float got = h.At(s, q);
          if (it == model.end()) {
            ASSERT_TRUE(std::isnan(got)) << "slot " << s << " k " << q;
          } else {
            ASSERT_EQ(got, it->second) << "slot " << s << " k " << q;
          }
        }
        const uint64_t from = h.begin() + rng() % (h.end() - h.begin());
        const uint64_t to = from + rng() % 200;
        double sum = 0, want_sum = 0;
        uint64_t n = 0, want_n = 0;
        h.Accumulate(s, from, to, &sum, &n);
        for (uint64_t q = from; q < std::min(to, h.end()); ++q) {
          auto it = model.find({s, q});
          if (it == model.end()) continue;
          want_sum += it->second;
          ++want_n;
        }
        ASSERT_EQ(n, want_n) << "slot " << s;
        ASSERT_DOUBLE_EQ(sum, want_sum) << "slot " << s;
      }
    }
  }
}

// Many slots over several ranges at once (what a pass's views read) sum
// what was Put (slot by slot, or by one SampleWriter): ranges that start before
// the history, in another frame than their end, or end past the newest sample,
// slots added after a frame, unknown slots, and more ranges than are read
// together.
TEST(RateHistoryTest, ManySlotsAndRangesMatchAReferenceModel) {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 20; ++trial) {
    RateHistory h(2);
    std::map<std::pair<uint32_t, uint64_t>, float> model;
    size_t series = 6;
    h.Resize(series);
    uint64_t k = 0;
    for (int step = 0; step < 400; ++step) {
      k += (rng() % 12 == 0) ? 1 + rng() % 70 : 1;
      if (rng() % 60 == 0) h.Resize(series += 1 + rng() % 3);
      ASSERT_TRUE(h.Begin(k));
      // Odd trials write each sample as ingest does: one writer for all
      // its values (blocks made as it goes).
      RateHistory::SampleWriter writer = h.Writer();
      for (uint32_t s = 0; s < series; ++s) {
        if (rng() % 6 == 0) continue;
        const uint64_t r = rng() % 5;
        const float v = r == 0   ? std::nanf("")
                        : r == 1 ? static_cast<float>(s)
                                 : static_cast<float>(rng() % 1000);
        if (trial % 2 == 1) {
          writer.Put(s, v);
        } else {
          h.Put(s, v);
        }
        if (!std::isnan(v)) model[{s, k}] = v;
      }
      if (step % 23 != 0) continue;
      std::vector<uint32_t> slots;
      for (uint32_t s = 0; s < series + 2; ++s) {  // two unknown slots
        if (rng() % 3 != 0) slots.push_back(s);
      }
      const uint64_t to = h.end() + (rng() % 3 == 0 ? rng() % 5 : 0);
      std::vector<uint64_t> froms(1 + rng() % 6);
      for (uint64_t& from : froms) {
        const uint64_t back = rng() % 140;
        from = to > back ? to - back : 0;
      }
      std::vector<double> sums(froms.size() * slots.size(), 0);
      std::vector<uint64_t> counts(sums.size(), 0);
      h.Accumulate(slots, froms, to, sums.data(), counts.data());
      for (size_t w = 0; w < froms.size(); ++w) {
        for (size_t i = 0; i < slots.size(); ++i) {
          double want_sum = 0;
          uint64_t want_n = 0;
          for (uint64_t q = std::max(froms[w], h.begin());
               q < std::min(to, h.end()); ++q) {
            auto it = model.find({slots[i], q});
            if (it == model.end()) continue;
            want_sum += it->second;
            ++want_n;
          }
          ASSERT_EQ(counts[w * slots.size() + i], want_n)
              << "slot " << slots[i] << " from " << froms[w] << " to " << to;
          ASSERT_DOUBLE_EQ(sums[w * slots.size() + i], want_sum)
              << "slot " << slots[i] << " from " << froms[w];
        }
      }
    }
  }
}

}  // namespace
}  // namespace fabricdiag::collector
