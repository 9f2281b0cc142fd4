// What the agent knows of the LLDP neighbors of its netdevs: the types the
// LLDP parser (lldp_parse.h), the readers (lldp_source.h), /metrics and the
// --once JSON share.
//
//   LldpNeighbor n;
//   n.netdev = "eth0";            // the local netdev that heard it
//   n.system_name = "leaf-0";     // the neighbor's system name
//   n.port_id = "swp1";  n.port_id_type = "ifname";
//
// docs/agent.md describes what is read and docs/metrics.md how it is
// exported.
#pragma once

#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

namespace fabricdiag::agent {

// One neighbor as heard on one local netdev. Every text is at most
// kLldpMaxFieldBytes (the parser and the readers cut longer ones).
struct LldpNeighbor {
  std::string netdev;              // local interface, "eth0", "swp3"
  std::string system_name;         // "" when the neighbor sends none
  std::string chassis_id;          // "12:27:29:d0:18:68"
  std::string chassis_id_type;     // "mac", "ip", "local", "ifname", ...
  std::string port_id;             // "swp1", or a MAC address
  std::string port_id_type;        // "ifname", "mac", "local", "ifalias", ...
  std::string port_description;    // "" when the neighbor sends none
  std::string management_address;  // the first one announced, or ""

  auto Tie() const {
    return std::tie(netdev, system_name, chassis_id, chassis_id_type, port_id,
                    port_id_type, port_description, management_address);
  }
  bool operator==(const LldpNeighbor& o) const { return Tie() == o.Tie(); }
  bool operator!=(const LldpNeighbor& o) const { return !(*this == o); }
  bool operator<(const LldpNeighbor& o) const { return Tie() < o.Tie(); }
};

// An LLDP string TLV carries at most 255 octets (IEEE 802.1AB 8.5); longer
// text (a hostile file) is cut to this many bytes.
inline constexpr size_t kLldpMaxFieldBytes = 255;

// More neighbors than this in one read are dropped (counted as too_many):
// a 512-port switch with a few neighbors per port stays well below it.
inline constexpr size_t kLldpMaxNeighbors = 4096;

// Entries of a read that were dropped or cut, by reason; cumulative in
// LldpState.
struct LldpIssues {
  uint64_t missing_field = 0;   // no local interface, chassis id or port id
  uint64_t invalid_netdev = 0;  // a local interface name no netdev can have
  uint64_t unknown_netdev = 0;  // a netdev the agent does not watch
  uint64_t too_many = 0;        // beyond kLldpMaxNeighbors
  uint64_t truncated = 0;       // fields cut to kLldpMaxFieldBytes
  std::string last;             // the most recent problem, for logs

  void Add(const LldpIssues& o) {
    missing_field += o.missing_field;
    invalid_netdev += o.invalid_netdev;
    unknown_netdev += o.unknown_netdev;
    too_many += o.too_many;
    truncated += o.truncated;
    if (!o.last.empty()) last = o.last;
  }
};

// The neighbor set of a node: what the collector needs when it changes.
struct LldpNeighborSet {
  std::vector<LldpNeighbor> neighbors;  // sorted, no duplicates
  // 0 before the first read; bumped each time `neighbors` changes, so that
  // a sender needs only to compare versions.
  uint64_t version = 0;

  bool operator==(const LldpNeighborSet& o) const {
    return version == o.version && neighbors == o.neighbors;
  }
  bool operator!=(const LldpNeighborSet& o) const { return !(*this == o); }
};

// The LLDP state published with each snapshot.
struct LldpState {
  std::string source;  // "lldpd" or "file"
  LldpNeighborSet set;
  // The last read succeeded: lldpd answered, or the file parsed. An absent
  // lldpd (no socket, connection refused) is not an error but is not up.
  bool up = false;
  uint64_t reads_ok = 0;
  uint64_t reads_unavailable = 0;  // lldpd absent: no neighbors
  uint64_t reads_failed = 0;       // unreadable file, invalid JSON, ...
  LldpIssues issues;               // since start
  std::string last_error;          // of the most recent failed read
};

}  // namespace fabricdiag::agent
