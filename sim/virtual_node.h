// What a fabricdiag-agent on an 8-NIC mlx5 RoCE node sends, without the
// node: the virtual agents' (virtual_agents.h) and the ingest benchmark's
// messages.
//
// The series are those the agent itself would describe for such a node:
// every mlx5 and driver-independent counter of the counter table
// (counters/counter_table.h) for RDMA port 1 of mlx5_N and netdev ethN, the
// agent's derived gauges, with PFC (and so per-priority pause counters) on
// priority 3 only, as RoCE deployments run it. The Schema, the Inventory
// and a template Report come out of the agent's own ReportEncoder, so they
// are exactly what a real agent puts on the wire.
//
// Healthy rates by meaning: 30% of a 400 Gb/s link each way in 4 KB
// packets, a little PFC pause and a few CNPs, the host's own IP traffic on
// the netdev, no errors. `moving` lists the indices into report.rate() of
// the series whose rate varies from report to report (traffic); the rest
// (errors, idle priorities) stay at 0, as on a healthy NIC.
//
//   absl::StatusOr<VirtualNode> node = BuildVirtualNode(/*nics=*/8);
//   stream.Write(node->inventory); stream.Write(node->schema);
//   v1::AgentMessage r = node->report;   // set seq, times, vary rates
//
// Pure; thread-safe.
#pragma once

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proto/ingest.pb.h"

namespace fabricdiag::sim {

struct VirtualNode {
  v1::AgentMessage inventory;    // mlx5_0.., port 1 ACTIVE at 400 Gb/s, eth0..
  v1::AgentMessage schema;       // schema_id 1
  v1::AgentMessage report;       // schema_id 1, seq and times left at 0
  std::vector<uint32_t> moving;  // indices into report.report().rate()
  size_t series = 0;
};

// The node's messages; InvalidArgument unless 1 <= nics <= 64.
absl::StatusOr<VirtualNode> BuildVirtualNode(int nics);

// Virtual node number `index` as the fabric cables it: nodes
// hosts_per_leaf * k .. hosts_per_leaf * (k + 1) - 1 behind leaf
// `<leaf_prefix><k>` (5 digits), NIC n of the j-th of them on port
// swp<j * nics + n + 1>. Sets the inventory's LLDP (source "file", the
// neighbor of each netdev eth<n>, as sim/lldp.h describes them).
void AddVirtualLldp(int index, int nics, int hosts_per_leaf,
                    absl::string_view leaf_prefix, v1::Inventory* inventory);

}  // namespace fabricdiag::sim
