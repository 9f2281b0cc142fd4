// The TopologyBuilder of the product: the pure LLDP discovery and the
// effective topology of analysis/lldp_topology.h.
//
//   LldpTopologyBuilder builder;
//   TopologyKeeper keeper(&facts, &registry, &builder, &clock);
//
// Stateless; thread-safe.
#pragma once

#include <vector>

#include "collector/topology/topology_builder.h"

namespace fabricdiag::collector {

class LldpTopologyBuilder final : public TopologyBuilder {
 public:
  BuiltTopology Build(const std::vector<const v1::NodeFacts*>& facts,
                      const v1::Topology* declared) const override;
};

}  // namespace fabricdiag::collector
