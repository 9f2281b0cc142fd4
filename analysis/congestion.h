// congestion: ports where RoCE congestion control is working far harder than
// anywhere else in the fabric (ECN/CNP hotspots).
//
// A switch queue above its ECN threshold CE-marks packets (RFC 3168); the
// receiving NIC (DCQCN notification point) answers with CNPs (mlx5
// np_cnp_sent, docs/counters.md) and the sender slows down. Some
// marking is normal under load; a port marked many times more than the
// fabric's typical port sits behind a congested queue (a hot downlink, a
// slow receiver, a misconfigured ECN threshold).
//
// Host NIC ports: the signal is cnp_sent, or ecn_marked when the NIC does
// not report CNPs; the baseline is the median of that signal over every host
// NIC port that reports one (at least kMinCongestionBaseline ports), or
// in.congestion_baselines when given. A port
// is a hotspot when it is >= CongestionConfig::cnp_per_second and >=
// over_median x that median. Switch ports reporting ecn_marked are compared
// the same way with the median of the switch ports.
//
// Incast is not excluded here: a hot expert also draws CNPs, and
// hot_expert_incast explains it better. RunRateAnalyzers' caller drops a
// congestion finding when hot_expert_incast reports the same (node, device)
// in the same pass.
//
//   AnalysisInput in{&view, layouts, &topology, &config};
//   for (const Finding& f : CongestionFindings(in)) { ... }
//
// Pure: same input, same findings, in view order (node, device).
#pragma once

#include <cstddef>
#include <vector>

#include "analysis/analyzer.h"
#include "analysis/fabric_view.h"
#include "analysis/finding.h"

namespace fabricdiag::analysis {

inline constexpr char kCongestionKind[] = "congestion";

// Fewest reporting ports whose median is a baseline: with two, the median is
// half the suspect itself.
inline constexpr size_t kMinCongestionBaseline = 3;

// What each kind of port is compared with: the median of its signal over
// the ports of that kind that report it. Over a whole fabric cut into parts
// (analysis/rate_parts.h) each part is given the fabric's.
struct CongestionBaselines {
  struct Of {
    double median = 0;
    size_t ports = 0;  // below kMinCongestionBaseline: no baseline
  };
  Of hosts;
  Of switches;
};

// The baselines over `view`'s ports (what CongestionFindings uses when
// in.congestion_baselines is null).
CongestionBaselines CongestionBaselinesOf(const FabricView& view);

// Warning findings, one per hotspot port; job = the one job whose layout
// places ranks on that NIC ("" otherwise, and for switch ports), group "".
// Empty when in.view or in.config is null.
std::vector<Finding> CongestionFindings(const AnalysisInput& in);

}  // namespace fabricdiag::analysis
