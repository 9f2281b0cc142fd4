// Which agents a collector takes: the seam between ingest and the ways a
// collector can be placed.
//
//   - Embedded: one collector takes every agent (KeepEveryAgent below).
//   - Cluster (--nats): the analysis leader hands a share of its agents to
//     the other collectors (cluster/leader_handoff.h), since the analysis
//     it runs for the whole fabric costs what ingest of those agents would.
//
// An ingest stream asks at its Hello, and again at its next report whenever
// Epoch() changed (a new term of the lease), so that streams opened before
// this collector began to lead move too:
//
//   if (placement->Epoch() != seen) {
//     seen = placement->Epoch();
//     if (auto why = placement->HandOff(node)) { ...Handoff(*why), end... }
//   }
//
// Implementations are thread-safe; Epoch() is called for every report and
// must be cheap.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "absl/strings/string_view.h"

namespace fabricdiag::collector {

class IngestPlacement {
 public:
  virtual ~IngestPlacement() = default;
  // 0 while this collector takes every agent; otherwise a value that
  // changes whenever the agents it hands off may have changed.
  virtual uint64_t Epoch() = 0;
  // Why `node`'s agent should stream to another collector, or nullopt to
  // take it. A collector that handed a node off takes it when it comes
  // back soon after (no other collector took it).
  virtual std::optional<std::string> HandOff(absl::string_view node) = 0;
};

// The embedded placement: the only collector takes every agent. Its epoch
// never moves, so a stream never asks HandOff.
class KeepEveryAgent final : public IngestPlacement {
 public:
  uint64_t Epoch() override { return 0; }
  std::optional<std::string> HandOff(absl::string_view /*node*/) override {
    return std::nullopt;
  }
};

}  // namespace fabricdiag::collector
