// Which agents a collector takes: the seam between ingest and the ways a
// collector can be placed.
//
//   - Embedded: one collector takes every agent (KeepEveryAgent below).
//   - Cluster (--nats): each agent should stream to the live collector its
//     node ranks first among those of its list (rendezvous hashing,
//     client/collector_list.h); a collector hands back, a few per second,
//     the agents that prefer another live collector, and the analysis
//     leader's lighter share is a weight in that ranking
//     (cluster/leader_handoff.h).
//
// An ingest stream asks at its Hello, and again at its next report whenever
// Epoch() changed, so that streams opened before a collector came back (or
// before this one began to lead) move too:
//
//   if (placement->Epoch() != seen) {
//     seen = placement->Epoch();
//     if (auto go = placement->HandOff(node, hello_collectors, streams)) {
//       ...Handoff(go->reason, go->target), end...
//     }
//   }
//
// Implementations are thread-safe; Epoch() is called for every report and
// must be cheap.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"

namespace fabricdiag::collector {

// Why a collector takes no agent at all for now (HandoffOrder::refusal),
// counted in fabricdiag_ingest_refused_streams_total{reason}.
enum class Refusal {
  kNone = 0,          // an ordinary hand-off: another collector fits better
  kNatsDisconnected,  // cut off from its cluster (cut_off_placement.h)
};

// (entry, weight) pairs: the entries of an agent's list whose weight in the
// placement's ranking is not 1 (Ack.weights).
using CollectorWeights = std::vector<std::pair<std::string, double>>;

// Where an agent should go, and why (both sent in the Handoff).
struct HandoffOrder {
  std::string reason;
  // An entry of the agent's Hello.collectors; "" lets the agent pick.
  std::string target;
  Refusal refusal = Refusal::kNone;
};

class IngestPlacement {
 public:
  virtual ~IngestPlacement() = default;
  // 0 while this collector takes every agent; otherwise a value that
  // changes whenever the agents it hands off may have changed.
  virtual uint64_t Epoch() = 0;
  // Whether `node`'s agent should stream to another collector, or nullopt
  // to keep it. `collectors` is the agent's list from its Hello (empty from
  // older agents and single-collector ones); `streams` how many agent
  // streams this collector holds now (hand-offs are paced by it). A
  // collector that handed a node off takes it when it comes back soon
  // after (no other collector took it).
  virtual std::optional<HandoffOrder> HandOff(
      absl::string_view node, const std::vector<std::string>& collectors,
      uint64_t streams) = 0;
  // The same for a new stream, at its Hello. As HandOff by default; a
  // placement that paces the hand-off of its open streams can refuse new
  // ones without counting them (cut_off_placement.h).
  virtual std::optional<HandoffOrder> HandOffNew(
      absl::string_view node, const std::vector<std::string>& collectors,
      uint64_t streams) {
    return HandOff(node, collectors, streams);
  }
  // The weights of the entries of `collectors` (an agent's list) in the
  // ranking HandOff places by, sent to the agent (Ack.weights) so that it
  // ranks as the collectors do and fails over where they would place it.
  // Asked only while Epoch() is not 0, after it.
  virtual CollectorWeights Weights(
      const std::vector<std::string>& collectors) = 0;
  // The HOST:PORT agents reach this collector at, once it serves them
  // (--advertise_address, or the bound --listen address): the collectors of
  // a cluster announce it so that each can hand agents to another.
  virtual void Advertise(const std::string& address) = 0;
};

// The embedded placement: the only collector takes every agent. Its epoch
// never moves, so a stream never asks HandOff.
class KeepEveryAgent final : public IngestPlacement {
 public:
  uint64_t Epoch() override { return 0; }
  std::optional<HandoffOrder> HandOff(absl::string_view /*node*/,
                                      const std::vector<std::string>& /*list*/,
                                      uint64_t /*streams*/) override {
    return std::nullopt;
  }
  CollectorWeights Weights(
      const std::vector<std::string>& /*collectors*/) override {
    return {};
  }
  void Advertise(const std::string& /*address*/) override {}
};

}  // namespace fabricdiag::collector
