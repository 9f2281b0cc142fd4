// Where a leaf of a switch's gNMI stream goes: a series of one of its ports
// (named as in the counter table's gNMI families), a port attribute for the
// inventory, a switch-wide event, or nowhere.
//
// OpenConfig:
//   /interfaces/interface[name=P]/state/..., .../ethernet/...
//       -> series of P, named "/interfaces/interface/state/..." (the
//          interface key is the device; other keys stay)
//   /qos/interfaces/interface[interface-id=P]/...  -> series of P
//   .../state/oper-status, ethernet/state/port-speed,
//   negotiated-port-speed                           -> attributes of P
//   /system/state/boot-time                         -> a reload when it moves
// SONiC (target COUNTERS_DB, APPL_DB):
//   COUNTERS/P/<SAI name>, COUNTERS/Ethernet*/P/<SAI name>
//       -> series "<SAI name>" of P (an "oid:0x..." port through
//          COUNTERS_PORT_NAME_MAP)
//   COUNTERS/[Ethernet*/]P/Queues/P:N/<name>, .../Pfcwd/P:N/<name>
//       -> series "Queues[N]/<name>" of P
//   COUNTERS_PORT_NAME_MAP/P (text "oid:0x...")     -> P's object id
//   PORT_TABLE/[Ethernet*/]P/oper_status, speed      -> attributes of P
//   LLDP_ENTRY_TABLE/[Ethernet*/]P/lldp_rem_*        -> a field of the LLDP
//                                                      neighbor heard on P
// OpenConfig LLDP:
//   /lldp/interfaces/interface[name=P]/neighbors/neighbor[id=N]/state/F
//       -> field F of neighbor N heard on P (system-name, port-id, ...)
//
//   std::string name;
//   LeafTarget t = MapLeaf(Dialect::kOpenConfig, "", path, oids, &name);
//
// Pure; thread-compatible.
#pragma once

#include <cstdint>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "gnmi/dialect.h"
#include "gnmi/gnmi_path.h"

namespace fabricdiag::gnmi {

// The fields of an LLDP neighbor the bridge reads (the LldpNeighbor message
// of proto/ingest.proto).
enum class LldpField : uint8_t {
  kSystemName,
  kChassisId,
  kChassisIdType,
  kPortId,
  kPortIdType,
  kPortDescription,
  kManagementAddress,
};
inline constexpr int kLldpFieldCount = 7;

struct LeafTarget {
  enum class Kind : uint8_t {
    kIgnored,          // not in the models the bridge reads (config, text)
    kSeries,           // a counter or gauge of `device`, named in *name
    kOperStatus,       // text: OpenConfig UP/DOWN/..., SONiC up/down
    kPortSpeed,        // OpenConfig SPEED_* identity, SONiC Mb/s
    kNegotiatedSpeed,  // OpenConfig SPEED_* identity
    kBootTime,         // nanoseconds since the epoch; a change is a reload
    kPortOid,          // SONiC: `device`'s SAI object id (text)
    kBadPath,          // a port path without its port (no interface key)
    kLldp,             // text: field `lldp_field` of the LLDP neighbor
                       // `neighbor` heard on port `device`
  };
  Kind kind = Kind::kIgnored;
  // The port; a view into the path or into the oid map.
  absl::string_view device;
  // kSeries: the interface's counters restarted when this leaf changes
  // (OpenConfig last-clear).
  bool last_clear = false;
  // kLldp: the neighbor's key on the port (OpenConfig `id`; "" for SONiC,
  // which keeps one neighbor per port) and which of its fields the leaf is.
  absl::string_view neighbor;
  LldpField lldp_field = LldpField::kSystemName;
};

// SONiC object id ("oid:0x1000000000039") -> port name ("Ethernet68").
using OidNames = absl::flat_hash_map<std::string, std::string>;

// `db` is the notification's prefix target, or the database the group
// subscribed to when the target does not echo it (SONiC only). For kSeries
// the series name is written to *name (cleared first; a reused buffer).
LeafTarget MapLeaf(Dialect dialect, absl::string_view db, const PathView& path,
                   const OidNames& oids, std::string* name);

// An LLDP chassis or port id subtype as lldpd names it ("mac", "ifname",
// "local", "ifalias", "ip", ...), from an OpenConfig identity
// (openconfig-lldp-types.yang: MAC_ADDRESS, INTERFACE_NAME, LOCAL, ...) or
// SONiC's LLDP-MIB number (IEEE 802.1AB LldpPortIdSubtype: 3 = mac,
// 5 = interface name, 7 = local; LldpChassisIdSubtype: 4 = mac, 6 =
// interface name). `chassis` picks the chassis numbering. Unknown values
// are returned lower-cased, so that nothing is lost.
std::string LldpIdType(absl::string_view type, bool chassis);

// OpenConfig oper-status (UP, DOWN, LOWER_LAYER_DOWN, ...) or SONiC
// oper_status (up, down) as a netdev operstate: "up", "down" (DOWN,
// LOWER_LAYER_DOWN and NOT_PRESENT pass no packets), "dormant", "testing",
// "unknown".
std::string OperState(absl::string_view status);

// Bytes per second of an OpenConfig speed identity ("SPEED_400GB",
// "openconfig-if-ethernet:SPEED_2500MB"); 0 for SPEED_UNKNOWN and names it
// does not know.
double SpeedIdentityBytesPerSecond(absl::string_view identity);

}  // namespace fabricdiag::gnmi
