// A gNMI target (the `gnmi.gNMI` service of proto/gnmi.proto) for one
// simulated switch: what fabricdiag-sim --gnmi_listen runs per switch so
// that the gNMI bridge reaches the simulated leaves as it reaches real ones.
// The leaves and their encodings per dialect are in sim/gnmi_leaves.h.
//
//   GnmiTargetOptions o;
//   o.listen = "127.0.0.1:0";
//   o.dialect = gnmi::Dialect::kOpenConfig;
//   ASSIGN_OR_RETURN(std::unique_ptr<GnmiTarget> t,
//                    GnmiTarget::Start("leaf-0", o));
//   t->Publish(state);          // every tick: the switch's counters now
//                               // (as of the last refresh, with one)
//   t->SetAvailable(false);     // a simulated outage: streams end UNAVAILABLE
//
// What it answers:
// - Capabilities: the dialect's models, encodings JSON, JSON_IETF and PROTO.
// - Subscribe, mode STREAM: every subscription's leaves once (unless
//   updates_only), then sync_response, then per published state the leaves
//   due (SAMPLE every sample_interval of the states' timestamps, ON_CHANGE
//   when changed: sim/gnmi_subscription.h; with options.overlap, the
//   counters of other subscriptions too). Mode ONCE: the leaves,
//   sync_response, end of stream (OK). Mode POLL: UNIMPLEMENTED.
// - A subscription whose path selects no leaf (queues, an augment this
//   target does not have, a SONiC table it does not serve) or a SONiC target
//   other than COUNTERS_DB / APPL_DB: the whole RPC ends UNIMPLEMENTED, as
//   real targets answer (gNMI specification 3.5.2.4).
// - Get and Set: UNIMPLEMENTED.
// - With a username, every RPC must carry `username` and `password`
//   metadata equal to the options' (else UNAUTHENTICATED); the password is
//   never logged or put in a message.
// - While unavailable (SetAvailable(false)), every RPC ends UNAVAILABLE, and
//   every stream open when the outage began ends UNAVAILABLE at once.
//
// Each Subscribe stream holds one thread of gRPC's synchronous server while
// it lasts: fine for tests and demos (a few bridges per switch), not for
// thousands of subscribers. Thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "gnmi/dialect.h"
#include "sim/gnmi_leaves.h"

namespace fabricdiag::sim {

struct GnmiTargetOptions {
  std::string listen = "127.0.0.1:0";  // HOST:PORT; port 0: ephemeral
  gnmi::Dialect dialect = gnmi::Dialect::kOpenConfig;
  // PEM contents; both empty: plaintext.
  std::string tls_cert_pem;
  std::string tls_key_pem;
  // Empty username: no credentials required.
  std::string username;
  std::string password;
  // The counters change only every `refresh` of the states' timestamps
  // (0: at every Publish): a SONiC switch's flex counters poll the port
  // statistics every second and write them to COUNTERS_DB, which gNMI
  // serves, so a sample between two polls repeats the last poll's values.
  // The poll falls at the first Publish of each multiple of `refresh`
  // since the Unix epoch. Oper status, speed and LLDP are not held.
  absl::Duration refresh;
  // The PFC counters (per-priority pause frames, durations, transitions,
  // discards and storm events) change only every `pfc_refresh` instead (0:
  // as the others), in the same way: SONiC polls queue and PFC watchdog
  // counters in their own flex counter groups, every 10 s by default.
  absl::Duration pfc_refresh;
  // Answers overlapping subscriptions (sim/gnmi_subscription.h): a SAMPLE
  // subscription below a port also sends the port's other counters, as
  // sampled one Publish earlier.
  bool overlap = false;
};

class GnmiTarget {
 public:
  // Listens and serves (until destroyed). Before the first Publish a
  // Subscribe waits for it.
  static absl::StatusOr<std::unique_ptr<GnmiTarget>> Start(
      std::string switch_name, const GnmiTargetOptions& options);
  ~GnmiTarget();
  GnmiTarget(const GnmiTarget&) = delete;
  GnmiTarget& operator=(const GnmiTarget&) = delete;

  const std::string& switch_name() const;
  gnmi::Dialect dialect() const;
  int port() const;
  // HOST:PORT with the bound port ("127.0.0.1:40123").
  const std::string& address() const;

  // The switch now; wakes every stream.
  void Publish(const SwitchState& state);
  // false: a simulated outage (see above); true: serving again.
  void SetAvailable(bool available);
  bool available() const;
  // Subscribe streams currently open (for tests).
  int open_streams() const;

 private:
  struct Impl;
  explicit GnmiTarget(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace fabricdiag::sim
