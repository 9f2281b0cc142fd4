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
// `series` says what each series of the schema counts, so that traffic
// other than the template's (scenario_agents.h: a counter model's) can be
// put in its place.
//
// BuildVirtualSwitch() is the same for an agent on a Linux switch (Cumulus,
// SONiC): its ports are netdevs without an RDMA device, whose statistics
// count everything on the wire, with the `ethtool -S` counters the
// simulator's switch trees print for them (sysfs_files.h).
//
// Pure; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proto/ingest.pb.h"
#include "sim/port_counters.h"

namespace fabricdiag::sim {

// One NIC of a virtual node: its RDMA device and the netdev on its port 1.
struct VirtualNic {
  std::string rdma_device;  // "mlx5_0"
  std::string netdev;       // "eth0"
};

// What series i of a virtual node's schema shows.
struct VirtualSeries {
  // The gauges the agent derives from a port's and a netdev's files.
  enum class Gauge {
    kNone,           // a counter
    kPortState,      // 4 ACTIVE, 1 DOWN
    kPortPhysState,  // 5 LinkUp, 3 Disabled
    kPortRate,       // bytes per second
    kNetdevSpeed,    // bytes per second
    kMtu,
    kCarrier,  // 1 up, 0 down
    kOther,    // a gauge of the counter table (PCIe credits, ...): 0
  };
  size_t nic = 0;  // index into the node's NICs (a switch's ports)
  Gauge gauge = Gauge::kNone;
  // The simulated counter behind a counter (port_counters.h CounterOf, the
  // priority's slot for a per-priority one), as the tree writer prints it:
  // only the first spelling of a meaning in a family carries it. nullopt:
  // not simulated, always 0.
  std::optional<Counter> counter;
  // As the counter table gives them: raw x scale = base units; the raw
  // value keeps width_bits (IB PMA counters saturate, others wrap).
  double scale = 1;
  uint32_t width_bits = 64;
  bool saturates = false;
  // Index into the report's rate(); -1 for gauges.
  int rate_index = -1;
};

// Ports a virtual switch may have: about 100 series each, within the 32,768
// series of one agent's schema.
inline constexpr size_t kMaxVirtualSwitchPorts = 256;

struct VirtualNode {
  v1::AgentMessage inventory;    // mlx5_0.., port 1 ACTIVE at 400 Gb/s, eth0..
  v1::AgentMessage schema;       // schema_id 1
  v1::AgentMessage report;       // schema_id 1, seq and times left at 0
  std::vector<uint32_t> moving;  // indices into report.report().rate()
  size_t series = 0;
  std::vector<VirtualSeries> roles;  // one per series, in schema order
  uint64_t mtu = 9000;               // of every netdev
};

// The node's messages; InvalidArgument unless 1 <= nics <= 64.
absl::StatusOr<VirtualNode> BuildVirtualNode(int nics);
// The same for NICs of the given names (1 to 64 of them, distinct).
absl::StatusOr<VirtualNode> BuildVirtualNode(
    const std::vector<VirtualNic>& nics);

// A switch with the given ports (1 to kMaxVirtualSwitchPorts, distinct),
// each up at 400 Gb/s; a role's `nic` is the index of its port.
absl::StatusOr<VirtualNode> BuildVirtualSwitch(
    const std::vector<std::string>& ports);

// Virtual node number `index` as the fabric cables it: nodes
// hosts_per_leaf * k .. hosts_per_leaf * (k + 1) - 1 behind leaf
// `<leaf_prefix><k>` (5 digits), NIC n of the j-th of them on port
// swp<j * nics + n + 1>. Sets the inventory's LLDP (source "file", the
// neighbor of each netdev eth<n>, as sim/lldp.h describes them).
void AddVirtualLldp(int index, int nics, int hosts_per_leaf,
                    absl::string_view leaf_prefix, v1::Inventory* inventory);

}  // namespace fabricdiag::sim
