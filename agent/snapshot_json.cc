#include "agent/snapshot_json.h"

#include <nlohmann/json.hpp>

#include "absl/time/time.h"
#include "agent/gpu_nic_pairing.h"

namespace fabricdiag::agent {

namespace {

// Ordered, so the keys print in the order written here.
using Json = nlohmann::ordered_json;

Json RdmaDevicesJson(const Snapshot& snapshot) {
  Json devices = Json::array();
  for (const RdmaDeviceInfo& d : snapshot.rdma_devices) {
    devices.push_back({{"name", d.name},
                       {"fw_ver", d.fw_ver},
                       {"board_id", d.board_id},
                       {"hca_type", d.hca_type},
                       {"node_guid", d.node_guid},
                       {"netdevs", d.netdevs}});
  }
  return devices;
}

Json RdmaPortsJson(const Snapshot& snapshot) {
  Json ports = Json::array();
  for (const RdmaPortInfo& p : snapshot.rdma_ports) {
    Json port = {
        {"device", p.device},         {"port", p.port},
        {"state", p.state},           {"state_id", p.state_id},
        {"phys_state", p.phys_state}, {"phys_state_id", p.phys_state_id},
        {"rate", p.rate_text},        {"link_layer", p.link_layer},
        {"netdevs", p.netdevs}};
    if (p.rate_bytes_per_second.has_value()) {
      port["rate_bytes_per_second"] = *p.rate_bytes_per_second;
    }
    ports.push_back(std::move(port));
  }
  return ports;
}

Json NetdevsJson(const Snapshot& snapshot) {
  Json netdevs = Json::array();
  for (const NetdevInfo& n : snapshot.netdevs) {
    Json netdev = {{"name", n.name}, {"operstate", n.operstate}};
    if (!n.rdma_device.empty()) {
      netdev["rdma_device"] = n.rdma_device;
      netdev["rdma_port"] = n.rdma_port;
    }
    netdevs.push_back(std::move(netdev));
  }
  return netdevs;
}

Json VerbsPortsJson(const Snapshot& snapshot) {
  Json verbs = Json::array();
  for (const VerbsPortInfo& v : snapshot.verbs_ports) {
    verbs.push_back(
        {{"device", v.device},
         {"port", v.port},
         {"state", v.state},
         {"active_mtu_bytes", v.active_mtu_bytes},
         {"active_width_lanes", v.active_width_lanes},
         {"lane_gbps", v.lane_gbps},
         {"expected_rate_bytes_per_second", v.expected_rate_bytes_per_second},
         {"link_layer", v.link_layer}});
  }
  return verbs;
}

Json SamplesJson(const Snapshot& snapshot) {
  Json samples = Json::array();
  for (const Sample& s : snapshot.samples) {
    Json sample = {
        {"subsystem", SubsystemName(s.desc->subsystem)},
        {"device", s.desc->device},
        {"port", s.desc->port},
        {"name", s.desc->name},
        {"raw", s.raw},
        {"value", s.BaseValue()},
        {"unit", s.desc->unit},
        {"kind", s.desc->kind == Kind::kCounter ? "counter" : "gauge"},
        {"width_bits", s.desc->width_bits}};
    if (s.saturated) sample["saturated"] = true;
    if (s.desc->meaning != Meaning::kNone)
      sample["meaning"] = MeaningName(s.desc->meaning);
    if (s.desc->direction != Direction::kNone) {
      sample["direction"] = DirectionName(s.desc->direction);
    }
    if (s.desc->priority >= 0) sample["priority"] = s.desc->priority;
    samples.push_back(std::move(sample));
  }
  return samples;
}

Json GpuNicsJson(const Snapshot& snapshot) {
  Json pairs = Json::array();
  for (const GpuNicPair& p : snapshot.gpu_nics) {
    pairs.push_back({{"gpu", p.gpu},
                     {"pci", p.gpu_pci},
                     {"device", p.device},
                     {"netdev", p.netdev},
                     {"distance", std::string(PcieDistanceName(p.distance))}});
  }
  return pairs;
}

Json SourcesJson(const Snapshot& snapshot) {
  Json sources = Json::array();
  for (const SourceStatus& s : snapshot.sources) {
    Json source = {{"source", s.source},
                   {"ok", s.ok},
                   {"duration_seconds", absl::ToDoubleSeconds(s.duration)},
                   {"errors", s.errors}};
    if (!s.last_error.empty()) source["last_error"] = s.last_error;
    sources.push_back(std::move(source));
  }
  return sources;
}

// Present when the agent reads LLDP: {"source", "up", "version",
// "neighbors": [...]} (docs/agent.md).
Json LldpJson(const LldpState& l) {
  Json neighbors = Json::array();
  for (const LldpNeighbor& n : l.set.neighbors) {
    neighbors.push_back({{"netdev", n.netdev},
                         {"system_name", n.system_name},
                         {"chassis_id", n.chassis_id},
                         {"chassis_id_type", n.chassis_id_type},
                         {"port_id", n.port_id},
                         {"port_id_type", n.port_id_type},
                         {"port_description", n.port_description},
                         {"management_address", n.management_address}});
  }
  Json out = {{"source", l.source},
              {"up", l.up},
              {"version", l.set.version},
              {"neighbors", std::move(neighbors)}};
  if (!l.last_error.empty()) out["last_error"] = l.last_error;
  return out;
}

}  // namespace

std::string SnapshotToJson(const Snapshot& snapshot, absl::string_view node) {
  Json out = Json::object();
  out["node"] = std::string(node);
  out["time"] = absl::FormatTime("%Y-%m-%d%ET%H:%M:%E*SZ", snapshot.wall_time,
                                 absl::UTCTimeZone());

  out["rdma_devices"] = RdmaDevicesJson(snapshot);
  out["rdma_ports"] = RdmaPortsJson(snapshot);
  out["netdevs"] = NetdevsJson(snapshot);
  out["verbs_ports"] = VerbsPortsJson(snapshot);
  out["gpu_nics"] = GpuNicsJson(snapshot);
  out["samples"] = SamplesJson(snapshot);
  out["sources"] = SourcesJson(snapshot);
  if (snapshot.lldp != nullptr) out["lldp"] = LldpJson(*snapshot.lldp);

  return out.dump(2, ' ', /*ensure_ascii=*/false,
                  nlohmann::json::error_handler_t::replace);
}

}  // namespace fabricdiag::agent
