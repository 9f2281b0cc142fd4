// Which analysis shard each port of a view belongs to.
//
// The cross-node analyzers run per shard (analysis/shard_signals.h): a
// shard of jobs holds the NICs of every job that hashes to it (a job's
// groups compare its NICs with each other, never with another job's), a
// shard of switches the ports of every switch that hashes to it and the
// host NICs cabled to them (a leaf's uplinks, the pause its host ports
// exchange). Names are "jobs.<k>" and "switches.<k>", k from a hash of the
// job's or the switch's name (FNV-1a: the same in every process and
// version), so every collector puts its ports in the same shards and each
// shard's owner (cluster/shard_leases.h) receives every port of its jobs
// and switches from whichever collector holds them.
//
//   std::vector<ShardPorts> shards =
//       AssignShards(view, layouts, topology, ShardCounts{});
//   for (const ShardPorts& s : shards) Send(s.shard, s.kind, s.ports);
//
// Pure; thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "analysis/fabric_view.h"
#include "analysis/finding.h"
#include "analysis/layout_model.h"
#include "analysis/nic_ports.h"
#include "analysis/shard_signals.h"
#include "analysis/topology_index.h"

namespace fabricdiag::analysis {

// How many shards of each kind the fabric is cut into: many more than
// collectors, so that rendezvous hashing spreads them evenly, few enough
// that a shard of a 1M-GPU fabric is still thousands of NICs.
struct ShardCounts {
  static constexpr int kDefaultJobShards = 64;
  static constexpr int kDefaultSwitchShards = 64;
  int jobs = kDefaultJobShards;         // at least 1
  int switches = kDefaultSwitchShards;  // at least 1
};

// "jobs.<k>" for `job`, k in [0, counts.jobs).
std::string JobShardOf(absl::string_view job, const ShardCounts& counts);
// "switches.<k>" for switch `node`, k in [0, counts.switches).
std::string SwitchShardOf(absl::string_view node, const ShardCounts& counts);

struct ShardPorts {
  std::string shard;
  ShardKind kind = ShardKind::kJobs;
  // Indexes into the view's ports(), ascending, each once.
  std::vector<uint32_t> ports;
};

// Every shard that holds a port of `view` (Finish()ed), sorted by name:
// the NICs `layouts` place ranks on go to their jobs' shards (a NIC two
// jobs use, to both), switch ports to their switch's shard, and host NICs
// `topology` cables to a switch to that switch's shard. A host NIC the
// topology does not cable goes to the switch shard its node's name hashes
// to (SwitchShardOf(node)): pfc_storm judges a source on its own pause,
// with or without a topology. Every port is in a switch shard.
// The shard whose part reports `finding` (analysis/rate_parts.h): a job
// analyzer's its job's shard, a switch analyzer's the shard of the switch
// it names or, for a host NIC, of the switch `topology` cables it to (as
// AssignShards puts it); "" for a port analyzer's (its node's collector
// reports it) or any other.
std::string ShardOfFinding(const Finding& finding,
                           const TopologyIndex& topology,
                           const ShardCounts& counts);

std::vector<ShardPorts> AssignShards(
    const FabricView& view, absl::Span<const LayoutModel* const> layouts,
    const TopologyIndex& topology, const ShardCounts& counts);
// The same, with the layouts indexed by host: a view's nodes are each
// looked up once, not every layout's hosts (`layouts` as the runner keeps
// it from pass to pass while they do not change).
std::vector<ShardPorts> AssignShards(const FabricView& view,
                                     const LayoutsByHost& layouts,
                                     const TopologyIndex& topology,
                                     const ShardCounts& counts);

// AssignShards() of a collector's own view, kept from pass to pass: worked
// out again only when the view's ports (node, device, netdev and switch
// mark, in order), the layouts, the topology or the counts changed. At 1M
// GPUs a collector's 100,000 ports each cost a lookup in the topology and
// in their layouts, for an answer that changes only with the fabric; the
// check is one walk over the ports, comparing names.
//
// The layouts are known by the object `layouts_of` owns (what `layouts`
// was built from), the topology by `topology`: both are held until they
// change, so that no other object takes their address meanwhile.
//
//   ShardAssignmentCache cache;  // kept by the runner
//   const std::vector<ShardPorts>& shards =
//       cache.Assign(view, snapshot, by_host, topology_index, counts);
//
// Thread-compatible.
class ShardAssignmentCache {
 public:
  // AssignShards(view, layouts, *topology, counts); valid until the next
  // call. A null `topology` is an empty one.
  const std::vector<ShardPorts>& Assign(
      const FabricView& view, std::shared_ptr<const void> layouts_of,
      const LayoutsByHost& layouts,
      std::shared_ptr<const TopologyIndex> topology, const ShardCounts& counts);

  // How often the shards were worked out rather than kept.
  uint64_t assigned() const { return assigned_; }

 private:
  struct PortKey {
    std::string node;
    std::string device;
    std::string netdev;
    bool is_switch_port = false;
  };
  bool SamePorts(absl::Span<const PortView> ports) const;

  std::shared_ptr<const void> layouts_of_;
  std::shared_ptr<const TopologyIndex> topology_;
  ShardCounts counts_;
  std::vector<PortKey> ports_;
  std::vector<ShardPorts> shards_;
  uint64_t assigned_ = 0;
};

}  // namespace fabricdiag::analysis
