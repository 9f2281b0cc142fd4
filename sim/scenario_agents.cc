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

uint64_t GaugeValue(VirtualSeries::Gauge g, const PortRates& r) {
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
      return 9000;
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
    std::unique_ptr<const Fabric> fabric, Scenario scenario, uint64_t seed) {
  if (fabric == nullptr || fabric->hosts().empty()) {
    return absl::InvalidArgumentError("the fabric has no host");
  }
  if (absl::Status st = ValidateScenarioNames(scenario, *fabric); !st.ok()) {
    return st;
  }
  const Cabling cabling = CablingAt(*fabric, scenario.faults, 0);
  absl::StatusOr<CounterModel> model =
      CounterModel::Create(fabric.get(), std::move(scenario), seed);
  if (!model.ok()) return model.status();
  std::unique_ptr<ScenarioTraffic> traffic(
      new ScenarioTraffic(std::move(fabric), *std::move(model)));
  const Fabric& f = *traffic->fabric_;

  // Hosts with the same NICs share one virtual node.
  std::map<std::vector<std::string>, std::shared_ptr<const VirtualNode>> nodes;
  for (size_t h = 0; h < f.hosts().size(); ++h) {
    Host host;
    host.name = f.hosts()[h].name;
    host.nics = f.hosts()[h].members;
    std::vector<VirtualNic> named;
    std::vector<std::string> key;
    for (size_t nic : host.nics) {
      named.push_back({f.nics()[nic].rdma_device, f.nics()[nic].netdev});
      key.push_back(named.back().rdma_device);
      key.push_back(named.back().netdev);
    }
    std::shared_ptr<const VirtualNode>& node = nodes[key];
    if (node == nullptr) {
      absl::StatusOr<VirtualNode> built = BuildVirtualNode(named);
      if (!built.ok()) {
        return absl::Status(built.status().code(),
                            absl::StrCat("host \"", host.name,
                                         "\": ", built.status().message()));
      }
      node = std::make_shared<const VirtualNode>(*std::move(built));
    }
    host.node = node;
    host.inventory = node->inventory;
    v1::Inventory* inventory = host.inventory.mutable_inventory();
    inventory->set_lldp_source("file");
    for (v1::LldpNeighbor& n : HostLldpNeighbors(f, cabling, h)) {
      *inventory->add_lldp_neighbors() = std::move(n);
    }
    traffic->hosts_.push_back(std::move(host));
  }
  traffic->counters_.resize(f.nics().size());
  traffic->links_.resize(f.nics().size());
  for (size_t h = 0; h < traffic->hosts_.size(); ++h) {
    traffic->inventories_.push_back(
        {1, traffic->BuildInventory(h, traffic->links_)});
  }
  FabricRates idle;
  idle.nics.resize(f.nics().size());
  for (PortRates& r : idle.nics) r.per_second.fill(0);
  traffic->reports_ =
      traffic->BuildReports(idle, traffic->counters_, /*dt=*/1.0);
  return traffic;
}

ScenarioTraffic::ScenarioTraffic(std::unique_ptr<const Fabric> fabric,
                                 CounterModel model)
    : fabric_(std::move(fabric)), model_(std::move(model)) {}

const std::string& ScenarioTraffic::HostName(size_t host) const {
  return hosts_[host].name;
}

std::shared_ptr<const v1::AgentMessage> ScenarioTraffic::Inventory(
    size_t host, uint64_t* version) const {
  std::lock_guard<std::mutex> lock(mu_);
  *version = inventories_[host].version;
  return inventories_[host].message;
}

std::shared_ptr<const v1::AgentMessage> ScenarioTraffic::BuildInventory(
    size_t h, const std::vector<LinkState>& links) const {
  auto message = std::make_shared<v1::AgentMessage>(hosts_[h].inventory);
  v1::Inventory* inventory = message->mutable_inventory();
  std::map<std::string, const LinkState*, std::less<>> by_name;
  for (size_t nic : hosts_[h].nics) {
    by_name[fabric_->nics()[nic].rdma_device] = &links[nic];
    by_name[fabric_->nics()[nic].netdev] = &links[nic];
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

const v1::AgentMessage& ScenarioTraffic::Schema(size_t host) const {
  return hosts_[host].node->schema;
}

size_t ScenarioTraffic::SeriesOf(size_t host) const {
  return hosts_[host].node->series;
}

void ScenarioTraffic::Advance(double dt) {
  const FabricRates rates = model_.RatesAt(now_, dt);
  const std::vector<PortCounters> before = counters_;
  for (size_t i = 0; i < counters_.size(); ++i) {
    Accumulate(rates.nics[i], dt, &counters_[i]);
  }
  now_ += dt;
  std::shared_ptr<const Reports> reports = BuildReports(rates, before, dt);
  std::vector<LinkState> links(links_.size());
  for (size_t i = 0; i < links.size(); ++i) {
    const PortRates& r = rates.nics[i];
    links[i] = {r.present && r.link_up, r.speed_gbps};
  }
  std::vector<std::pair<size_t, std::shared_ptr<const v1::AgentMessage>>>
      changed;
  for (size_t h = 0; h < hosts_.size(); ++h) {
    for (size_t nic : hosts_[h].nics) {
      if (!(links[nic] == links_[nic])) {
        changed.emplace_back(h, BuildInventory(h, links));
        break;
      }
    }
  }
  links_ = std::move(links);
  std::lock_guard<std::mutex> lock(mu_);
  reports_ = std::move(reports);
  for (auto& [h, message] : changed) {
    ++inventories_[h].version;
    inventories_[h].message = std::move(message);
  }
  published_now_ = now_;
}

double ScenarioTraffic::now() const {
  std::lock_guard<std::mutex> lock(mu_);
  return published_now_;
}

void ScenarioTraffic::FillReport(size_t host, v1::Report* report) const {
  std::shared_ptr<const Reports> reports;
  {
    std::lock_guard<std::mutex> lock(mu_);
    reports = reports_;
  }
  *report = (*reports)[host];
}

std::shared_ptr<const ScenarioTraffic::Reports> ScenarioTraffic::BuildReports(
    const FabricRates& rates, const std::vector<PortCounters>& before,
    double dt) const {
  auto reports = std::make_shared<Reports>();
  reports->reserve(hosts_.size());
  for (const Host& host : hosts_) {
    reports->push_back(host.node->report.report());
    v1::Report& r = reports->back();
    uint64_t* raw = r.mutable_raw()->mutable_data();
    double* rate = r.mutable_rate()->mutable_data();
    const std::vector<VirtualSeries>& roles = host.node->roles;
    for (size_t i = 0; i < roles.size(); ++i) {
      const VirtualSeries& s = roles[i];
      const size_t nic = host.nics[s.nic];
      if (s.gauge != VirtualSeries::Gauge::kNone) {
        raw[i] = GaugeValue(s.gauge, rates.nics[nic]);
        continue;
      }
      uint64_t value = 0;
      double delta = 0;
      if (s.counter.has_value()) {
        value = counters_[nic].value[*s.counter];
        const uint64_t was = before[nic].value[*s.counter];
        // A device that came back starts from 0: no increase to report.
        delta = value >= was ? static_cast<double>(value - was) : 0;
      }
      raw[i] = Printed(s, value);
      rate[s.rate_index] = BaseUnits(s, delta) / dt;
    }
  }
  return reports;
}

}  // namespace fabricdiag::sim
