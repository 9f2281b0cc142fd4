// The `agent_down` analyzer: which agents stopped reporting.
//
// A node whose agent has reported at least once and then stays silent for
// `AgentDownConfig::missed_intervals` (10) of its own sampling intervals is
// down; it is up again as soon as it reports. Nodes never heard from are
// not down: the collector cannot tell an agent that is not deployed yet
// from one that died (a layout naming hosts without agents is a different
// finding). No hysteresis: the missed intervals already are the debounce.
//
// In a collector cluster a node is judged as of when the collector its
// agent streams to last vouched for it (NodeLiveness::observed_until):
// while that collector's features do not arrive the node is unobserved,
// not silent, and keeps the state it had (docs/cluster.md).
//
// Severity is warning, not critical: a silent agent means the collector is
// blind on that node (its NICs are not watched), not that training is hurt;
// the node itself may be fine. When the node is actually dead, the job's own
// failure is the critical signal.
//
// A pure function of (node liveness states, now, config): the collector
// passes what its series store knows about each node (collector/
// agent_liveness.h) and feeds the findings to the FindingsStore.
//
//   std::vector<Finding> down =
//       AgentDownFindings(nodes, clock.Now(), config.agent_down);
//
// Thread-safe.
#pragma once

#include <string>
#include <vector>

#include "absl/time/time.h"
#include "absl/types/span.h"
#include "analysis/analysis_config.h"
#include "analysis/finding.h"

namespace fabricdiag::analysis {

inline constexpr char kAgentDownKind[] = "agent_down";

// What the collector knows about one node's agent.
struct NodeLiveness {
  std::string node;
  absl::Time last_report = absl::InfinitePast();
  // The agent's sampling interval; <= 0 means unknown (the config's
  // default_interval_seconds).
  absl::Duration interval = absl::ZeroDuration();
  bool ever_reported = false;
  // Until when the collector that holds the node's stream vouches for
  // `last_report` (in a cluster, another collector's node: when that
  // collector published it, its clock); InfiniteFuture for a node of this
  // collector, current by definition. The node is judged as of then, not
  // later: features that stop arriving (NATS failing, the collector cut
  // off) are not its agent's silence, so its state holds.
  absl::Time observed_until = absl::InfiniteFuture();
};

// Whether the node's agent counts as up at `now`, or at its
// `observed_until` when that is earlier (a node never heard from is not
// up).
bool IsAgentUp(const NodeLiveness& node, absl::Time now,
               const AgentDownConfig& config = {});

// Whether the node's agent is quiet at `now`, or at its `observed_until`
// when that is earlier (as IsAgentUp judges it): it missed its latest
// report (silent for more than one of its intervals) but is not down yet.
// An agent restarting (a package upgrade) or reports late in a burst: what
// the analyzers do not see of such a node is unknown, not healthy
// (Hysteresis::Step holds its findings). Another collector's node is
// judged as of that collector's slice: its age on the way (up to the
// merge's freshness limit) is not the agent's silence. A node whose
// collector's features stopped arriving is flagged apart
// (collector::NodeFacts::unobserved).
bool IsAgentQuiet(const NodeLiveness& node, absl::Time now,
                  const AgentDownConfig& config = {});

// One `agent_down` finding per down node, in the order given. job and group
// are empty (an agent is not part of a job), device is empty, evidence
// holds silence_seconds, interval_seconds and missed_intervals, and
// evidence_text the last report time (RFC 3339).
std::vector<Finding> AgentDownFindings(absl::Span<const NodeLiveness> nodes,
                                       absl::Time now,
                                       const AgentDownConfig& config = {});

// "12 s", "250 ms", "4 min 5 s", "2 h 3 min": durations as ops read them.
std::string HumanDuration(absl::Duration d);

}  // namespace fabricdiag::analysis
