// The seam between the TopologyKeeper (when to rebuild, where the result
// goes) and the pure code that draws a topology from LLDP neighbors
// (analysis/): the keeper's tests count and hold builds through it.
//
//   BuiltTopology built = builder.Build(facts, declared.get());
//
// Implementations are pure and thread-compatible.
#pragma once

#include <string>
#include <vector>

#include "proto/ingest.pb.h"
#include "proto/layout.pb.h"

namespace fabricdiag::collector {

struct BuiltTopology {
  v1::Topology discovered;
  v1::Topology effective;
  std::vector<std::string> problems;
};

class TopologyBuilder {
 public:
  virtual ~TopologyBuilder() = default;
  // The topology `facts` draw and the effective one with `declared` (null
  // when none is declared).
  virtual BuiltTopology Build(const std::vector<const v1::NodeFacts*>& facts,
                              const v1::Topology* declared) const = 0;
};

}  // namespace fabricdiag::collector
