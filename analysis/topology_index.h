// Constant-time questions about the fabric topology, asked once per port per
// analysis pass: which port is at the other end of this cable, is this switch
// port an uplink, does the topology know this switch port at all.
//
// A topology of 4,096 nodes has ~33k links; scanning them per port makes a
// pass quadratic. The collector builds one index when a topology is applied
// and hands it to every pass (AnalysisInput::topology_index).
//
//   TopologyIndex index(&topology);
//   if (std::optional<LinkEnd> peer = index.Partner(port)) ...
//
// Immutable after construction; thread-safe to share.
#pragma once

#include <optional>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/string_view.h"
#include "analysis/fabric_view.h"
#include "proto/layout.pb.h"

namespace fabricdiag::analysis {

// One end of a cable: a host and its NIC, or a switch and its port.
struct LinkEnd {
  std::string node;
  std::string device;
  bool is_switch = false;

  friend bool operator==(const LinkEnd& a, const LinkEnd& b) {
    return a.node == b.node && a.device == b.device &&
           a.is_switch == b.is_switch;
  }
};

class TopologyIndex {
 public:
  // An empty index when `topology` is null. Does not keep the pointer.
  explicit TopologyIndex(const v1::Topology* topology);

  // The other end of `port`'s cable: a switch port for a host NIC, a host
  // NIC or (over switch_links, the far end of an uplink) another switch's
  // port for a switch port; nullopt when the topology does not list the
  // port. A port answers to its RDMA device name and to its netdev name
  // (switch ports are netdevs; a topology may name a host NIC either way).
  // The side the view says the port is on is tried first, then the other,
  // in case the view did not mark a switch port.
  std::optional<LinkEnd> Partner(const PortView& port) const;

  // The switch port cabled to host `node`'s NIC `nic`.
  const LinkEnd* SwitchPortOf(absl::string_view node,
                              absl::string_view nic) const;

  // True when the topology lists `port` as an uplink of its switch.
  bool IsUplink(const PortView& port) const;

  // True when the topology cables this switch port to a host or a switch or
  // lists it as an uplink: a switch port the topology does not know is
  // usually unused.
  bool KnowsSwitchPort(const PortView& port) const;

  bool IsSwitch(absl::string_view node) const {
    return switches_.contains(node);
  }
  // True when a link of the topology names `node` as its host.
  bool IsHost(absl::string_view node) const {
    return host_side_.contains(node);
  }

 private:
  // node -> port name -> far end.
  using Ends = absl::flat_hash_map<std::string,
                                   absl::flat_hash_map<std::string, LinkEnd>>;

  static const LinkEnd* Lookup(const Ends& ends, const PortView& port);

  Ends host_side_;    // (host, nic) -> switch port
  Ends switch_side_;  // (switch, port) -> host NIC or switch port
  absl::flat_hash_map<std::string, absl::flat_hash_set<std::string>> uplinks_;
  absl::flat_hash_set<std::string> switches_;
};

}  // namespace fabricdiag::analysis
