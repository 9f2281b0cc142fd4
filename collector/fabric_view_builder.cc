#include "collector/fabric_view_builder.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <memory>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"

namespace fabricdiag::collector {
namespace {

// IB PortInfo PortState ACTIVE (sysfs `state` "4: ACTIVE").
constexpr int kPortActive = 4;

// Nodes whose last report is older than this many intervals are left out.
constexpr int kStaleIntervals = 3;

// The name of an RDMA port in the view: the device for port 1 (every RoCE
// NIC and almost every HCA has one port per device), "mlx5_0:2" otherwise.
std::string PortName(const std::string& device, uint32_t port) {
  return port <= 1 ? device : absl::StrCat(device, ":", port);
}

}  // namespace

FabricViewBuilder::FabricViewBuilder(const SeriesStore* series)
    : series_(series) {}

void FabricViewBuilder::Refresh(const NodeSeries& node,
                                NodeCache* cache) const {
  const v1::Inventory inv = node.inventory();
  cache->ports.clear();
  cache->targets.clear();
  cache->slots.clear();
  cache->traffic_slots.clear();

  // Ports: RDMA ports first, then netdevs without an RDMA device.
  absl::flat_hash_map<std::string, uint32_t> by_name;  // device or netdev
  absl::flat_hash_map<std::string, const v1::Netdev*> netdevs;
  for (const v1::Netdev& n : inv.netdevs()) netdevs[n.name()] = &n;
  for (const v1::RdmaPort& p : inv.rdma_ports()) {
    PortInfo info;
    info.device = PortName(p.device(), p.port());
    if (!p.netdevs().empty()) info.netdev = p.netdevs(0);
    info.link_rate = p.rate_bytes_per_second();
    info.link_up = p.state_id() == kPortActive;
    if (auto it = netdevs.find(info.netdev); it != netdevs.end()) {
      // A RoCE port is only usable while its netdev is up, too.
      if (it->second->operstate() == "down") info.link_up = false;
    }
    const uint32_t index = static_cast<uint32_t>(cache->ports.size());
    by_name.emplace(info.device, index);
    if (p.port() <= 1) by_name.emplace(p.device(), index);
    for (const std::string& n : p.netdevs()) by_name.emplace(n, index);
    cache->ports.push_back(std::move(info));
  }
  for (const v1::Netdev& n : inv.netdevs()) {
    if (by_name.contains(n.name())) continue;
    if (!n.rdma_device().empty()) {
      // Mapped from the netdev side only (no gid_attrs/ndevs entry).
      auto it = by_name.find(PortName(n.rdma_device(), n.rdma_port()));
      if (it != by_name.end()) {
        by_name.emplace(n.name(), it->second);
        continue;
      }
    }
    PortInfo info;
    info.device = n.name();
    info.netdev = n.name();
    info.link_rate = n.speed_bytes_per_second();
    info.link_up = n.operstate() != "down";
    by_name.emplace(n.name(), static_cast<uint32_t>(cache->ports.size()));
    cache->ports.push_back(std::move(info));
  }

  std::vector<SeriesMeta> metas = node.ListSeries();
  for (uint32_t slot = 0; slot < metas.size(); ++slot) {
    const SeriesMeta& m = metas[slot];
    const SignalRef ref = ClassifySeries(m);
    if (ref.field == SignalField::kNone) continue;
    std::string name = m.key.device;
    const bool rdma = m.key.subsystem == v1::SUBSYSTEM_RDMA_PORT_COUNTERS ||
                      m.key.subsystem == v1::SUBSYSTEM_RDMA_PORT_COUNTERS_EXT ||
                      m.key.subsystem == v1::SUBSYSTEM_RDMA_PORT_HW_COUNTERS;
    if (rdma) name = PortName(m.key.device, m.key.port);
    auto it = by_name.find(name);
    if (it == by_name.end()) continue;  // no inventory for it yet
    cache->targets.push_back({slot, it->second, ref});
    cache->slots.push_back(slot);
  }

  // Per port, the byte counters of the source each direction's traffic is
  // read from (PortAccumulator's preference: RDMA, else physical port, else
  // netdev).
  cache->traffic_slots.assign(cache->ports.size(), {});
  // Per port and direction (rx 0, tx 1): the rank of the source chosen so
  // far (3 RDMA, 2 physical port, 1 netdev) and its slots.
  std::vector<std::array<int, 2>> rank(cache->ports.size(), {0, 0});
  std::vector<std::array<std::vector<uint32_t>, 2>> chosen(cache->ports.size());
  for (const SlotTarget& t : cache->targets) {
    int r = 0;
    int dir = 0;
    switch (t.signal.field) {
      case SignalField::kRdmaRxBytes:
        r = 3;
        break;
      case SignalField::kRdmaTxBytes:
        r = 3;
        dir = 1;
        break;
      case SignalField::kPhyRxBytes:
        r = 2;
        break;
      case SignalField::kPhyTxBytes:
        r = 2;
        dir = 1;
        break;
      case SignalField::kNetdevRxBytes:
        r = 1;
        break;
      case SignalField::kNetdevTxBytes:
        r = 1;
        dir = 1;
        break;
      default:
        continue;
    }
    std::vector<uint32_t>& slots = chosen[t.port][dir];
    if (r > rank[t.port][dir]) {
      slots.clear();
      rank[t.port][dir] = r;
    }
    if (r == rank[t.port][dir]) slots.push_back(t.slot);
  }
  for (size_t p = 0; p < chosen.size(); ++p) {
    for (const std::vector<uint32_t>& slots : chosen[p]) {
      cache->traffic_slots[p].insert(cache->traffic_slots[p].end(),
                                     slots.begin(), slots.end());
    }
  }
}

analysis::FabricView FabricViewBuilder::Build(const v1::Topology* topology,
                                              double window_seconds,
                                              absl::Time now) {
  absl::flat_hash_set<std::string> switches;
  if (topology != nullptr) {
    for (const v1::Switch& s : topology->switches()) switches.insert(s.name());
  }
  analysis::FabricView view;
  view.window_seconds = window_seconds;
  absl::flat_hash_set<std::string> seen;
  std::vector<PortAccumulator> acc;
  for (const NodeStatus& status :
       series_->ListNodes(absl::InfiniteDuration())) {
    const NodeInfo& info = status.info;
    const absl::Duration interval =
        absl::Milliseconds(std::max<uint32_t>(info.interval_ms, 1));
    if (info.last_report == absl::InfinitePast() ||
        now - info.last_report > kStaleIntervals * interval) {
      continue;
    }
    std::shared_ptr<NodeSeries> node = series_->FindNode(info.node);
    if (node == nullptr) continue;
    seen.insert(info.node);
    NodeCache& cache = cache_[info.node];
    const uint64_t version = node->version();
    if (cache.version != version || cache.boot_id != info.boot_id) {
      Refresh(*node, &cache);
      cache.version = version;
      cache.boot_id = info.boot_id;
    }
    const size_t samples = static_cast<size_t>(std::max(
        1.0, std::round(window_seconds / absl::ToDoubleSeconds(interval))));
    node->RecentMeans(samples, cache.slots, &means_);
    acc.assign(cache.ports.size(), PortAccumulator());
    for (size_t i = 0; i < cache.targets.size(); ++i) {
      const SlotTarget& t = cache.targets[i];
      acc[t.port].Add(t.signal, means_[i]);
    }
    const bool is_switch = switches.contains(info.node);
    for (size_t i = 0; i < cache.ports.size(); ++i) {
      const PortInfo& p = cache.ports[i];
      analysis::PortView& v = view.AddPort(info.node, p.device);
      v.netdev = p.netdev;
      v.is_switch_port = is_switch;
      v.s = acc[i].Finish();
      v.s.link_rate = p.link_rate;
      v.s.link_up = p.link_up;
      if (!cache.traffic_slots[i].empty()) {
        node->RecentActivity(samples, cache.traffic_slots[i], &times_, &moved_);
        v.samples = analysis::SummarizeSamples(times_, moved_);
        v.samples.expected_reports = static_cast<int>(samples);
      }
    }
  }
  // Forget nodes that stopped reporting (their cache is rebuilt if they
  // come back).
  for (auto it = cache_.begin(); it != cache_.end();) {
    if (!seen.contains(it->first)) {
      cache_.erase(it++);
    } else {
      ++it;
    }
  }
  view.Finish();
  return view;
}

}  // namespace fabricdiag::collector
