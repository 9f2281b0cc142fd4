#include "gnmi/dialect.h"

#include "absl/strings/str_cat.h"

namespace fabricdiag::gnmi {
namespace {

constexpr auto kSample = ::gnmi::SAMPLE;
constexpr auto kOnChange = ::gnmi::ON_CHANGE;

// openconfig/public: openconfig-interfaces.yang, openconfig-if-ethernet.yang,
// openconfig-qos-interfaces.yang, openconfig-system.yang; Arista's
// arista-intf-augments.yang; Cumulus Linux's gNMI metric list.
const std::vector<GroupSpec>& OpenConfigGroups() {
  static const auto* const kGroups = new std::vector<GroupSpec>{
      {"interfaces",
       "",
       true,
       {{"/interfaces/interface/state/counters", kSample},
        {"/interfaces/interface/state/oper-status", kOnChange}}},
      {"ethernet",
       "",
       false,
       {{"/interfaces/interface/ethernet/state/counters", kSample},
        {"/interfaces/interface/ethernet/state/port-speed", kOnChange},
        {"/interfaces/interface/ethernet/state/negotiated-port-speed",
         kOnChange}}},
      {"queues",
       "",
       false,
       {{"/qos/interfaces/interface/output/queues/queue/state", kSample}}},
      {"arista_pfc",
       "",
       false,
       {{"/interfaces/interface/ethernet/pfc", kSample}}},
      {"cumulus_pfc",
       "",
       false,
       {{"/qos/interfaces/interface/state/switch-priority", kSample}}},
      {"system", "", false, {{"/system/state/boot-time", kOnChange}}},
      // openconfig-lldp.yang: each neighbor's state (system name, chassis
      // and port ids and their types, port description, management
      // address), keyed by the local interface.
      {"lldp",
       "",
       false,
       {{"/lldp/interfaces/interface/neighbors/neighbor/state", kOnChange}},
       /*lldp=*/true},
  };
  return *kGroups;
}

// sonic-gnmi doc/grpc_telemetry.md: the COUNTERS_DB virtual paths
// COUNTERS/Ethernet* (every port's SAI statistics) and
// COUNTERS/Ethernet*/Queues (every queue's, PFC watchdog fields included);
// APPL_DB PORT_TABLE for oper_status and speed, LLDP_ENTRY_TABLE for the
// LLDP neighbors.
const std::vector<GroupSpec>& SonicGroups() {
  static const auto* const kGroups = new std::vector<GroupSpec>{
      {"counters", "COUNTERS_DB", true, {{"/COUNTERS/Ethernet*", kSample}}},
      {"queues",
       "COUNTERS_DB",
       false,
       {{"/COUNTERS/Ethernet*/Queues", kSample}}},
      {"port_names",
       "COUNTERS_DB",
       false,
       {{"/COUNTERS_PORT_NAME_MAP", kOnChange}}},
      {"ports", "APPL_DB", false, {{"/PORT_TABLE/Ethernet*", kOnChange}}},
      // APPL_DB LLDP_ENTRY_TABLE: one hash per local port, written by
      // SONiC's lldp_syncd from lldpd.
      {"lldp",
       "APPL_DB",
       false,
       {{"/LLDP_ENTRY_TABLE/Ethernet*", kOnChange}},
       /*lldp=*/true},
  };
  return *kGroups;
}

}  // namespace

const char* DialectName(Dialect d) {
  switch (d) {
    case Dialect::kOpenConfig:
      return "openconfig";
    case Dialect::kSonic:
      return "sonic";
  }
  return "";
}

absl::StatusOr<Dialect> ParseDialect(absl::string_view name) {
  if (name == "openconfig") return Dialect::kOpenConfig;
  if (name == "sonic") return Dialect::kSonic;
  return absl::InvalidArgumentError(absl::StrCat(
      "\"", name, "\" is not a gNMI dialect (openconfig or sonic)"));
}

const std::vector<GroupSpec>& GroupsFor(Dialect dialect) {
  return dialect == Dialect::kSonic ? SonicGroups() : OpenConfigGroups();
}

}  // namespace fabricdiag::gnmi
