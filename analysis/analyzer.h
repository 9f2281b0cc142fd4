// The input every rate analyzer takes, and the list of analyzers.
//
// An analyzer is a pure function: AnalysisInput in, candidate findings out.
// "Candidate" because the hysteresis (analysis/hysteresis.h) decides when a
// condition has held long enough to open a finding and been clear long
// enough to resolve it; an analyzer only says what it sees in this window.
//
//   AnalysisInput in{&view, layouts, &topology, &config};
//   std::vector<Finding> found = RunRateAnalyzers(in);
//
// Pure and thread-compatible: the input is read-only.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "analysis/analysis_config.h"
#include "analysis/fabric_view.h"
#include "analysis/finding.h"
#include "analysis/layout_model.h"
#include "analysis/topology_index.h"
#include "proto/layout.pb.h"

namespace fabricdiag::analysis {

struct CablingMismatches;    // analysis/cabling_mismatch.h
struct CongestionBaselines;  // analysis/congestion.h
class NicPorts;              // analysis/nic_ports.h
class StragglerBaselines;    // analysis/straggler_nic.h

struct AnalysisInput {
  const FabricView* view = nullptr;
  // Every declared job's validated layout.
  std::vector<const LayoutModel*> layouts;
  // The effective fabric topology (analysis/lldp_topology.h): what is
  // declared, and for what is not, what LLDP discovered; empty (no
  // switches, no links) when there is neither.
  const v1::Topology* topology = nullptr;
  // An index of `topology`, built once when the topology changes; may be
  // null (RunRateAnalyzers then builds one per pass).
  const TopologyIndex* topology_index = nullptr;
  // The two topologies `topology` is made of, for the analyzers that
  // compare them (cabling_mismatch); null when there is none (no topology
  // file; no LLDP neighbor reported).
  const v1::Topology* declared_topology = nullptr;
  const v1::Topology* discovered_topology = nullptr;
  // What those two topologies say of each other (CablingMismatchesOf),
  // computed once when they changed; null: cabling_mismatch compares them
  // each pass.
  const CablingMismatches* cabling_mismatches = nullptr;
  const AnalysisConfig* config = nullptr;
  // Every NIC's own throughput in past passes, for straggler_nic; may be
  // null (no NIC has a baseline then). The caller owns it across passes and
  // updates it once per pass from the window view.
  const StragglerBaselines* straggler_baselines = nullptr;
  // The ports of the layouts' NICs in `view`, resolved once for every
  // analyzer of a pass; may be null, or built for another view (an
  // analyzer then resolves them itself). RunRateAnalyzers builds it.
  const NicPorts* nic_ports = nullptr;
  // What congestion compares each port with; null: the medians over `view`.
  // A part of the fabric (analysis/rate_parts.h) is given the whole's.
  const CongestionBaselines* congestion_baselines = nullptr;
  // When not empty, the analyzers that judge one port at a time (the port
  // part's: congestion, link_errors, link_flap, link_degraded,
  // retransmissions) judge only these ports of `view`, a run of whole
  // nodes; empty: every port of `view`. RunPortPart walks a large view in
  // runs small enough to stay in cache while each of them reads the run.
  absl::Span<const PortView> judged;
};

// in.judged, or when empty every port of in.view (which must not be null).
inline absl::Span<const PortView> JudgedPorts(const AnalysisInput& in) {
  return in.judged.empty() ? in.view->ports() : in.judged;
}

// in.topology_index, or an index of in.topology built into *local when the
// caller gave none (tests and one-off callers).
const TopologyIndex& IndexOf(const AnalysisInput& in,
                             std::optional<TopologyIndex>* local);

// The one job whose layout places ranks on host `node`'s NIC, named by its
// RDMA device or its netdev (either may be ""); "" when no job or several
// jobs use it.
std::string JobOfNic(const AnalysisInput& in, absl::string_view node,
                     absl::string_view device, absl::string_view netdev);

// Every rate analyzer of analysis/, in a fixed order.
std::vector<Finding> RunRateAnalyzers(const AnalysisInput& in);

}  // namespace fabricdiag::analysis
