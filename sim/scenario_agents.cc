#include "sim/scenario_agents.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "sim/lldp.h"

namespace fabricdiag::sim {
namespace {

// What the driver prints for a simulated `value` (sysfs_files.cc Printed):
// IB data in 4-octet words, kept within the counter's width.
uint64_t Printed(const VirtualSeries& s, uint64_t value) {
  if (s.scale > 1) value = static_cast<uint64_t>(value / s.scale);
  if (s.width_bits >= 64) return value;
  const uint64_t max = (uint64_t{1} << s.width_bits) - 1;
  return s.saturates ? std::min(value, max) : value & max;
}

// A simulated count in the series' base unit: the model counts bytes in
// bytes (the writer divides IB data by 4 when it prints it) and pause in
// microseconds, as mlx5 prints them.
double BaseUnits(const VirtualSeries& s, double count) {
  return s.scale > 1 ? count : count * s.scale;
}

uint64_t GaugeValue(VirtualSeries::Gauge g, const PortRates& r, uint64_t mtu) {
  const bool up = r.present && r.link_up;
  const uint64_t bytes_per_second =
      static_cast<uint64_t>(r.speed_gbps) * 1'000'000'000 / 8;
  switch (g) {
    case VirtualSeries::Gauge::kPortState:
      return up ? 4 : 1;  // ACTIVE, DOWN
    case VirtualSeries::Gauge::kPortPhysState:
      return up ? 5 : 3;  // LinkUp, Disabled
    case VirtualSeries::Gauge::kPortRate:
      return bytes_per_second;
    case VirtualSeries::Gauge::kNetdevSpeed:
      // The file says -1 while the link is down; the agent then has no
      // speed to report.
      return up ? bytes_per_second : 0;
    case VirtualSeries::Gauge::kMtu:
      return mtu;
    case VirtualSeries::Gauge::kCarrier:
      return up ? 1 : 0;
    case VirtualSeries::Gauge::kOther:
    case VirtualSeries::Gauge::kNone:
      break;
  }
  return 0;
}

}  // namespace

absl::StatusOr<std::unique_ptr<ScenarioTraffic>> ScenarioTraffic::Create(
    std::unique_ptr<const Fabric> fabric, Scenario scenario, uint64_t seed,
    ScenarioAgents agents) {
  if (fabric == nullptr || fabric->hosts().empty()) {
    return absl::InvalidArgumentError("the fabric has no host");
  }
  const size_t hosts = agents.hosts == ScenarioAgents::kAllHosts
                           ? fabric->hosts().size()
                           : agents.hosts;
  if (hosts > fabric->hosts().size()) {
    return absl::InvalidArgumentError(
        absl::StrCat(hosts, " host agents, but the simulated fabric has ",
                     fabric->hosts().size(), " hosts"));
  }
  if (absl::Status st = ValidateScenarioNames(scenario, *fabric); !st.ok()) {
    return st;
  }
  absl::StatusOr<CounterModel> model =
      CounterModel::Create(fabric.get(), std::move(scenario), seed);
  if (!model.ok()) return model.status();
  std::unique_ptr<ScenarioTraffic> traffic(
      new ScenarioTraffic(std::move(fabric), *std::move(model)));
  if (absl::Status st = traffic->AddNodes(hosts, agents.switches); !st.ok()) {
    return st;
  }
  const Fabric& f = *traffic->fabric_;
  traffic->counters_.nics.resize(f.nics().size());
  traffic->links_.nics.resize(f.nics().size());
  if (agents.switches) {
    traffic->counters_.ports.resize(f.ports().size());
    traffic->links_.ports.resize(f.ports().size());
  }
  for (size_t n = 0; n < traffic->nodes_.size(); ++n) {
    traffic->inventories_.push_back(
        {1, traffic->BuildInventory(n, traffic->links_)});
  }
  FabricRates idle;
  idle.nics.resize(f.nics().size());
  idle.ports.resize(f.ports().size());
  for (PortRates& r : idle.nics) r.per_second.fill(0);
  for (PortRates& r : idle.ports) r.per_second.fill(0);
  traffic->reports_ =
      traffic->BuildReports(idle, traffic->counters_, /*dt=*/1.0);
  return traffic;
}

ScenarioTraffic::ScenarioTraffic(std::unique_ptr<const Fabric> fabric,
                                 CounterModel model)
    : fabric_(std::move(fabric)), model_(std::move(model)) {}

absl::Status ScenarioTraffic::AddNodes(size_t hosts, bool switches) {
  const Fabric& f = *fabric_;
  const Cabling cabling = CablingAt(f, model_.scenario().faults, 0);
  // Nodes with the same NICs or ports share one virtual node.
  std::map<std::vector<std::string>, std::shared_ptr<const VirtualNode>> built;
  auto add = [&](const SimNode& sim_node, bool is_switch,
                 std::vector<v1::LldpNeighbor> lldp) -> absl::Status {
    Node node;
    node.name = sim_node.name;
    node.is_switch = is_switch;
    node.links = sim_node.members;
    std::vector<std::string> key;
    for (size_t link : node.links) {
      if (is_switch) {
        key.push_back(f.ports()[link].port);
      } else {
        key.push_back(f.nics()[link].rdma_device);
        key.push_back(f.nics()[link].netdev);
      }
    }
    key.emplace_back(is_switch ? "switch" : "host");
    std::shared_ptr<const VirtualNode>& shared = built[key];
    if (shared == nullptr) {
      absl::StatusOr<VirtualNode> made;
      if (is_switch) {
        key.pop_back();
        made = BuildVirtualSwitch(key);
      } else {
        std::vector<VirtualNic> named;
        for (size_t nic : node.links) {
          named.push_back({f.nics()[nic].rdma_device, f.nics()[nic].netdev});
        }
        made = BuildVirtualNode(named);
      }
      if (!made.ok()) {
        return absl::Status(
            made.status().code(),
            absl::StrCat(is_switch ? "switch \"" : "host \"", node.name,
                         "\": ", made.status().message()));
      }
      shared = std::make_shared<const VirtualNode>(*std::move(made));
    }
    node.node = shared;
    node.inventory = shared->inventory;
    v1::Inventory* inventory = node.inventory.mutable_inventory();
    inventory->set_lldp_source("file");
    for (v1::LldpNeighbor& n : lldp) {
      *inventory->add_lldp_neighbors() = std::move(n);
    }
    nodes_.push_back(std::move(node));
    return absl::OkStatus();
  };
  for (size_t h = 0; h < hosts; ++h) {
    absl::Status st =
        add(f.hosts()[h], false, HostLldpNeighbors(f, cabling, h));
    if (!st.ok()) return st;
  }
  num_hosts_ = hosts;
  for (size_t s = 0; switches && s < f.switches().size(); ++s) {
    absl::Status st =
        add(f.switches()[s], true, SwitchLldpNeighbors(f, cabling, s));
    if (!st.ok()) return st;
  }
  return absl::OkStatus();
}

const std::string& ScenarioTraffic::NodeName(size_t node) const {
  return nodes_[node].name;
}

std::shared_ptr<const v1::AgentMessage> ScenarioTraffic::Inventory(
    size_t node, uint64_t* version) const {
  std::lock_guard<std::mutex> lock(mu_);
  *version = inventories_[node].version;
  return inventories_[node].message;
}

std::shared_ptr<const v1::AgentMessage> ScenarioTraffic::BuildInventory(
    size_t n, const PerLink<LinkState>& links) const {
  const Node& node = nodes_[n];
  auto message = std::make_shared<v1::AgentMessage>(node.inventory);
  v1::Inventory* inventory = message->mutable_inventory();
  const std::vector<LinkState>& states = links.Of(node);
  std::map<std::string, const LinkState*, std::less<>> by_name;
  for (size_t link : node.links) {
    if (node.is_switch) {
      by_name[fabric_->ports()[link].port] = &states[link];
    } else {
      by_name[fabric_->nics()[link].rdma_device] = &states[link];
      by_name[fabric_->nics()[link].netdev] = &states[link];
    }
  }
  for (v1::RdmaPort& port : *inventory->mutable_rdma_ports()) {
    const LinkState& link = *by_name.at(port.device());
    const double bytes_per_second = link.speed_gbps * 1e9 / 8;
    port.set_state_id(link.up ? 4 : 1);
    port.set_state(link.up ? "ACTIVE" : "DOWN");
    port.set_phys_state_id(link.up ? 5 : 3);
    port.set_phys_state(link.up ? "LinkUp" : "Disabled");
    port.set_rate_bytes_per_second(bytes_per_second);
    port.set_rate_text(link.speed_gbps >= 400 ? "400 Gb/sec (4X NDR)"
                                              : "200 Gb/sec (4X HDR)");
  }
  for (v1::Netdev& netdev : *inventory->mutable_netdevs()) {
    const LinkState& link = *by_name.at(netdev.name());
    netdev.set_operstate(link.up ? "up" : "down");
    netdev.set_speed_bytes_per_second(link.up ? link.speed_gbps * 1e9 / 8 : 0);
  }
  return message;
}

const v1::AgentMessage& ScenarioTraffic::Schema(size_t node) const {
  return nodes_[node].node->schema;
}

size_t ScenarioTraffic::SeriesOf(size_t node) const {
  return nodes_[node].node->series;
}

void ScenarioTraffic::Advance(double dt) {
  const FabricRates rates = model_.RatesAt(now_, dt);
  const PerLink<PortCounters> before = counters_;
  for (size_t i = 0; i < counters_.nics.size(); ++i) {
    Accumulate(rates.nics[i], dt, &counters_.nics[i]);
  }
  for (size_t i = 0; i < counters_.ports.size(); ++i) {
    Accumulate(rates.ports[i], dt, &counters_.ports[i]);
  }
  now_ += dt;
  std::shared_ptr<const Reports> reports = BuildReports(rates, before, dt);
  PerLink<LinkState> links;
  auto state = [](const PortRates& r) -> LinkState {
    return {r.present && r.link_up, r.speed_gbps};
  };
  for (size_t i = 0; i < links_.nics.size(); ++i) {
    links.nics.push_back(state(rates.nics[i]));
  }
  for (size_t i = 0; i < links_.ports.size(); ++i) {
    links.ports.push_back(state(rates.ports[i]));
  }
  std::vector<std::pair<size_t, std::shared_ptr<const v1::AgentMessage>>>
      changed;
  for (size_t n = 0; n < nodes_.size(); ++n) {
    const std::vector<LinkState>& now = links.Of(nodes_[n]);
    const std::vector<LinkState>& was = links_.Of(nodes_[n]);
    for (size_t link : nodes_[n].links) {
      if (!(now[link] == was[link])) {
        changed.emplace_back(n, BuildInventory(n, links));
        break;
      }
    }
  }
  links_ = std::move(links);
  std::lock_guard<std::mutex> lock(mu_);
  reports_ = std::move(reports);
  for (auto& [n, message] : changed) {
    ++inventories_[n].version;
    inventories_[n].message = std::move(message);
  }
  published_now_ = now_;
}

double ScenarioTraffic::now() const {
  std::lock_guard<std::mutex> lock(mu_);
  return published_now_;
}

void ScenarioTraffic::FillReport(size_t node, v1::Report* report) const {
  std::shared_ptr<const Reports> reports;
  {
    std::lock_guard<std::mutex> lock(mu_);
    reports = reports_;
  }
  *report = (*reports)[node];
}

std::shared_ptr<const ScenarioTraffic::Reports> ScenarioTraffic::BuildReports(
    const FabricRates& rates, const PerLink<PortCounters>& before,
    double dt) const {
  auto reports = std::make_shared<Reports>();
  reports->reserve(nodes_.size());
  for (const Node& node : nodes_) {
    reports->push_back(node.node->report.report());
    v1::Report& r = reports->back();
    uint64_t* raw = r.mutable_raw()->mutable_data();
    double* rate = r.mutable_rate()->mutable_data();
    const std::vector<PortRates>& link_rates =
        node.is_switch ? rates.ports : rates.nics;
    const std::vector<PortCounters>& now = counters_.Of(node);
    const std::vector<PortCounters>& was = before.Of(node);
    const std::vector<VirtualSeries>& roles = node.node->roles;
    for (size_t i = 0; i < roles.size(); ++i) {
      const VirtualSeries& s = roles[i];
      const size_t link = node.links[s.nic];
      if (s.gauge != VirtualSeries::Gauge::kNone) {
        raw[i] = GaugeValue(s.gauge, link_rates[link], node.node->mtu);
        continue;
      }
      uint64_t value = 0;
      double delta = 0;
      if (s.counter.has_value()) {
        value = now[link].value[*s.counter];
        const uint64_t previous = was[link].value[*s.counter];
        // A device that came back starts from 0: no increase to report.
        delta = value >= previous ? static_cast<double>(value - previous) : 0;
      }
      raw[i] = Printed(s, value);
      rate[s.rate_index] = BaseUnits(s, delta) / dt;
    }
  }
  return reports;
}

}  // namespace fabricdiag::sim
