// What an analyzer reports: one condition it sees in one analysis pass.
//
// Analyzers are pure functions from (rates, layouts, topology) to a list of
// Findings; the collector's FindingsStore turns the list of each pass into
// the open / update / resolve lifecycle, keyed by (kind, job, node, device,
// group). A Finding names the job, the parallel group, the node and device
// and the evidence in numbers, in words an ops engineer acts on.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace fabricdiag::analysis {

enum class Severity { kInfo, kWarning, kCritical };

struct Finding {
  std::string kind;  // docs/findings.md finding kinds: "tp_cross_node", ...
  Severity severity = Severity::kWarning;
  std::string job;                 // "" when no job is concerned
  std::string node;                // the node to look at first
  std::vector<std::string> nodes;  // every node involved
  std::string device;  // RDMA device, netdev or switch port; may be ""
  std::string group;   // "tp:5", "ep:3"; "" when none
  std::string summary;
  std::map<std::string, double> evidence;
  std::map<std::string, std::string> evidence_text;
  // Opens at once instead of after HysteresisConfig::open_after passes: the
  // evidence is an event, not a level (a pause-storm event, a link that
  // went down).
  bool immediate = false;
};

}  // namespace fabricdiag::analysis
