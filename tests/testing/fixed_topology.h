// A TopologySource that always serves the same views, for tests of what
// reads topologies (the analysis runner) without a keeper redrawing them.
//
//   FixedTopology topology;                   // nothing declared or heard
//   FixedTopology topology(declared_proto);   // effective = declared
//   FixedTopology topology(views);            // all three chosen
//   auto declared = FixedTopology::Declared(proto);  // declared = effective
#pragma once

#include <memory>
#include <utility>

#include "analysis/cabling_mismatch.h"
#include "analysis/topology_index.h"
#include "collector/topology/topology_views.h"
#include "proto/layout.pb.h"

namespace fabricdiag::testing {

class FixedTopology final : public collector::TopologySource {
 public:
  explicit FixedTopology(v1::Topology effective = {}) {
    auto views = std::make_shared<collector::TopologyViews>();
    views->discovered = std::make_shared<const v1::Topology>();
    auto shared = std::make_shared<const v1::Topology>(std::move(effective));
    views->effective_index =
        std::make_shared<const analysis::TopologyIndex>(shared.get());
    views->effective = std::move(shared);
    views_ = std::move(views);
  }

  explicit FixedTopology(std::shared_ptr<const collector::TopologyViews> views)
      : views_(std::move(views)) {}

  // `declared` as a topology file gives it: declared and effective, nothing
  // discovered.
  static FixedTopology Declared(v1::Topology declared) {
    auto views = std::make_shared<collector::TopologyViews>();
    views->discovered = std::make_shared<const v1::Topology>();
    auto shared = std::make_shared<const v1::Topology>(std::move(declared));
    views->effective_index =
        std::make_shared<const analysis::TopologyIndex>(shared.get());
    views->declared = shared;
    views->declared_version = 1;
    views->cabling = std::make_shared<const analysis::CablingMismatches>(
        analysis::CablingMismatchesOf(*views->declared, *views->discovered));
    views->effective = std::move(shared);
    return FixedTopology(std::move(views));
  }

  std::shared_ptr<const collector::TopologyViews> Current() const override {
    return views_;
  }

 private:
  std::shared_ptr<const collector::TopologyViews> views_;
};

}  // namespace fabricdiag::testing
