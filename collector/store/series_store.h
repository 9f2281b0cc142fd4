// The collector's in-memory rate history of every node that reports.
//
// Bounded memory: each series keeps a window of at least `window_samples`
// samples (default 600 = 10 minutes at 1 s) in its node's RateHistory;
// older samples are evicted as new ones arrive. Keyed by node, then by the
// series' slot in that node (NodeSeries): ingest hashes the node name once
// per stream and each series key once per schema, never per value.
//
//   SeriesStore store(SeriesStore::Options{}, clock);
//   std::shared_ptr<NodeSeries> node = store.OpenNode("gpu-003");
//   ... ingest through `node` (see NodeSeries / IngestSession) ...
//   absl::StatusOr<RatePoint> r = store.Latest(
//       "gpu-003", {v1::SUBSYSTEM_ETHTOOL, "eth2", 0, "rx_prio3_pause"});
//
// Thread-safe. The node table is split into shards with one mutex each and
// every node has its own mutex, so ingest of different nodes does not
// contend; queries take one node's lock at a time.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "collector/store/node_series.h"
#include "common/clock.h"

namespace fabricdiag::collector {

// One node as ListNodes() reports it.
struct NodeStatus {
  NodeInfo info;
  // What the rule given to ListNodes() says of the node.
  bool up = false;
};

// Whether a node's agent counts as up at `now`, from what the store knows.
using NodeUpRule = std::function<bool(const NodeInfo& info, absl::Time now)>;

struct StoreMemory {
  size_t nodes = 0;
  size_t series = 0;
  size_t layouts = 0;  // distinct series layouts the nodes share
  size_t bytes = 0;    // everything the store holds, estimated from sizes
  double bytes_per_series() const {
    return series == 0 ? 0 : static_cast<double>(bytes) / series;
  }
};

class SeriesStore {
 public:
  struct Options {
    // Samples kept per series at least (rounded up to whole frames of
    // RateHistory::kFrameSamples, plus the open frame).
    size_t window_samples = 600;
  };

  // `clock` stamps report arrival (for up/down); it must outlive the store.
  SeriesStore(Options options, const Clock& clock);

  SeriesStore(const SeriesStore&) = delete;
  SeriesStore& operator=(const SeriesStore&) = delete;

  // The node named `node`, created on first use. The caller keeps the
  // pointer for the life of its stream.
  std::shared_ptr<NodeSeries> OpenNode(absl::string_view node);

  // The node, or null when it never reported.
  std::shared_ptr<NodeSeries> FindNode(absl::string_view node) const;
  // Drops the node and its series (`fabricdiag nodes forget`), unless its
  // agent streams here now (NodeSeries::Streaming): then it is back as
  // soon as it was forgotten and keeps what it reported. True when dropped.
  // The node is new when it reports again.
  bool DropNode(absl::string_view node);
  // Every node seen, in no order; one lock per shard, nothing copied.
  std::vector<std::shared_ptr<NodeSeries>> AllNodes() const;
  // Every node seen, sorted by name: shared while no node is opened anew or
  // dropped, so that a pass over every node in order (each analysis pass,
  // twice) does not sort them again. A node dropped stays in the snapshot
  // its holders keep.
  using SortedNodes = std::vector<std::shared_ptr<NodeSeries>>;
  std::shared_ptr<const SortedNodes> NodesByName() const;

  // Every node seen, sorted by name; `up` when its last report arrived less
  // than `down_after` ago.
  std::vector<NodeStatus> ListNodes(absl::Duration down_after) const;
  // The same with `up` as `rule` says (the collector's is agent_down's:
  // collector/runner/agent_liveness.h).
  std::vector<NodeStatus> ListNodes(const NodeUpRule& rule) const;

  // The series `node` has reported, in first-seen order. NotFound for an
  // unknown node.
  absl::StatusOr<std::vector<SeriesMeta>> ListSeries(
      absl::string_view node) const;

  // The newest rate of one series. NotFound for an unknown node or series,
  // or when the series has no rate in the window.
  absl::StatusOr<RatePoint> Latest(absl::string_view node,
                                   const SeriesKey& key) const;

  // Samples of one series with wall time >= `since`, oldest first.
  absl::StatusOr<std::vector<RatePoint>> Window(absl::string_view node,
                                                const SeriesKey& key,
                                                absl::Time since) const;

  // The reports of the agents' read at `grid`, a point of the wall clock's
  // grid of `interval` (NextGridTick): how many nodes whose agents report
  // every `interval` delivered theirs, and how many are still awaited.
  // Delivered: a report arrived at `grid` or later (less a twentieth of an
  // interval, for clocks that disagree by a few milliseconds). Awaited: the
  // node's previous report arrived within half an interval after the
  // previous grid point, so its agent reads on the grid and is live. A
  // node that reports at another interval, off the grid or not at all is
  // neither: nothing waits for it. One lock per node, no copy of its
  // strings.
  struct GridArrivals {
    size_t arrived = 0;
    size_t awaited = 0;
  };
  GridArrivals ArrivalsFor(absl::Time grid, absl::Duration interval) const;

  StoreMemory Memory() const;

  const Clock& clock() const { return clock_; }

 private:
  static constexpr size_t kShards = 16;
  struct Shard {
    mutable absl::Mutex mu;
    absl::flat_hash_map<std::string, std::shared_ptr<NodeSeries>> nodes
        ABSL_GUARDED_BY(mu);
  };

  Shard& ShardOf(absl::string_view node) const;
  absl::StatusOr<std::shared_ptr<NodeSeries>> NodeOrError(
      absl::string_view node) const;

  const Options options_;
  const Clock& clock_;
  // Declared before the shards: every node points to it.
  SeriesLayouts layouts_;
  mutable std::array<Shard, kShards> shards_;
  // Moves, under the shard's lock, each time a node is added or dropped.
  std::atomic<uint64_t> membership_{0};
  mutable absl::Mutex sorted_mu_;
  mutable std::shared_ptr<const SortedNodes> sorted_
      ABSL_GUARDED_BY(sorted_mu_);
  mutable uint64_t sorted_membership_ ABSL_GUARDED_BY(sorted_mu_) = 0;
};

}  // namespace fabricdiag::collector
