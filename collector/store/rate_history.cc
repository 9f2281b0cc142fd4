#include "collector/store/rate_history.h"

#include <algorithm>
#include <array>
#include <cmath>

namespace fabricdiag::collector {
namespace {

// Bits lo..hi (inclusive, 0 <= lo <= hi < 64).
uint64_t BitRange(uint64_t lo, uint64_t hi) {
  const uint64_t upto_hi =
      hi == 63 ? ~uint64_t{0} : (uint64_t{1} << (hi + 1)) - 1;
  return upto_hi & ~((uint64_t{1} << lo) - 1);
}

// The number of bits set, inline (without -mpopcnt the builtin is a
// library call).
int PopCount(uint64_t x) {
  x = x - ((x >> 1) & 0x5555555555555555ULL);
  x = (x & 0x3333333333333333ULL) + ((x >> 2) & 0x3333333333333333ULL);
  x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0fULL;
  return static_cast<int>((x * 0x0101010101010101ULL) >> 56);
}

float FromBits(uint32_t bits) {
  float v;
  std::memcpy(&v, &bits, sizeof(v));
  return v;
}

}  // namespace

RateHistory::RateHistory(size_t closed_frames)
    : frames_(std::max<size_t>(closed_frames, 1) + 1) {}

void RateHistory::Resize(size_t series) {
  if (series <= series_) return;
  series_ = series;
  next_.resize(series, 0);
  if (has_data_) {
    open_frame_->cell.resize(series, kNoRateBits);
    open_frame_->varying.resize((series + 63) / 64, 0);
  }
}

void RateHistory::Open(uint64_t index) {
  Frame& f = frames_[index % frames_.size()];
  f.index = index;
  f.begun = 0;
  f.cell.assign(series_, kNoRateBits);
  f.varying.assign((series_ + 63) / 64, 0);
  // The series that vary stay about the same from frame to frame: size the
  // pool for the last frame's blocks (plus a little), and give back what an
  // earlier burst left behind.
  const size_t blocks =
      last_blocks_ == 0 ? 0 : last_blocks_ + last_blocks_ / 64 + 1;
  const size_t want = blocks * kFrameSamples;
  if (f.pool.capacity() > 2 * want) {
    std::vector<float>().swap(f.pool);
  }
  f.pool.clear();
  f.pool.reserve(want);
  next_.assign(series_, 0);
  open_ = index;
  open_frame_ = &f;
}

bool RateHistory::Begin(uint64_t k) {
  if (has_data_ && k < end_) return false;
  const uint64_t index = k / kFrameSamples;
  if (!has_data_) {
    Open(index);
    has_data_ = true;
  } else if (index != open_) {
    Seal();
    Open(index);
  }
  pos_ = static_cast<uint8_t>(k % kFrameSamples);
  open_frame_->begun |= uint64_t{1} << pos_;
  end_ = k + 1;
  return true;
}

void RateHistory::Materialize(Frame* f, uint32_t slot, uint8_t written,
                              uint32_t bits) {
  const size_t block = f->pool.size() / kFrameSamples;
  f->pool.resize(f->pool.size() + kFrameSamples);
  float* values = &f->pool[block * kFrameSamples];
  const float constant = FromBits(f->cell[slot]);
  std::fill(values, values + written, constant);
  std::fill(values + written, values + kFrameSamples, kNoRate);
  std::memcpy(&values[pos_], &bits, sizeof(bits));
  f->cell[slot] = static_cast<uint32_t>(block);
  f->varying[slot / 64] |= uint64_t{1} << (slot % 64);
}

void RateHistory::Seal() {
  Frame& f = *open_frame_;
  // A slot the frame's later samples did not carry must read NaN there.
  // Positions that were never begun need nothing: readers skip them.
  const uint64_t last = 63 - static_cast<uint64_t>(__builtin_clzll(f.begun));
  for (uint32_t slot = 0; slot < series_; ++slot) {
    const uint8_t np = next_[slot];
    // A block already reads NaN wherever its slot was not Put.
    if (np > last || IsVarying(f, slot)) continue;
    if (f.cell[slot] != kNoRateBits && np > 0) {
      const uint8_t pos = pos_;
      pos_ = np;  // Materialize writes NaN at pos_ here
      Materialize(&f, slot, np, kNoRateBits);
      pos_ = pos;
    } else {
      f.cell[slot] = kNoRateBits;  // never Put in this frame, or NaN already
    }
  }
  last_blocks_ = f.pool.size() / kFrameSamples;
}

uint64_t RateHistory::begin() const {
  if (!has_data_) return 0;
  const uint64_t kept = frames_.size() - 1;
  return (open_ >= kept ? open_ - kept : 0) * kFrameSamples;
}

const RateHistory::Frame* RateHistory::FrameOf(uint64_t k) const {
  if (!has_data_ || k >= end_ || k < begin()) return nullptr;
  const uint64_t index = k / kFrameSamples;
  const Frame& f = frames_[index % frames_.size()];
  return f.index == index ? &f : nullptr;
}

uint64_t RateHistory::ReadableMask(const Frame& f, uint32_t slot) const {
  if (slot >= f.cell.size()) return 0;  // the slot came after this frame
  uint64_t mask = f.begun;
  if (f.index == open_) mask &= LowBits(next_[slot]);
  return mask;
}

float RateHistory::At(uint32_t slot, uint64_t k) const {
  const Frame* f = FrameOf(k);
  if (f == nullptr) return kNoRate;
  const uint64_t q = k % kFrameSamples;
  if (((ReadableMask(*f, slot) >> q) & 1) == 0) return kNoRate;
  if (IsVarying(*f, slot)) return f->pool[f->cell[slot] * kFrameSamples + q];
  return FromBits(f->cell[slot]);
}

void RateHistory::Accumulate(uint32_t slot, uint64_t from, uint64_t to,
                             double* sum, uint64_t* count) const {
  Accumulate(absl::MakeConstSpan(&slot, 1), absl::MakeConstSpan(&from, 1), to,
             sum, count);
}

void RateHistory::Accumulate(absl::Span<const uint32_t> slots,
                             absl::Span<const uint64_t> froms, uint64_t to,
                             double* sums, uint64_t* counts) const {
  // Up to kMaxRanges ranges are read together; more take further rounds.
  constexpr size_t kMaxRanges = 4;
  if (froms.size() > kMaxRanges) {
    for (size_t w = 0; w < froms.size(); w += kMaxRanges) {
      const size_t n = std::min(kMaxRanges, froms.size() - w);
      Accumulate(slots, froms.subspan(w, n), to, sums + w * slots.size(),
                 counts + w * slots.size());
    }
    return;
  }
  to = std::min(to, end_);
  if (!has_data_ || froms.empty()) return;
  uint64_t from = to;
  for (uint64_t f : froms) from = std::min(from, std::max(f, begin()));
  if (from >= to) return;
  const size_t ranges = froms.size();
  const uint64_t first = from / kFrameSamples;
  const uint64_t last = (to - 1) / kFrameSamples;
  for (uint64_t index = first; index <= last; ++index) {
    const Frame& f = frames_[index % frames_.size()];
    if (f.index != index) continue;
    // Per range, the positions of this frame it covers.
    std::array<uint64_t, kMaxRanges> range{};
    bool any = false;
    for (size_t w = 0; w < ranges; ++w) {
      const uint64_t lo = std::max(froms[w], from);
      if (lo >= to || lo / kFrameSamples > index) continue;
      range[w] = BitRange(lo / kFrameSamples == index ? lo % kFrameSamples : 0,
                          index == last ? (to - 1) % kFrameSamples : 63);
      any = true;
    }
    if (!any) continue;
    // A slot reported in every sample of the frame (nearly all of them)
    // can read all the frame's begun positions: their count in each range
    // is the same for all such slots, counted once here.
    const uint64_t all_readable =
        f.index == open_ ? f.begun & LowBits(uint64_t{pos_} + 1) : f.begun;
    std::array<uint64_t, kMaxRanges> all_counts{};
    for (size_t w = 0; w < ranges; ++w) {
      all_counts[w] = static_cast<uint64_t>(PopCount(all_readable & range[w]));
    }
    // A varying slot's values are a block of its own: a cache miss each.
    // Their addresses are known ahead, so the blocks a few slots on are
    // fetched while this one is summed.
    constexpr size_t kPrefetchAhead = 8;
    const uint64_t first_position = static_cast<uint64_t>(
        __builtin_ctzll(range[0] | range[1] | range[2] | range[3]));
    for (size_t i = 0; i < slots.size(); ++i) {
      if (i + kPrefetchAhead < slots.size()) {
        const uint32_t ahead = slots[i + kPrefetchAhead];
        if (ahead < f.cell.size() && IsVarying(f, ahead)) {
          __builtin_prefetch(
              &f.pool[f.cell[ahead] * kFrameSamples + first_position]);
        }
      }
      const uint32_t slot = slots[i];
      const uint64_t readable = ReadableMask(f, slot);
      if (readable == 0) continue;
      if (!IsVarying(f, slot)) {
        const float c = FromBits(f.cell[slot]);
        if (std::isnan(c)) continue;
        const bool all = readable == all_readable;
        for (size_t w = 0; w < ranges; ++w) {
          const uint64_t n =
              all ? all_counts[w]
                  : static_cast<uint64_t>(PopCount(readable & range[w]));
          sums[w * slots.size() + i] +=
              static_cast<double>(c) * static_cast<double>(n);
          counts[w * slots.size() + i] += n;
        }
        continue;
      }
      const float* values = &f.pool[f.cell[slot] * kFrameSamples];
      for (size_t w = 0; w < ranges; ++w) {
        uint64_t mask = readable & range[w];
        double sum = 0;
        uint64_t count = 0;
        while (mask != 0) {
          const float v = values[__builtin_ctzll(mask)];
          mask &= mask - 1;
          if (std::isnan(v)) continue;
          sum += v;
          ++count;
        }
        sums[w * slots.size() + i] += sum;
        counts[w * slots.size() + i] += count;
      }
    }
  }
}

size_t RateHistory::MemoryBytes() const {
  size_t bytes = sizeof(*this) + frames_.capacity() * sizeof(Frame) +
                 next_.capacity() * sizeof(uint8_t);
  for (const Frame& f : frames_) {
    bytes += f.cell.capacity() * sizeof(uint32_t) +
             f.varying.capacity() * sizeof(uint64_t) +
             f.pool.capacity() * sizeof(float);
  }
  return bytes;
}

}  // namespace fabricdiag::collector
