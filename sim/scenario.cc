#include "sim/scenario.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <exception>
#include <set>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/names.h"
#include "common/status_macros.h"
#include "common/yaml_reader.h"
#include "sim/fabric.h"
#include "sim/lldp.h"

namespace fabricdiag::sim {
namespace {

using yaml::Describe;
using yaml::FieldError;
using yaml::ReadNumber;

// A scenario holds a handful of faults; anything this large is a mistake.
constexpr size_t kMaxScenarioBytes = 1 << 20;
constexpr size_t kMaxFaults = 10000;
// More uplinks than any switch has (a 64-port switch's half).
constexpr int kMaxPolarizedUplinks = 64;

struct KindInfo {
  FaultKind kind;
  const char* name;
};
constexpr KindInfo kKinds[] = {
    {FaultKind::kHotExpert, "hot_expert"},
    {FaultKind::kPfcStorm, "pfc_storm"},
    {FaultKind::kEcmpPolarization, "ecmp_polarization"},
    {FaultKind::kLinkFlap, "link_flap"},
    {FaultKind::kLinkErrors, "link_errors"},
    {FaultKind::kHalfSpeed, "half_speed"},
    {FaultKind::kRetransmissions, "retransmissions"},
    {FaultKind::kStraggler, "straggler"},
    {FaultKind::kNicGone, "nic_gone"},
    {FaultKind::kGnmiOutage, "gnmi_outage"},
    {FaultKind::kSwitchReload, "switch_reload"},
    {FaultKind::kMiscabling, "miscabling"},
};

absl::StatusOr<std::string> ReadString(const YAML::Node& node,
                                       absl::string_view path) {
  if (!node.IsScalar() || node.Scalar().empty()) {
    return FieldError(path,
                      absl::StrCat("expected a name, got ", Describe(node)));
  }
  return node.Scalar();
}

// Fields each kind uses besides kind/start/end.
std::set<std::string> FieldsOf(FaultKind kind) {
  switch (kind) {
    case FaultKind::kHotExpert:
      return {"node", "nic", "factor"};
    case FaultKind::kPfcStorm:
      return {"node", "nic", "priority"};
    case FaultKind::kEcmpPolarization:
      return {"switch", "uplinks"};
    case FaultKind::kGnmiOutage:
    case FaultKind::kSwitchReload:
      return {"switch"};
    case FaultKind::kLinkFlap:
      return {"node", "nic", "switch", "port", "period"};
    case FaultKind::kMiscabling:
      return {"node", "nic", "switch", "port"};
    default:
      return {"node", "nic"};
  }
}

absl::StatusOr<FaultKind> ParseKind(const YAML::Node& node,
                                    const std::string& path) {
  const YAML::Node kind_node = node["kind"];
  if (!kind_node) return FieldError(path + ".kind", "missing");
  if (!kind_node.IsScalar()) {
    return FieldError(path + ".kind", absl::StrCat("expected a kind, got ",
                                                   Describe(kind_node)));
  }
  for (const KindInfo& k : kKinds) {
    if (kind_node.Scalar() == k.name) return k.kind;
  }
  std::vector<std::string> names;
  for (const KindInfo& k : kKinds) names.push_back(k.name);
  return FieldError(
      path + ".kind",
      absl::StrCat("unknown kind ", QuoteForMessage(kind_node.Scalar()),
                   " (expected one of ", absl::StrJoin(names, ", "), ")"));
}

// One field of a fault that its kind uses (not kind, start or end).
absl::Status ParseTargetField(const std::string& key, const YAML::Node& value,
                              const std::string& field, Fault* fault) {
  if (key == "priority") {
    absl::StatusOr<double> p = ReadNumber(value, field);
    if (!p.ok()) return p.status();
    if (*p != std::floor(*p) || *p < 0 || *p > 7) {
      return FieldError(
          field, absl::StrCat("must be an integer 0..7, got ", value.Scalar()));
    }
    fault->priority = static_cast<int>(*p);
  } else if (key == "uplinks") {
    absl::StatusOr<double> n = ReadNumber(value, field);
    if (!n.ok()) return n.status();
    if (*n != std::floor(*n) || *n < 1 || *n > kMaxPolarizedUplinks) {
      return FieldError(
          field, absl::StrCat("must be an integer 1..", kMaxPolarizedUplinks,
                              ", got ", value.Scalar()));
    }
    fault->uplinks = static_cast<int>(*n);
  } else if (key == "factor" || key == "period") {
    absl::StatusOr<double> v = ReadNumber(value, field);
    if (!v.ok()) return v.status();
    if (*v <= 0) {
      return FieldError(
          field, absl::StrCat("must be greater than 0, got ", value.Scalar()));
    }
    (key == "factor" ? fault->factor : fault->period) = *v;
  } else {
    absl::StatusOr<std::string> name = ReadString(value, field);
    if (!name.ok()) return name.status();
    if (key == "node") fault->node = *name;
    if (key == "nic") fault->nic = *name;
    if (key == "switch") fault->switch_name = *name;
    if (key == "port") fault->port = *name;
  }
  return absl::OkStatus();
}

// Any field of a fault but kind; `fields` are those its kind uses.
absl::Status ParseFaultField(const std::string& key, const YAML::Node& value,
                             const std::string& field,
                             const std::set<std::string>& fields,
                             Fault* fault) {
  if (key == "start" || key == "end") {
    absl::StatusOr<double> t = ReadNumber(value, field);
    if (!t.ok()) return t.status();
    if (*t < 0) {
      return FieldError(
          field, absl::StrCat("must not be negative, got ", value.Scalar()));
    }
    (key == "start" ? fault->start : fault->end) = *t;
    return absl::OkStatus();
  }
  if (fields.count(key) == 0) {
    static const std::set<std::string> kAll = {"node",   "nic",      "switch",
                                               "port",   "priority", "factor",
                                               "period", "uplinks"};
    return FieldError(
        field, kAll.count(key)
                   ? absl::StrCat("not used by ", FaultKindName(fault->kind))
                   : "unknown key");
  }
  return ParseTargetField(key, value, field, fault);
}

// The fields given (`seen`) name the target the fault's kind needs.
absl::Status CheckTarget(const Fault& fault, const std::set<std::string>& seen,
                         const std::string& path) {
  const bool has_nic_target = seen.count("node") || seen.count("nic");
  const bool has_port_target = seen.count("switch") || seen.count("port");
  auto require = [&](const char* key) -> absl::Status {
    if (seen.count(key) == 0) {
      return FieldError(
          absl::StrCat(path, ".", key),
          absl::StrCat("missing (", FaultKindName(fault.kind), " needs it)"));
    }
    return absl::OkStatus();
  };
  if (fault.kind == FaultKind::kEcmpPolarization ||
      fault.kind == FaultKind::kGnmiOutage ||
      fault.kind == FaultKind::kSwitchReload) {
    return require("switch");
  }
  if (fault.kind == FaultKind::kLinkFlap && has_port_target) {
    if (has_nic_target) {
      return FieldError(path,
                        "link_flap takes node + nic or switch + port, "
                        "not both");
    }
    RETURN_IF_ERROR(require("switch"));
    return require("port");
  }
  RETURN_IF_ERROR(require("node"));
  RETURN_IF_ERROR(require("nic"));
  if (fault.kind == FaultKind::kMiscabling) return require("port");
  return absl::OkStatus();
}

absl::StatusOr<Fault> ParseFault(const YAML::Node& node,
                                 const std::string& path) {
  if (!node.IsMap()) {
    return FieldError(path,
                      absl::StrCat("expected a mapping, got ", Describe(node)));
  }
  Fault fault;
  ASSIGN_OR_RETURN(fault.kind, ParseKind(node, path));
  const std::set<std::string> fields = FieldsOf(fault.kind);
  std::set<std::string> seen;
  for (const auto& entry : node) {
    if (!entry.first.IsScalar()) {
      return FieldError(path, "keys must be names");
    }
    const std::string key = entry.first.Scalar();
    const std::string field = absl::StrCat(path, ".", key);
    if (!seen.insert(key).second) return FieldError(field, "duplicate key");
    if (key == "kind") continue;
    RETURN_IF_ERROR(ParseFaultField(key, entry.second, field, fields, &fault));
  }
  if (seen.count("start") == 0) return FieldError(path + ".start", "missing");
  if (fault.end <= fault.start) {
    return FieldError(path + ".end",
                      absl::StrCat("must be after start (", fault.start,
                                   " s), got ", fault.end, " s"));
  }
  RETURN_IF_ERROR(CheckTarget(fault, seen, path));
  return fault;
}

// The NIC has a cable, and the target is another host-facing port (an
// uplink's cable goes to a spine, not to a host).
absl::Status ValidateMiscabling(const Fault& f, const Fabric& fabric,
                                const std::string& path) {
  const std::optional<size_t> nic = fabric.FindNic(f.node, f.nic);
  if (!fabric.nics()[*nic].switch_port) {
    return FieldError(
        path + ".nic",
        absl::StrCat(f.node, " ", f.nic, " is not cabled (no topology link)"));
  }
  if (!f.switch_name.empty() && !fabric.FindSwitch(f.switch_name)) {
    return FieldError(
        path + ".switch",
        absl::StrCat("unknown switch ", QuoteForMessage(f.switch_name),
                     " (not in the topology)"));
  }
  const std::optional<size_t> to = MiscablingTarget(fabric, f);
  const size_t from = *fabric.nics()[*nic].switch_port;
  const std::string& sw =
      f.switch_name.empty() ? fabric.ports()[from].switch_name : f.switch_name;
  if (!to) {
    return FieldError(path + ".port", absl::StrCat(sw, " has no port ",
                                                   QuoteForMessage(f.port)));
  }
  if (fabric.ports()[*to].uplink) {
    return FieldError(path + ".port",
                      absl::StrCat(sw, " ", f.port, " is an uplink"));
  }
  if (*to == from) {
    return FieldError(path + ".port",
                      absl::StrCat(f.node, " ", f.nic, " is already cabled to ",
                                   sw, " ", f.port));
  }
  return absl::OkStatus();
}

// The flows pile onto fewer uplinks than the switch has: with all of them
// hot, its ECMP group would be balanced.
absl::Status ValidatePolarization(const Fault& f, const Fabric& fabric,
                                  const std::string& path) {
  const std::optional<size_t> s = fabric.FindSwitch(f.switch_name);
  if (!s) return absl::OkStatus();  // reported by the caller
  int uplinks = 0;
  for (size_t p : fabric.switches()[*s].members) {
    if (fabric.ports()[p].uplink) ++uplinks;
  }
  if (f.uplinks >= uplinks) {
    return FieldError(
        path + ".uplinks",
        absl::StrCat(f.switch_name, " has ", uplinks, " uplinks: at most ",
                     std::max(uplinks - 1, 0), " can be polarized, got ",
                     f.uplinks));
  }
  return absl::OkStatus();
}

}  // namespace

absl::string_view FaultKindName(FaultKind kind) {
  for (const KindInfo& k : kKinds) {
    if (k.kind == kind) return k.name;
  }
  return "unknown";
}

std::string Fault::Describe() const {
  std::string out(FaultKindName(kind));
  for (const std::string* part : {&switch_name, &port, &node, &nic}) {
    if (!part->empty()) absl::StrAppend(&out, " ", *part);
  }
  return out;
}

absl::StatusOr<Scenario> ParseScenario(absl::string_view text) {
  yaml::Limits limits;
  limits.max_bytes = kMaxScenarioBytes;
  limits.max_values = 16 * kMaxFaults;
  absl::StatusOr<YAML::Node> loaded = yaml::LoadDocument(text, "", limits);
  if (!loaded.ok()) return loaded.status();
  const YAML::Node& root = *loaded;
  Scenario scenario;
  if (root.IsNull() || !root.IsDefined()) return scenario;  // empty file
  if (!root.IsMap()) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected a mapping at the top, got ", Describe(root)));
  }
  try {
    for (const auto& entry : root) {
      const std::string key =
          entry.first.IsScalar() ? entry.first.Scalar() : "?";
      if (key == "step_seconds") {
        absl::StatusOr<double> v = ReadNumber(entry.second, key);
        if (!v.ok()) return v.status();
        if (*v <= 0) {
          return FieldError(key, absl::StrCat("must be greater than 0, got ",
                                              entry.second.Scalar()));
        }
        scenario.step_seconds = *v;
      } else if (key == "faults") {
        if (entry.second.IsNull()) continue;
        if (!entry.second.IsSequence()) {
          return FieldError(key, absl::StrCat("expected a list, got ",
                                              Describe(entry.second)));
        }
        if (entry.second.size() > kMaxFaults) {
          return FieldError(key,
                            absl::StrCat("more than ", kMaxFaults, " faults"));
        }
        for (size_t i = 0; i < entry.second.size(); ++i) {
          absl::StatusOr<Fault> fault =
              ParseFault(entry.second[i], absl::StrCat("faults[", i, "]"));
          if (!fault.ok()) return fault.status();
          scenario.faults.push_back(*std::move(fault));
        }
      } else {
        return FieldError(QuoteForMessage(key), "unknown key");
      }
    }
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat("malformed scenario: ", e.what()));
  }
  return scenario;
}

absl::Status ValidateScenarioNames(const Scenario& scenario,
                                   const Fabric& fabric) {
  for (size_t i = 0; i < scenario.faults.size(); ++i) {
    const Fault& f = scenario.faults[i];
    const std::string path = absl::StrCat("faults[", i, "]");
    if (!f.node.empty()) {
      if (!fabric.FindHost(f.node)) {
        return FieldError(path + ".node",
                          absl::StrCat("unknown node ", QuoteForMessage(f.node),
                                       " (not a host of any layout or "
                                       "topology link)"));
      }
      if (!fabric.FindNic(f.node, f.nic)) {
        return FieldError(path + ".nic", absl::StrCat(f.node, " has no NIC ",
                                                      QuoteForMessage(f.nic)));
      }
    }
    if (f.kind == FaultKind::kMiscabling) {
      RETURN_IF_ERROR(ValidateMiscabling(f, fabric, path));
      continue;
    }
    if (!f.switch_name.empty()) {
      if (!fabric.FindSwitch(f.switch_name)) {
        return FieldError(
            path + ".switch",
            absl::StrCat("unknown switch ", QuoteForMessage(f.switch_name),
                         " (not in the topology)"));
      }
      if (!f.port.empty() && !fabric.FindPort(f.switch_name, f.port)) {
        return FieldError(path + ".port",
                          absl::StrCat(f.switch_name, " has no port ",
                                       QuoteForMessage(f.port)));
      }
    }
    if (f.kind == FaultKind::kEcmpPolarization) {
      RETURN_IF_ERROR(ValidatePolarization(f, fabric, path));
    }
  }
  return absl::OkStatus();
}

}  // namespace fabricdiag::sim
