#include "agent/rate.h"

#include <algorithm>
#include <limits>

namespace fabricdiag::agent {
namespace {

uint64_t MaxForWidth(uint32_t width_bits) {
  if (width_bits == 0 || width_bits >= 64) {
    return std::numeric_limits<uint64_t>::max();
  }
  return (uint64_t{1} << width_bits) - 1;
}

// IB PMA PortCounters saturate at all-ones instead of wrapping (IBA 1.3,
// 16.1.3.5 "PortCounters"), so a decrease there is always a reset. Every
// other counter we read (mlx5 Q-counters read as 32-bit big-endian, netdev
// and ethtool 64-bit values) wraps modulo 2^width.
bool Saturates(Subsystem s) {
  return s == Subsystem::kRdmaPortCounters ||
         s == Subsystem::kRdmaPortCountersExt;
}

}  // namespace

std::optional<uint64_t> CounterDelta(uint64_t previous, uint64_t current,
                                     uint32_t width_bits, bool* wrapped) {
  if (wrapped != nullptr) *wrapped = false;
  if (current >= previous) return current - previous;
  const uint64_t max = MaxForWidth(width_bits);
  // A 64-bit counter does not wrap in the lifetime of a NIC (2^64 bytes is
  // 11 years at 400 Gb/s), and a value above the declared width means the
  // width was wrong: both decreases are resets.
  if (max == std::numeric_limits<uint64_t>::max() || previous > max ||
      current > max) {
    return std::nullopt;
  }
  // Wrap: the counter ran from `previous` up to `max`, then from 0 to
  // `current`. Only plausible when that distance is under half the range;
  // a larger one means the counter was cleared.
  const uint64_t distance = (max - previous) + current + 1;
  if (distance > max / 2) return std::nullopt;
  if (wrapped != nullptr) *wrapped = true;
  return distance;
}

const RateCalculator::Previous* RateCalculator::FindPrevious(size_t position,
                                                             const Sample& s) {
  const SeriesDesc& d = *s.desc;
  if (position < previous_.size()) {
    // The same description object is the same series (descriptions are
    // immutable and the previous ones are still alive, so an address
    // cannot have been reused); otherwise compare the keys.
    const SeriesDesc& p = *previous_[position].desc;
    if (&p == &d || p.Key() == d.Key()) return &previous_[position];
  }
  if (!index_built_) {
    index_.clear();
    for (size_t i = 0; i < previous_.size(); ++i) {
      const SeriesDesc& p = *previous_[i].desc;
      index_.emplace(KeyView(p.subsystem, p.device, p.port, p.name), i);
    }
    index_built_ = true;
  }
  auto it = index_.find(KeyView(d.subsystem, d.device, d.port, d.name));
  return it == index_.end() ? nullptr : &previous_[it->second];
}

void RateCalculator::NoteSpeeds(const Snapshot& snapshot) {
  auto note = [this](const std::string& device, uint32_t port, double speed) {
    if (!(speed > 0)) return;  // unknown (0) or not a number
    double& fastest = fastest_[{device, port}];
    fastest = std::max(fastest, speed);
  };
  for (const NetdevInfo& n : snapshot.netdevs) {
    note(n.name, 0, n.speed_bytes_per_second);
  }
  for (const RdmaPortInfo& p : snapshot.rdma_ports) {
    note(p.device, p.port, p.rate_bytes_per_second.value_or(0));
  }
}

bool RateCalculator::Possible(const SeriesDesc& d, double per_second) const {
  if (d.unit != "bytes") return true;
  auto it =
      fastest_.find(std::pair<absl::string_view, uint32_t>(d.device, d.port));
  // A port whose speed was never read has no limit we know of.
  return it == fastest_.end() || per_second <= it->second * kLineRateSlack;
}

std::vector<SampleRate> RateCalculator::Update(const Snapshot& snapshot) {
  std::vector<SampleRate> out(snapshot.samples.size());
  next_.clear();
  next_.reserve(snapshot.samples.size());
  index_built_ = false;
  NoteSpeeds(snapshot);
  const int64_t dt_nanos = snapshot.monotonic_nanos - previous_monotonic_nanos_;
  for (size_t i = 0; i < snapshot.samples.size(); ++i) {
    const Sample& s = snapshot.samples[i];
    const SeriesDesc& d = *s.desc;
    if (d.kind != Kind::kCounter) continue;
    // Counters are appended to `next_` in snapshot order, so position
    // next_.size() in this snapshot is the natural match in the previous.
    const Previous* prev = FindPrevious(next_.size(), s);
    int64_t since_nanos = snapshot.monotonic_nanos;
    if (prev != nullptr) {
      SampleRate& r = out[i];
      if (prev->saturated && s.raw < prev->raw) {
        // A saturated PMA counter only moves again after a clear.
        r.reset = true;
        ++resets_;
      } else if (!s.saturated && !prev->saturated) {
        bool wrapped = false;
        std::optional<uint64_t> delta =
            Saturates(d.subsystem)
                ? (s.raw >= prev->raw
                       ? std::optional<uint64_t>(s.raw - prev->raw)
                       : std::nullopt)
                : CounterDelta(prev->raw, s.raw, d.width_bits, &wrapped);
        if (!delta.has_value()) {
          r.reset = true;
          ++resets_;
        } else {
          r.delta = delta;
          r.wrapped = wrapped;
          if (wrapped) ++wraps_;
          if (dt_nanos > 0) {
            r.per_second = static_cast<double>(*delta) * d.scale /
                           (static_cast<double>(dt_nanos) * 1e-9);
          }
          // Over the time since the counter last moved (see the top of
          // rate.h), at most kStatsRefreshMaxNanos: at least the last
          // interval.
          const int64_t moved_nanos = std::max(
              dt_nanos, std::min(snapshot.monotonic_nanos - prev->since_nanos,
                                 kStatsRefreshMaxNanos));
          if (r.per_second.has_value() && moved_nanos > 0 &&
              !Possible(d, static_cast<double>(*delta) * d.scale /
                               (static_cast<double>(moved_nanos) * 1e-9))) {
            r.per_second.reset();
            r.delta.reset();
            ++above_line_rate_;
          }
        }
      }
      if (s.raw == prev->raw) since_nanos = prev->since_nanos;
    }
    next_.push_back(Previous{&d, s.raw, s.saturated, since_nanos});
  }
  // Keep this snapshot's descriptions alive for the next call.
  std::vector<std::shared_ptr<const void>> owners = snapshot.series_owners;
  for (const Sample& s : snapshot.samples) {
    if (s.owned != nullptr && s.desc->kind == Kind::kCounter) {
      owners.push_back(s.owned);
    }
  }
  previous_.swap(next_);
  previous_owners_ = std::move(owners);
  previous_monotonic_nanos_ = snapshot.monotonic_nanos;
  return out;
}

}  // namespace fabricdiag::agent
