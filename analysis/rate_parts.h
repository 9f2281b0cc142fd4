// The rate analyzers cut where their data is, and what one part's findings
// excuse in another's.
//
// RunRateAnalyzers (analysis/analyzer.h) runs every rate analyzer over the
// whole fabric. Cut into shards (analysis/shard_map.h), each analyzer runs
// over the ports it compares, and three parts cover them all:
//   - the port part, over any set of whole nodes (a collector's own
//     agents): congestion, link_errors, link_flap, link_degraded,
//     retransmissions, cabling_mismatch judge one port at a time
//     (congestion against the fabric's medians, given as
//     in.congestion_baselines: analysis/congestion.h);
//   - a job shard: hot_expert_incast and straggler_nic compare a job's NICs
//     with their groups;
//   - a switch shard: ecmp_imbalance compares a leaf's uplinks, pfc_storm
//     follows pause from a source to its victims across its switch.
// Some findings explain others, which then say less than their cause: an
// incast explains its hot NICs' congestion and its switch's uplink skew; a
// PFC storm, a flapping link or a slow-trained one explains a straggler.
// Those cross parts, so each part says what its findings excuse
// (RatePart::excuses), and the excuses of every part, merged, drop the
// findings they explain (Excuse). Over the whole fabric as one part of each
// kind that is RunRateAnalyzers, which is written so.
//
//   RateExcuses all;
//   for (const RatePart& p : parts) all.Merge(p.excuses);
//   for (RatePart& p : parts) Excuse(all, &p.findings);
//
// Pure; thread-compatible: the input is read-only.
#pragma once

#include <cstddef>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "analysis/analyzer.h"
#include "analysis/congestion.h"
#include "analysis/finding.h"
#include "analysis/tp_cross_node.h"

namespace fabricdiag::analysis {

// What findings explain, by the port or node they would be reported on.
struct RateExcuses {
  using Port = std::pair<std::string, std::string>;  // (node, device)
  // Ports whose congestion an incast explains: its hot NICs, and those
  // halfway into one (half the incast ratio, which already sends the
  // incast's CNPs: congestion does not flicker open around it).
  std::set<Port> congestion;
  // Nodes and switches whose ECMP skew an incast explains: the hot NICs'
  // nodes and the switches they hang off.
  std::set<std::string> ecmp;
  // NICs slow for a reason: a PFC storm's ports, a flapping link, a link
  // trained slow.
  std::set<Port> straggler;

  void Merge(const RateExcuses& other);
  bool empty() const {
    return congestion.empty() && ecmp.empty() && straggler.empty();
  }
};

struct RatePart {
  // Candidate findings, the excusable ones among them until Excuse().
  std::vector<Finding> findings;
  // What `findings` explain elsewhere.
  RateExcuses excuses;
};

// What one collector's parts found over one view of a pass, for the
// others (cluster/part_news.h carries it): what their findings excuse, and
// the histograms of its own ports' congestion signals, which merged give
// every collector the fabric's medians.
struct ViewNews {
  RateExcuses excuses;
  CongestionHistograms congestion;
};

// What a job shard's owner measured of a job's TP groups that leave their
// NVLink domain (analysis/tp_cross_node.h), for whoever raises tp_cross_node.
struct JobTpLoads {
  std::string job;
  std::vector<TpGroupLoad> groups;  // ascending groups
};

// A collector's news of one pass: its window view's, and its newest
// samples' when the pass had them; and its job shards' TP crossings, as of
// their windows.
struct PartNews {
  std::string collector_id;
  absl::Time published = absl::UnixEpoch();
  ViewNews window;
  std::optional<ViewNews> recent;
  std::vector<JobTpLoads> tp_loads;
};

// Whether `kind` is reported by the port part (one port at a time): a
// finding of it belongs to whoever holds its node.
bool IsPortPartKind(absl::string_view kind);

// How many ports (~650 bytes each) the port part's analyzers judge at a
// time: ~650 KB, within a core's L2 (1 MB on the machine measured; runs
// of 128 to 4,096 ports cost about the same there: BM_PortPart).
inline constexpr size_t kJudgedPortsPerRun = 1024;

// The per-port analyzers over in.view (any set of whole nodes), judging
// its ports in runs of whole nodes of about `ports_per_run` each (each run
// read by every analyzer while it is in cache): what they find over the
// whole view at once, in the same order.
RatePart RunPortPart(const AnalysisInput& in,
                     size_t ports_per_run = kJudgedPortsPerRun);
// The job analyzers over in.view, which holds whole jobs' NICs (a job
// shard).
RatePart RunJobPart(const AnalysisInput& in);
// The switch analyzers over in.view, which holds whole switches' ports and
// the host NICs cabled to them (a switch shard).
RatePart RunSwitchPart(const AnalysisInput& in);

// Drops the findings `excuses` explain: congestion on a port of
// `congestion`, ecmp_imbalance on a node of `ecmp`, straggler_nic on a NIC
// of `straggler`.
void Excuse(const RateExcuses& excuses, std::vector<Finding>* findings);

}  // namespace fabricdiag::analysis
