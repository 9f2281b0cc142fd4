// cabling_mismatch: a declared host link or switch link that LLDP
// contradicts.
//
// The topology file says host NIC X (or switch port X, in switch_links) is
// cabled to switch port P; the LLDP neighbor the fabric reports for X
// (analysis/lldp_topology.h) is another port, or another switch. Every
// analysis that follows the cable (far ends, PFC victims, ECMP per leaf)
// then points the technician at the wrong port, so the declaration or the
// cable has to be fixed. A declared link LLDP has not reported (lldpd not
// running on the host, the switch not read yet) is not a mismatch: silence
// proves nothing.
//
// Identity is (host, NIC), or (switch, port) for each end of a switch link
// that hears another far end: the finding stays the same one while the fault
// lasts, whichever job uses the NIC, and resolves when the cable is moved
// back or the declaration is changed (`fabricdiag topology adopt`). Warning:
// the fabric itself may work; the diagnosis is what goes wrong.
//
//   std::vector<Finding> found = CablingMismatchFindings(in);
//
// Pure: same input, same findings, sorted by (node, device).
#pragma once

#include <vector>

#include "analysis/analyzer.h"
#include "analysis/finding.h"
#include "proto/layout.pb.h"

namespace fabricdiag::analysis {

inline constexpr char kCablingMismatchKind[] = "cabling_mismatch";

// What two topologies alone say: the findings CablingMismatchFindings()
// gives, but for the job evidence, which depends on the layouts. The
// topologies change far less often than a pass runs, and comparing them
// reads every declared link (a million at 1M GPUs), so whoever keeps them
// computes this once per pair (AnalysisInput::cabling_mismatches).
struct CablingMismatches {
  // One per declared host link whose NIC LLDP cables elsewhere.
  std::vector<Finding> host_links;
  // One per end of a declared switch link cabled to another far end.
  std::vector<Finding> switch_links;
};
CablingMismatches CablingMismatchesOf(const v1::Topology& declared,
                                      const v1::Topology& discovered);

// One finding per declared link of in.declared_topology whose NIC
// in.discovered_topology cables elsewhere, and one per end of a declared
// switch link whose port it cables to another far end; none when either
// topology is null. Evidence text: declared_switch, declared_port (the
// declared far end), observed_switch, observed_port, and for a host link
// job when one job's layout uses the NIC. From in.cabling_mismatches when
// given (which must be of these two topologies), else compared here.
std::vector<Finding> CablingMismatchFindings(const AnalysisInput& in);

}  // namespace fabricdiag::analysis
