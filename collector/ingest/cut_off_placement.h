// The placement of a collector cut off from its cluster: while it cannot
// reach NATS for longer than `limit`, it takes no agent. Its agents' data
// would reach neither the analysis (its features are not published) nor
// the other collectors, while the agents, acknowledged, would see nothing
// wrong; handed to a connected collector, their data counts again.
//
// A decorator over the cluster's placement (cluster/leader_handoff.h):
// while connected it answers as that one; once cut off for longer than
// `limit` it hands every agent off with no target (the agent picks the
// next collector of its own ranking), at its Hello and, for the streams
// already open, at their next report (the epoch moves); once connected
// again it takes agents as before, and the other collectors hand back
// those that prefer it. An embedded collector has no NATS and never wraps
// its placement in this.
//
//   HandOffWhileCutOff placement(
//       *member->ingest_placement(),
//       [nats] { return nats->link_down_for(); }, absl::Seconds(3));
//   IngestService ingest(&store, &counters, auth, placement, facts);
//
// Thread-safe when `inner` and `cut_off_for` are.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "collector/ingest/ingest_placement.h"

namespace fabricdiag::collector {

class HandOffWhileCutOff final : public IngestPlacement {
 public:
  // `cut_off_for`: how long this collector has been unable to reach NATS
  // without a break (zero while it can); called for every report, so it
  // must be cheap. `inner` must outlive this.
  HandOffWhileCutOff(IngestPlacement& inner,
                     std::function<absl::Duration()> cut_off_for,
                     absl::Duration limit);

  uint64_t Epoch() override;
  std::optional<HandoffOrder> HandOff(
      absl::string_view node, const std::vector<std::string>& collectors,
      uint64_t streams) override;
  // The inner placement's: a cut-off collector's agents rank as the
  // cluster does, and fail over where it would place them.
  CollectorWeights Weights(const std::vector<std::string>& collectors) override;
  void Advertise(const std::string& address) override;

 private:
  // Whether this collector hands every agent off now, and for how long it
  // has been cut off.
  bool CutOff(absl::Duration* for_how_long = nullptr) const;

  IngestPlacement& inner_;
  const std::function<absl::Duration()> cut_off_for_;
  const absl::Duration limit_;
};

}  // namespace fabricdiag::collector
