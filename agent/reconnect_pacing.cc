#include "agent/reconnect_pacing.h"

#include <algorithm>

namespace fabricdiag::agent {

int ReconnectPacing::Next(bool got_response, bool handed_off,
                          int64_t now_nanos) {
  if (got_response) failures_ = 0;
  if (handed_off) {
    const bool again = last_handoff_nanos_.has_value() &&
                       now_nanos - *last_handoff_nanos_ <
                           absl::ToInt64Nanoseconds(kHandoffRepeatWindow);
    handoff_streak_ = again ? std::min(handoff_streak_ + 1, kMaxStep) : 0;
    last_handoff_nanos_ = now_nanos;
    return handoff_streak_;
  }
  const int step = failures_;
  failures_ = std::min(failures_ + 1, kMaxStep);
  return step;
}

}  // namespace fabricdiag::agent
