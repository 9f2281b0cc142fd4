#include "collector/series_ring.h"

#include <algorithm>
#include <cstring>
#include <limits>

namespace fabricdiag::collector {
namespace {

constexpr float kNoRate = std::numeric_limits<float>::quiet_NaN();
// glibc malloc rounds a 256-byte request up to a 272-byte chunk.
constexpr size_t kMallocOverhead = 16;

}  // namespace

SeriesRing::SeriesRing(size_t closed_chunks)
    : closed_(std::max<size_t>(closed_chunks, 1)) {}

uint64_t SeriesRing::begin() const {
  if (!has_data_) return 0;
  return (open_chunk_ - closed_count_) * kChunkSamples;
}

void SeriesRing::Put(uint64_t slot, float value) {
  if (open_.values == nullptr) {
    if (slot == 0) {
      open_.constant = value;
      return;
    }
    if (SameBits(value, open_.constant)) return;
    open_.values.reset(new float[kChunkSamples]);
    std::fill(open_.values.get(), open_.values.get() + slot, open_.constant);
  }
  open_.values[slot] = value;
}

void SeriesRing::Close() {
  // Pad the rest of the chunk: those samples were never reported.
  for (uint64_t slot = open_count_; slot < kChunkSamples; ++slot) {
    Put(slot, kNoRate);
  }
  const size_t capacity = closed_.size();
  if (closed_count_ < capacity) {
    closed_[(closed_head_ + closed_count_) % capacity] = std::move(open_);
    ++closed_count_;
  } else {
    closed_[closed_head_] = std::move(open_);  // frees the evicted array
    closed_head_ = (closed_head_ + 1) % capacity;
  }
  open_ = Chunk{};
  open_count_ = 0;
}

bool SeriesRing::AppendSlow(uint64_t k, float value) {
  if (has_data_ && k < next_k_) return false;
  const uint64_t chunk = k / kChunkSamples;
  if (!has_data_) {
    open_chunk_ = chunk;
    has_data_ = true;
  } else if (chunk != open_chunk_) {
    Close();
    // Whole chunks without any sample (the node stopped reporting this
    // series, or the agent dropped reports): constant NaN, at most as many
    // as the ring holds.
    const uint64_t empty =
        std::min<uint64_t>(chunk - open_chunk_ - 1, closed_.size());
    for (uint64_t i = 0; i < empty; ++i) Close();
    open_chunk_ = chunk;
  }
  const uint64_t slot = k % kChunkSamples;
  while (open_count_ < slot) Put(open_count_++, kNoRate);
  Put(slot, value);
  open_count_ = slot + 1;
  next_k_ = k + 1;
  return true;
}

float SeriesRing::At(uint64_t k) const {
  if (!has_data_ || k >= next_k_ || k < begin()) return kNoRate;
  const uint64_t chunk = k / kChunkSamples;
  const uint64_t slot = k % kChunkSamples;
  const Chunk* c;
  if (chunk == open_chunk_) {
    c = &open_;
  } else {
    // Closed chunks are contiguous and end at open_chunk_ - 1.
    const uint64_t age = open_chunk_ - chunk;  // 1 = newest closed
    c = &closed_[(closed_head_ + closed_count_ - age) % closed_.size()];
  }
  return c->values != nullptr ? c->values[slot] : c->constant;
}

size_t SeriesRing::MemoryBytes() const {
  size_t bytes = sizeof(*this) + closed_.capacity() * sizeof(Chunk);
  const size_t array_bytes = kChunkSamples * sizeof(float) + kMallocOverhead;
  if (open_.values != nullptr) bytes += array_bytes;
  for (const Chunk& c : closed_) {
    if (c.values != nullptr) bytes += array_bytes;
  }
  return bytes;
}

}  // namespace fabricdiag::collector
