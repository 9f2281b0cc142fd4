// The placement of a collector cut off from its cluster: while it cannot
// reach NATS (or its cluster through NATS: CutOffFromCluster) for longer
// than `limit`, it takes no agent. Its agents' data
// would reach neither the analysis (its features are not published) nor
// the other collectors, while the agents, acknowledged, would see nothing
// wrong; handed to a connected collector, their data counts again.
//
// A decorator over the cluster's placement (cluster/leader_handoff.h):
// while connected it answers as that one; once cut off for longer than
// `limit` it hands its agents off with no target (the agent picks the
// next collector of its own ranking): every new stream at its Hello, and
// the streams already open at their next report, paced so that the
// connected collectors get no reconnect storm: in each second of the
// outage at most kCutOffHandOffRate of the streams it held when the
// hand-over began (rounded up, so at least one); the others ask again the
// next second (the epoch moves every second). Once connected again it
// takes agents as before, and the other collectors hand back those that
// prefer it. An embedded collector has no NATS and never wraps its
// placement in this.
//
// An agent it sent away during this outage that comes back found no other
// collector that would take it (every collector is cut off: all NATS
// servers are away, or its other collectors are down): it is taken, and
// kept until the outage ends, so that agents do not bounce from one
// cut-off collector to the next with a growing backoff and come back late
// once NATS does. At most kMaxRemembered nodes are remembered per outage;
// past that every agent is taken rather than one forgotten.
//
//   HandOffWhileCutOff placement(
//       *member->ingest_placement(),
//       [member] {
//         return CutOffFromCluster(member->nats()->link_down_for(),
//                                  member->publishes_failing_for());
//       },
//       absl::Seconds(3));
//   IngestService ingest(&store, &counters, auth, placement, facts);
//
// Thread-safe when `inner` and `cut_off_for` are.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "collector/ingest/ingest_placement.h"

namespace fabricdiag::collector {

// The share of its streams a cut-off collector hands off per second: all of
// them within about ten seconds, a tenth at a time.
inline constexpr double kCutOffHandOffRate = 0.1;

// How long publishes into the cluster may fail, while the NATS link is up,
// before the collector counts as cut off: a NATS server in the minority of
// a network partition keeps its clients connected while its JetStream
// answers nothing, but a JetStream election (a server that returns) also
// fails publishes for a few seconds, up to 10 s seen on a loaded machine,
// and must not move every collector's agents.
inline constexpr absl::Duration kPublishFailureGrace = absl::Seconds(15);

// How long a collector has been cut off from its cluster: its NATS link
// down (`link_down_for`), or every publish failing for at least
// kPublishFailureGrace (`publishes_failing_for`, zero while they succeed),
// whichever is longer; zero while neither. Pure.
absl::Duration CutOffFromCluster(absl::Duration link_down_for,
                                 absl::Duration publishes_failing_for);

class HandOffWhileCutOff final : public IngestPlacement {
 public:
  // `cut_off_for`: how long this collector has been unable to reach its
  // cluster without a break (zero while it can), on a monotonic clock: it also
  // times the paced hand-over. Called for every report, so it must be
  // cheap. `inner` must outlive this.
  HandOffWhileCutOff(IngestPlacement& inner,
                     std::function<absl::Duration()> cut_off_for,
                     absl::Duration limit);

  uint64_t Epoch() override;
  // An open stream: handed off while cut off, within the second's budget,
  // unless it came back this outage.
  std::optional<HandoffOrder> HandOff(
      absl::string_view node, const std::vector<std::string>& collectors,
      uint64_t streams) override;
  // A new stream: refused while cut off, whatever the budget (it was not
  // taken, so refusing it moves nothing), unless this collector sent it
  // away this outage: then it came back and is taken.
  std::optional<HandoffOrder> HandOffNew(
      absl::string_view node, const std::vector<std::string>& collectors,
      uint64_t streams) override;
  // The inner placement's: a cut-off collector's agents rank as the
  // cluster does, and fail over where it would place them.
  CollectorWeights Weights(const std::vector<std::string>& collectors) override;
  void Advertise(const std::string& address) override;

  // Nodes remembered as sent away during one outage, at most (see the
  // overview).
  static constexpr size_t kMaxRemembered = 65536;

 private:
  // Whether this collector hands every agent off now, and for how long it
  // has been cut off. Once connected again, ends the hand-over in progress
  // (its budget and the nodes it sent away).
  bool CutOff(absl::Duration* for_how_long = nullptr);
  // Which second of the hand-over `cut` falls in (0 the first).
  int64_t Round(absl::Duration cut) const;
  HandoffOrder RefusalOrder(absl::Duration cut) const;

  IngestPlacement& inner_;
  const std::function<absl::Duration()> cut_off_for_;
  const absl::Duration limit_;

  // The hand-over in progress; reset by CutOff() once connected again.
  std::atomic<bool> handing_over_{false};
  absl::Mutex mu_;
  // The most streams seen open during the hand-over: its budget's base, so
  // that the pace does not slow as the streams leave.
  uint64_t most_streams_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t round_ ABSL_GUARDED_BY(mu_) = -1;
  uint64_t handed_this_round_ ABSL_GUARDED_BY(mu_) = 0;
  // The nodes sent away during this outage, and whether each came back
  // (and is kept until the outage ends).
  absl::flat_hash_map<std::string, bool> sent_away_ ABSL_GUARDED_BY(mu_);
};

}  // namespace fabricdiag::collector
