#include "collector/runner/fabric_view_builder.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <memory>
#include <numeric>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"

namespace fabricdiag::collector {
namespace {

// IB PortInfo PortState ACTIVE (sysfs `state` "4: ACTIVE").
constexpr int kPortActive = 4;

// Ports a node not mapped yet is counted for when nothing else is known: a
// GPU node's RDMA NICs and its management netdevs.
constexpr size_t kPortsPerNodeGuess = 10;

// Nodes whose last report is older than this many intervals are left out.
constexpr int kStaleIntervals = 3;

// The name of an RDMA port in the view: the device for port 1 (every RoCE
// NIC and almost every HCA has one port per device), "mlx5_0:2" otherwise.
std::string PortName(const std::string& device, uint32_t port) {
  return port <= 1 ? device : absl::StrCat(device, ":", port);
}

// What Refresh() reads of a node: its series layout (by address: the
// builder keeps every layout it maps from alive) and the fields of its
// inventory that make its ports. Nodes with equal keys map alike.
std::string MappingKey(const SeriesLayout* layout, const v1::Inventory& inv) {
  std::string key;
  const auto add = [&key](absl::string_view field) {
    // Length-prefixed: no two field lists make the same key.
    const uint32_t size = static_cast<uint32_t>(field.size());
    key.append(reinterpret_cast<const char*>(&size), sizeof(size));
    key.append(field.data(), field.size());
  };
  const auto add_number = [&key](auto number) {
    key.append(reinterpret_cast<const char*>(&number), sizeof(number));
  };
  add_number(reinterpret_cast<uintptr_t>(layout));
  add_number(inv.rdma_ports_size());
  for (const v1::RdmaPort& p : inv.rdma_ports()) {
    add(p.device());
    add_number(p.port());
    add_number(p.state_id());
    add_number(p.rate_bytes_per_second());
    add_number(p.netdevs_size());
    for (const std::string& n : p.netdevs()) add(n);
  }
  add_number(inv.netdevs_size());
  for (const v1::Netdev& n : inv.netdevs()) {
    add(n.name());
    add_number(n.operstate() == "down");
    add(n.rdma_device());
    add_number(n.rdma_port());
    add_number(n.speed_bytes_per_second());
  }
  return key;
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
  std::shared_ptr<const SeriesLayout> layout = node.layout();
  std::shared_ptr<const Mapping>& shared =
      mappings_[MappingKey(layout.get(), inv)];
  if (shared == nullptr) shared = MapNode(std::move(layout), inv);
  cache->mapping = shared;
}

std::shared_ptr<const FabricViewBuilder::Mapping> FabricViewBuilder::MapNode(
    std::shared_ptr<const SeriesLayout> layout, const v1::Inventory& inv) {
  auto mapping = std::make_shared<Mapping>();
  Mapping& m = *mapping;
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
    const uint32_t index = static_cast<uint32_t>(m.ports.size());
    by_name.emplace(info.device, index);
    if (p.port() <= 1) by_name.emplace(p.device(), index);
    for (const std::string& n : p.netdevs()) by_name.emplace(n, index);
    m.ports.push_back(std::move(info));
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
    by_name.emplace(n.name(), static_cast<uint32_t>(m.ports.size()));
    m.ports.push_back(std::move(info));
  }
  // In the view's order, by device (each is one port's: a netdev named as
  // an RDMA device was taken as its netdev above): a view built node by
  // node in name order is then sorted as built, and Finish() only checks
  // it. Left in the inventory's order, mlx5_10 came before mlx5_2 and a
  // management eno1 after the RDMA ports, and every pass sorted the views'
  // hundreds of thousands of 656-byte ports again.
  std::vector<uint32_t> order(m.ports.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&m](uint32_t a, uint32_t b) {
    return m.ports[a].device < m.ports[b].device;
  });
  std::vector<uint32_t> position(order.size());
  std::vector<PortInfo> sorted;
  sorted.reserve(order.size());
  for (uint32_t k = 0; k < order.size(); ++k) {
    position[order[k]] = k;
    sorted.push_back(std::move(m.ports[order[k]]));
  }
  m.ports = std::move(sorted);
  for (auto& [name, index] : by_name) index = position[index];

  if (layout != nullptr) {
    const std::vector<LayoutSignal>& signals = SignalsOf(layout);
    m.targets.reserve(signals.size());
    for (const LayoutSignal& s : signals) {
      auto it = by_name.find(s.port);
      if (it == by_name.end()) continue;  // no inventory for it yet
      m.targets.push_back({s.slot, it->second, s.signal});
    }
  }
  // Grouped by port, so that each port's series fold into it as it is
  // added to a view; within a port in the layout's order (the order in
  // which they are summed).
  std::stable_sort(
      m.targets.begin(), m.targets.end(),
      [](const SlotTarget& a, const SlotTarget& b) { return a.port < b.port; });
  m.ports_end.assign(m.ports.size(), 0);
  for (const SlotTarget& t : m.targets) ++m.ports_end[t.port];
  for (size_t p = 1; p < m.ports_end.size(); ++p) {
    m.ports_end[p] += m.ports_end[p - 1];
  }
  m.slots.reserve(m.targets.size());
  m.folds.reserve(m.targets.size());
  for (const SlotTarget& t : m.targets) {
    m.slots.push_back(t.slot);
    m.folds.push_back(PortAccumulator::FoldOf(t.signal));
  }

  // Per port, the byte counters of the source each direction's traffic is
  // read from (PortAccumulator's preference: RDMA, else physical port, else
  // netdev).
  m.traffic_slots.assign(m.ports.size(), {});
  // Per port and direction (rx 0, tx 1): the rank of the source chosen so
  // far (3 RDMA, 2 physical port, 1 netdev) and its slots.
  std::vector<std::array<int, 2>> rank(m.ports.size(), {0, 0});
  std::vector<std::array<std::vector<uint32_t>, 2>> chosen(m.ports.size());
  for (const SlotTarget& t : m.targets) {
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
      m.traffic_slots[p].insert(m.traffic_slots[p].end(), slots.begin(),
                                slots.end());
    }
  }
  m.layout = std::move(layout);
  return mapping;
}

analysis::FabricView FabricViewBuilder::Build(const v1::Topology* topology,
                                              double window_seconds,
                                              absl::Time now) {
  std::vector<analysis::FabricView> views =
      Build(topology, absl::MakeConstSpan(&window_seconds, 1), now);
  return std::move(views.front());
}

void FabricViewBuilder::Recycle(size_t position, analysis::FabricView&& view) {
  if (recycled_.size() <= position) recycled_.resize(position + 1);
  recycled_[position] = std::move(view);
}

std::vector<analysis::FabricView> FabricViewBuilder::Build(
    const v1::Topology* topology, absl::Span<const double> windows_seconds,
    absl::Time now) {
  return Build(topology, windows_seconds, now,
               [](const NodeSeries&, const NodeSeries::ViewState&) {});
}

std::vector<analysis::FabricView> FabricViewBuilder::Build(
    const v1::Topology* topology, absl::Span<const double> windows_seconds,
    absl::Time now, EachNode each_node) {
  absl::flat_hash_set<std::string> switches;
  if (topology != nullptr) {
    for (const v1::Switch& s : topology->switches()) switches.insert(s.name());
  }
  ++pass_;
  // By name, as the view keeps its ports: each view is built in order.
  const std::shared_ptr<const SeriesStore::SortedNodes> nodes =
      series_->NodesByName();
  // The nodes reporting, with what the view needs to know of each; those
  // silent for kStaleIntervals are left out (agent_down covers them; their
  // stale rates must not raise findings).
  struct Reporting {
    NodeSeries* node;
    NodeSeries::ViewState state;
  };
  std::vector<Reporting> reporting;
  reporting.reserve(nodes->size());
  for (const std::shared_ptr<NodeSeries>& node : *nodes) {
    NodeSeries::ViewState state = node->StateForView();
    each_node(*node, state);
    const absl::Duration interval =
        absl::Milliseconds(std::max<uint32_t>(state.interval_ms, 1));
    if (state.last_report == absl::InfinitePast() ||
        now - state.last_report > kStaleIntervals * interval) {
      continue;
    }
    reporting.push_back({node.get(), std::move(state)});
  }
  // Room for every port at once: grown port by port, the views would move
  // every port each time they doubled (at a connect storm or a first pass,
  // a hundred thousand ports of 656 bytes). Nodes not mapped yet are
  // counted as the mapped ones' average.
  size_t ports = 0;
  size_t mapped = 0;
  for (const Reporting& r : reporting) {
    auto it = cache_.find(r.node->name());
    if (it == cache_.end() || it->second.mapping == nullptr) continue;
    ports += it->second.mapping->ports.size();
    ++mapped;
  }
  const size_t per_node = mapped > 0 ? ports / mapped : kPortsPerNodeGuess;
  ports += (reporting.size() - mapped) * per_node;
  std::vector<analysis::FabricView> views(windows_seconds.size());
  for (size_t w = 0; w < views.size(); ++w) {
    // A view given back that holds far more ports than this collector's
    // (a cluster's whole fabric, merged by its leader) would keep that much
    // memory for a few: it is freed instead.
    if (w < recycled_.size() && !recycled_[w].ports().empty() &&
        recycled_[w].ports().size() <= 2 * ports + kPortsPerNodeGuess &&
        recycled_[w].window_seconds == windows_seconds[w]) {
      views[w] = std::move(recycled_[w]);
      views[w].BeginRewrite();
    } else {
      views[w].window_seconds = windows_seconds[w];
      views[w].ReservePorts(ports);
    }
  }
  recycled_.clear();
  reads_.resize(views.size());
  for (const Reporting& r : reporting) {
    NodeSeries* const node = r.node;
    const NodeSeries::ViewState& state = r.state;
    const absl::Duration interval =
        absl::Milliseconds(std::max<uint32_t>(state.interval_ms, 1));
    NodeCache& cache = cache_[node->name()];
    cache.pass = pass_;
    if (cache.version != state.version || cache.boot_id != state.boot_id) {
      Refresh(*node, &cache);
      cache.version = state.version;
      cache.boot_id = state.boot_id;
    }
    const Mapping& m = *cache.mapping;
    for (size_t w = 0; w < views.size(); ++w) {
      reads_[w].samples = static_cast<size_t>(std::max(
          1.0,
          std::round(windows_seconds[w] / absl::ToDoubleSeconds(interval))));
    }
    node->ReadWindows(m.slots, m.traffic_slots, absl::MakeSpan(reads_));
    const bool is_switch = switches.contains(node->name());
    for (size_t w = 0; w < views.size(); ++w) {
      const NodeSeries::WindowRead& read = reads_[w];
      size_t t = 0;
      for (size_t i = 0; i < m.ports.size(); ++i) {
        const PortInfo& p = m.ports[i];
        analysis::PortView& v =
            views[w].RewritePort(node->name(), p.device, p.netdev);
        v.is_switch_port = is_switch;
        // Its series' means fold straight into the view's port.
        acc_.Reset();
        for (; t < m.ports_end[i]; ++t) {
          acc_.Add(m.folds[t], read.means[t], &v.s);
        }
        acc_.FinishInto(&v.s);
        v.s.link_rate = p.link_rate;
        v.s.link_up = p.link_up;
        if (!m.traffic_slots[i].empty()) {
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
  // And mappings no node holds any more. A mapping keeps the layout whose
  // address its key holds alive: no other layout can take that address
  // while it is here.
  absl::erase_if(mappings_, [](const auto& entry) {
    return entry.second.use_count() == 1;
  });
  for (analysis::FabricView& view : views) view.Finish();
  return views;
}

}  // namespace fabricdiag::collector
