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
//
// Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace fabricdiag::agent {

// The value of --collector as a list of HOST:PORT entries (see
// SplitAddressList in common/address_list.h for the list rules).
// InvalidArgument naming --collector and the bad entry otherwise.
absl::StatusOr<std::vector<std::string>> ParseCollectorList(
    absl::string_view value);

// FNV-1a, 64 bits (offset basis 14695981039346656037, prime
// 1099511628211) of `bytes`. Changing it moves nodes between collectors:
// tests pin its values.
uint64_t Fnv1a64(absl::string_view bytes);

// Index of the collector `node` tries first among `count` (> 0):
// Fnv1a64(node) % count.
size_t PreferredCollectorIndex(absl::string_view node, size_t count);

}  // namespace fabricdiag::agent
