// hot_expert_incast: a NIC of an expert-parallel group that receives far
// more than the other members of its group, because the experts behind it
// draw more tokens than the router spreads to the rest.
//
// MoE layers exchange tokens with an all-to-all inside each EP group
// (dispatch, then combine). With a balanced router every member of a group
// receives about the same number of bytes, within the routing skew an
// auxiliary load-balancing loss leaves (~1.5-2x). When some experts become
// "hot", every other member sends to the NICs holding them at once: a
// many-to-one incast that fills the receiver's buffers, makes it the
// notification point of ECN-marked traffic (np_cnp_sent), and on a lossless
// fabric makes it transmit PFC pause that spreads the congestion upstream.
//
// The ratio is computed only between members of one EP group, which see
// symmetric traffic in a healthy job. Asymmetry the job is expected to have
// therefore never trips it: pipeline end stages differ from middle stages
// but each EP group lives inside one stage, and a data-parallel gradient
// burst raises every member of a group together.
//
//   AnalysisInput in{&view, {&model}, &topology, &config};
//   for (const Finding& f : HotExpertIncastFindings(in)) { ... }
//
// Pure: same input, same findings, sorted by job, then EP group index, then
// member order inside the group.
#pragma once

#include <vector>

#include "analysis/analyzer.h"
#include "analysis/finding.h"

namespace fabricdiag::analysis {

inline constexpr char kHotExpertIncastKind[] = "hot_expert_incast";

// One finding per (job, EP group, hot NIC). A NIC shared by several EP
// groups or jobs is judged, and reported, once in each of them. Thresholds:
// AnalysisConfig::hot_expert_incast. Returns nothing when `in.view` or
// `in.config` is null.
std::vector<Finding> HotExpertIncastFindings(const AnalysisInput& in);

}  // namespace fabricdiag::analysis
