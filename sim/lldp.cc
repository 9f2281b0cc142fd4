#include "sim/lldp.h"

#include <algorithm>
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/fnv1a.h"
#include "nlohmann/json.hpp"

namespace fabricdiag::sim {
namespace {

// How long lldpd keeps a neighbor it stops hearing (4 x the 30 s default
// transmit interval, lldpd's default hold).
constexpr const char* kTtl = "120";

// What a leaf port hears from the host NIC `nic` (lldpd's host defaults:
// port id = the NIC's MAC, the netdev name in the description).
v1::LldpNeighbor HostNicNeighbor(absl::string_view local_port,
                                 const SimNic& nic) {
  v1::LldpNeighbor n;
  n.set_local_port(std::string(local_port));
  n.set_system_name(nic.host);
  n.set_chassis_id(SimMac(nic.host));
  n.set_chassis_id_type("mac");
  n.set_port_id(SimMac(absl::StrCat(nic.host, "/", nic.netdev)));
  n.set_port_id_type("mac");
  n.set_port_description(nic.netdev);
  return n;
}

bool ByLocalPort(const v1::LldpNeighbor& a, const v1::LldpNeighbor& b) {
  return NaturalLess(a.local_port(), b.local_port());
}

}  // namespace

std::optional<size_t> MiscablingTarget(const Fabric& fabric, const Fault& f) {
  const std::optional<size_t> nic = fabric.FindNic(f.node, f.nic);
  if (!nic || !fabric.nics()[*nic].switch_port) return std::nullopt;
  if (!f.switch_name.empty()) return fabric.FindPort(f.switch_name, f.port);
  const SimPort& own = fabric.ports()[*fabric.nics()[*nic].switch_port];
  return fabric.FindPort(own.switch_name, f.port);
}

Cabling CablingAt(const Fabric& fabric, const std::vector<Fault>& faults,
                  double t) {
  Cabling c;
  c.nic_port.resize(fabric.nics().size());
  c.port_nic.resize(fabric.ports().size());
  for (size_t i = 0; i < fabric.nics().size(); ++i) {
    if (const std::optional<size_t> p = fabric.nics()[i].switch_port) {
      c.nic_port[i] = p;
      c.port_nic[*p] = i;
    }
  }
  for (const Fault& f : faults) {
    if (f.kind != FaultKind::kMiscabling || !f.ActiveAt(t)) continue;
    const std::optional<size_t> nic = fabric.FindNic(f.node, f.nic);
    const std::optional<size_t> to = MiscablingTarget(fabric, f);
    if (!nic || !to || fabric.ports()[*to].uplink) continue;
    const std::optional<size_t> from = c.nic_port[*nic];
    if (!from || *from == *to) continue;
    const std::optional<size_t> other = c.port_nic[*to];
    c.nic_port[*nic] = to;
    c.port_nic[*to] = nic;
    c.port_nic[*from] = other;
    if (other) c.nic_port[*other] = from;
  }
  return c;
}

std::string SimMac(absl::string_view name) {
  const uint64_t h = Fnv1a64(name);
  return absl::StrFormat("02:%02x:%02x:%02x:%02x:%02x", (h >> 32) & 0xff,
                         (h >> 24) & 0xff, (h >> 16) & 0xff, (h >> 8) & 0xff,
                         h & 0xff);
}

v1::LldpNeighbor LeafPortNeighbor(absl::string_view local_port,
                                  absl::string_view switch_name,
                                  absl::string_view port) {
  v1::LldpNeighbor n;
  n.set_local_port(std::string(local_port));
  n.set_system_name(std::string(switch_name));
  n.set_chassis_id(SimMac(switch_name));
  n.set_chassis_id_type("mac");
  n.set_port_id(std::string(port));
  n.set_port_id_type("ifname");
  n.set_port_description(std::string(port));
  return n;
}

std::vector<v1::LldpNeighbor> HostLldpNeighbors(const Fabric& fabric,
                                                const Cabling& cabling,
                                                size_t host) {
  std::vector<v1::LldpNeighbor> out;
  for (size_t i : fabric.hosts()[host].members) {
    const std::optional<size_t> p = cabling.nic_port[i];
    if (!p) continue;
    const SimPort& port = fabric.ports()[*p];
    out.push_back(
        LeafPortNeighbor(fabric.nics()[i].netdev, port.switch_name, port.port));
  }
  std::sort(out.begin(), out.end(), ByLocalPort);
  return out;
}

std::vector<v1::LldpNeighbor> SwitchLldpNeighbors(const Fabric& fabric,
                                                  const Cabling& cabling,
                                                  size_t sw) {
  std::vector<v1::LldpNeighbor> out;
  int uplink = 0;
  for (size_t p : fabric.switches()[sw].members) {
    const SimPort& port = fabric.ports()[p];
    if (port.uplink) {
      out.push_back(LeafPortNeighbor(port.port,
                                     absl::StrCat("spine-", uplink++),
                                     absl::StrCat("swp", sw + 1)));
    } else if (const std::optional<size_t> nic = cabling.port_nic[p]) {
      out.push_back(HostNicNeighbor(port.port, fabric.nics()[*nic]));
    }
  }
  std::sort(out.begin(), out.end(), ByLocalPort);
  return out;
}

std::string LldpcliJson(const std::vector<v1::LldpNeighbor>& neighbors) {
  using Json = nlohmann::ordered_json;
  Json interfaces = Json::array();
  for (const v1::LldpNeighbor& n : neighbors) {
    Json chassis = {
        {"id", {{"type", n.chassis_id_type()}, {"value", n.chassis_id()}}},
        {"descr", "fabricdiag-sim"},
        {"capability",
         Json::array({{{"type", "Bridge"}, {"enabled", true}},
                      {{"type", "Router"}, {"enabled", false}}})}};
    if (!n.management_address().empty()) {
      chassis["mgmt-ip"] = n.management_address();
    }
    Json entry = {
        {"via", "LLDP"},
        {"rid", "1"},
        {"age", "0 day, 00:00:01"},
        {"chassis", {{n.system_name(), chassis}}},
        {"port",
         {{"id", {{"type", n.port_id_type()}, {"value", n.port_id()}}},
          {"descr", n.port_description()},
          {"ttl", kTtl}}}};
    interfaces.push_back({{n.local_port(), entry}});
  }
  Json lldp = Json::object();
  if (interfaces.size() == 1) {
    lldp["interface"] = interfaces[0];
  } else if (!interfaces.empty()) {
    lldp["interface"] = interfaces;
  }
  return Json{{"lldp", lldp}}.dump(2) + "\n";
}

}  // namespace fabricdiag::sim
