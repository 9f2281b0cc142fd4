// Which agents stopped reporting: the `agent_down` findings.
//
// A node whose agent has reported at least once and then stays silent for
// `missed_intervals` (3) of its own sampling intervals is down; it is up
// again as soon as it reports. Nodes never heard from are not down: the
// collector cannot tell an agent that is not deployed yet from one that
// died (a layout naming hosts without agents is a different finding).
//
// Severity is warning, not critical: a silent agent means the collector is
// blind on that node (its NICs are not watched), not that training is hurt;
// the node itself may be fine. When the node is actually dead, the job's own
// failure is the critical signal.
//
// Pure functions of (node states, now): the caller (the analysis runner)
// passes what the series store knows, and feeds the reports to
// FindingsStore::Update(..., kAgentLivenessSource). Thread-safe.
//
//   std::vector<analysis::Finding> down = AgentDownFindings(nodes,
//   clock.Now()); findings.Update(down, clock.Now(),
//   kAgentLivenessSource).IgnoreError();
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "absl/types/span.h"
#include "analysis/finding.h"
#include "proto/collector.pb.h"

namespace fabricdiag::collector {

inline constexpr char kAgentDownKind[] = "agent_down";
inline constexpr char kAgentLivenessSource[] = "agent_liveness";

// What the collector knows about one node's agent.
struct NodeLiveness {
  std::string node;
  absl::Time last_report = absl::InfinitePast();
  // The agent's sampling interval; <= 0 means unknown (kDefaultInterval).
  absl::Duration interval = absl::ZeroDuration();
  bool ever_reported = false;
};

struct LivenessOptions {
  int missed_intervals = 3;
  // Used when an agent did not say its interval.
  absl::Duration default_interval = absl::Seconds(1);
};

// Whether the node's agent counts as up at `now` (a node never heard from
// is not up).
bool IsAgentUp(const NodeLiveness& node, absl::Time now,
               const LivenessOptions& options = {});

// One `agent_down` report per down node, in the order given. job and group
// are empty (an agent is not part of a job), device is empty, evidence
// holds silence_seconds, interval_seconds and missed_intervals, and
// evidence_text the last report time (RFC 3339).
std::vector<analysis::Finding> AgentDownFindings(
    absl::Span<const NodeLiveness> nodes, absl::Time now,
    const LivenessOptions& options = {});

// The node state an `agent_down` finding recorded (its last report and
// interval), for a collector that restarted and has not heard from the
// node since; nullopt when the finding lacks them.
std::optional<NodeLiveness> LivenessFromFinding(const v1::Finding& finding);

// "12 s", "250 ms", "4 min 5 s", "2 h 3 min": durations as ops read them.
std::string HumanDuration(absl::Duration d);

}  // namespace fabricdiag::collector
