// straggler_nic: a NIC of a data-parallel or expert-parallel group that
// moves far fewer bytes than the other members while the group is busy.
//
// DP gradient all-reduces (ring or tree) and EP all-to-alls are collective:
// every member finishes only when the slowest has. Members of one group
// carry about the same bytes in a healthy job, so a member well below the
// group's median (its RX + TX) is the one the others wait for: a link
// running at half speed, a NIC behind a degraded PCIe slot, a throttled GPU
// or a host busy with something else. The median is robust: one hot member
// (hot_expert_incast) does not move it, so it never turns its peers into
// stragglers.
//
// Peers are not enough in an expert-parallel job: routing skew is by design
// there, and a healthy NIC may carry half its group's median for as long as
// the job runs. So a member is also judged against its own history, a
// baseline of its throughput in past passes (StragglerBaselines): it is a
// straggler only if it fell below a fraction of that too. Without a
// baseline yet (a new job, a restarted collector) a NIC of a dense job is
// judged on its group alone, one of an expert-parallel job not at all.
//
// A mean is evidence only when its samples cover the window evenly: a NIC
// whose counters were read late or stale (zeros, then a lump that catches
// up) is skipped, neither judged nor compared against (PortView::samples).
//
// A member whose port is down is left to link_flap; a member on a link
// running below its expected rate IS reported (link_degraded reports the
// link too, this finding says which group it slows down).
//
//   StragglerBaselines baselines;   // kept across passes
//   AnalysisInput in{&view, {&model}, &topology, &config};
//   in.straggler_baselines = &baselines;
//   for (const Finding& f : StragglerNicFindings(in)) { ... }
//   baselines.Update(in);           // once per pass, window view only
//
// Pure given the baselines: same input, same findings, sorted by job, then
// dp groups before ep groups by index, then member order.
#pragma once

#include <vector>

#include "analysis/analyzer.h"
#include "analysis/finding.h"
#include "analysis/layout_model.h"
#include "analysis/straggler_baselines.h"

namespace fabricdiag::analysis {

inline constexpr char kStragglerNicKind[] = "straggler_nic";

// One finding per (job, group, straggling NIC) over the dp and ep groups of
// every job (degree > 1). A NIC straggling in both its dp and its ep group
// is reported once per group; when an ep group has exactly the NICs of an
// already examined dp group (tp=8 dp=8 ep=8 on 8-GPU hosts), the comparison
// is the same one and only the dp group reports it, naming the ep group in
// evidence_text "same_nics_as". Thresholds: AnalysisConfig::straggler_nic
// (and link_degraded.min_rate_fraction to call a link slow in the summary);
// baselines from in.straggler_baselines. Returns nothing when `in.view` or
// `in.config` is null.
std::vector<Finding> StragglerNicFindings(const AnalysisInput& in);

}  // namespace fabricdiag::analysis
