// Where the analyzers' input comes from: the seam between the analysis
// runner and the two ways a collector sees the fabric.
//
//   - Embedded: one collector, every agent streams to it;
//     the whole fabric is what its own series store holds
//     (EmbeddedFeatureExchange: the local slice, unchanged).
//   - Cluster (--nats): agents are spread over the collectors; each one
//     publishes its slice every pass and merges the others' latest ones
//     (cluster/jetstream_features.h).
//
// A slice is what the analyzers read, not raw counters: the window and
// recent FabricViews (per-port mean rates, analysis/fabric_view.h) and the
// liveness of every node the collector heard from (agent_down's input).
// The runner builds its local slice, publishes it and analyzes the merged
// one; it never knows which backend runs.
//
//   FeatureSlice local = ...;                  // from the series store
//   exchange->Publish(local, now).IgnoreError();
//   FeatureSlice fabric =
//       exchange->Merged(std::move(local), now, MergeScope::kFabric);
//
// Implementations are thread-safe.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "analysis/agent_down.h"
#include "analysis/fabric_view.h"

namespace fabricdiag::collector {

// What a collector knows of one node's agent.
struct NodeFacts {
  analysis::NodeLiveness liveness;
  // In a cluster: the --collector_id of the collector whose slice the facts
  // came from (the one the node's agent streams to). Set by Merged(); empty
  // with one collector.
  std::string collector;
  // In a cluster: the node's collector is live (or left less than
  // kAgentReconnectGrace ago) but its features stopped arriving. What the
  // node does now is unknown, not silence: its liveness is that of the
  // collector's last slice (liveness.observed_until), so its findings hold
  // and agent_down does not open for it. Set by Merged().
  bool unobserved = false;
  // In a cluster: when the node's collector handed its agent to another
  // one (ended its stream with a Handoff) after the agent's last report
  // there; InfinitePast when it did not. Until the agent reports elsewhere
  // it is on its way, not silent: Merged() holds it unobserved for up to
  // kAgentReconnectGrace after the hand-off.
  absl::Time handed_off = absl::InfinitePast();
};

// How long the nodes of a collector that left the cluster stay unobserved
// (NodeFacts::unobserved) when their agents did not report elsewhere yet,
// and how long a collector holds the findings of nodes nobody heard from
// after a restart or a new term: an agent retries a broken stream with a
// backoff that doubles up to 30 s (agent::StreamClient::Options::
// backoff_max), so after a failure that kept it away for a while its first
// try can come 30 s later, plus a few intervals for its reports.
inline constexpr absl::Duration kAgentReconnectGrace = absl::Seconds(40);

// One collector's view of its nodes, or (merged) of the whole fabric.
struct FeatureSlice {
  // Ports with their means over the analysis window; Finish()ed.
  analysis::FabricView window;
  // The same over the newest samples alone (HysteresisConfig::
  // recent_seconds); nullopt when the runner builds none.
  std::optional<analysis::FabricView> recent;
  std::vector<NodeFacts> nodes;
  // In a cluster: false when the features of a collector that runs did not
  // arrive for this merge, so nodes streaming to it may be missing from
  // `nodes` altogether (not even unobserved: this collector never heard of
  // them). Set by Merged(); one collector's slice is the whole fabric.
  bool complete = true;
};

// What a merge must hold.
enum class MergeScope {
  // Every collector's ports and nodes: what an analysis pass reads, and
  // what the collector's page shows.
  kFabric,
  // Every collector's nodes (`fabricdiag nodes` lists the cluster's) and
  // no port, not even `local`'s: a collector that does not analyse and
  // whose page nobody looks at has no use for a view.
  kNodes,
};

class FeatureExchange {
 public:
  virtual ~FeatureExchange() = default;

  // "embedded", "NATS stream fabricdiag_features".
  virtual std::string Describe() const = 0;

  // Makes `local` (this collector's nodes) available to the other
  // collectors. The backend counts failures; the next pass tries again.
  virtual absl::Status Publish(const FeatureSlice& local, absl::Time now) = 0;
  // The same, of `local`'s nodes alone (their liveness), not its ports:
  // with the rate analysis sharded, each shard's ports travel to its owner
  // instead (collector/runner/analysis_shards.h). By default all of it.
  virtual absl::Status PublishLiveness(const FeatureSlice& local,
                                       absl::Time now) {
    return Publish(local, now);
  }

  // The whole fabric: `local` plus the latest slice of every other
  // collector that published within the backend's freshness limit. A node
  // in several slices (its agent moved to another collector) is taken,
  // liveness and ports, from the slice where it reported last. A node of
  // another collector is judged as of that collector's publication
  // (liveness.observed_until); one whose collector stopped publishing is
  // listed unobserved while that collector is live or left recently. With
  // MergeScope::kNodes every port is left out.
  virtual FeatureSlice Merged(FeatureSlice local, absl::Time now,
                              MergeScope scope) = 0;
};

// One collector: the fabric is the local slice.
class EmbeddedFeatureExchange final : public FeatureExchange {
 public:
  std::string Describe() const override { return "embedded"; }
  absl::Status Publish(const FeatureSlice& /*local*/,
                       absl::Time /*now*/) override {
    return absl::OkStatus();
  }
  FeatureSlice Merged(FeatureSlice local, absl::Time /*now*/,
                      MergeScope /*scope*/) override {
    return local;
  }
};

// Merges slices: every node once, with the facts whose liveness of it is
// newest, of whichever slice (the first of a tie; a slice may give a node
// twice); its ports from that slice (a node without liveness facts: in
// each view, from the first slice that has its ports in that view).
// Views take window_seconds from slices[0]; the merged recent view exists
// when slices[0] has one; nodes are sorted by name. The ports and nodes are
// moved out of `slices`, which are left empty; their views are Finish()ed
// or hold the AppendSorted() runs they were given (a slice's chunks, not
// Finish()ed: a run per chunk), and the sorted runs are merged, not sorted
// again. The recent view is merged on a second thread (joined before this
// returns).
FeatureSlice MergeFeatureSlices(absl::Span<FeatureSlice* const> slices);

}  // namespace fabricdiag::collector
