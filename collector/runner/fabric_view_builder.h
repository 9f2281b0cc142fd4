// Builds the analyzers' FabricView from the collector's series store: every
// port of every node that is reporting, with the mean rate of each signal
// over the last window.
//
// The counter-name knowledge lives here (signal_map.h): mlx5, bnxt, ice and
// IB PMA spellings are folded onto PortSignals fields, so analyzers are
// driver-agnostic. Ports come from each node's Inventory: an RDMA port
// ("mlx5_2", with its netdev's ethtool and netdev counters folded in), or a
// netdev without an RDMA device ("swp3" on a switch, "eth0"). A node that
// has not reported for 3 intervals is left out (agent_down covers it; its
// stale rates must not raise findings).
//
//   FabricViewBuilder builder(&series);
//   analysis::FabricView view = builder.Build(topology, 5.0, clock.Now());
//
// Per node, the mapping from series slots to signals is cached and rebuilt
// only when the node's schema or inventory changes (NodeSeries::version);
// nodes of the same series layout and ports share one. A pass costs one
// RecentMeans() per node over the slots that feed a signal
// (a few dozen per NIC of its ~150 counters), and one RecentActivity() per
// port over its byte counters, which says how the window's samples lie in
// time (analysis::SampleEvidence).
// Thread-compatible: one caller at a time (the analysis runner).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/functional/function_ref.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "analysis/fabric_view.h"
#include "collector/runner/signal_map.h"
#include "collector/store/series_store.h"
#include "proto/layout.pb.h"

namespace fabricdiag::collector {

class FabricViewBuilder {
 public:
  // `series` must outlive the builder.
  explicit FabricViewBuilder(const SeriesStore* series);

  // The view over the last `window_seconds` of every node that reported
  // within 3 of its intervals before `now`. `topology` (may be null) marks
  // switch nodes.
  analysis::FabricView Build(const v1::Topology* topology,
                             double window_seconds, absl::Time now);
  // One view per entry of `windows_seconds`, in its order, each what
  // Build() of that window returns, from one walk over the nodes (one lock
  // per node for all of them).
  std::vector<analysis::FabricView> Build(
      const v1::Topology* topology, absl::Span<const double> windows_seconds,
      absl::Time now);
  // The same, and `each_node` is told of every node of the store, silent
  // ones included, in name order, with the state the views were built from
  // (what agent_down needs of every node, from the same walk).
  using EachNode = absl::FunctionRef<void(const NodeSeries& node,
                                          const NodeSeries::ViewState& state)>;
  std::vector<analysis::FabricView> Build(
      const v1::Topology* topology, absl::Span<const double> windows_seconds,
      absl::Time now, EachNode each_node);

  // Gives back a view an earlier Build() returned at `position` of its
  // windows, once nothing reads it any more: the next Build() writes that
  // window's ports over it in place (FabricView::BeginRewrite()). From
  // one pass to the next a collector's ports are the same, in the same
  // order, so their names, the view's index and its memory are kept
  // rather than made again (at 1M GPUs, 100,000 ports of 656 bytes in
  // each of two views a pass). A view of another window length, or of
  // more than twice the ports the next Build() expects (a merge of a
  // cluster's fabric), is dropped.
  void Recycle(size_t position, analysis::FabricView&& view);

 private:
  // One port of a node, as derived from its inventory.
  struct PortInfo {
    std::string device;
    std::string netdev;
    double link_rate = 0;
    bool link_up = true;
  };
  // Where one series slot's mean goes.
  struct SlotTarget {
    uint32_t slot = 0;
    uint32_t port = 0;  // index into Mapping::ports
    SignalRef signal;
  };
  // What a node's series and ports come to in a view: its ports, where
  // each series slot's mean goes, and its traffic slots. Nodes with the
  // same series layout and the same ports share one (a homogeneous fabric
  // has a few), built when the first of them is seen: at a connect storm
  // or a collector's first pass, 12,500 nodes at 1M GPUs over 10
  // collectors, each ~20 KB when built per node.
  struct Mapping {
    std::shared_ptr<const SeriesLayout> layout;  // keeps the key alive
    std::vector<PortInfo> ports;
    // By port, in the layout's order within one: port i's are
    // [ports_end[i - 1], ports_end[i]).
    std::vector<SlotTarget> targets;
    std::vector<uint32_t> ports_end;
    std::vector<uint32_t> slots;  // targets[i].slot, for ReadWindows
    std::vector<PortAccumulator::Fold> folds;  // of targets[i].signal
    // Per port: the byte-counter slots its traffic is read from (RDMA, else
    // physical port, else netdev: the ones PortAccumulator prefers), whose
    // samples say when it moved (PortView::samples).
    std::vector<std::vector<uint32_t>> traffic_slots;
  };
  struct NodeCache {
    uint64_t version = UINT64_MAX;
    uint64_t pass = 0;  // the last Build() that saw the node
    std::string boot_id;
    std::shared_ptr<const Mapping> mapping;
  };

  // The series of a layout that feed a signal: what Refresh() would
  // classify again for every node that reports the same series (a
  // homogeneous cluster has one or a few layouts; a connect storm
  // refreshes every node at once).
  struct LayoutSignal {
    uint32_t slot = 0;
    std::string port;  // device ("mlx5_0", "mlx5_0:2" for port 2) or netdev
    SignalRef signal;
  };
  struct LayoutCache {
    std::shared_ptr<const SeriesLayout> layout;  // keeps the key alive
    std::vector<LayoutSignal> signals;
    uint64_t pass = 0;
  };

  void Refresh(const NodeSeries& node, NodeCache* cache);
  // A new Mapping of `layout` (may be null) and `inventory`'s ports.
  std::shared_ptr<const Mapping> MapNode(
      std::shared_ptr<const SeriesLayout> layout,
      const v1::Inventory& inventory);
  const std::vector<LayoutSignal>& SignalsOf(
      std::shared_ptr<const SeriesLayout> layout);

  const SeriesStore* const series_;
  absl::flat_hash_map<std::string, NodeCache> cache_;
  absl::flat_hash_map<const SeriesLayout*, LayoutCache> layouts_;
  // By layout and what Refresh() reads of the inventory (MappingKey),
  // while a node's cache holds it.
  absl::flat_hash_map<std::string, std::shared_ptr<const Mapping>> mappings_;
  uint64_t pass_ = 0;
  // Recycle()d views, by window position (empty: none).
  std::vector<analysis::FabricView> recycled_;
  // Scratch, reused across nodes.
  std::vector<NodeSeries::WindowRead> reads_;
  PortAccumulator acc_;
};

}  // namespace fabricdiag::collector
