// Many virtual agents streaming the ingest protocol into a collector, for
// load tests and the collector benchmarks (`fabricdiag-sim
// --virtual_agents=N`).
//
// Each virtual agent is one fabricdiag.v1.Ingest/Stream (a callback-API
// ClientBidiReactor, so thousands of them need no thread each), multiplexed
// over a few channels. An agent sends Hello, then the Inventory and Schema
// that the agent's own encoder produces for an mlx5 RoCE node
// (virtual_node.h: every counter of the counter table, with meanings, so
// the collector's analysis does its real work), then one Report per
// interval (agents are spread evenly over the interval), stamping wall_time
// with the moment the report is handed to gRPC. The traffic counters move
// every report; errors, discards and idle priorities stay at 0, as on a
// healthy NIC. With scenario traffic (VirtualAgentsOptions::scenario) the
// agents are a simulated fabric's hosts, and its switches if asked, and
// send its counter model's counters instead, faults included.
//
// Latency: the collector acknowledges a report only after storing it, so
// send -> Ack is an upper bound of ingest-to-queryable latency, measured
// without any clock shared between processes.
//
//   VirtualAgentsOptions opts;
//   opts.targets = {"127.0.0.1:9811"};
//   opts.nodes = 8000;
//   ASSIGN_OR_RETURN(VirtualAgentsResult r, RunVirtualAgents(opts,
//   &std::cout));
//
// RunVirtualAgents blocks for the duration; not reentrant.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "sim/scenario_agents.h"

namespace fabricdiag::sim {

struct VirtualAgentsOptions {
  // The collectors (HOST:PORT). Each agent ranks them as the real agent
  // does (client/collector_list.h), sends the list in its Hello, starts at
  // its first choice, ranks with the weights the collectors send, follows
  // Handoffs, and after a connection failure moves on in its ranking
  // (client::CollectorChoice) at its next tick, replaying what was not
  // acknowledged; any other end of its stream ends the agent.
  std::vector<std::string> targets;
  int nodes = 100;
  int nics = 8;
  absl::Duration interval = absl::Seconds(1);
  absl::Duration duration = absl::Seconds(30);
  // Asked every millisecond or so while sending: true ends the sending
  // early (a SIGINT), then the run drains and summarizes as at the end of
  // `duration`. Unset: only `duration` ends it.
  std::function<bool()> stop_requested;
  int channels = 4;
  std::string node_prefix = "vnode-";
  // LLDP in each agent's inventory (virtual_node.h AddVirtualLldp): this
  // many agents behind each leaf, named node_prefix + "leaf-" + number.
  // Without `lldp` the inventories carry no neighbors (an ingest without
  // discovery, the baseline of bench/connect_storm.py).
  bool lldp = true;
  int hosts_per_leaf = 4;
  // Latency is recorded only for reports sent after this, and after every
  // agent has caught up with its backlog (skips stream setup, the schema
  // burst and the catch-up it causes).
  absl::Duration warmup = absl::Seconds(5);
  // Reports an agent may fall behind before further ones are dropped.
  int max_backlog = 8;
  // Scenario traffic (scenario_agents.h): the agents are its first `nodes`
  // nodes (hosts, then switches), named as the fabric names them, each with
  // its own NICs or ports, LLDP and the counters of the counter model,
  // which moves on by one `interval` every interval of the run (the first
  // before the agents connect). `nics`, `node_prefix`, `lldp` and
  // `hosts_per_leaf` are then unused, and `nodes` must not exceed its
  // num_nodes(). Null: every agent sends the virtual node's healthy
  // template.
  std::shared_ptr<ScenarioTraffic> scenario;
};

struct VirtualAgentsResult {
  double seconds = 0;
  uint64_t reports_sent = 0;
  uint64_t reports_acked = 0;
  size_t series_per_agent = 0;  // the mean, when the agents differ
  uint64_t values_sent = 0;
  uint64_t values_acked = 0;
  uint64_t reports_dropped = 0;  // the agent's backlog was full
  uint64_t streams_rejected = 0;
  uint64_t streams_failed = 0;
  uint64_t handoffs = 0;   // streams a collector handed to another
  uint64_t failovers = 0;  // streams lost (a collector died) and moved
  // Seconds until latency was recorded (warm-up and catch-up); infinite
  // when the agents never caught up.
  double warmup_seconds = 0;
  // Reports whose latency was recorded; 0 when the agents never caught up
  // or nothing was acknowledged (the latencies below are then meaningless).
  uint64_t latency_samples = 0;
  // send -> Ack, milliseconds, over every report recorded...
  double latency_p50_ms = 0;
  double latency_p99_ms = 0;
  double latency_max_ms = 0;
  // ... and the p99 of each second on its own: the worst second and the
  // median second.
  double latency_worst_second_p99_ms = 0;
  double latency_median_second_p99_ms = 0;
};

// "after 5 s of warm-up: send->ack p50 0.3 ms p99 2.6 ms ...", or why
// latency was not measured.
std::string LatencySummary(const VirtualAgentsResult& r);

// Runs the load; prints a line per second to `progress` (may be null).
absl::StatusOr<VirtualAgentsResult> RunVirtualAgents(
    const VirtualAgentsOptions& options, std::ostream* progress);

}  // namespace fabricdiag::sim
