#include "analysis/topology_index.h"

namespace fabricdiag::analysis {

TopologyIndex::TopologyIndex(const v1::Topology* topology) {
  if (topology == nullptr) return;
  for (const v1::Switch& sw : topology->switches()) {
    switches_.insert(sw.name());
    auto& uplinks = uplinks_[sw.name()];
    for (const std::string& uplink : sw.uplinks()) uplinks.insert(uplink);
  }
  // ValidateTopology keeps (host, nic) and (switch, port) unique; should a
  // hand-built topology repeat one, the first link wins, as a scan would.
  for (const v1::Link& link : topology->links()) {
    host_side_[link.host()].try_emplace(
        link.nic(), LinkEnd{link.switch_(), link.port(), /*is_switch=*/true});
    switch_side_[link.switch_()].try_emplace(
        link.port(), LinkEnd{link.host(), link.nic(), /*is_switch=*/false});
  }
  // A switch-to-switch cable answers from both of its ends; a port that is
  // also in a host link (ValidateTopology refuses it) keeps the host.
  for (const v1::SwitchLink& link : topology->switch_links()) {
    switch_side_[link.switch_a()].try_emplace(
        link.port_a(), LinkEnd{link.switch_b(), link.port_b(), true});
    switch_side_[link.switch_b()].try_emplace(
        link.port_b(), LinkEnd{link.switch_a(), link.port_a(), true});
  }
}

const LinkEnd* TopologyIndex::Lookup(const Ends& ends, const PortView& port) {
  auto node = ends.find(port.node);
  if (node == ends.end()) return nullptr;
  if (!port.device.empty()) {
    auto it = node->second.find(port.device);
    if (it != node->second.end()) return &it->second;
  }
  if (!port.netdev.empty()) {
    auto it = node->second.find(port.netdev);
    if (it != node->second.end()) return &it->second;
  }
  return nullptr;
}

std::optional<LinkEnd> TopologyIndex::Partner(const PortView& port) const {
  const Ends& first = port.is_switch_port ? switch_side_ : host_side_;
  const Ends& second = port.is_switch_port ? host_side_ : switch_side_;
  if (const LinkEnd* end = Lookup(first, port)) return *end;
  if (const LinkEnd* end = Lookup(second, port)) return *end;
  return std::nullopt;
}

const LinkEnd* TopologyIndex::SwitchPortOf(absl::string_view node,
                                           absl::string_view nic) const {
  auto host = host_side_.find(node);
  if (host == host_side_.end()) return nullptr;
  auto it = host->second.find(nic);
  return it == host->second.end() ? nullptr : &it->second;
}

bool TopologyIndex::IsUplink(const PortView& port) const {
  auto it = uplinks_.find(port.node);
  if (it == uplinks_.end()) return false;
  return (!port.device.empty() && it->second.contains(port.device)) ||
         (!port.netdev.empty() && it->second.contains(port.netdev));
}

bool TopologyIndex::KnowsSwitchPort(const PortView& port) const {
  return IsUplink(port) || Lookup(switch_side_, port) != nullptr;
}

}  // namespace fabricdiag::analysis
