#include "collector/topology/lldp_topology_builder.h"

#include <utility>

#include "analysis/lldp_topology.h"

namespace fabricdiag::collector {

BuiltTopology LldpTopologyBuilder::Build(
    const std::vector<const v1::NodeFacts*>& facts,
    const v1::Topology* declared) const {
  analysis::DiscoveredTopology found =
      analysis::DiscoverTopology(facts, declared);
  BuiltTopology out;
  out.effective = analysis::EffectiveTopology(declared, found.topology);
  out.discovered = std::move(found.topology);
  out.problems = std::move(found.problems);
  return out;
}

}  // namespace fabricdiag::collector
