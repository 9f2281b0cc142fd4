// How long an agent waits before its next stream to a collector, as a step
// of its exponential backoff (StreamClient::BackoffDelay(step)).
//
// After a failure (no answer, or a stream that broke), the step grows with
// the failures since a collector last answered: a cluster whose collectors
// are all down is not hammered. After a hand-off the collector worked, so
// the failures before it do not count: the agent moves at once (step 0),
// unless the hand-off comes within kHandoffRepeatWindow of the previous
// one; then the step grows with the hand-offs in a row, so collectors that
// kept handing the agent between them (ours do not: a collector takes back
// an agent that returns soon after it handed it off) cannot make it
// reconnect every backoff_initial.
//
//   ReconnectPacing pacing;
//   const int step = pacing.Next(got_response, handed_off, now_nanos);
//   wait(BackoffDelay(step));
//
// Not thread-safe: one per agent stream loop.
#pragma once

#include <cstdint>
#include <optional>

#include "absl/time/time.h"

namespace fabricdiag::agent {

class ReconnectPacing {
 public:
  static constexpr absl::Duration kHandoffRepeatWindow = absl::Minutes(1);
  // Steps stop growing here (the delay is capped long before).
  static constexpr int kMaxStep = 64;

  // A stream ended at `now_nanos` (a monotonic clock): `got_response` when
  // the collector answered on it, `handed_off` when it handed the agent
  // off. Returns the backoff step to wait before the next stream.
  int Next(bool got_response, bool handed_off, int64_t now_nanos);

 private:
  int failures_ = 0;        // failures since a collector last answered
  int handoff_streak_ = 0;  // hand-offs in a row, less one
  std::optional<int64_t> last_handoff_nanos_;
};

}  // namespace fabricdiag::agent
