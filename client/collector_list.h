// The collectors an agent may stream to (--collector=A,B,C) and the order in
// which it tries them.
//
// A cluster's agents all carry the same list. Each ranks the entries by
// rendezvous (highest random weight) hashing: every (node, entry) pair gets
// a score from a stable hash, the agent streams to the highest-scoring
// collector that works and fails over down its own ranking. So without any
// coordination the agents spread evenly, a node goes to the same collector
// after every restart and upgrade (its recent history stays in one place),
// and when a collector dies each of its agents moves to its own second
// choice: they spread evenly over all the survivors instead of piling on
// one, and no other agent moves. Collectors rank an agent's list the same
// way (its Hello carries it) to hand it back to its first choice once that
// one is live again.
//
// The hash, specified because every process and every version must agree
// (std::hash promises nothing of the kind): the bytes of the node name, one
// 0x00 byte, then the bytes of the entry exactly as written in --collector
// ("10.0.0.1:9811"), through FNV-1a 64 and then Fmix64 (common/fnv1a.h).
// Weighted ranking (a collector that should carry less, such as the
// analysis leader) scores -weight / ln(u), u = ((hash >> 11) + 0.5) / 2^53
// in (0, 1): a collector of weight w gets w / (sum of weights) of the nodes.
// With equal weights this orders the entries as the hash does.
//
//   ASSIGN_OR_RETURN(std::vector<std::string> collectors,
//                    ParseCollectorList(flag_value));
//   std::vector<size_t> order = RankCollectors(node, collectors);
//   // collectors[order[0]] first, then collectors[order[1]], ...
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

// Fmix64(Fnv1a64(node + '\0' + entry)): the rendezvous hash of `node` at
// the collector list entry `entry`.
uint64_t RendezvousHash(absl::string_view node, absl::string_view entry);

// -weight / ln(u) with u = ((RendezvousHash(node, entry) >> 11) + 0.5) /
// 2^53: the weighted rendezvous score; higher is preferred. `weight` > 0.
double RendezvousScore(absl::string_view node, absl::string_view entry,
                       double weight);

// Indices of `collectors` in the order `node` tries them: descending
// RendezvousScore with weight 1 (equal scores by index). {0} for a list of
// one; empty for an empty list.
std::vector<size_t> RankCollectors(absl::string_view node,
                                   const std::vector<std::string>& collectors);

// The placement before rendezvous ranking: Fnv1a64(node) % count. The
// agent's stream client no longer reads it (it ranks its list itself);
// kept while the gNMI bridge still fills StreamClient::Options::first_target
// with it.
size_t PreferredCollectorIndex(absl::string_view node, size_t count);

}  // namespace fabricdiag::client
