// What the simulator's gNMI target (sim/gnmi_target.h) serves: the leaves
// of one simulated switch, in the paths and value encodings a real target
// of each dialect uses, and which of them a subscription path selects.
//
// OpenConfig (as Arista EOS streams it): one prefix per interface,
// "/interfaces/interface[name=P]", and relative leaf paths
// ("state/counters/in-octets") with `uint_val` counters; oper-status
// "UP"/"DOWN", port-speed as an identity ("SPEED_400GB"), Arista's
// per-priority PFC augment ("ethernet/pfc/priorities/priority[index=N]/
// state/in-frames"), and "/system/state/boot-time" (no prefix).
// SONiC (as sonic-gnmi streams COUNTERS_DB and APPL_DB): prefix target
// "COUNTERS_DB", one update "COUNTERS/<port>" per port whose value is a
// `json_ietf_val` object of SAI statistic names with decimal string values,
// "COUNTERS_PORT_NAME_MAP" (port -> "oid:0x..."), and under prefix target
// "APPL_DB" one "PORT_TABLE/<port>" object per port (oper_status "up" /
// "down", speed in Mb/s). LLDP: OpenConfig serves each neighbor's state
// leaves under "/lldp/interfaces/interface[name=P]/neighbors/neighbor[id=1]"
// (text leaves, types as identities: "MAC_ADDRESS", "INTERFACE_NAME"), and
// SONiC one "LLDP_ENTRY_TABLE/<port>" hash per port under APPL_DB, as
// lldp_syncd writes it (LLDP-MIB subtype numbers, "lldp_rem_*" strings).
// The counter leaves are the counter table's gNMI
// rows of a port (counters/counter_table.h: every spelling a bridge knows),
// each with the simulated counter its meaning has (CounterOf in
// sim/port_counters.h). Queue statistics and gauges are not simulated: no
// leaf of either dialect carries them, so a subscription to them matches
// nothing.
//
//   SwitchState s = ...;                         // one tick of one switch
//   std::vector<Leaf> all = SwitchLeaves(Dialect::kSonic, s);
//   ASSIGN_OR_RETURN(Selector sel, Selector::Create(Dialect::kSonic,
//                                                   list.prefix(),
//                                                   sub.path()));
//   for (const Leaf& l : all) if (sel.Matches(l)) { ... }
//
// Pure; thread-compatible.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "gnmi/dialect.h"
#include "proto/gnmi.pb.h"
#include "sim/port_counters.h"

namespace fabricdiag::sim {

// The LLDP neighbor a switch port hears (the far end of its cable).
struct LldpPeer {
  std::string local_port;   // the switch's port, "swp1"
  std::string system_name;  // "gpu-003", "spine-0"
  std::string chassis_id;   // a MAC address, "02:00:00:00:00:03"
  std::string port_id;      // the far end's port or netdev, "eth2"
  std::string port_description;
  std::string management_address;  // "" when none
};

// One switch at one instant.
struct SwitchState {
  std::string name;
  int64_t timestamp_nanos = 0;  // since the Unix epoch
  int64_t boot_time_nanos = 0;  // since the Unix epoch
  // Front-panel port names and their counters, in the same order.
  std::vector<std::string> ports;
  std::vector<PortCounters> counters;
  // What the ports hear over LLDP, in port order. The leaves of a switch
  // must be the same in every state (a subscription finds them once, by
  // position), so the ports with a neighbor stay the same; what they hear
  // may change.
  std::vector<LldpPeer> lldp;
};

// One leaf (OpenConfig) or one table entry (SONiC) as a target sends it.
struct Leaf {
  ::gnmi::Path prefix;  // the Notification's prefix (SONiC: its target)
  ::gnmi::Path path;    // relative to `prefix`
  ::gnmi::TypedValue value;
  // prefix target + "|" + the full path text: identifies the leaf across
  // ticks (ON_CHANGE compares values under it) and groups notifications.
  std::string key;
  std::string prefix_text;  // the prefix's text form, target included
  bool counter = false;     // a port's counter (SONiC: its COUNTERS hash)
};

// Every leaf of `state` in `dialect`, ports in the order of `state.ports`.
std::vector<Leaf> SwitchLeaves(gnmi::Dialect dialect, const SwitchState& state);

// "oid:0x1000000000001" for port `index`: SONiC port object ids have type
// 0x01 (SAI_OBJECT_TYPE_PORT) in their top bits.
std::string SonicPortOid(size_t index);

// One subscription's path (the SubscriptionList prefix joined with the
// subscription's path), matching the leaves at or below it.
//
// An element matches a leaf element of the same name (a YANG module prefix
// on either is ignored), or any element when it is "*" or contains '*'
// (SONiC's "Ethernet*": every port of the switch, whatever the topology
// names them). A key matches when it is "*" or equal. The prefix target
// must be the leaf's in SONiC (COUNTERS_DB or APPL_DB); OpenConfig ignores
// targets (EOS accepts any).
class Selector {
 public:
  // Unimplemented for a SONiC target that is not COUNTERS_DB or APPL_DB.
  static absl::StatusOr<Selector> Create(gnmi::Dialect dialect,
                                         const ::gnmi::Path& list_prefix,
                                         const ::gnmi::Path& path);

  bool Matches(const Leaf& leaf) const;
  // The path as given, for messages.
  const std::string& text() const { return text_; }

  // For a path below a port ("/interfaces/interface/ethernet/state/
  // counters", SONiC's "COUNTERS/Ethernet*/Queues"), the port itself
  // ("/interfaces/interface", "COUNTERS/Ethernet*"); nullopt for others.
  std::optional<Selector> PortSubtree() const;

 private:
  Selector() = default;

  gnmi::Dialect dialect_ = gnmi::Dialect::kOpenConfig;
  std::string target_;
  ::gnmi::Path path_;  // prefix and subscription elements
  std::string text_;
};

}  // namespace fabricdiag::sim
