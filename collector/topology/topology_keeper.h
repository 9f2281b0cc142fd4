// Keeps the declared, discovered and effective topologies (TopologyViews)
// current: redraws the discovered one when the nodes' facts move
// (NodeFactsStore::Generation) or the declared topology changes, on its own
// thread, never on the ingest path or in an analysis pass. A 25k-host
// fabric takes up to ~1 s to draw: the views are built aside and swapped
// whole, so a reader (a pass, the API) takes the previous ones meanwhile.
//
//   TopologyKeeper keeper(&facts, &registry, &builder, &clock);
//   keeper.Start(absl::Milliseconds(200));   // polls the two versions
//   std::shared_ptr<const TopologyViews> views = keeper.Current();
//   keeper.Stop();
//
// Thread-safe.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "absl/time/time.h"
#include "collector/declared/layout_registry.h"
#include "collector/declared/node_facts.h"
#include "collector/topology/topology_builder.h"
#include "collector/topology/topology_views.h"
#include "common/clock.h"

namespace fabricdiag::collector {

class TopologyKeeper final : public TopologySource {
 public:
  // Pointers must outlive the keeper. Current() serves the views of no
  // facts and the declared topology until the first Refresh().
  TopologyKeeper(const NodeFactsStore* facts, const LayoutRegistry* registry,
                 const TopologyBuilder* builder, const Clock* clock);
  ~TopologyKeeper() override;
  TopologyKeeper(const TopologyKeeper&) = delete;
  TopologyKeeper& operator=(const TopologyKeeper&) = delete;

  // Redraws the views when the facts' generation or the declared topology
  // moved since the last build; true when it did. One caller at a time
  // (the keeper's thread once started; tests otherwise).
  bool Refresh();

  // Calls Refresh() every `poll` on a background thread (two atomic reads
  // when nothing moved) until Stop(). After a drawing, facts that moved
  // are drawn only once kDrawingPace times as long as the drawing took has
  // passed: while facts keep arriving (thousands of agents connecting at
  // once) drawings of a large fabric would otherwise follow each other
  // back to back, taking a core from the ingest they wait on. A change of
  // the declared topology is drawn at the next poll all the same.
  void Start(absl::Duration poll);
  static constexpr int kDrawingPace = 3;
  void Stop();

  std::shared_ptr<const TopologyViews> Current() const override;

  // HELP, TYPE and samples of the fabricdiag_topology_* families
  // (docs/metrics.md).
  void AppendMetrics(std::string* out) const;

 private:
  struct Built {
    std::shared_ptr<const TopologyViews> views;
    uint64_t rebuilds = 0;
    double rebuild_seconds = 0;  // of the last build
  };

  // The views of `facts` and the registry's topology now.
  std::shared_ptr<const TopologyViews> Build(
      const NodeFactsMap& facts, uint64_t generation,
      const RegistrySnapshot& declared) const;
  Built Latest() const;

  const NodeFactsStore* const facts_;
  const LayoutRegistry* const registry_;
  const TopologyBuilder* const builder_;
  const Clock* const clock_;

  // What the last build was drawn from: written by Refresh() only, read by
  // it and by Start()'s polling loop (built_declared_), which calls it:
  // one thread at a time, as Refresh() must be called.
  uint64_t built_generation_ = 0;
  std::shared_ptr<const v1::Topology> built_declared_;
  bool built_once_ = false;

  mutable std::mutex mu_;  // guards built_ (the pointer swap only)
  Built built_;

  std::mutex thread_mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace fabricdiag::collector
