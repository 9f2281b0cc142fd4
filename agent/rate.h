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
// A byte rate above what its port can carry (the fastest speed the
// snapshots ever gave for it: a netdev's `speed`, an RDMA port's `rate`,
// with kLineRateSlack) is never true either: it yields no rate for that
// interval and is counted (above_line_rate()). What the port could carry is
// judged over the time since the counter last moved, not over the last
// interval alone: a driver that refreshes its statistics less often than
// they are read shows a counter that sits still for a read and then jumps
// by two intervals' bytes, above the line rate over the last interval on a
// busy port, within it over the two (the still interval's zero and the jump
// together are the truth; refusing the jump alone would leave the zero).
// The time since the counter last moved counts for at most
// kStatsRefreshMaxNanos: a port idle for an hour that jumps by more than
// its line rate carries in one interval is still refused.
//
//   RateCalculator rates;
//   std::vector<SampleRate> r = rates.Update(snapshot);
//   // r[i] belongs to snapshot.samples[i].
//
// Not thread-safe: one calculator per sampling loop.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
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
  // Byte rates refused for being above the port's line rate.
  uint64_t above_line_rate() const { return above_line_rate_; }

  // How far above the port's speed a byte rate may be: octet counters of a
  // saturated link sit just below it, and a read delayed by the scheduler
  // makes one interval look a little shorter than the counters' own.
  static constexpr double kLineRateSlack = 1.1;
  // The longest a driver is believed to keep its statistics between two
  // refreshes (drivers that cache them refresh every 1-2 s): a jump after a
  // counter sat still is judged over at most this long (or the interval,
  // when longer).
  static constexpr int64_t kStatsRefreshMaxNanos = 2'000'000'000;

 private:
  // The previous snapshot's counters, in its order. Sources emit series in
  // a stable order, and keep their descriptions between scans, so sample i
  // almost always points at previous_[i].desc and no lookup is needed; a
  // keyed index is built only when the order changed.
  struct Previous {
    const SeriesDesc* desc;  // kept alive by previous_owners_
    uint64_t raw;
    bool saturated;
    // When `raw` was first read (monotonic): the counter has not moved
    // since.
    int64_t since_nanos;
  };
  using KeyView =
      std::tuple<Subsystem, absl::string_view, uint32_t, absl::string_view>;
  const Previous* FindPrevious(size_t position, const Sample& s);
  // Remembers the speeds `snapshot` gives for its netdevs and RDMA ports.
  void NoteSpeeds(const Snapshot& snapshot);
  // False when `per_second` of a byte series is more than its port can
  // carry.
  bool Possible(const SeriesDesc& d, double per_second) const;

  std::vector<Previous> previous_;
  int64_t previous_monotonic_nanos_ = 0;
  std::vector<std::shared_ptr<const void>> previous_owners_;
  std::vector<Previous> next_;                  // scratch, reused
  absl::flat_hash_map<KeyView, size_t> index_;  // views into previous_ descs
  bool index_built_ = false;
  // Per (device, RDMA port; 0 for a netdev): the fastest speed seen, in
  // bytes/s. Ordered by views too, so that a lookup allocates nothing.
  struct PortLess {
    using is_transparent = void;
    template <typename A, typename B>
    bool operator()(const A& a, const B& b) const {
      return std::pair<absl::string_view, uint32_t>(a.first, a.second) <
             std::pair<absl::string_view, uint32_t>(b.first, b.second);
    }
  };
  std::map<std::pair<std::string, uint32_t>, double, PortLess> fastest_;
  uint64_t resets_ = 0;
  uint64_t wraps_ = 0;
  uint64_t above_line_rate_ = 0;
};

}  // namespace fabricdiag::agent
