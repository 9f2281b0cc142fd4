#include "collector/declared/write_deadline.h"

#include <algorithm>

namespace fabricdiag::collector {

absl::Time FromChronoDeadline(std::chrono::system_clock::time_point deadline) {
  if (deadline == std::chrono::system_clock::time_point::max()) {
    return absl::InfiniteFuture();
  }
  return absl::FromChrono(deadline);
}

absl::Time AnswerBy(absl::Time deadline, absl::Time now) {
  if (deadline == absl::InfiniteFuture() || deadline <= now) return deadline;
  return deadline - std::min(absl::Milliseconds(200), (deadline - now) / 10);
}

WriteDeadline ChooseWriteDeadline(absl::Time now, absl::Duration own,
                                  absl::Time caller) {
  const absl::Time mine = now + own;
  if (caller < mine) return WriteDeadline{caller, true};
  return WriteDeadline{mine, false};
}

}  // namespace fabricdiag::collector
