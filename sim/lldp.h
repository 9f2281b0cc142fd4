// LLDP of the simulated fabric: which switch port each host NIC's cable
// ends in at a moment of the scenario (miscabling faults move cables), the
// neighbors every node hears over those cables, and the text `lldpcli -f
// json show neighbors` prints for them, which the agent reads with
// --lldp_file (agent/lldp_parse.h).
//
// What each side hears, as lldpd sends it on Linux hosts and switches
// (tests/fixtures/lldp holds real outputs):
//   - a host NIC's netdev hears its leaf: system name = the switch's name,
//     chassis id a MAC, port id of type ifname = the switch port ("swp3");
//   - a leaf's host-facing port hears the host: system name = the host,
//     port id of type mac (lldpd's default on a host) with the NIC's netdev
//     as port description;
//   - a leaf's uplink number k (in port order) hears `spine-<k>` on its port
//     `swp<i+1>`, i the leaf's index among the topology's switches: the
//     spines are not simulated, but every uplink names a distinct far end.
// MACs are locally administered and derived from the names, so every run
// and every process (the files, the virtual agents) agree on them.
//
//   Cabling cabling = CablingAt(fabric, scenario.faults, now);
//   std::string text = LldpcliJson(HostLldpNeighbors(fabric, cabling, h));
//
// Pure; thread-safe.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "proto/ingest.pb.h"
#include "sim/fabric.h"
#include "sim/scenario.h"

namespace fabricdiag::sim {

// Where the cables are: NIC -> switch port and back (indices into
// Fabric::nics() and Fabric::ports()). A port holds one cable.
struct Cabling {
  std::vector<std::optional<size_t>> nic_port;
  std::vector<std::optional<size_t>> port_nic;

  bool operator==(const Cabling& o) const {
    return nic_port == o.nic_port && port_nic == o.port_nic;
  }
  bool operator!=(const Cabling& o) const { return !(*this == o); }
};

// The fabric's cabling (its topology links) with the miscabling faults
// active at `t` applied in scenario order: the fault's NIC and the NIC
// cabled to its target port swap ports. Faults naming what the fabric does
// not have are skipped (ValidateScenarioNames refuses them).
Cabling CablingAt(const Fabric& fabric, const std::vector<Fault>& faults,
                  double t);

// The target port of a miscabling fault: `port` on `switch_name`, or on the
// switch the NIC is cabled to when the fault names none. nullopt when the
// fabric has no such port or the NIC no cable.
std::optional<size_t> MiscablingTarget(const Fabric& fabric, const Fault& f);

// "02:xx:xx:xx:xx:xx": a locally administered MAC from the FNV-1a hash of
// `name` (docs/simulator.md).
std::string SimMac(absl::string_view name);

// What host `host` (index into Fabric::hosts()) hears, one neighbor per
// cabled NIC, sorted by netdev.
std::vector<v1::LldpNeighbor> HostLldpNeighbors(const Fabric& fabric,
                                                const Cabling& cabling,
                                                size_t host);

// What switch `sw` (index into Fabric::switches()) hears on its ports.
std::vector<v1::LldpNeighbor> SwitchLldpNeighbors(const Fabric& fabric,
                                                  const Cabling& cabling,
                                                  size_t sw);

// What a host NIC's netdev `local_port` hears from `port` of switch
// `switch_name`.
v1::LldpNeighbor LeafPortNeighbor(absl::string_view local_port,
                                  absl::string_view switch_name,
                                  absl::string_view port);

// The neighbors as `lldpcli -f json show neighbors` prints them: "lldp" is
// empty without neighbors, "interface" an object with one and a list with
// several (lldpd 1.0.16).
std::string LldpcliJson(const std::vector<v1::LldpNeighbor>& neighbors);

}  // namespace fabricdiag::sim
