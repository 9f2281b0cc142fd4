// link_flap: ports that are down now, or went down and came back during the
// analysis window.
//
// Flap counters (docs/counters.md): IB PMA `link_downed` (link error
// recovery failed and the link went down), mlx5 ethtool
// `link_down_events_phy` and netdev `carrier_changes`, which counts every
// carrier transition, so one flap (down, then up) adds 2. The view holds
// them as events/s averaged over FabricView::window_seconds, so the events
// in the window are rate x window. The sources count the same flaps from
// different layers, so the estimate is their maximum, not their sum.
//
// - link_up == false: critical "down". A switch port is only reported when
//   the topology cables it or lists it as an uplink: most unused front-panel
//   ports are down by design.
// - any flap counter > 0: warning. Both are `immediate`: a flap is an event,
//   not a level, so waiting for the hysteresis' open_after passes would let
//   a single flap (which resets every RDMA connection on the port) vanish
//   unreported.
//
//   std::vector<Finding> found = LinkFlapFindings(in);
//
// Pure: same input, same findings, sorted by (node, device).
#pragma once

#include <vector>

#include "analysis/analyzer.h"
#include "analysis/finding.h"

namespace fabricdiag::analysis {

inline constexpr char kLinkFlapKind[] = "link_flap";

// One finding per port that is down or flapped. Evidence: flaps_in_window
// (estimated, rounded up to whole flaps), link_up (0/1), and every present
// counter as link_downed_per_second, link_down_events_per_second,
// carrier_changes_per_second, link_error_recovery_per_second.
std::vector<Finding> LinkFlapFindings(const AnalysisInput& in);

}  // namespace fabricdiag::analysis
