#include "analysis/shard_map.h"

#include <algorithm>
#include <limits>
#include <string>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "analysis/ecmp_imbalance.h"
#include "analysis/hot_expert_incast.h"
#include "analysis/pfc_storm.h"
#include "analysis/straggler_nic.h"
#include "common/fnv1a.h"

namespace fabricdiag::analysis {
namespace {

std::string ShardName(absl::string_view kind, absl::string_view name,
                      int count) {
  const uint64_t k =
      Fmix64(Fnv1a64(name)) % static_cast<uint64_t>(std::max(count, 1));
  return absl::StrCat(kind, ".", k);
}

}  // namespace

std::string JobShardOf(absl::string_view job, const ShardCounts& counts) {
  return ShardName("jobs", job, counts.jobs);
}

std::string SwitchShardOf(absl::string_view node, const ShardCounts& counts) {
  return ShardName("switches", node, counts.switches);
}

std::string ShardOfFinding(const Finding& finding,
                           const TopologyIndex& topology,
                           const ShardCounts& counts) {
  if (finding.kind == kHotExpertIncastKind ||
      finding.kind == kStragglerNicKind) {
    return finding.job.empty() ? std::string()
                               : JobShardOf(finding.job, counts);
  }
  if (finding.kind != kEcmpImbalanceKind && finding.kind != kPfcStormKind) {
    return "";
  }
  if (finding.node.empty()) return "";
  if (!topology.IsSwitch(finding.node)) {
    if (const LinkEnd* end =
            topology.SwitchPortOf(finding.node, finding.device)) {
      return SwitchShardOf(end->node, counts);
    }
  }
  return SwitchShardOf(finding.node, counts);
}

std::vector<ShardPorts> AssignShards(
    const FabricView& view, absl::Span<const LayoutModel* const> layouts,
    const TopologyIndex& topology, const ShardCounts& counts) {
  return AssignShards(view, LayoutsByHost(layouts), topology, counts);
}

std::vector<ShardPorts> AssignShards(const FabricView& view,
                                     const LayoutsByHost& layouts,
                                     const TopologyIndex& topology,
                                     const ShardCounts& counts) {
  // The shards in the order first met, by name: a name is hashed and
  // looked up once per job and per switch, not per port.
  std::vector<ShardPorts> shards;
  absl::flat_hash_map<std::string, size_t> by_name;
  const auto shard_of = [&](std::string name, ShardKind kind) {
    auto [it, added] = by_name.try_emplace(name, shards.size());
    if (added) shards.push_back({std::move(name), kind, {}});
    return it->second;
  };
  const absl::Span<const PortView> ports = view.ports();
  // The view's nodes, each asked once for the layouts listing it (the
  // layouts' hosts are the whole fabric's: 125,000 at 1M GPUs, against a
  // collector's few thousand nodes).
  constexpr size_t kNone = std::numeric_limits<size_t>::max();
  std::vector<size_t> job_shard(layouts.layouts().size(), kNone);
  for (uint32_t begin = 0; begin < ports.size();) {
    uint32_t end = begin + 1;
    while (end < ports.size() && ports[end].node == ports[begin].node) ++end;
    const FabricView::NodePorts node{begin, end};
    for (const LayoutsByHost::HostIn& in :
         layouts.LayoutsOf(ports[begin].node)) {
      const LayoutModel& model = *layouts.layouts()[in.layout];
      for (uint32_t nic = 0; nic < model.Nics().size(); ++nic) {
        if (model.RanksOnNic(in.host, nic).empty()) continue;
        const PortView* p = view.FindIn(node, model.Nics()[nic]);
        if (p == nullptr) continue;
        size_t& shard = job_shard[in.layout];
        if (shard == kNone) {
          shard = shard_of(JobShardOf(model.job(), counts), ShardKind::kJobs);
        }
        shards[shard].ports.push_back(static_cast<uint32_t>(p - ports.data()));
      }
    }
    begin = end;
  }
  const std::string* last_switch = nullptr;
  size_t last_shard = 0;
  for (uint32_t i = 0; i < ports.size(); ++i) {
    const PortView& p = ports[i];
    const std::string* sw = &p.node;
    if (!p.is_switch_port) {
      const LinkEnd* end = topology.SwitchPortOf(p.node, p.device);
      if (end == nullptr && !p.netdev.empty()) {
        end = topology.SwitchPortOf(p.node, p.netdev);
      }
      // A NIC the topology does not cable (none declared, LLDP not yet
      // heard) is still a possible PFC storm source, judged on its own
      // pause: it goes to the shard its node's name hashes to, as a switch
      // of one port would.
      if (end != nullptr) sw = &end->node;
    }
    if (last_switch == nullptr || *sw != *last_switch) {
      last_switch = sw;
      last_shard = shard_of(SwitchShardOf(*sw, counts), ShardKind::kSwitches);
    }
    shards[last_shard].ports.push_back(i);
  }
  for (ShardPorts& s : shards) {
    if (!std::is_sorted(s.ports.begin(), s.ports.end())) {
      std::sort(s.ports.begin(), s.ports.end());
    }
    s.ports.erase(std::unique(s.ports.begin(), s.ports.end()), s.ports.end());
  }
  std::sort(shards.begin(), shards.end(),
            [](const ShardPorts& a, const ShardPorts& b) {
              return a.shard < b.shard;
            });
  return shards;
}

const std::vector<ShardPorts>& ShardAssignmentCache::Assign(
    const FabricView& view, std::shared_ptr<const void> layouts_of,
    const LayoutsByHost& layouts, std::shared_ptr<const TopologyIndex> topology,
    const ShardCounts& counts) {
  const absl::Span<const PortView> ports = view.ports();
  if (assigned_ > 0 && layouts_of == layouts_of_ && topology == topology_ &&
      counts.jobs == counts_.jobs && counts.switches == counts_.switches &&
      SamePorts(ports)) {
    return shards_;
  }
  const TopologyIndex none(nullptr);
  shards_ = AssignShards(view, layouts, topology != nullptr ? *topology : none,
                         counts);
  ++assigned_;
  layouts_of_ = std::move(layouts_of);
  topology_ = std::move(topology);
  counts_ = counts;
  ports_.resize(ports.size());
  for (size_t i = 0; i < ports.size(); ++i) {
    // Assigned field by field: the strings keep their buffers.
    PortKey& k = ports_[i];
    k.node = ports[i].node;
    k.device = ports[i].device;
    k.netdev = ports[i].netdev;
    k.is_switch_port = ports[i].is_switch_port;
  }
  return shards_;
}

bool ShardAssignmentCache::SamePorts(absl::Span<const PortView> ports) const {
  if (ports.size() != ports_.size()) return false;
  for (size_t i = 0; i < ports.size(); ++i) {
    const PortView& p = ports[i];
    const PortKey& k = ports_[i];
    if (p.is_switch_port != k.is_switch_port || p.device != k.device ||
        p.node != k.node || p.netdev != k.netdev) {
      return false;
    }
  }
  return true;
}

}  // namespace fabricdiag::analysis
