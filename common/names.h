// The names fabricdiag accepts for jobs, nodes and devices, in one place:
// the agent (--node), ingest (Hello.node), the layout and topology parsers
// and the state directory (a job's layout is stored as layouts/<job>.pb) all
// check them here, so a layout can never name a host that no agent could
// report as.
//
// Names end up in metric labels, finding JSON and file names, so they are
// restricted to a safe alphabet and must start with a letter or digit (no
// ".", "..", hidden files or option-like "-x"):
//
//   if (!IsValidJobName(job)) return InvalidArgument(...);
//   std::string shown = QuoteForMessage(untrusted);  // "gpu-0\x01..."
//
// Pure functions; thread-safe.
#pragma once

#include <string>

#include "absl/strings/string_view.h"

namespace fabricdiag {

// The rules below as patterns, for error messages.
inline constexpr char kJobNamePattern[] = "[A-Za-z0-9][A-Za-z0-9._-]{0,63}";
inline constexpr char kNodeNamePattern[] = "[A-Za-z0-9][A-Za-z0-9._-]{0,252}";
inline constexpr char kDeviceNamePattern[] =
    "[A-Za-z0-9][A-Za-z0-9._:/-]{0,63}";

// [A-Za-z0-9][A-Za-z0-9._-]{0,63}.
bool IsValidJobName(absl::string_view name);

// Node (host or switch) names: [A-Za-z0-9][A-Za-z0-9._-]{0,252}, the
// characters of a DNS name.
bool IsValidNodeName(absl::string_view name);

// RDMA devices, netdevs and switch ports: [A-Za-z0-9][A-Za-z0-9._:/-]{0,63}
// (Linux netdev names are at most 15 bytes, RDMA device names at most 64;
// switch operating systems name ports "Ethernet1/1").
bool IsValidDeviceName(absl::string_view name);

// `value` in double quotes, C-escaped and cut to at most 64 bytes
// (with "..." appended when cut), safe to put in an error message.
std::string QuoteForMessage(absl::string_view value);

}  // namespace fabricdiag
