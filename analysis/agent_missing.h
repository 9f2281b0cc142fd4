// The `agent_missing` analyzer: hosts the topology lists whose agent has
// never reported.
//
// A host of the declared topology (a `links:` entry) is part of the fabric
// the operator expects to see. When no agent reports under its name, the
// collector is blind on its NICs, and before this finding nothing said so:
// `agent_down` needs a node that reported once. The usual causes are an
// agent not deployed or not started, one pointed at another collector
// cluster, and a name that differs from the topology's (`--node` or the
// host name is `gpu-007.example.com`, the topology says `gpu-007`): the
// finding names an agent that reports under such a near name.
//
// A host is missing once the collector has watched the whole fabric for
// `AgentMissingConfig::after_seconds` (120) without hearing from it: the
// caller starts that clock per host when it first sees the host expected
// and unheard, and restarts it when it cannot see the whole fabric (in a
// cluster, a collector's features not arriving). 120 s covers agents
// reconnecting after a collector restart (their backoff reaches 30 s) and
// a fleet's connect storm. No hysteresis: the wait is the debounce. It
// resolves when the host reports, leaves the topology, or is forgotten
// (`fabricdiag nodes forget`).
//
//   std::vector<Finding> missing =
//       AgentMissingFindings(expected, unlisted, now, config.agent_missing);
//
// Pure; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "absl/time/time.h"
#include "absl/types/span.h"
#include "analysis/analysis_config.h"
#include "analysis/finding.h"

namespace fabricdiag::analysis {

inline constexpr char kAgentMissingKind[] = "agent_missing";

// A host the topology lists and no agent has reported from.
struct ExpectedHost {
  std::string node;
  // The host's links in the topology, and the switches they reach (sorted,
  // each once).
  int links = 0;
  std::vector<std::string> switches;
  // Since when the caller has watched for the host without hearing from it.
  absl::Time unheard_since = absl::InfinitePast();
  // Its finding is open already (a new analysis term or a restarted
  // collector keeps it open without waiting again).
  bool open = false;
};

// One finding per host of `hosts` unheard for `config.after_seconds` (or
// already open), in the order given; none when after_seconds is 0 (the
// check is off). `reporting` lists the nodes that report but that the
// topology does not list: one whose name differs from a host's only in
// case or in a domain suffix is named in that host's finding. Severity
// warning; job, device and group empty; evidence `links`,
// `unheard_seconds`, text `unheard_since` (RFC 3339), `switches` and, when
// found, `reporting_as`.
std::vector<Finding> AgentMissingFindings(
    absl::Span<const ExpectedHost> hosts,
    absl::Span<const std::string> reporting, absl::Time now,
    const AgentMissingConfig& config = {});

}  // namespace fabricdiag::analysis
