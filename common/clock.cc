#include "common/clock.h"

#include <time.h>

namespace fabricdiag {

int64_t SystemClock::MonotonicNanos() const {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

}  // namespace fabricdiag
