// The three topologies the collector serves at one instant: the declared one
// (a file, `fabricdiag topology apply`), the one discovered over LLDP from
// the nodes' facts, and the effective one the analyzers read (what is
// declared, and for what is not declared, what is discovered), with the
// index of the effective one.
//
// A TopologySource hands out the latest TopologyViews; holding one never
// blocks a rebuild (it is immutable and swapped whole).
//
//   std::shared_ptr<const TopologyViews> views = source.Current();
//   in.topology = views->effective.get();
//   in.topology_index = views->effective_index.get();
//
// Implementations are thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "analysis/cabling_mismatch.h"
#include "analysis/topology_index.h"
#include "proto/layout.pb.h"

namespace fabricdiag::collector {

struct TopologyViews {
  // Null when no topology was declared.
  std::shared_ptr<const v1::Topology> declared;
  // LayoutRegistry's TopologyVersion of `declared` (0: none declared), what
  // an adopt compares before it writes.
  uint64_t declared_version = 0;
  // Never null; empty before any node reported LLDP neighbors.
  std::shared_ptr<const v1::Topology> discovered;
  // Never null; each link's `source` says where it comes from.
  std::shared_ptr<const v1::Topology> effective;
  // Of `effective`; never null.
  std::shared_ptr<const analysis::TopologyIndex> effective_index;
  // What `declared` and `discovered` say of each other, for
  // cabling_mismatch (AnalysisInput::cabling_mismatches); null when nothing
  // is declared, or when the source does not compare them (the analyzer
  // then does, each pass).
  std::shared_ptr<const analysis::CablingMismatches> cabling;
  // What the discovery could not place (a neighbor naming two switches, a
  // port claimed twice), one sentence each.
  std::vector<std::string> problems;
  // NodeFactsStore::Generation() the discovered topology was drawn from.
  uint64_t facts_generation = 0;
};

class TopologySource {
 public:
  virtual ~TopologySource() = default;
  // Never null.
  virtual std::shared_ptr<const TopologyViews> Current() const = 0;
};

}  // namespace fabricdiag::collector
