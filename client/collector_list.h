// The collectors an agent may stream to (--collector=A,B,C) and which of
// them it tries first.
//
// A cluster's agents all carry the same list; each starts at the entry its
// node name hashes to, so the agents spread over the collectors without any
// coordination, and the same node goes to the same collector after every
// restart and upgrade (its recent history stays in one place). The hash is
// FNV-1a 64 over the bytes of the node name, modulo the list size: simple,
// specified, identical in every process and every version. std::hash is
// none of that (it may differ between standard libraries and releases).
//
//   ASSIGN_OR_RETURN(std::vector<std::string> collectors,
//                    ParseCollectorList(flag_value));
//   size_t first = PreferredCollectorIndex(node, collectors.size());
//   size_t after_handoff = HandoffCollectorIndex(node, first,
//                                                collectors.size());
//
// Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/fnv1a.h"

namespace fabricdiag::client {

// The value of --collector as a list of HOST:PORT entries (see
// SplitAddressList in common/address_list.h for the list rules).
// InvalidArgument naming --collector and the bad entry otherwise.
absl::StatusOr<std::vector<std::string>> ParseCollectorList(
    absl::string_view value);

// The placement hash (common/fnv1a.h), here for the agent's callers.
using ::fabricdiag::Fnv1a64;

// Index of the collector `node` tries first among `count` (> 0):
// Fnv1a64(node) % count.
size_t PreferredCollectorIndex(absl::string_view node, size_t count);

// Index of the collector `node` moves to when collector `current` of
// `count` hands it off (a Handoff message): one of the other collectors,
// `current` + 1 + Fmix64(Fnv1a64(node)) % (count - 1), wrapping around, so
// that the agents one collector hands off spread evenly over all the others
// (moving each to the next collector would pile them on one). Mixed
// (common/fnv1a.h) because FNV-1a's bits alone go with those that placed
// the node. `current` itself when it is the only one.
size_t HandoffCollectorIndex(absl::string_view node, size_t current,
                             size_t count);

}  // namespace fabricdiag::client
