// The bounds of a layout's lease (docs/layout-format.md), shared by the
// collector, which enforces them, and the CLI, which names its own flag
// when a value is out of them.
#pragma once

#include <cstdint>

namespace fabricdiag::collector {

// The longest lease: a week (a job renews long before).
inline constexpr int64_t kMaxLeaseSeconds = int64_t{7} * 24 * 3600;

}  // namespace fabricdiag::collector
