#include "analysis/shard_map.h"

#include <algorithm>
#include <map>
#include <utility>

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
  std::map<std::string, ShardPorts> shards;
  const absl::Span<const PortView> ports = view.ports();
  auto add = [&](std::string shard, ShardKind kind, uint32_t port) {
    ShardPorts& s = shards[shard];
    if (s.shard.empty()) {
      s.shard = std::move(shard);
      s.kind = kind;
    }
    s.ports.push_back(port);
  };
  for (const LayoutModel* model : layouts) {
    if (model == nullptr) continue;
    const std::string shard = JobShardOf(model->job(), counts);
    for (uint32_t host = 0; host < model->Hosts().size(); ++host) {
      const FabricView::NodePorts node = view.PortsOfNode(model->Hosts()[host]);
      if (node.begin == node.end) continue;
      for (uint32_t nic = 0; nic < model->Nics().size(); ++nic) {
        if (model->RanksOnNic(host, nic).empty()) continue;
        const PortView* p = view.FindIn(node, model->Nics()[nic]);
        if (p != nullptr) {
          add(shard, ShardKind::kJobs, static_cast<uint32_t>(p - ports.data()));
        }
      }
    }
  }
  // One hash per switch, not per port.
  std::string last_switch;
  std::string last_shard;
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
    if (*sw != last_switch || last_shard.empty()) {
      last_switch = *sw;
      last_shard = SwitchShardOf(*sw, counts);
    }
    add(last_shard, ShardKind::kSwitches, i);
  }
  std::vector<ShardPorts> out;
  out.reserve(shards.size());
  for (auto& [name, s] : shards) {
    std::sort(s.ports.begin(), s.ports.end());
    s.ports.erase(std::unique(s.ports.begin(), s.ports.end()), s.ports.end());
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace fabricdiag::analysis
