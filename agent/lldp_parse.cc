#include "agent/lldp_parse.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"

namespace fabricdiag::agent {
namespace {

using Json = nlohmann::json;

// Linux netdev names: 1..15 bytes (IFNAMSIZ 16 with the NUL,
// include/uapi/linux/if.h), no '/', no whitespace.
bool IsValidNetdevName(absl::string_view name) {
  if (name.empty() || name.size() > 15 || name == "." || name == "..") {
    return false;
  }
  for (const char c : name) {
    if (c == '/' || c == ':' || static_cast<unsigned char>(c) <= ' ') {
      return false;
    }
  }
  return true;
}

// Cuts `s` to kLldpMaxFieldBytes without splitting a UTF-8 sequence.
bool Cut(std::string* s) {
  if (s->size() <= kLldpMaxFieldBytes) return false;
  size_t n = kLldpMaxFieldBytes;
  while (n > 0 && (static_cast<unsigned char>((*s)[n]) & 0xC0) == 0x80) --n;
  s->resize(n);
  return true;
}

// The string at `key` of object `j`, or "" when absent or not a string.
std::string Text(const Json& j, const char* key) {
  if (!j.is_object()) return "";
  auto it = j.find(key);
  if (it == j.end() || !it->is_string()) return "";
  return it->get<std::string>();
}

// {"type": "mac", "value": "..."} at `key` of `j`.
void TypedId(const Json& j, std::string* type, std::string* value) {
  if (!j.is_object()) return;
  auto it = j.find("id");
  if (it == j.end()) return;
  // lldpd prints a list when a neighbor sends several ids: the first wins.
  const Json& id = it->is_array() && !it->empty() ? it->front() : *it;
  *type = Text(id, "type");
  *value = Text(id, "value");
}

// "mgmt-ip" is a string, or a list of strings when the neighbor announces
// several addresses.
std::string FirstAddress(const Json& chassis) {
  if (!chassis.is_object()) return "";
  auto it = chassis.find("mgmt-ip");
  if (it == chassis.end()) return "";
  if (it->is_string()) return it->get<std::string>();
  if (it->is_array()) {
    for (const Json& a : *it) {
      if (a.is_string()) return a.get<std::string>();
    }
  }
  return "";
}

// The neighbor of `netdev` from its interface object ({"via": "LLDP",
// "chassis": {...}, "port": {...}}).
LldpNeighbor FromInterface(const std::string& netdev, const Json& iface) {
  LldpNeighbor n;
  n.netdev = netdev;
  if (!iface.is_object()) return n;
  auto chassis_it = iface.find("chassis");
  if (chassis_it != iface.end() && chassis_it->is_object()) {
    const Json& chassis = *chassis_it;
    // With a system name the chassis is {"NAME": {"id": ...}}; without one
    // its members sit directly under "chassis".
    if (chassis.contains("id")) {
      TypedId(chassis, &n.chassis_id_type, &n.chassis_id);
      n.management_address = FirstAddress(chassis);
    } else if (!chassis.empty()) {
      auto first = chassis.begin();
      n.system_name = first.key();
      TypedId(first.value(), &n.chassis_id_type, &n.chassis_id);
      n.management_address = FirstAddress(first.value());
    }
  }
  auto port_it = iface.find("port");
  if (port_it != iface.end() && port_it->is_object()) {
    TypedId(*port_it, &n.port_id_type, &n.port_id);
    n.port_description = Text(*port_it, "descr");
  }
  return n;
}

// One element of "interface": an object whose members are interfaces.
void AddInterfaces(const Json& element, std::vector<LldpNeighbor>* out,
                   LldpIssues* issues) {
  if (!element.is_object() || element.empty()) {
    ++issues->missing_field;
    issues->last = "an \"interface\" entry is not an object of interfaces";
    return;
  }
  for (auto it = element.begin(); it != element.end(); ++it) {
    LldpNeighbor n = FromInterface(it.key(), it.value());
    if (SanitizeLldpNeighbor(&n, issues)) out->push_back(std::move(n));
  }
}

}  // namespace

bool SanitizeLldpNeighbor(LldpNeighbor* n, LldpIssues* issues) {
  for (std::string* s :
       {&n->system_name, &n->chassis_id, &n->chassis_id_type, &n->port_id,
        &n->port_id_type, &n->port_description, &n->management_address}) {
    if (Cut(s)) {
      ++issues->truncated;
      issues->last =
          absl::StrCat("a field of the neighbor on ", n->netdev.substr(0, 64),
                       " was cut to ", kLldpMaxFieldBytes, " bytes");
    }
  }
  if (n->netdev.empty() || n->chassis_id.empty() || n->port_id.empty()) {
    ++issues->missing_field;
    Cut(&n->netdev);
    issues->last = absl::StrCat("neighbor on \"", n->netdev, "\" dropped: no ",
                                n->netdev.empty()       ? "local interface"
                                : n->chassis_id.empty() ? "chassis id"
                                                        : "port id");
    return false;
  }
  if (!IsValidNetdevName(n->netdev)) {
    ++issues->invalid_netdev;
    Cut(&n->netdev);
    issues->last = absl::StrCat("neighbor on \"", n->netdev.substr(0, 64),
                                "\" dropped: not a netdev name");
    return false;
  }
  return true;
}

void NormalizeLldpNeighbors(std::vector<LldpNeighbor>* neighbors,
                            LldpIssues* issues) {
  std::sort(neighbors->begin(), neighbors->end());
  neighbors->erase(std::unique(neighbors->begin(), neighbors->end()),
                   neighbors->end());
  if (neighbors->size() > kLldpMaxNeighbors) {
    issues->too_many += neighbors->size() - kLldpMaxNeighbors;
    issues->last =
        absl::StrCat(neighbors->size(), " neighbors: only the first ",
                     kLldpMaxNeighbors, " are kept");
    neighbors->resize(kLldpMaxNeighbors);
  }
}

absl::StatusOr<LldpParsed> ParseLldpcliJson(absl::string_view text) {
  if (text.size() > kLldpMaxTextBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("LLDP text of ", text.size(), " bytes: more than the ",
                     kLldpMaxTextBytes, " accepted"));
  }
  // No exceptions: a parse failure is a discarded value.
  Json doc = Json::parse(text.begin(), text.end(), nullptr,
                         /*allow_exceptions=*/false);
  if (doc.is_discarded()) {
    return absl::InvalidArgumentError(
        "not JSON (expected what `lldpcli -f json show neighbors` prints)");
  }
  if (!doc.is_object() || !doc.contains("lldp")) {
    return absl::InvalidArgumentError(
        "no \"lldp\" object (expected what `lldpcli -f json show neighbors` "
        "prints)");
  }
  LldpParsed out;
  const Json& lldp = doc["lldp"];
  // Without neighbors lldpcli prints {"lldp": {}} (or an empty list).
  if (lldp.is_null() || (lldp.is_array() && lldp.empty())) return out;
  if (!lldp.is_object()) {
    return absl::InvalidArgumentError("\"lldp\" is not an object");
  }
  auto ifaces = lldp.find("interface");
  if (ifaces != lldp.end()) {
    if (ifaces->is_array()) {
      for (const Json& element : *ifaces) {
        AddInterfaces(element, &out.neighbors, &out.issues);
      }
    } else {
      AddInterfaces(*ifaces, &out.neighbors, &out.issues);
    }
  }
  NormalizeLldpNeighbors(&out.neighbors, &out.issues);
  return out;
}

}  // namespace fabricdiag::agent
