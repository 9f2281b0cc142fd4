#include "tests/testing/lldp_fabric.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace fabricdiag::testing {

v1::LldpNeighbor LldpFabric::Neighbor(const std::string& system_name,
                                      const std::string& port,
                                      const std::string& chassis_id) {
  v1::LldpNeighbor n;
  n.set_system_name(system_name);
  n.set_port_id(port);
  n.set_port_id_type("ifname");
  n.set_port_description(port);
  n.set_chassis_id(chassis_id);
  n.set_chassis_id_type(chassis_id.empty() ? "" : "mac");
  return n;
}

v1::NodeFacts& LldpFabric::Node(const std::string& name, bool is_switch) {
  v1::NodeFacts& facts = nodes_[name];
  if (facts.node().empty()) {
    facts.set_node(name);
    facts.set_is_switch(is_switch);
    facts.set_lldp_source(is_switch ? "gnmi" : "lldpd");
  }
  return facts;
}

void LldpFabric::CableHost(const std::string& host, const std::string& netdev,
                           const std::string& rdma, const std::string& sw,
                           const std::string& port, Ends ends) {
  if (ends != Ends::kSwitch) {
    v1::NodeFacts& h = Node(host, /*is_switch=*/false);
    v1::LldpNeighbor* n = h.add_lldp_neighbors();
    *n = Neighbor(sw, port);
    n->set_local_port(netdev);
    if (!rdma.empty()) (*h.mutable_rdma_device_of_netdev())[netdev] = rdma;
  }
  if (ends != Ends::kHost) {
    // lldpd on a host: a port id of type mac, the netdev in the description.
    v1::LldpNeighbor* n = Node(sw, /*is_switch=*/true).add_lldp_neighbors();
    *n = Neighbor(host, netdev);
    n->set_port_id("0c:42:a1:00:00:01");
    n->set_port_id_type("mac");
    n->set_local_port(port);
  }
}

void LldpFabric::CableSwitches(const std::string& a, const std::string& port_a,
                               const std::string& b, const std::string& port_b,
                               Ends ends) {
  if (ends != Ends::kSwitch) {
    v1::LldpNeighbor* n = Node(a, /*is_switch=*/true).add_lldp_neighbors();
    *n = Neighbor(b, port_b);
    n->set_local_port(port_a);
  }
  if (ends != Ends::kHost) {
    v1::LldpNeighbor* n = Node(b, /*is_switch=*/true).add_lldp_neighbors();
    *n = Neighbor(a, port_a);
    n->set_local_port(port_b);
  }
}

std::vector<const v1::NodeFacts*> LldpFabric::Facts() const {
  std::vector<const v1::NodeFacts*> out;
  out.reserve(nodes_.size());
  for (const auto& [name, facts] : nodes_) out.push_back(&facts);
  return out;
}

ClosFabric BuildClos(const ClosShape& shape) {
  ClosFabric out;
  const int ports = shape.host_ports_per_leaf;
  for (int h = 0; h < shape.hosts; ++h) {
    for (int k = 0; k < shape.nics; ++k) {
      int leaf = 0;
      int port = 0;
      if (shape.rail_optimized) {
        leaf = (h / ports) * shape.nics + k;
        port = h % ports;
      } else {
        leaf = (h * shape.nics + k) / ports;
        port = (h * shape.nics + k) % ports;
      }
      out.leaves = std::max(out.leaves, leaf + 1);
      out.fabric.CableHost(absl::StrFormat("gpu-%05d", h),
                           absl::StrCat("eth", k), absl::StrCat("mlx5_", k),
                           absl::StrCat("leaf-", leaf),
                           absl::StrCat("swp", port + 1));
      ++out.host_links;
    }
  }
  const int pods =
      (out.leaves + shape.leaves_per_pod - 1) / shape.leaves_per_pod;
  for (int leaf = 0; leaf < out.leaves; ++leaf) {
    const int pod = leaf / shape.leaves_per_pod;
    for (int j = 0; j < shape.spines_per_pod; ++j) {
      out.fabric.CableSwitches(
          absl::StrCat("leaf-", leaf), absl::StrCat("swp", ports + 1 + j),
          absl::StrCat("spine-", pod, "-", j),
          absl::StrCat("swp", leaf % shape.leaves_per_pod + 1));
      ++out.switch_links;
    }
  }
  out.spines = pods * shape.spines_per_pod;
  for (int pod = 0; pod < pods; ++pod) {
    for (int s = 0; s < shape.super_spines; ++s) {
      const int j = s % shape.spines_per_pod;
      out.fabric.CableSwitches(
          absl::StrCat("spine-", pod, "-", j),
          absl::StrCat("swp",
                       shape.leaves_per_pod + 1 + s / shape.spines_per_pod),
          absl::StrCat("super-", s), absl::StrCat("swp", pod + 1));
      ++out.switch_links;
    }
  }
  return out;
}

}  // namespace fabricdiag::testing
