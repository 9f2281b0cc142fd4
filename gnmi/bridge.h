// The gNMI bridge: one SwitchSession per switch of the collector's topology
// that has a `gnmi` block, and one ingest stream per switch, so that the
// collector sees each switch as an agent-fed node named as in the topology
// (docs/gnmi-bridge.md).
//
// Every `interval` Tick() builds each switch's report from its latest values
// and queues it on that switch's StreamSink (agent/stream_sink.h: the
// agent's encoder, buffer, replay, failover and dedup by (node, boot id,
// seq)). A switch with nothing fresh sends no report. The boot id of a
// switch's stream is random per bridge process and changes when the switch
// reloads (its boot-time moved): the collector then sees a new boot, as for
// a rebooted host.
//
//   Bridge bridge(options, clock);
//   bridge.SetSwitches(SwitchesOf(topology, &errors));  // on every change
//   for (;;) { bridge.Tick(); wait(interval); }
//   bridge.Stop();
//
// Thread-safe: SetSwitches, Tick and Status may be called from different
// threads.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "agent/stream_client.h"
#include "agent/stream_sink.h"
#include "common/clock.h"
#include "gnmi/switch_session.h"
#include "proto/layout.pb.h"

namespace fabricdiag::gnmi {

// The switches of `topology` with a `gnmi` block. A switch whose block
// cannot be used (unknown dialect) is left out and described in *errors.
std::vector<SwitchConfig> SwitchesOf(const v1::Topology& topology,
                                     std::vector<std::string>* errors);

// Which of several bridges subscribes to a switch: `--shard=I/N` keeps the
// switches whose name hashes (FNV-1a 64, as agents pick their collector) to
// I modulo N, so N bridges given the same topology split its switches
// between them, each switch to exactly one, with no coordination.
struct Shard {
  int index = 0;
  int count = 1;
  bool Contains(absl::string_view switch_name) const;
};
// "I/N" with 0 <= I < N <= 4096; InvalidArgument naming --shard otherwise.
absl::StatusOr<Shard> ParseShard(absl::string_view text);

struct BridgeOptions {
  absl::Duration interval = absl::Seconds(1);
  SessionOptions session;
  // Targets, TLS, token, buffer limits and version of every switch's
  // stream; node, first_target and boot_id are set per switch.
  agent::StreamClient::Options stream;
};

// What /metrics reports of one switch.
struct SwitchStatus {
  std::string name;
  bool configured = true;  // false: refused (config_error says why)
  std::string config_error;
  SwitchSession::Stats session;
  agent::AgentHealth::Stream stream;
  uint64_t reports = 0;  // reports queued for the collector
  uint64_t reloads = 0;  // boot-time changes seen
};

class Bridge {
 public:
  Bridge(BridgeOptions options, const Clock& clock);
  ~Bridge();  // Stop()s
  Bridge(const Bridge&) = delete;
  Bridge& operator=(const Bridge&) = delete;

  // Makes `switches` the set subscribed to: starts new ones, stops removed
  // ones, restarts changed ones. A switch that cannot start (its
  // credentials file is readable by others, no tls_ca) is logged once and
  // reported in Status().
  void SetSwitches(const std::vector<SwitchConfig>& switches);

  // Queues one report per switch with fresh values.
  void Tick();

  std::vector<SwitchStatus> Status() const;

  // Stops every session and stream. Idempotent.
  void Stop();

 private:
  struct Entry {
    SwitchConfig config;
    std::shared_ptr<SwitchSession> session;  // null: refused
    std::unique_ptr<agent::StreamSink> sink;
    std::string config_error;
    uint64_t reports = 0;
    uint64_t reloads = 0;
  };
  // A started entry for `config` (or a refused one).
  std::unique_ptr<Entry> Open(const SwitchConfig& config);
  // A stream for `node` with a fresh boot id; null when refused (logged).
  std::unique_ptr<agent::StreamSink> OpenStream(const std::string& node);
  static void Close(Entry* entry);

  const BridgeOptions options_;
  const Clock& clock_;
  Scheduler scheduler_;
  mutable std::mutex mu_;
  std::map<std::string, std::unique_ptr<Entry>> switches_;
};

}  // namespace fabricdiag::gnmi
