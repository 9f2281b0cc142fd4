#include "sim/port_counters.h"

#include <cmath>

namespace fabricdiag::sim {
namespace {

// Frames per second that keep a priority paused all the time: one per half
// quantum (65535 x 512 bit times at 400 Gb/s = 83.9 us).
constexpr double kFramesPerPausedSecond = 1.0 / 42e-6;
constexpr double kMicrosPerSecond = 1e6;

// Counters accumulate in 64 bits; the width a driver keeps is applied when
// a file is written (sysfs_files.cc), from the counter table.
void Add(PortCounters* c, Counter k, uint64_t n) { c->value[k] += n; }

}  // namespace

void SetPauseFraction(PortRates* rates, Side side, int p, double fraction) {
  if (p < 0 || p >= kPriorities) return;
  fraction = std::fmin(std::fmax(fraction, 0.0), 1.0);
  const bool rx = side == Side::kRx;
  rates->per_second[(rx ? kRxPauseMicros : kTxPauseMicros) + p] =
      fraction * kMicrosPerSecond;
  rates->per_second[(rx ? kRxPauseFrames : kTxPauseFrames) + p] =
      fraction * kFramesPerPausedSecond;
  // Each pause episode ends with one XOFF -> XON transition; short healthy
  // episodes are a few frames long, a storm is one long episode per stall.
  if (rx) {
    rates->per_second[kRxPauseTransitions + p] =
        fraction < 0.5 ? fraction * kFramesPerPausedSecond / 4 : 5;
  }
}

double PauseFraction(const PortRates& rates, Side side, int p) {
  if (p < 0 || p >= kPriorities) return 0;
  return rates
             .per_second[(side == Side::kRx ? kRxPauseMicros : kTxPauseMicros) +
                         p] /
         kMicrosPerSecond;
}

void Accumulate(const PortRates& rates, double seconds,
                PortCounters* counters) {
  if (rates.present && !counters->present) {
    *counters = PortCounters();  // driver reload: every counter from zero
  }
  counters->present = rates.present;
  counters->speed_gbps = rates.speed_gbps;
  if (!rates.present) return;
  if (std::isfinite(seconds) && seconds > 0) {
    for (int k = 0; k < kNumCounters; ++k) {
      const double r = rates.per_second[k];
      if (!std::isfinite(r) || r <= 0) continue;
      double total = r * seconds + counters->carry[k];
      double whole = std::floor(total);
      counters->carry[k] = total - whole;
      // 2^63 per tick is far beyond any rate; the cast stays defined.
      if (whole > 9.2e18) whole = 9.2e18;
      Add(counters, static_cast<Counter>(k), static_cast<uint64_t>(whole));
    }
  }
  if (counters->link_up && !rates.link_up) {
    Add(counters, kLinkDowned, 1);
    Add(counters, kLinkDownEvents, 1);
    Add(counters, kCarrierChanges, 1);
  } else if (!counters->link_up && rates.link_up) {
    Add(counters, kCarrierChanges, 1);
  }
  counters->link_up = rates.link_up;
}

}  // namespace fabricdiag::sim
