#include "sim/gnmi_leaves.h"

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "counters/counter_table.h"
#include "gnmi/gnmi_path.h"

namespace fabricdiag::sim {
namespace {

using counters::Family;
using counters::Meaning;
using gnmi::Dialect;

// A counter leaf and the simulated counter behind it; nullopt: not
// simulated, the leaf reads 0 (802.3x pause on a PFC fabric, multicast,
// output errors).
struct CounterLeaf {
  std::string name;  // relative to the port's prefix; SONiC: the SAI name
  std::optional<Counter> counter;
  int priority = 0;  // the slot's offset from `counter`
};

// The counter behind a row of `family` (a switch port's).
std::optional<Counter> CounterOfRow(const counters::CounterSpec& row) {
  if (row.meaning != Meaning::kNone) {
    return CounterOf(row.family, row.meaning, row.direction,
                     /*switch_port=*/true);
  }
  // A RoCE fabric's traffic is unicast: the unicast packet counters count
  // every packet, the multicast and broadcast ones none.
  const bool unicast = absl::StrContains(row.name, "unicast") ||
                       (absl::StrContains(row.name, "_UCAST_") &&
                        !absl::StrContains(row.name, "NON_UCAST"));
  if (unicast) {
    return CounterOf(row.family, Meaning::kPhyPackets, row.direction, true);
  }
  return std::nullopt;
}

// The counter leaves of a switch port in `family`: the counter table's rows
// of that family (counters/counter_table.cc, docs/counters.md) that a port
// has, per-priority ones for every priority. Queue statistics and the PFC
// watchdog (rows keyed by a queue, "*") are not simulated, nor are gauges.
// OpenConfig names are relative to "/interfaces/interface[name=P]": rows
// under other roots (Cumulus's /qos switch priorities) are not served.
std::vector<CounterLeaf> CounterLeaves(Family family) {
  constexpr absl::string_view kInterface = "/interfaces/interface/";
  std::vector<CounterLeaf> out;
  for (const counters::CounterSpec* row :
       counters::RowsFor(family, counters::Driver::kAny)) {
    if (row->kind != counters::Kind::kCounter ||
        absl::StrContains(row->name, "*")) {
      continue;
    }
    if (family == Family::kGnmiOpenConfig &&
        !absl::StartsWith(row->name, kInterface)) {
      continue;
    }
    const std::optional<Counter> counter = CounterOfRow(*row);
    const bool per_priority = counters::IsPerPriority(*row);
    for (int p = 0; p < (per_priority ? kPriorities : 1); ++p) {
      std::string name = counters::ExpandName(*row, per_priority ? p : -1);
      if (family == Family::kGnmiOpenConfig) {
        name.erase(0, kInterface.size());
      }
      out.push_back({std::move(name), counter, per_priority ? p : 0});
    }
  }
  return out;
}

const std::vector<CounterLeaf>& OpenConfigCounters() {
  static const auto* leaves =
      new std::vector<CounterLeaf>(CounterLeaves(Family::kGnmiOpenConfig));
  return *leaves;
}

const std::vector<CounterLeaf>& SonicCounters() {
  static const auto* leaves =
      new std::vector<CounterLeaf>(CounterLeaves(Family::kGnmiSonic));
  return *leaves;
}

uint64_t ValueOf(const PortCounters& c, std::optional<Counter> counter,
                 int offset = 0) {
  if (!counter) return 0;
  return c.value[static_cast<size_t>(*counter) + static_cast<size_t>(offset)];
}

::gnmi::Path MustParse(absl::string_view text) {
  absl::StatusOr<::gnmi::Path> p = gnmi::ParsePath(text);
  // The texts are literals of this file: a bad one is a programming error.
  if (!p.ok()) abort();
  return *std::move(p);
}

// Leaf keys and prefix texts.
std::string PrefixText(const ::gnmi::Path& prefix) {
  return absl::StrCat(prefix.target(), "|", gnmi::PathToString(prefix));
}

void Add(const ::gnmi::Path& prefix, const std::string& prefix_text,
         absl::string_view relative, ::gnmi::TypedValue value,
         std::vector<Leaf>* out, bool counter = false) {
  Leaf leaf;
  leaf.counter = counter;
  leaf.prefix = prefix;
  leaf.path = MustParse(absl::StrCat("/", relative));
  leaf.value = std::move(value);
  leaf.prefix_text = prefix_text;
  leaf.key = absl::StrCat(prefix_text, "/", relative);
  out->push_back(std::move(leaf));
}

::gnmi::TypedValue Uint(uint64_t v) {
  ::gnmi::TypedValue t;
  t.set_uint_val(v);
  return t;
}

::gnmi::TypedValue Text(std::string s) {
  ::gnmi::TypedValue t;
  t.set_string_val(std::move(s));
  return t;
}

// RFC 7951 JSON, indented as sonic-gnmi sends it.
::gnmi::TypedValue Json(const nlohmann::json& j) {
  ::gnmi::TypedValue t;
  t.set_json_ietf_val(j.dump(2));
  return t;
}

void OpenConfigLeaves(const SwitchState& s, std::vector<Leaf>* out) {
  for (size_t i = 0; i < s.ports.size(); ++i) {
    const PortCounters& c = s.counters[i];
    const ::gnmi::Path prefix =
        MustParse(absl::StrCat("/interfaces/interface[name=", s.ports[i], "]"));
    const std::string prefix_text = PrefixText(prefix);
    for (const CounterLeaf& l : OpenConfigCounters()) {
      Add(prefix, prefix_text, l.name, Uint(ValueOf(c, l.counter, l.priority)),
          out, /*counter=*/true);
    }
    const char* status = !c.present ? "NOT_PRESENT" : c.link_up ? "UP" : "DOWN";
    Add(prefix, prefix_text, "state/oper-status", Text(status), out);
    const std::string speed = absl::StrCat("SPEED_", c.speed_gbps, "GB");
    Add(prefix, prefix_text, "ethernet/state/port-speed", Text(speed), out);
    Add(prefix, prefix_text, "ethernet/state/negotiated-port-speed",
        Text(speed), out);
  }
  const ::gnmi::Path root;
  Add(root, PrefixText(root), "system/state/boot-time",
      Uint(static_cast<uint64_t>(s.boot_time_nanos)), out);
  // One neighbor per port, as EOS numbers them from 1; an LLDP port id is
  // an interface name and the chassis id a MAC address.
  for (const LldpPeer& peer : s.lldp) {
    const ::gnmi::Path prefix = MustParse(
        absl::StrCat("/lldp/interfaces/interface[name=", peer.local_port,
                     "]/neighbors/neighbor[id=1]"));
    const std::string prefix_text = PrefixText(prefix);
    const std::pair<const char*, std::string> fields[] = {
        {"state/system-name", peer.system_name},
        {"state/chassis-id", peer.chassis_id},
        {"state/chassis-id-type", "MAC_ADDRESS"},
        {"state/port-id", peer.port_id},
        {"state/port-id-type", "INTERFACE_NAME"},
        {"state/port-description", peer.port_description},
        {"state/management-address", peer.management_address},
    };
    for (const auto& [leaf, value] : fields) {
      Add(prefix, prefix_text, leaf, Text(value), out);
    }
  }
}

void SonicLeaves(const SwitchState& s, std::vector<Leaf>* out) {
  ::gnmi::Path counters_db;
  counters_db.set_target("COUNTERS_DB");
  const std::string counters_text = PrefixText(counters_db);
  ::gnmi::Path appl_db;
  appl_db.set_target("APPL_DB");
  const std::string appl_text = PrefixText(appl_db);
  nlohmann::json names = nlohmann::json::object();
  for (size_t i = 0; i < s.ports.size(); ++i) {
    const PortCounters& c = s.counters[i];
    nlohmann::json stats = nlohmann::json::object();
    for (const CounterLeaf& l : SonicCounters()) {
      stats[l.name] = absl::StrCat(ValueOf(c, l.counter, l.priority));
    }
    Add(counters_db, counters_text, absl::StrCat("COUNTERS/", s.ports[i]),
        Json(stats), out, /*counter=*/true);
    names[s.ports[i]] = SonicPortOid(i);
  }
  Add(counters_db, counters_text, "COUNTERS_PORT_NAME_MAP", Json(names), out);
  for (size_t i = 0; i < s.ports.size(); ++i) {
    const PortCounters& c = s.counters[i];
    nlohmann::json port = {
        {"admin_status", "up"},
        {"mtu", "9100"},
        {"oper_status", c.present && c.link_up ? "up" : "down"},
        {"speed", absl::StrCat(c.speed_gbps * 1000)},
    };
    Add(appl_db, appl_text, absl::StrCat("PORT_TABLE/", s.ports[i]), Json(port),
        out);
  }
  // LLDP-MIB subtypes: chassis id 4 = MAC address, port id 5 = interface
  // name.
  for (const LldpPeer& peer : s.lldp) {
    const nlohmann::json entry = {
        {"lldp_rem_index", "1"},
        {"lldp_rem_sys_name", peer.system_name},
        {"lldp_rem_chassis_id", peer.chassis_id},
        {"lldp_rem_chassis_id_subtype", "4"},
        {"lldp_rem_port_id", peer.port_id},
        {"lldp_rem_port_id_subtype", "5"},
        // lldp_syncd stores an absent description as one space.
        {"lldp_rem_port_desc",
         peer.port_description.empty() ? " " : peer.port_description},
        {"lldp_rem_man_addr", peer.management_address},
    };
    Add(appl_db, appl_text, absl::StrCat("LLDP_ENTRY_TABLE/", peer.local_port),
        Json(entry), out);
  }
}

// `want` (a subscription element) matches `have` (a leaf element).
bool ElemMatches(const ::gnmi::PathElem& want, const ::gnmi::PathElem& have) {
  if (!absl::StrContains(want.name(), '*') &&
      gnmi::ElemName(want.name()) != gnmi::ElemName(have.name())) {
    return false;
  }
  for (const auto& [k, v] : want.key()) {
    if (v == "*") continue;
    auto it = have.key().find(k);
    if (it == have.key().end() || it->second != v) return false;
  }
  return true;
}

}  // namespace

std::string SonicPortOid(size_t index) {
  return absl::StrFormat("oid:0x%x", (uint64_t{1} << 48) + 1 + index);
}

std::vector<Leaf> SwitchLeaves(Dialect dialect, const SwitchState& state) {
  std::vector<Leaf> out;
  if (dialect == Dialect::kSonic) {
    SonicLeaves(state, &out);
  } else {
    OpenConfigLeaves(state, &out);
  }
  return out;
}

absl::StatusOr<Selector> Selector::Create(Dialect dialect,
                                          const ::gnmi::Path& list_prefix,
                                          const ::gnmi::Path& path) {
  Selector s;
  s.dialect_ = dialect;
  s.target_ = path.target().empty() ? list_prefix.target() : path.target();
  *s.path_.mutable_elem() = list_prefix.elem();
  for (const ::gnmi::PathElem& e : path.elem()) *s.path_.add_elem() = e;
  s.text_ = gnmi::PathToString(s.path_);
  if (!s.target_.empty()) s.text_ = absl::StrCat(s.target_, ":", s.text_);
  if (dialect == Dialect::kSonic && s.target_ != "COUNTERS_DB" &&
      s.target_ != "APPL_DB") {
    return absl::UnimplementedError(
        absl::StrCat("target \"", s.target_,
                     "\" is not a database this switch serves (COUNTERS_DB, "
                     "APPL_DB)"));
  }
  return s;
}

std::optional<Selector> Selector::PortSubtree() const {
  if (path_.elem_size() <= 2) return std::nullopt;
  const bool port =
      dialect_ == Dialect::kSonic
          ? path_.elem(0).name() == "COUNTERS"
          : gnmi::ElemName(path_.elem(0).name()) == "interfaces" &&
                gnmi::ElemName(path_.elem(1).name()) == "interface";
  if (!port) return std::nullopt;
  Selector s = *this;
  s.path_.mutable_elem()->DeleteSubrange(2, path_.elem_size() - 2);
  s.text_ = gnmi::PathToString(s.path_);
  if (!s.target_.empty()) s.text_ = absl::StrCat(s.target_, ":", s.text_);
  return s;
}

bool Selector::Matches(const Leaf& leaf) const {
  if (dialect_ == Dialect::kSonic && leaf.prefix.target() != target_) {
    return false;
  }
  const int n_prefix = leaf.prefix.elem_size();
  if (path_.elem_size() > n_prefix + leaf.path.elem_size()) return false;
  for (int i = 0; i < path_.elem_size(); ++i) {
    const ::gnmi::PathElem& have =
        i < n_prefix ? leaf.prefix.elem(i) : leaf.path.elem(i - n_prefix);
    if (!ElemMatches(path_.elem(i), have)) return false;
  }
  return true;
}

}  // namespace fabricdiag::sim
