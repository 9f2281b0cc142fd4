// link_degraded: ports that are up but trained below the speed they should
// run at.
//
// A link auto-negotiates width and lane speed; a dirty connector, a damaged
// lane or a wrong cable makes it come up at fewer lanes (400 Gb/s 4X NDR at
// 2X = 200 Gb/s) or a lower generation, and it stays there silently. The
// port then caps every collective that crosses it.
// - When the view knows the expected rate (verbs active width x lane speed
//   at full width), a port below LinkDegradedConfig::min_rate_fraction x
//   expected is degraded.
// - Otherwise the port is compared with the median of its node's peer ports
//   of the same kind (the other RDMA NIC ports of a host; the other plain
//   netdevs of a host; a switch's downlinks, or its uplinks when the topology
//   lists them), when there are at least kMinPeers of them that are up: GPU
//   nodes and leaf switches are built with identical links per kind.
// Ports that are down are link_flap's business and skipped here.
//
//   std::vector<Finding> found = LinkDegradedFindings(in);
//
// Pure: same input, same findings, sorted by (node, device).
#pragma once

#include <string>
#include <vector>

#include "analysis/analyzer.h"
#include "analysis/finding.h"

namespace fabricdiag::analysis {

inline constexpr char kLinkDegradedKind[] = "link_degraded";

// Fewest peer ports whose median stands for "what this port should run at";
// with one peer there is no telling which of the two is wrong.
inline constexpr int kMinPeers = 2;

// "400 Gb/s", "12.5 Gb/s", "1600 Gb/s": link rates the way ops people read
// them (bits, decimal), from bytes/s.
std::string FormatLinkRate(double bytes_per_second);

// One warning per degraded port. Evidence: link_rate_bytes_per_second,
// rate_fraction, and expected_rate_bytes_per_second or
// peer_median_link_rate_bytes_per_second with peer_ports.
std::vector<Finding> LinkDegradedFindings(const AnalysisInput& in);

}  // namespace fabricdiag::analysis
