// Waiting for something asynchronous to happen, without fixed sleeps: polls
// `pred` every `poll` until it holds or `timeout` passes. A predicate that
// is costly (it runs a process) wants a longer `poll`.
//
//   ASSERT_TRUE(testing::Eventually([&] { return store.size() == 3; }));
//
// Thread-safe if `pred` is.
#pragma once

#include <functional>

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace fabricdiag::testing {

inline bool Eventually(const std::function<bool()>& pred,
                       absl::Duration timeout = absl::Seconds(15),
                       absl::Duration poll = absl::Milliseconds(5)) {
  const absl::Time deadline = absl::Now() + timeout;
  while (absl::Now() < deadline) {
    if (pred()) return true;
    absl::SleepFor(poll);
  }
  return pred();
}

}  // namespace fabricdiag::testing
