// The bounded rate history of one series, compressed by chunks.
//
// A node reports every series once per interval, so a series' history is a
// sequence of samples indexed by the node's sample number k (0, 1, 2, ...;
// the node keeps one shared timestamp per k, see NodeSeries). Samples are
// grouped into chunks of kChunkSamples consecutive k. Most NIC counters of a
// healthy node never move (error, discard and unused-priority counters: their
// rate is 0 for hours), so a chunk whose samples are all bit-identical is
// stored as one float; only a chunk that changes gets an array of
// kChunkSamples floats. A missing rate (first sample, reset, gauge, absent,
// dropped report) is stored as NaN: the wire never carries a NaN rate, so
// NaN is free to mean "no rate".
//
// Memory: a constant chunk costs its 16-byte header; a varying chunk
// 16 + 4 * kChunkSamples = 272 bytes. The ring keeps the open chunk plus
// `closed_chunks` closed ones, so at least closed_chunks * kChunkSamples past
// samples are always available.
//
//   SeriesRing ring(/*closed_chunks=*/10);
//   ring.Append(0, 12.5f);
//   ring.Append(1, 12.5f);
//   float latest = ring.At(1);  // 12.5
//
// Not thread-safe: the owning NodeSeries serialises access.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

namespace fabricdiag::collector {

class SeriesRing {
 public:
  static constexpr uint64_t kChunkSamples = 64;

  // Keeps `closed_chunks` (>= 1) closed chunks besides the open one.
  explicit SeriesRing(size_t closed_chunks);

  SeriesRing(SeriesRing&&) = default;
  SeriesRing& operator=(SeriesRing&&) = default;

  // Stores `value` (NaN = no rate) as sample `k`. Samples skipped since the
  // last Append become NaN. `k` must be greater than every k appended
  // before; an older k is ignored (returns false).
  bool Append(uint64_t k, float value) {
    // Fast path, taken by every report but the first of each chunk.
    if (has_data_ && k == next_k_ && k / kChunkSamples == open_chunk_) {
      const uint64_t slot = k % kChunkSamples;
      if (open_.values != nullptr) {
        open_.values[slot] = value;
      } else if (!SameBits(value, open_.constant)) {
        Put(slot, value);
      }
      open_count_ = slot + 1;
      next_k_ = k + 1;
      return true;
    }
    return AppendSlow(k, value);
  }

  // The value of sample `k`; NaN when it is not held (evicted, never
  // written, skipped) or had no rate.
  float At(uint64_t k) const;

  // One past the last k appended (0 = empty).
  uint64_t end() const { return next_k_; }
  // The oldest k still held.
  uint64_t begin() const;

  // Heap and inline bytes this ring uses, for memory accounting.
  size_t MemoryBytes() const;

 private:
  struct Chunk {
    // Every sample of the chunk, when `values` is null.
    float constant = 0;
    // kChunkSamples values, or null when the chunk is constant.
    std::unique_ptr<float[]> values;
  };

  static bool SameBits(float a, float b) {
    // Bit comparison: NaN equals NaN, and 0.0 differs from -0.0 (lossless).
    uint32_t x, y;
    std::memcpy(&x, &a, sizeof(x));
    std::memcpy(&y, &b, sizeof(y));
    return x == y;
  }
  bool AppendSlow(uint64_t k, float value);
  // Writes `value` at offset `slot` of the open chunk.
  void Put(uint64_t slot, float value);
  // Moves the open chunk into the closed ring, evicting the oldest.
  void Close();

  std::vector<Chunk> closed_;  // ring, oldest at closed_head_
  size_t closed_head_ = 0;
  size_t closed_count_ = 0;
  Chunk open_;
  bool has_data_ = false;
  uint64_t open_chunk_ = 0;  // k / kChunkSamples of the open chunk
  uint64_t open_count_ = 0;  // slots of the open chunk written
  uint64_t next_k_ = 0;
};

}  // namespace fabricdiag::collector
