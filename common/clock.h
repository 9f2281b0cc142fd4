// Time sources, injected so that tests never read the real clock.
//
// Rates are computed over monotonic time (immune to NTP steps); reports carry
// wall time for humans and for joining with other telemetry.
//
//   SystemClock clock;
//   int64_t t0 = clock.MonotonicNanos();
//
// Implementations are thread-safe.
#pragma once

#include <atomic>
#include <cstdint>

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace fabricdiag {

class Clock {
 public:
  virtual ~Clock() = default;
  // Nanoseconds on a clock that never goes backwards (CLOCK_MONOTONIC).
  virtual int64_t MonotonicNanos() const = 0;
  // Wall-clock time.
  virtual absl::Time Now() const = 0;
};

// The monotonic time of the next tick on the wall clock's grid: the first
// instant at least a twentieth of an interval after now whose wall time is
// `offset` past a whole multiple of `interval` since the Unix epoch. `mono_now`
// and `wall_now` are the same instant on both clocks.
//
// Agents read and collectors run their analysis passes on this grid, so
// with NTP-synchronized clocks every agent reads at the same instant and a
// pass runs `offset` after the reads instead of up to an interval after
// them. At least a twentieth of an interval: a tick that woke a little
// early never ticks twice for one grid point, and one that overran to
// within that of the next grid point skips it instead of bursting (one
// that ends earlier keeps its grid point: a long analysis pass does not
// halve the pass rate). `interval` must be positive; `offset` is taken
// modulo it.
int64_t NextGridTick(int64_t mono_now, absl::Time wall_now,
                     absl::Duration interval, absl::Duration offset);

class SystemClock final : public Clock {
 public:
  int64_t MonotonicNanos() const override;
  absl::Time Now() const override { return absl::Now(); }
};

// A clock that moves only when told to; for tests.
class FakeClock final : public Clock {
 public:
  explicit FakeClock(absl::Time start = absl::FromUnixSeconds(1795000000))
      : mono_nanos_(1'000'000'000), wall_nanos_(absl::ToUnixNanos(start)) {}

  int64_t MonotonicNanos() const override { return mono_nanos_.load(); }
  absl::Time Now() const override {
    return absl::FromUnixNanos(wall_nanos_.load());
  }
  void Advance(absl::Duration d) {
    int64_t n = absl::ToInt64Nanoseconds(d);
    mono_nanos_ += n;
    wall_nanos_ += n;
  }

 private:
  std::atomic<int64_t> mono_nanos_;
  std::atomic<int64_t> wall_nanos_;
};

}  // namespace fabricdiag
