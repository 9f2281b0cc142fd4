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

namespace fabricdiag::analysis {

inline constexpr char kCablingMismatchKind[] = "cabling_mismatch";

// One finding per declared link of in.declared_topology whose NIC
// in.discovered_topology cables elsewhere, and one per end of a declared
// switch link whose port it cables to another far end; none when either
// topology is null. Evidence text: declared_switch, declared_port (the
// declared far end), observed_switch, observed_port, and for a host link
// job when one job's layout uses the NIC.
std::vector<Finding> CablingMismatchFindings(const AnalysisInput& in);

}  // namespace fabricdiag::analysis
