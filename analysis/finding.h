// What an analyzer reports: one condition it sees in one analysis pass.
//
// Analyzers are pure functions from (rates, layouts, topology, node
// liveness) to a list of Findings; the collector's FindingsStore takes the
// list of each pass as it is and turns it into the open / update / resolve
// lifecycle of wire findings (v1::Finding, analysis/finding_wire.h), keyed by
// (kind, job, node, device, group). A Finding names the job, the parallel
// group, the node and device and the evidence in numbers, in words an ops
// engineer acts on.
//
//   Finding f;
//   f.kind = kPfcStormKind;
//   f.severity = Severity::kCritical;
//   f.node = "gpu-003";
//   f.evidence["pause_fraction"] = 0.62;
#pragma once

#include <map>
#include <string>
#include <vector>

namespace fabricdiag::analysis {

enum class Severity { kInfo, kWarning, kCritical };

// Every finding kind, each with its section in docs/findings.md (the runbook
// anchor a finding links to); the collector pre-declares a metric series
// for each.
inline constexpr const char* kKnownFindingKinds[] = {
    "hot_expert_incast", "pfc_storm",     "ecmp_imbalance", "tp_cross_node",
    "link_errors",       "link_flap",     "link_degraded",  "retransmissions",
    "congestion",        "straggler_nic", "agent_down",     "cabling_mismatch",
    "agent_missing"};

// Evidence every threshold finding carries, so an operator sees how sure
// the finding is (docs/findings.md, "How sure a finding is"):
// - how far past its threshold the deciding signal is: the signal over the
//   threshold, or the threshold over the signal where the fault is a value
//   that is too low (a straggler, a slow link); >= 1 while the condition
//   holds. Set by the analyzer; absent where there is no threshold (a
//   layout fact, a link that went down).
inline constexpr char kOverThresholdEvidence[] = "over_threshold";
// How many analysis passes (one per interval) the condition has held since
// it was first seen. Set by the Hysteresis.
inline constexpr char kIntervalsHeldEvidence[] = "intervals_held";
// The evidence_text naming the fault in words that stay the same while it
// lasts, set where the port an analyzer names can move during one fault (a
// PFC storm without a visible source is named by its most-paused victim,
// which changes from pass to pass). Findings of one kind and group naming
// the same fault are one finding: the Hysteresis keeps the job, node and
// device of the first one it tracked for as long as it tracks the fault. In
// evidence_text so that it crosses the wire and a restart (Hysteresis::Seed).
inline constexpr char kFaultEvidence[] = "fault";

struct Finding {
  std::string kind;  // one of kKnownFindingKinds
  Severity severity = Severity::kWarning;
  std::string job;                 // "" when no job is concerned
  std::string node;                // the node to look at first
  std::vector<std::string> nodes;  // every node involved
  std::string device;  // RDMA device, netdev or switch port; may be ""
  std::string group;   // "tp:5", "ep:3"; "" when none
  std::string summary;
  std::map<std::string, double> evidence;
  std::map<std::string, std::string> evidence_text;
  // The labels of the job's layout (team, project: docs/layout-format.md),
  // set by the collector as it takes the pass's findings, not by the
  // analyzers; empty for a finding of no job.
  std::map<std::string, std::string> labels;
  // Opens at once instead of after HysteresisConfig::open_after passes: the
  // evidence is an event, not a level (a pause-storm event, a link that
  // went down). Read by the Hysteresis only; not part of the wire finding.
  bool immediate = false;
};

}  // namespace fabricdiag::analysis
