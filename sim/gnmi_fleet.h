// fabricdiag-sim's switches as gNMI targets (--gnmi_listen): one
// GnmiTarget (sim/gnmi_target.h) per simulated switch, fed from the
// simulation's switch-port counters every tick, and the topology that
// tells a gNMI client where each one listens.
//
// Switch i (topology order) listens on PORT + i of --gnmi_listen=HOST:PORT;
// port 0 gives each an ephemeral port. With --gnmi_switches only the named
// switches are targets; the others keep their trees (TreeWriter), as a
// fabric whose leaves are partly Linux switches running the agent.
//
// Each switch also serves the LLDP neighbors its ports hear, from the
// fabric's cabling (LldpPeersOf): a host-facing port hears the host (system
// name) and its NIC's netdev (port id), a port of a switch-to-switch link
// (the topology's switch_links) the switch at the other end and its port.
//
//   GnmiFlags flags;                       // from --gnmi_* flags
//   RETURN_IF_ERROR(ValidateGnmiFlags(flags, /*have_topology=*/true));
//   ASSIGN_OR_RETURN(std::unique_ptr<GnmiFleet> fleet,
//                    GnmiFleet::Start(flags, &fabric));
//   fleet->Publish(port_counters, timestamp_nanos, boot_nanos, available);
//   std::string yaml = analysis::TopologyToJson(fleet->Topology());
//
// Thread-compatible (Publish from one thread; the targets serve on their
// own).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "gnmi/dialect.h"
#include "proto/layout.pb.h"
#include "sim/fabric.h"
#include "sim/gnmi_leaves.h"
#include "sim/gnmi_target.h"
#include "sim/port_counters.h"

namespace fabricdiag::sim {

// The --gnmi_* flags; `listen` empty: no gNMI targets.
struct GnmiFlags {
  std::string listen;                  // --gnmi_listen=HOST:PORT
  std::string dialect = "openconfig";  // --gnmi_dialect
  std::string tls_cert;                // --gnmi_tls_cert
  std::string tls_key;                 // --gnmi_tls_key
  std::string tls_ca;                  // --gnmi_tls_ca (topology only)
  std::string credentials_file;        // --gnmi_credentials_file
  std::string topology_out;            // --gnmi_topology_out
  absl::Duration refresh;              // --gnmi_refresh (GnmiTargetOptions)
  absl::Duration pfc_refresh;          // --gnmi_pfc_refresh
  bool overlap = false;                // --gnmi_overlap
  std::vector<std::string> switches;   // --gnmi_switches; empty: all

  bool enabled() const { return !listen.empty(); }
  // Whether switch `name` is a gNMI target (and gets no tree).
  bool Serves(const std::string& name) const;
};

// What the ports of switch `switch_index` (of fabric.switches()) hear over
// LLDP, in natural port order. Chassis ids are made-up locally
// administered MAC addresses, one per host ("02:00:...") or switch
// ("02:01:..."), stable across runs.
std::vector<LldpPeer> LldpPeersOf(const Fabric& fabric, size_t switch_index);

// The flags alone (no file access); messages name the flag.
absl::Status ValidateGnmiFlags(const GnmiFlags& flags, bool have_topology);

class GnmiFleet {
 public:
  // Reads the TLS and credentials files (errors name the flag) and starts
  // one target per switch of `fabric` that `flags` serves (not owned, must
  // outlive the fleet); a --gnmi_switches name `fabric` lacks is an error.
  static absl::StatusOr<std::unique_ptr<GnmiFleet>> Start(
      const GnmiFlags& flags, const Fabric* fabric);

  // Publishes every switch's ports from `ports` (indexed like
  // fabric.ports()). `boot_nanos[s]` is switch s's boot time and
  // `available[s]` whether its gNMI server is up.
  void Publish(const std::vector<PortCounters>& ports, int64_t timestamp_nanos,
               const std::vector<int64_t>& boot_nanos,
               const std::vector<bool>& available);

  // In the order of fabric.switches(), the switches served.
  const std::vector<std::unique_ptr<GnmiTarget>>& targets() const {
    return targets_;
  }

  // The fabric's topology with every switch's gnmi block filled in: its
  // address (a wildcard listening host becomes loopback), the dialect, and
  // `insecure: true`, or tls_ca (--gnmi_tls_ca, else the certificate
  // itself: right for a self-signed one) and credentials_file, as absolute
  // paths.
  v1::Topology Topology() const;

  // Writes Topology() as JSON (which the topology parser reads) to
  // `path`, atomically.
  absl::Status WriteTopology(const std::string& path) const;

 private:
  GnmiFleet(GnmiFlags flags, const Fabric* fabric)
      : flags_(std::move(flags)), fabric_(fabric) {}

  GnmiFlags flags_;
  const Fabric* fabric_;
  std::vector<std::unique_ptr<GnmiTarget>> targets_;
  std::vector<size_t> switch_of_;            // per target, into switches()
  std::vector<std::vector<LldpPeer>> lldp_;  // per target, from the cabling
};

}  // namespace fabricdiag::sim
