// The collector process: configuration, validation and the run loop, kept
// out of main.cc (flags -> config -> run).
//
//   CollectorConfig config;         // from flags
//   RETURN_IF_ERROR(ValidateCollectorConfig(config));
//   return RunCollector(config);    // until SIGINT/SIGTERM
#pragma once

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "analysis/analysis_config.h"
#include "cluster/nats_connection.h"
#include "collector/findings/findings_store.h"

namespace fabricdiag::collector {

struct CollectorConfig {
  std::string listen = "0.0.0.0:9811";       // gRPC
  std::string http_listen = "0.0.0.0:9812";  // /metrics, /healthz
  // HTTPS on http_listen with this PEM certificate and key (both or none).
  std::string http_tls_cert;
  std::string http_tls_key;
  std::string state_dir = "/var/lib/fabricdiag";
  std::string tls_cert;
  std::string tls_key;
  std::string tls_client_ca;
  std::string auth_token_file;
  // Agents must present this token to stream (see IngestAuth).
  std::string ingest_token_file;
  absl::Duration analysis_interval = absl::Seconds(1);
  size_t window_samples = 600;  // rates kept per series (10 min at 1 s)
  // YAML/JSON analyzer thresholds (analysis/analysis_config.h); empty =
  // the documented defaults.
  std::string analysis_config;
  // --analysis_shards: each collector of a cluster runs its share of the
  // rate analysis (collector/runner/sharded_rate_pass.h). An embedded
  // collector always runs all of it so, as a cluster of one.
  bool analysis_shards = false;
  // Cluster mode (cluster/cluster_member.h) when not empty: comma-separated
  // nats:// URLs of the JetStream servers that hold the declared state.
  std::string nats;
  std::string collector_id;  // this collector's name in the cluster
  int nats_replicas = 3;     // replicas of the cluster's buckets
  // How long startup waits for the NATS servers and JetStream to be ready.
  absl::Duration nats_startup_timeout = cluster::kDefaultStartupTimeout;
  // How it authenticates to NATS and checks the servers (--nats_user,
  // --nats_password_file, --nats_creds, --nats_tls_*).
  cluster::NatsSecurity nats_security;
  // HOST:PORT agents reach this collector at, as written in their
  // --collector lists; empty = --listen with its bound port when its host
  // is not a wildcard (AdvertisedAddress).
  std::string advertise_address;
  // Resolved findings are kept this long after they resolved, within this
  // many bytes (--findings_retention, --findings_retention_bytes).
  absl::Duration findings_retention = FindingsStoreOptions{}.resolved_retention;
  uint64_t findings_retention_bytes = FindingsStoreOptions{}.max_resolved_bytes;
};

// The address a cluster member announces for its agents: `advertise` when
// set; else `listen`'s host with `bound_port` when that host is not a
// wildcard (0.0.0.0, ::, [::] or empty); else "" (none: no agent is handed
// to or back from this collector).
std::string AdvertisedAddress(const std::string& advertise,
                              const std::string& listen, int bound_port);

// The message names the flag at fault. Does not touch the network.
absl::Status ValidateCollectorConfig(const CollectorConfig& config);

// The analyzer thresholds of --analysis_config (defaults when empty);
// InvalidArgument naming the flag, the file and the key.
absl::StatusOr<analysis::AnalysisConfig> LoadAnalysisConfig(
    const std::string& path);

// Serves until SIGINT or SIGTERM, then returns 0; returns 1 when it cannot
// start (state dir unusable, port in use, bad TLS files, bad token file).
int RunCollector(const CollectorConfig& config);

}  // namespace fabricdiag::collector
