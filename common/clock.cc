#include "common/clock.h"

#include <time.h>

#include <algorithm>

namespace fabricdiag {

int64_t NextGridTick(int64_t mono_now, absl::Time wall_now,
                     absl::Duration interval, absl::Duration offset) {
  const int64_t period =
      std::max<int64_t>(absl::ToInt64Nanoseconds(interval), 1);
  // Wall time since the grid's origin, the epoch plus `offset`, taken as
  // nanoseconds modulo the period: only the phase within an interval
  // matters, and it keeps the sums below far from overflow.
  auto mod = [period](int64_t v) {
    const int64_t r = v % period;
    return r < 0 ? r + period : r;
  };
  const int64_t phase = mod(mod(absl::ToUnixNanos(wall_now)) -
                            mod(absl::ToInt64Nanoseconds(offset)));
  // From now to the next grid point, or the one after when that is less
  // than a twentieth of a period away.
  int64_t wait = period - phase;
  if (wait < period / 20) wait += period;
  return mono_now + wait;
}

int64_t SystemClock::MonotonicNanos() const {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

}  // namespace fabricdiag
