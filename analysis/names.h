// Validation of the names users write in layout and topology files.
//
// Names end up in metric labels, finding JSON and file names in the
// collector's state directory, so they are restricted to a safe alphabet:
//
//   if (!IsValidJobName(job)) return InvalidArgument(...);
//   std::string shown = QuoteForMessage(untrusted);  // "gpu-0\x01..."
//
// Pure functions; thread-safe.
#pragma once

#include <string>

#include "absl/strings/string_view.h"

namespace fabricdiag::analysis {

// [A-Za-z0-9._-]{1,64} (INTERFACES.md, "Layout file").
bool IsValidJobName(absl::string_view name);

// Host (node) names: [A-Za-z0-9._-]{1,253}, the characters of a DNS name.
bool IsValidHostName(absl::string_view name);

// RDMA devices, netdevs and switch ports: [A-Za-z0-9._:-]{1,64} (Linux
// netdev names are at most 15 bytes; RDMA device names at most 64).
bool IsValidDeviceName(absl::string_view name);

// `value` in double quotes, C-escaped and cut to at most 64 bytes
// (with "..." appended when cut), safe to put in an error message.
std::string QuoteForMessage(absl::string_view value);

}  // namespace fabricdiag::analysis
