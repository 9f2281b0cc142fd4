// Width-aware counter deltas and rates.
//
// A kernel counter that goes down has either wrapped (it kept counting past
// 2^width - 1) or been reset (driver reload, `rdma statistic` reset, NIC
// replaced). RateCalculator tells them apart by the counter's width: a wrap
// is only plausible when the previous value was in the top half of the range
// and the implied delta is less than half the range; anything else is a
// reset, which is reported and yields no rate for that interval (never a
// huge one). A saturated PMA counter yields no rate either.
//
//   RateCalculator rates;
//   std::vector<SampleRate> r = rates.Update(snapshot);
//   // r[i] belongs to snapshot.samples[i].
//
// Not thread-safe: one calculator per sampling loop.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <tuple>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "agent/sample.h"

namespace fabricdiag::agent {

struct SampleRate {
  // Base units per second over the last interval; absent for the first
  // sample of a series, after a reset, while saturated, and for gauges.
  std::optional<double> per_second;
  // Raw increase over the interval (already wrap-corrected).
  std::optional<uint64_t> delta;
  bool reset = false;    // the counter went backwards and did not wrap
  bool wrapped = false;  // the counter wrapped at 2^width_bits
};

// The raw increase from `previous` to `current` of a counter that keeps
// `width_bits` bits, or nullopt when the decrease is a reset.
std::optional<uint64_t> CounterDelta(uint64_t previous, uint64_t current,
                                     uint32_t width_bits, bool* wrapped);

class RateCalculator {
 public:
  // Computes one SampleRate per sample of `snapshot`, in the same order, and
  // remembers the snapshot's values for the next call. Series missing from
  // `snapshot` are forgotten (a NIC that vanished starts afresh).
  std::vector<SampleRate> Update(const Snapshot& snapshot);

  // Resets seen over the calculator's lifetime.
  uint64_t resets() const { return resets_; }
  uint64_t wraps() const { return wraps_; }

 private:
  // The previous snapshot's counters, in its order. Sources emit series in
  // a stable order, and keep their descriptions between scans, so sample i
  // almost always points at previous_[i].desc and no lookup is needed; a
  // keyed index is built only when the order changed.
  struct Previous {
    const SeriesDesc* desc;  // kept alive by previous_owners_
    uint64_t raw;
    bool saturated;
  };
  using KeyView =
      std::tuple<Subsystem, absl::string_view, uint32_t, absl::string_view>;
  const Previous* FindPrevious(size_t position, const Sample& s);

  std::vector<Previous> previous_;
  int64_t previous_monotonic_nanos_ = 0;
  std::vector<std::shared_ptr<const void>> previous_owners_;
  std::vector<Previous> next_;                  // scratch, reused
  absl::flat_hash_map<KeyView, size_t> index_;  // views into previous_ descs
  bool index_built_ = false;
  uint64_t resets_ = 0;
  uint64_t wraps_ = 0;
};

}  // namespace fabricdiag::agent
