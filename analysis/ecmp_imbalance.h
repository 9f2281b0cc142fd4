// ecmp_imbalance: a switch's ECMP group towards the spines carries its load
// on a few uplinks while others idle.
//
// ECMP hashes each flow's 5-tuple onto one uplink. RDMA training traffic is
// a handful of long, fat flows (one per QP) with near-identical headers, so
// the hash collides: two flows share one uplink at half speed while another
// uplink is idle, and every collective waits for the slowest flow.
//
// Switch-side (a switch in in.topology reporting >= 2 of its uplinks, as
// ports with node = switch name, device = uplink name): TX bytes/s of the
// reporting uplinks; max/mean >= EcmpImbalanceConfig::max_over_mean while
// the mean is busy (>= min_mean_utilization x the uplinks' link rate, or
// min_mean_bytes_per_second when the rate is unknown). One warning per
// switch ECMP group, device = kEcmpUplinkGroup whichever uplinks are hot:
// when polarization piles flows onto two uplinks the hottest of them
// alternates from pass to pass, and one fault must keep one finding. The hot
// uplinks (each >= max_over_mean x the mean) are its evidence.
//
// Host-side (no switch telemetry: the NIC's switch, per the topology links,
// reports fewer than 2 uplinks, or the NIC has no link in the topology): the
// NICs of one job on the same rail (the same local NIC name on every host of
// the layout) carry equal collective traffic, so their senders should see
// similar congestion. A NIC whose cnp_handled (CNPs it slowed down for) is
// >= cnp_over_median x the rail's median and >= min_cnp_per_second sends
// through a congested path the others avoid: ECMP hashing may be polarizing
// the rail's flows. Needs >= kMinEcmpRailNics reporting NICs on the rail.
//
// Incast skews the same signals (a hot expert behind one downlink, senders
// to it receiving CNPs). Which candidates it explains is decided by the
// caller, which knows hot_expert_incast's findings of the same pass: pass
// `explained_by_incast`; a candidate for which it returns true is dropped.
//
//   AnalysisInput in{&view, layouts, &topology, &config};
//   auto found = EcmpImbalanceFindings(in, [&](const Finding& candidate) {
//     return incast_nodes.contains(candidate.node);
//   });
//
// Pure: same input, same findings, sorted by (node, device, job).
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

#include "analysis/analyzer.h"
#include "analysis/finding.h"

namespace fabricdiag::analysis {

inline constexpr char kEcmpImbalanceKind[] = "ecmp_imbalance";
// The device of a switch-side finding: the switch's ECMP group towards the
// next tier (its topology `uplinks`), not one port of it.
inline constexpr char kEcmpUplinkGroup[] = "uplinks";

// Fewest reporting NICs on a rail whose median means anything.
inline constexpr size_t kMinEcmpRailNics = 3;

// True when incast explains the candidate's skew: the caller drops it.
using ExplainedByIncast = std::function<bool(const Finding& candidate)>;

// Warning findings, group "": switch-side (job "", node = the switch) and
// host-side (job = the layout's job, node = the host). Empty when in.view or
// in.config is null.
std::vector<Finding> EcmpImbalanceFindings(const AnalysisInput& in);
// The same, dropping the candidates `explained_by_incast` (may be empty)
// returns true for.
std::vector<Finding> EcmpImbalanceFindings(
    const AnalysisInput& in, const ExplainedByIncast& explained_by_incast);

}  // namespace fabricdiag::analysis
