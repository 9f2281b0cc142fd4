#include "gnmi/sample_phase.h"

#include <algorithm>
#include <cstdint>

namespace fabricdiag::gnmi {
namespace {

// How far past the last grid point `t` is: [0, interval).
absl::Duration SinceGridPoint(absl::Time t, absl::Duration interval) {
  absl::Duration rem;
  absl::IDivDuration(t - absl::UnixEpoch(), interval, &rem);
  if (rem < absl::ZeroDuration()) rem += interval;
  return rem;
}

}  // namespace

SamplePhase::SamplePhase(absl::Duration interval)
    : interval_(std::max(interval, absl::Milliseconds(1))) {}

absl::Duration SamplePhase::WaitAt(absl::Time wall) const {
  return interval_ - SinceGridPoint(wall, interval_);
}

void SamplePhase::Arrived(absl::Time wall) {
  waits_[next_] = WaitAt(wall);
  next_ = (next_ + 1) % kWindow;
  count_ = std::min(count_ + 1, kWindow);
}

void SamplePhase::Restarted() {
  next_ = 0;
  count_ = 0;
}

absl::Duration SamplePhase::MedianWait() const {
  if (count_ < kWindow) return absl::ZeroDuration();
  std::array<absl::Duration, kWindow> sorted = waits_;
  std::nth_element(sorted.begin(), sorted.begin() + kWindow / 2, sorted.end());
  return sorted[kWindow / 2];
}

bool SamplePhase::ShouldRealign() const {
  return realigns_ < kMaxRealigns && count_ == kWindow &&
         MedianWait() > interval_ / 2;
}

absl::Duration SamplePhase::Realign(absl::Time now) {
  ++realigns_;
  Restarted();
  // The first sample after the initial sync comes one interval after the
  // start: starting at a grid point's three quarters puts it a quarter of
  // an interval before the next grid point, with room for the transit.
  const absl::Duration start_at = interval_ - interval_ / 4;
  absl::Duration delay = start_at - SinceGridPoint(now, interval_);
  if (delay < absl::Milliseconds(1)) delay += interval_;
  return delay;
}

}  // namespace fabricdiag::gnmi
