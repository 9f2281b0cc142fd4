// The scenario file of fabricdiag-sim: a step time and a list of faults, each
// active during [start, end) seconds of simulated time.
//
//   step_seconds: 1.0            # optional, > 0
//   faults:
//     - {kind: hot_expert, node: gpu-003, nic: mlx5_2, start: 20, end: 80,
//        factor: 6}
//     - {kind: pfc_storm, node: gpu-001, nic: mlx5_0, start: 30, priority: 3}
//     - {kind: ecmp_polarization, switch: leaf-0, start: 10, end: 40}
//     - {kind: link_flap, switch: leaf-1, port: swp3, start: 5, period: 4}
//
// Kinds and their fields (docs/counters.md lists the counters each one moves):
//   hot_expert        node, nic, factor (default 6)
//   pfc_storm         node, nic, priority (default 3)
//   ecmp_polarization switch, uplinks (default 1: how many of its uplinks
//                     the flows pile onto; fewer than it has)
//   link_flap         node + nic, or switch + port; period (default 4 s)
//   link_errors, half_speed, retransmissions, straggler, nic_gone: node, nic
//   gnmi_outage       switch: its gNMI target refuses RPCs and ends its
//                     streams (UNAVAILABLE); counters keep counting
//   switch_reload     switch: at `start` its counters restart from 0 and
//                     its boot time changes; its gNMI target is away until
//                     `end`
//   miscabling        node, nic, port, switch (default: the NIC's own):
//                     the NIC's cable is in that port, and the cable that
//                     was there in the NIC's port (they swap); only LLDP
//                     changes (sim/lldp.h), counters do not
// `start` is required, `end` is optional (default: never ends).
//
// ParseScenario checks structure and types (unknown keys, a field the kind
// does not use, end <= start); every error is InvalidArgument and starts with
// the path of the field ("faults[2].kind: ..."). ValidateScenarioNames checks
// the names against the simulated fabric. Pure; thread-safe.
//
//   ASSIGN_OR_RETURN(Scenario s, ParseScenario(text));
//   RETURN_IF_ERROR(ValidateScenarioNames(s, fabric));
#pragma once

#include <limits>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace fabricdiag::sim {

class Fabric;

enum class FaultKind {
  kHotExpert,
  kPfcStorm,
  kEcmpPolarization,
  kLinkFlap,
  kLinkErrors,
  kHalfSpeed,
  kRetransmissions,
  kStraggler,
  kNicGone,
  kGnmiOutage,
  kSwitchReload,
  kMiscabling,
};

// "hot_expert", "pfc_storm", ...
absl::string_view FaultKindName(FaultKind kind);

struct Fault {
  FaultKind kind = FaultKind::kHotExpert;
  double start = 0;  // seconds from the start of the run
  double end = std::numeric_limits<double>::infinity();
  std::string node;         // host
  std::string nic;          // RDMA device on `node`
  std::string switch_name;  // topology switch
  std::string port;         // front-panel port of `switch_name`
  int priority = 3;         // pfc_storm: 802.1p priority 0..7
  double factor = 6.0;      // hot_expert: RX as a multiple of the group mean
  double period = 4.0;      // link_flap: seconds per down/up cycle
  int uplinks = 1;          // ecmp_polarization: uplinks the flows pile onto

  bool ActiveAt(double t) const { return t >= start && t < end; }
  // "hot_expert gpu-003 mlx5_2", "ecmp_polarization leaf-0", ...
  std::string Describe() const;
};

struct Scenario {
  // Seconds per training step; 0 = derive it from the layouts' models.
  double step_seconds = 0;
  std::vector<Fault> faults;
};

absl::StatusOr<Scenario> ParseScenario(absl::string_view text);

// Every node, NIC, switch and port a fault names exists in `fabric`, and an
// ecmp_polarization leaves at least one of its switch's uplinks cold.
absl::Status ValidateScenarioNames(const Scenario& scenario,
                                   const Fabric& fabric);

}  // namespace fabricdiag::sim
