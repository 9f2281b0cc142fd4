// The collector's side of `agent_down` (analysis/agent_down.h decides who
// is down): the findings source it reports as, and the node state an
// active `agent_down` finding recorded, so that a restarted collector keeps
// a node down until it reports again instead of forgetting it.
//
// The analysis runner builds the analyzer's input from what the series
// store knows about each node, adds the nodes only an active finding
// remembers, and feeds the findings to the store:
//
//   std::optional<analysis::NodeLiveness> l = LivenessFromFinding(active);
//   if (l.has_value()) nodes.push_back(*l);
//   findings.Update(analysis::AgentDownFindings(nodes, now, config),
//                   now, kAgentLivenessSource).IgnoreError();
//
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "analysis/agent_down.h"
#include "collector/store/series_store.h"
#include "proto/collector.pb.h"

namespace fabricdiag::collector {

// The FindingsStore source of the agent_down findings (persisted in the
// findings log: do not rename).
inline constexpr char kAgentLivenessSource[] = "agent_liveness";

// The node state an `agent_down` finding recorded (its last report and
// interval), for a collector that restarted and has not heard from the
// node since; nullopt when the finding lacks them.
std::optional<analysis::NodeLiveness> LivenessFromFinding(
    const v1::Finding& finding);

// What the series store knows of a node, as agent_down reads it.
analysis::NodeLiveness LivenessOf(const NodeInfo& info);
// The same from the node's last report and interval alone.
analysis::NodeLiveness LivenessOf(std::string node, absl::Time last_report,
                                  uint32_t interval_ms);

// agent_down's rule as the up state of ListNodes(): up while the node's
// agent has missed fewer than `config.missed_intervals` of its intervals,
// so fabricdiag_agent_up, `fabricdiag nodes` and agent_down agree.
NodeUpRule AgentUpRule(const analysis::AgentDownConfig& config);

}  // namespace fabricdiag::collector
