// The bounded rate history of every series of one node.
//
// A node reports all its series at once, once per interval, so its history
// is indexed by the node's sample number k (0, 1, 2, ...; NodeSeries keeps
// one timestamp per k) and stored in frames of kFrameSamples consecutive
// samples, column by column. In a frame, each series slot holds either one
// constant (it did not change during the frame: error, discard and idle
// priority counters sit at 0 for hours) or a block of kFrameSamples floats
// in the frame's pool. Reports write their values in slot order, so ingest
// walks the frame's arrays front to back; an evicted frame is reused with
// its capacity, so a node in steady state allocates nothing.
//
// A missing rate (first sample, reset, gauge, absent, a series the report
// did not carry, a dropped report) reads as NaN: the wire never carries a
// NaN rate, so NaN is free to mean "no rate".
//
// Memory per series: 4 bytes and 1 bit per frame, plus 4 * kFrameSamples
// bytes for each frame in which it varied. `closed_frames` closed frames
// are kept besides the open one, so at least closed_frames * kFrameSamples
// past samples are always held.
//
//   RateHistory h(/*closed_frames=*/10);
//   h.Resize(2);  // series slots 0 and 1
//   h.Begin(0);
//   h.Put(0, 12.5f);
//   h.Put(1, 0.f);
//   h.Begin(1);
//   h.Put(0, 13.f);  // slot 1 not reported: NaN at k = 1
//   float v = h.At(0, 1);  // 13
//
// Not thread-safe: the owning NodeSeries serialises access.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "absl/base/attributes.h"
#include "absl/types/span.h"

namespace fabricdiag::collector {

class RateHistory {
  struct Frame;

 public:
  static constexpr uint64_t kFrameSamples = 64;

  // Keeps `closed_frames` (>= 1) closed frames besides the open one.
  explicit RateHistory(size_t closed_frames);

  RateHistory(RateHistory&&) = default;
  RateHistory& operator=(RateHistory&&) = default;

  // Grows the number of series slots to `series` (never shrinks). A new
  // slot reads NaN until its first Put().
  void Resize(size_t series);
  size_t series() const { return series_; }

  // Starts sample `k`, which must not be older than end(); returns false
  // (and changes nothing) otherwise. Samples skipped since the previous
  // Begin() are holes: every series reads NaN there.
  bool Begin(uint64_t k);

  // Puts of the sample begun last, from a caller's loop over a report's
  // values: the open frame's arrays are held here rather than read from
  // the history again after each store (Put() in a loop must: its one-byte
  // store may alias anything). Valid until the next Begin() or Resize().
  class SampleWriter {
   public:
    explicit SampleWriter(RateHistory* history)
        : history_(history),
          frame_(history->open_frame_),
          next_(history->next_.data()),
          cell_(frame_->cell.data()),
          varying_(frame_->varying.data()),
          pool_(frame_->pool.data()),
          // Samples of this frame begun before this one.
          begun_before_(frame_->begun & LowBits(history->pos_)),
          pos_(history->pos_) {}

    // Put(), below.
    ABSL_ATTRIBUTE_ALWAYS_INLINE void Put(uint32_t slot, float value) {
      const uint8_t np = next_[slot];
      if (np > pos_) return;
      uint32_t bits;
      std::memcpy(&bits, &value, sizeof(bits));
      if (bits != kNoRateBits && value != value) bits = kNoRateBits;  // NaN
      // Samples of this frame that were begun but did not carry this slot
      // must read NaN; samples never begun (before the node's first
      // report, dropped reports) are skipped by every reader and need
      // nothing.
      const bool gap = np < pos_ && (begun_before_ & ~LowBits(np)) != 0;
      if ((varying_[slot / 64] >> (slot % 64)) & 1) {
        // A block reads NaN wherever it was not Put (see Materialize).
        std::memcpy(&pool_[cell_[slot] * kFrameSamples + pos_], &bits,
                    sizeof(bits));
      } else if (np == 0 && !gap) {
        cell_[slot] = bits;  // the frame's first value sets the constant
      } else if (gap ? (bits != kNoRateBits || cell_[slot] != kNoRateBits)
                     : bits != cell_[slot]) {
        history_->Materialize(frame_, slot, np, bits);
        pool_ = frame_->pool.data();  // the pool grew
      }
      next_[slot] = static_cast<uint8_t>(pos_ + 1);
    }

   private:
    RateHistory* const history_;
    Frame* const frame_;
    uint8_t* const next_;
    uint32_t* const cell_;
    const uint64_t* const varying_;
    float* pool_;
    const uint64_t begun_before_;
    const uint8_t pos_;
  };
  // Begin() must have succeeded once.
  SampleWriter Writer() { return SampleWriter(this); }

  // Stores `value` (NaN = no rate) of `slot` (< series()) for the sample
  // begun last. A slot not Put reads NaN for that sample; a second Put of a
  // slot in one sample is ignored.
  void Put(uint32_t slot, float value) { SampleWriter(this).Put(slot, value); }

  // The value of `slot` at sample `k`; NaN when it is not held (evicted,
  // a hole, never written) or had no rate.
  float At(uint32_t slot, uint64_t k) const;

  // Adds the values (NaN ones skipped) of `slot` over samples [from, to) to
  // *sum and their number to *count.
  void Accumulate(uint32_t slot, uint64_t from, uint64_t to, double* sum,
                  uint64_t* count) const;
  // The same for many slots and several ranges [froms[w], to) at once:
  // sums[w * slots.size() + i] and counts[...] for slots[i] over range w
  // (both hold froms.size() * slots.size() entries). Each frame is looked
  // up once, and each slot's values read once for all the ranges.
  void Accumulate(absl::Span<const uint32_t> slots,
                  absl::Span<const uint64_t> froms, uint64_t to, double* sums,
                  uint64_t* counts) const;

  // The oldest sample that may be held, and one past the newest begun
  // (0 = empty).
  uint64_t begin() const;
  uint64_t end() const { return end_; }

  // Heap and inline bytes in use, for memory accounting.
  size_t MemoryBytes() const;

 private:
  static constexpr float kNoRate = std::numeric_limits<float>::quiet_NaN();
  static constexpr uint32_t kNoRateBits = 0x7fc00000u;  // bits of kNoRate

  struct Frame {
    uint64_t index = 0;  // k / kFrameSamples of its samples
    uint64_t begun = 0;  // bit q: sample index * kFrameSamples + q was begun
    // Per slot: the constant's bits, or the block number in `pool`.
    std::vector<uint32_t> cell;
    std::vector<uint64_t> varying;  // bit per slot: `cell` is a block
    std::vector<float> pool;        // blocks of kFrameSamples floats
  };

  // Bits 0..n-1 (0 <= n <= 64).
  static uint64_t LowBits(uint64_t n) {
    return n >= 64 ? ~uint64_t{0} : (uint64_t{1} << n) - 1;
  }
  static bool IsVarying(const Frame& f, uint32_t slot) {
    return (f.varying[slot / 64] >> (slot % 64)) & 1;
  }
  // Gives `slot` a block: its constant for the positions [0, written), NaN
  // after, `bits` at the current position. Later Puts write only their own
  // position, so a block reads NaN wherever its slot was not Put.
  void Materialize(Frame* f, uint32_t slot, uint8_t written, uint32_t bits);
  // Pads the slots the open frame's last samples did not carry with NaN.
  void Seal();
  void Open(uint64_t index);
  const Frame* FrameOf(uint64_t k) const;
  // Positions of frame `f` the readers may use for `slot`.
  uint64_t ReadableMask(const Frame& f, uint32_t slot) const;

  std::vector<Frame> frames_;  // frame i lives at frames_[i % size]
  std::vector<uint8_t> next_;  // open frame: first position not yet Put
  size_t series_ = 0;
  bool has_data_ = false;
  uint64_t open_ = 0;            // index of the open frame
  Frame* open_frame_ = nullptr;  // frames_[open_ % size] once has_data_
  uint8_t pos_ = 0;              // position of the sample begun last
  uint64_t end_ = 0;
  size_t last_blocks_ = 0;  // blocks the last sealed frame used
};

}  // namespace fabricdiag::collector
