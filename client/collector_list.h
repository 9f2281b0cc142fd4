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
// The weights are the cluster's: the collectors send them to each agent
// (Ack.weights: the analysis leader carries a lighter share), and the agent
// ranks with them, so agent and collectors agree on every node's first
// choice and, when a collector dies, on where each of its agents goes next:
// its weighted second choice. Removing a collector of weighted rendezvous
// moves only that collector's nodes, to the survivors in proportion to
// their weights. CollectorChoice keeps one agent's place in its ranking.
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
#include <utility>
#include <vector>

#include "absl/status/status.h"
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
// The same by descending RendezvousScore with `weights[i]` for
// collectors[i]; `weights` is empty (every weight 1) or as long as
// `collectors`, each weight > 0.
std::vector<size_t> RankCollectors(absl::string_view node,
                                   const std::vector<std::string>& collectors,
                                   const std::vector<double>& weights);

// One agent's collector: where it streams now and where it goes when that
// stream ends. Starts at the first of its ranking.
//
// After a stream that ends without a hand-off, the agent goes to the first
// collector of its (weighted) ranking that has not failed since a stream
// last worked: from the top, never "the one below where it was", since a
// hand-off or a changed weight may have put it anywhere in its ranking (an
// agent the leader's weight placed on its second choice must go to its
// weighted second choice, not its third, when that one dies). A collector
// that just failed is tried again only after all the others.
//
//   CollectorChoice choice(node, collectors);
//   Stream(collectors[choice.current()]) ... ended:
//   choice.Failed(/*worked=*/got_an_ack);  // or HandedOff(target)
//
// Not thread-safe (the caller's lock guards it).
class CollectorChoice {
 public:
  CollectorChoice(std::string node, std::vector<std::string> collectors);

  // Index into the list of the collector to stream to.
  size_t current() const { return current_; }
  const std::string& current_entry() const { return collectors_[current_]; }
  const std::vector<size_t>& ranking() const { return ranking_; }

  // The weights the collectors sent (Ack.weights): (entry, weight) pairs;
  // an entry not named weighs 1. Entries not in the list, and weights not
  // finite or not above 0, are ignored (InvalidArgument naming the first),
  // the others applied. Re-ranks; the current collector stays current (the
  // collectors hand the agent over if it should move).
  absl::Status SetWeights(
      const std::vector<std::pair<std::string, double>>& weights);

  // The current collector's stream ended without a hand-off; `worked`:
  // the stream had been answered (a live collector that died, rather than
  // one that could not be reached). Moves on (see above); returns
  // current().
  size_t Failed(bool worked);

  // The current collector handed the agent to `target`: that entry when it
  // is another one of the list; else (no target: that collector takes no
  // agent now) as Failed(false), so that refusals in a row go through the
  // whole list. Returns current().
  size_t HandedOff(absl::string_view target);

 private:
  const std::string node_;
  const std::vector<std::string> collectors_;
  std::vector<double> weights_;
  std::vector<size_t> ranking_;
  std::vector<bool> failed_;  // since a stream last worked
  size_t current_ = 0;
};

// The placement before rendezvous ranking: Fnv1a64(node) % count. The
// agent's stream client no longer reads it (it ranks its list itself);
// kept while the gNMI bridge still fills StreamClient::Options::first_target
// with it.
size_t PreferredCollectorIndex(absl::string_view node, size_t count);

}  // namespace fabricdiag::client
