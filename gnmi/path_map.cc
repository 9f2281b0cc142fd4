#include "gnmi/path_map.h"

#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace fabricdiag::gnmi {
namespace {

using Kind = LeafTarget::Kind;

bool NameIs(const PathView& p, size_t i, absl::string_view name) {
  return i < p.size() && ElemName(p[i].name) == name;
}

// The elements [from, end) of `p` are exactly `names`.
bool RestIs(const PathView& p, size_t from,
            std::initializer_list<absl::string_view> names) {
  if (p.size() - from != names.size()) return false;
  size_t i = from;
  for (absl::string_view n : names) {
    if (!NameIs(p, i++, n)) return false;
  }
  return true;
}

LeafTarget Make(Kind kind, absl::string_view device = {}) {
  LeafTarget t;
  t.kind = kind;
  t.device = device;
  return t;
}

// Below /interfaces/interface[name=P] (from = index of the element after
// "interface").
LeafTarget MapInterface(const PathView& p, size_t from, absl::string_view dev,
                        std::string* name) {
  if (RestIs(p, from, {"state", "oper-status"})) {
    return Make(Kind::kOperStatus, dev);
  }
  if (RestIs(p, from, {"ethernet", "state", "port-speed"})) {
    return Make(Kind::kPortSpeed, dev);
  }
  if (RestIs(p, from, {"ethernet", "state", "negotiated-port-speed"})) {
    return Make(Kind::kNegotiatedSpeed, dev);
  }
  // Operational state only: config is what was asked for, and
  // subinterfaces count the same packets again.
  const bool state = NameIs(p, from, "state");
  const bool ethernet =
      NameIs(p, from, "ethernet") &&
      (NameIs(p, from + 1, "state") || NameIs(p, from + 1, "pfc"));
  if (!state && !ethernet) return Make(Kind::kIgnored);
  if (p.size() - from < 2) return Make(Kind::kIgnored);
  absl::StrAppend(name, "/interfaces/interface");
  AppendElems(p, from, name);
  LeafTarget t = Make(Kind::kSeries, dev);
  t.last_clear = RestIs(p, from, {"state", "counters", "last-clear"});
  return t;
}

// The leaves of an OpenConfig neighbor's state container
// (openconfig-lldp.yang, grouping lldp-neighbor-state) the bridge keeps.
bool OpenConfigLldpField(absl::string_view leaf, LldpField* field) {
  static constexpr std::pair<absl::string_view, LldpField> kFields[] = {
      {"system-name", LldpField::kSystemName},
      {"chassis-id", LldpField::kChassisId},
      {"chassis-id-type", LldpField::kChassisIdType},
      {"port-id", LldpField::kPortId},
      {"port-id-type", LldpField::kPortIdType},
      {"port-description", LldpField::kPortDescription},
      {"management-address", LldpField::kManagementAddress},
  };
  for (const auto& [name, f] : kFields) {
    if (leaf == name) {
      *field = f;
      return true;
    }
  }
  return false;
}

// /lldp/interfaces/interface[name=P]/neighbors/neighbor[id=N]/state/F.
LeafTarget MapOpenConfigLldp(const PathView& p) {
  if (!NameIs(p, 1, "interfaces") || !NameIs(p, 2, "interface")) {
    return Make(Kind::kIgnored);  // global config and state, counters
  }
  if (p.size() != 7 || !NameIs(p, 3, "neighbors") ||
      !NameIs(p, 4, "neighbor") || !NameIs(p, 5, "state")) {
    return Make(Kind::kIgnored);  // capabilities, TLVs, interface counters
  }
  LldpField field;
  if (!OpenConfigLldpField(ElemName(p[6].name), &field)) {
    return Make(Kind::kIgnored);  // age, ttl, system-description, ...
  }
  const absl::string_view port = p[2].Key("name");
  const absl::string_view id = p[4].Key("id");
  if (port.empty() || id.empty()) return Make(Kind::kBadPath);
  LeafTarget t = Make(Kind::kLldp, port);
  t.neighbor = id;
  t.lldp_field = field;
  return t;
}

LeafTarget MapOpenConfig(const PathView& p, std::string* name) {
  if (NameIs(p, 0, "lldp")) return MapOpenConfigLldp(p);
  if (NameIs(p, 0, "interfaces") && NameIs(p, 1, "interface")) {
    const absl::string_view dev = p[1].Key("name");
    if (dev.empty()) return Make(Kind::kBadPath);
    return MapInterface(p, 2, dev, name);
  }
  if (NameIs(p, 0, "qos") && NameIs(p, 1, "interfaces") &&
      NameIs(p, 2, "interface")) {
    const absl::string_view dev = p[2].Key("interface-id");
    if (dev.empty()) return Make(Kind::kBadPath);
    if (p.size() < 5) return Make(Kind::kIgnored);
    for (size_t i = 3; i < p.size(); ++i) {
      if (ElemName(p[i].name) == "config") return Make(Kind::kIgnored);
    }
    absl::StrAppend(name, "/qos/interfaces/interface");
    AppendElems(p, 3, name);
    return Make(Kind::kSeries, dev);
  }
  if (RestIs(p, 0, {"system", "state", "boot-time"})) {
    return Make(Kind::kBootTime);
  }
  return Make(Kind::kIgnored);
}

// A SONiC port key: a name, or an object id known from
// COUNTERS_PORT_NAME_MAP; empty when the oid is not (yet) known.
absl::string_view SonicPort(absl::string_view key, const OidNames& oids) {
  if (!absl::StartsWith(key, "oid:")) return key;
  auto it = oids.find(key);
  return it == oids.end() ? absl::string_view() : it->second;
}

// The port element of a SONiC table path: p[i], or p[i + 1] when p[i] is
// the wildcard the subscription used ("Ethernet*"). Sets *next to the
// element after the port.
absl::string_view SonicPortAt(const PathView& p, size_t i, size_t* next) {
  if (i < p.size() && absl::StrContains(p[i].name, '*')) ++i;
  if (i >= p.size()) return {};
  *next = i + 1;
  return p[i].name;
}

// The virtual paths with one entry per queue of a port ("Ethernet68:3").
bool IsQueueGroup(absl::string_view name) {
  return name == "Queues" || name == "Pfcwd";
}

// p[at] is Queues or Pfcwd, p[at + 1] "<port>:<queue>", p[at + 2] the
// statistic. `port` is the port the path named before, or empty.
LeafTarget SonicQueue(const PathView& p, size_t at, absl::string_view port,
                      const OidNames& oids, std::string* name) {
  const absl::string_view entry = p[at + 1].name;
  const size_t colon = entry.find(':');
  if (colon == absl::string_view::npos || colon == 0) {
    return Make(Kind::kBadPath);
  }
  const absl::string_view owner = SonicPort(entry.substr(0, colon), oids);
  if (owner.empty() || (!port.empty() && owner != port)) {
    return Make(Kind::kBadPath);
  }
  // Pfcwd lists the same queue objects as Queues (those with the watchdog
  // on): one series either way.
  absl::StrAppend(name, "Queues[", entry.substr(colon + 1), "]/",
                  p[at + 2].name);
  return Make(Kind::kSeries, owner);
}

LeafTarget MapSonic(absl::string_view db, const PathView& p,
                    const OidNames& oids, std::string* name) {
  if (p.empty()) return Make(Kind::kIgnored);
  const absl::string_view table = p[0].name;
  size_t next = 0;
  if (db == "COUNTERS_DB" && table == "COUNTERS") {
    // COUNTERS/Ethernet*/Queues/Ethernet68:3/<name>: the wildcard stood
    // for the port, which the queue's entry names.
    if (p.size() == 5 && absl::StrContains(p[1].name, '*') &&
        IsQueueGroup(p[2].name)) {
      return SonicQueue(p, 2, {}, oids, name);
    }
    const absl::string_view key = SonicPortAt(p, 1, &next);
    if (key.empty()) return Make(Kind::kIgnored);
    const absl::string_view port = SonicPort(key, oids);
    if (port.empty()) return Make(Kind::kBadPath);
    const size_t rest = p.size() - next;
    if (rest == 1) {
      absl::StrAppend(name, p[next].name);
      return Make(Kind::kSeries, port);
    }
    if (rest == 3 && IsQueueGroup(p[next].name)) {
      return SonicQueue(p, next, port, oids, name);
    }
    return Make(Kind::kIgnored);
  }
  if (db == "COUNTERS_DB" && table == "COUNTERS_PORT_NAME_MAP") {
    if (p.size() == 2) return Make(Kind::kPortOid, p[1].name);
    return Make(Kind::kIgnored);
  }
  if (db == "APPL_DB" && table == "LLDP_ENTRY_TABLE") {
    // sonic-buildimage lldpmgrd / lldp_syncd: one hash per local port.
    static constexpr std::pair<absl::string_view, LldpField> kFields[] = {
        {"lldp_rem_sys_name", LldpField::kSystemName},
        {"lldp_rem_chassis_id", LldpField::kChassisId},
        {"lldp_rem_chassis_id_subtype", LldpField::kChassisIdType},
        {"lldp_rem_port_id", LldpField::kPortId},
        {"lldp_rem_port_id_subtype", LldpField::kPortIdType},
        {"lldp_rem_port_desc", LldpField::kPortDescription},
        {"lldp_rem_man_addr", LldpField::kManagementAddress},
    };
    const absl::string_view port = SonicPortAt(p, 1, &next);
    if (port.empty() || p.size() - next != 1) return Make(Kind::kIgnored);
    for (const auto& [field_name, field] : kFields) {
      if (p[next].name != field_name) continue;
      LeafTarget t = Make(Kind::kLldp, port);
      t.lldp_field = field;
      return t;
    }
    return Make(Kind::kIgnored);
  }
  if ((db == "APPL_DB" || db == "STATE_DB") && table == "PORT_TABLE") {
    const absl::string_view port = SonicPortAt(p, 1, &next);
    if (port.empty() || p.size() - next != 1) return Make(Kind::kIgnored);
    if (p[next].name == "oper_status") return Make(Kind::kOperStatus, port);
    if (p[next].name == "speed") return Make(Kind::kPortSpeed, port);
    return Make(Kind::kIgnored);
  }
  return Make(Kind::kIgnored);
}

}  // namespace

LeafTarget MapLeaf(Dialect dialect, absl::string_view db, const PathView& path,
                   const OidNames& oids, std::string* name) {
  name->clear();
  return dialect == Dialect::kSonic ? MapSonic(db, path, oids, name)
                                    : MapOpenConfig(path, name);
}

std::string LldpIdType(absl::string_view type, bool chassis) {
  const absl::string_view t = ElemName(type);
  uint32_t n = 0;
  if (absl::SimpleAtoi(t, &n)) {
    // LLDP-MIB LldpChassisIdSubtype and LldpPortIdSubtype.
    static constexpr const char* kChassis[] = {
        "", "chassis", "ifalias", "port", "mac", "ip", "ifname", "local"};
    static constexpr const char* kPort[] = {
        "", "ifalias", "port", "mac", "ip", "ifname", "circuit", "local"};
    if (n >= 1 && n <= 7) return chassis ? kChassis[n] : kPort[n];
    return std::string(t);
  }
  // openconfig-lldp-types.yang, LLDP_SYSTEM_ID_TYPE and LLDP_PORT_ID_TYPE.
  static constexpr std::pair<absl::string_view, const char*> kNames[] = {
      {"MAC_ADDRESS", "mac"},
      {"INTERFACE_NAME", "ifname"},
      {"LOCAL", "local"},
      {"INTERFACE_ALIAS", "ifalias"},
      {"NETWORK_ADDRESS", "ip"},
      {"PORT_COMPONENT", "port"},
      {"CHASSIS_COMPONENT", "chassis"},
      {"AGENT_CIRCUIT_ID", "circuit"},
  };
  for (const auto& [name, lldpd] : kNames) {
    if (t == name) return lldpd;
  }
  return absl::AsciiStrToLower(t);
}

std::string OperState(absl::string_view status) {
  std::string s = absl::AsciiStrToLower(ElemName(status));
  if (s == "up") return "up";
  if (s == "down" || s == "lower_layer_down" || s == "not_present") {
    return "down";
  }
  if (s == "dormant" || s == "testing") return s;
  return "unknown";
}

double SpeedIdentityBytesPerSecond(absl::string_view identity) {
  absl::string_view s = ElemName(identity);
  if (!absl::ConsumePrefix(&s, "SPEED_")) return 0;
  double scale = 0;
  if (absl::ConsumeSuffix(&s, "GB")) {
    scale = 1e9;
  } else if (absl::ConsumeSuffix(&s, "MB")) {
    scale = 1e6;
  } else {
    return 0;  // SPEED_UNKNOWN
  }
  uint64_t n = 0;
  if (!absl::SimpleAtoi(s, &n)) return 0;
  return static_cast<double>(n) * scale / 8;
}

}  // namespace fabricdiag::gnmi
