// The fabricdiag-gnmi-bridge process: configuration, validation and the run
// loop, kept out of bridge_main.cc (flags -> config -> run).
//
//   BridgeConfig config;           // filled from flags
//   absl::Status s = ValidateBridgeConfig(config);
//   if (!s.ok()) { ...print s.message(), exit 2... }
//   return RunBridge(config);      // until SIGINT/SIGTERM
#pragma once

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "client/collector_api.h"
#include "client/tls.h"
#include "proto/layout.pb.h"

namespace fabricdiag::gnmi {

struct BridgeConfig {
  std::string collector;  // HOST:PORT or a comma-separated list (required)
  absl::Duration interval = absl::Seconds(1);
  absl::Duration topology_refresh = absl::Seconds(10);
  // When set, the topology is read from this file (YAML or JSON, as
  // `fabricdiag topology apply` takes it) instead of the collector.
  std::string topology_file;
  std::string http_listen = "0.0.0.0:9813";
  // To the collector, under the rules every client keeps (client/tls.h).
  client::TlsFlags tls;
  std::string ingest_token_file;
  // A token with the read scope of the collector's --auth_token_file, sent
  // when reading the topology from it; empty: none.
  std::string token_file;
  // Per switch stream: reports the collector has not acknowledged.
  std::string stream_buffer_size = "16MiB";
  // To the switches.
  absl::Duration gnmi_backoff_max = absl::Seconds(30);
  std::string gnmi_max_message_size = "64MiB";
  // "I/N": this bridge subscribes to its share of the switches only.
  std::string shard = "0/1";
};

// The topology the bridge reads from the collector: its effective view
// (docs/topology-format.md), so the declared switches keep their gnmi
// blocks and what is not declared (uplinks, switch links) comes from LLDP.
// The view always answers once the collector draws one (empty before
// anything is declared or discovered); a collector older than the views
// answers with its declared topology.
absl::StatusOr<v1::Topology> ReadCollectorTopology(
    client::CollectorClient& collector);

// Checks every field; the message names the flag at fault. Reads the TLS
// files (client::LoadTls) and checks that the other named ones are readable.
absl::Status ValidateBridgeConfig(const BridgeConfig& config);

// Serves /metrics and /healthz, polls the topology (collector or file) and
// streams every gNMI switch of it until SIGINT or SIGTERM; returns 0 then, 1
// when it cannot start (port in use, bad TLS or token file).
int RunBridge(const BridgeConfig& config);

}  // namespace fabricdiag::gnmi
