#include "collector/runner/fabric_view_builder.h"

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

const std::vector<FabricViewBuilder::LayoutSignal>&
FabricViewBuilder::SignalsOf(std::shared_ptr<const SeriesLayout> layout) {
  LayoutCache& entry = layouts_[layout.get()];
  entry.pass = pass_;
  if (entry.layout != nullptr) return entry.signals;
  const std::vector<SeriesMeta>& metas = layout->metas();
  for (uint32_t slot = 0; slot < metas.size(); ++slot) {
    const SeriesMeta& m = metas[slot];
    const SignalRef ref = ClassifySeries(m);
    if (ref.signal == counters::Signal::kNone) continue;
    const bool rdma = m.key.subsystem == v1::SUBSYSTEM_RDMA_PORT_COUNTERS ||
                      m.key.subsystem == v1::SUBSYSTEM_RDMA_PORT_COUNTERS_EXT ||
                      m.key.subsystem == v1::SUBSYSTEM_RDMA_PORT_HW_COUNTERS;
    entry.signals.push_back(
        {slot, rdma ? PortName(m.key.device, m.key.port) : m.key.device, ref});
  }
  entry.layout = std::move(layout);
  return entry.signals;
}

void FabricViewBuilder::Refresh(const NodeSeries& node, NodeCache* cache) {
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

  if (std::shared_ptr<const SeriesLayout> layout = node.layout()) {
    for (const LayoutSignal& s : SignalsOf(std::move(layout))) {
      auto it = by_name.find(s.port);
      if (it == by_name.end()) continue;  // no inventory for it yet
      cache->targets.push_back({s.slot, it->second, s.signal});
      cache->slots.push_back(s.slot);
    }
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
    if (t.signal.source == counters::Source::kNone) continue;
    const int r = static_cast<int>(t.signal.source);
    const size_t dir = t.signal.signal == counters::Signal::kTxBytes ? 1 : 0;
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
  std::vector<analysis::FabricView> views =
      Build(topology, absl::MakeConstSpan(&window_seconds, 1), now);
  return std::move(views.front());
}

std::vector<analysis::FabricView> FabricViewBuilder::Build(
    const v1::Topology* topology, absl::Span<const double> windows_seconds,
    absl::Time now) {
  absl::flat_hash_set<std::string> switches;
  if (topology != nullptr) {
    for (const v1::Switch& s : topology->switches()) switches.insert(s.name());
  }
  std::vector<analysis::FabricView> views(windows_seconds.size());
  for (size_t w = 0; w < views.size(); ++w) {
    views[w].window_seconds = windows_seconds[w];
    views[w].ReservePorts(last_ports_);
  }
  reads_.resize(views.size());
  ++pass_;
  // By name, as the view keeps its ports: each view is built in order.
  std::vector<std::shared_ptr<NodeSeries>> nodes = series_->AllNodes();
  std::sort(nodes.begin(), nodes.end(),
            [](const std::shared_ptr<NodeSeries>& a,
               const std::shared_ptr<NodeSeries>& b) {
              return a->name() < b->name();
            });
  for (const std::shared_ptr<NodeSeries>& node : nodes) {
    const NodeSeries::ViewState state = node->StateForView();
    const absl::Duration interval =
        absl::Milliseconds(std::max<uint32_t>(state.interval_ms, 1));
    if (state.last_report == absl::InfinitePast() ||
        now - state.last_report > kStaleIntervals * interval) {
      continue;
    }
    NodeCache& cache = cache_[node->name()];
    cache.pass = pass_;
    if (cache.version != state.version || cache.boot_id != state.boot_id) {
      Refresh(*node, &cache);
      cache.version = state.version;
      cache.boot_id = state.boot_id;
    }
    for (size_t w = 0; w < views.size(); ++w) {
      reads_[w].samples = static_cast<size_t>(std::max(
          1.0,
          std::round(windows_seconds[w] / absl::ToDoubleSeconds(interval))));
    }
    node->ReadWindows(cache.slots, cache.traffic_slots, absl::MakeSpan(reads_));
    const bool is_switch = switches.contains(node->name());
    for (size_t w = 0; w < views.size(); ++w) {
      const NodeSeries::WindowRead& read = reads_[w];
      acc_.assign(cache.ports.size(), PortAccumulator());
      for (size_t i = 0; i < cache.targets.size(); ++i) {
        const SlotTarget& t = cache.targets[i];
        acc_[t.port].Add(t.signal, read.means[i]);
      }
      for (size_t i = 0; i < cache.ports.size(); ++i) {
        const PortInfo& p = cache.ports[i];
        analysis::PortView& v = views[w].AddPort(node->name(), p.device);
        v.netdev = p.netdev;
        v.is_switch_port = is_switch;
        v.s = acc_[i].Finish();
        v.s.link_rate = p.link_rate;
        v.s.link_up = p.link_up;
        if (!cache.traffic_slots[i].empty()) {
          v.samples = analysis::SummarizeSamples(read.times[i], read.moved[i]);
          v.samples.expected_reports = static_cast<int>(read.samples);
        }
      }
    }
  }
  // Forget nodes that stopped reporting (their cache is rebuilt if they
  // come back).
  absl::erase_if(
      cache_, [this](const auto& entry) { return entry.second.pass != pass_; });
  // And layouts no node refreshed from in this pass: a node keeps the
  // targets it took from one until its version changes.
  absl::erase_if(layouts_, [this](const auto& entry) {
    return entry.second.pass != pass_;
  });
  for (analysis::FabricView& view : views) view.Finish();
  if (!views.empty()) last_ports_ = views.front().ports().size();
  return views;
}

}  // namespace fabricdiag::collector
