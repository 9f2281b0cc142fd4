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
//
//   std::string name;
//   LeafTarget t = MapLeaf(Dialect::kOpenConfig, "", path, oids, &name);
//
// Pure; thread-compatible.
#pragma once

#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "gnmi/dialect.h"
#include "gnmi/gnmi_path.h"

namespace fabricdiag::gnmi {

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
  };
  Kind kind = Kind::kIgnored;
  // The port; a view into the path or into the oid map.
  absl::string_view device;
  // kSeries: the interface's counters restarted when this leaf changes
  // (OpenConfig last-clear).
  bool last_clear = false;
};

// SONiC object id ("oid:0x1000000000039") -> port name ("Ethernet68").
using OidNames = absl::flat_hash_map<std::string, std::string>;

// `db` is the notification's prefix target, or the database the group
// subscribed to when the target does not echo it (SONiC only). For kSeries
// the series name is written to *name (cleared first; a reused buffer).
LeafTarget MapLeaf(Dialect dialect, absl::string_view db, const PathView& path,
                   const OidNames& oids, std::string* name);

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
