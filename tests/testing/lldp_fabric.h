// Node facts of a cabled fabric, as the agents and the gNMI bridge would
// report their LLDP neighbors, for the discovered-topology tests and the
// topology benchmark.
//
//   LldpFabric fabric;
//   fabric.CableHost("gpu-000", "eth0", "mlx5_0", "leaf-0", "swp1");
//   fabric.CableSwitches("leaf-0", "swp33", "spine-0", "swp1");
//   DiscoveredTopology found = DiscoverTopology(fabric.Facts(), nullptr);
//
// Each end of a cable hears the other by default; Ends::kHost or
// Ends::kSwitch leaves one deaf (a host without an agent, a switch no bridge
// reads). Not thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "proto/ingest.pb.h"

namespace fabricdiag::testing {

class LldpFabric {
 public:
  enum class Ends { kBoth, kHost, kSwitch };  // who reports the cable

  // What lldpd announces by default: the system name, a port id of type
  // ifname (a switch) and the port in the description.
  static v1::LldpNeighbor Neighbor(const std::string& system_name,
                                   const std::string& port,
                                   const std::string& chassis_id = "");

  // The node's facts, created on first use.
  v1::NodeFacts& Node(const std::string& name, bool is_switch);

  // Host `host`'s netdev `netdev` (RDMA device `rdma`, "" for none) cabled
  // to port `port` of switch `sw`.
  void CableHost(const std::string& host, const std::string& netdev,
                 const std::string& rdma, const std::string& sw,
                 const std::string& port, Ends ends = Ends::kBoth);

  // Port `port_a` of switch `a` cabled to port `port_b` of switch `b`; with
  // Ends::kHost only `a` reports it, with Ends::kSwitch only `b`.
  void CableSwitches(const std::string& a, const std::string& port_a,
                     const std::string& b, const std::string& port_b,
                     Ends ends = Ends::kBoth);

  // Every node's facts, in name order.
  std::vector<const v1::NodeFacts*> Facts() const;

 private:
  std::map<std::string, v1::NodeFacts> nodes_;
};

// A Clos fabric's shape. Hosts' NIC k goes to rail k: rail-optimized, host h
// NIC k sits on leaf (h / hosts_per_leaf) * nics + k of its rail group;
// otherwise all of a host's NICs sit on one leaf. Leaves come in pods of
// leaves_per_pod, each leaf cabled once to each of its pod's
// spines_per_pod spines; with super_spines > 0, pod spine j is cabled to
// every super-spine s with s % spines_per_pod == j (a third tier).
struct ClosShape {
  int hosts = 4;
  int nics = 8;
  bool rail_optimized = true;
  int host_ports_per_leaf = 32;
  int leaves_per_pod = 8;
  int spines_per_pod = 2;
  int super_spines = 0;
};

// Names: hosts "gpu-NNNNN", NICs netdev "ethK" / RDMA "mlx5_K", leaves
// "leaf-N", spines "spine-P-J", super-spines "super-S"; leaf host ports
// "swp1".., leaf uplinks "swp<host_ports_per_leaf + 1 + j>", spine ports
// "swp1".. down then up, super-spine ports "swp<1 + pod>".
struct ClosFabric {
  LldpFabric fabric;
  int leaves = 0;
  int spines = 0;
  int host_links = 0;
  int switch_links = 0;
};
ClosFabric BuildClos(const ClosShape& shape);

}  // namespace fabricdiag::testing
