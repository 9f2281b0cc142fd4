// fabricdiag-collector: flags -> CollectorConfig -> RunCollector. See
// server/collector_app.h.
#include <unistd.h>

#include <iostream>
#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "cluster/nats_connection.h"
#include "collector/findings/findings_query.h"
#include "common/program.h"
#include "server/collector_app.h"

ABSL_FLAG(std::string, listen, "0.0.0.0:9811",
          "ADDR:PORT for gRPC: agent ingest, layouts, topology, queries");
ABSL_FLAG(std::string, http_listen, "0.0.0.0:9812",
          "ADDR:PORT for HTTP: /metrics (findings as metrics), /healthz");
ABSL_FLAG(std::string, http_tls_cert, "",
          "Serve --http_listen over HTTPS with this PEM certificate (chain); "
          "bearer tokens of the HTTP write API cross that port");
ABSL_FLAG(std::string, http_tls_key, "", "Private key of --http_tls_cert");
ABSL_FLAG(std::string, state_dir, "/var/lib/fabricdiag",
          "Layouts, topology and finding history survive restarts here");
ABSL_FLAG(std::string, tls_cert, "", "Serve gRPC over TLS with this cert");
ABSL_FLAG(std::string, tls_key, "", "Private key of --tls_cert");
ABSL_FLAG(std::string, tls_client_ca, "",
          "Require client certificates signed by this CA (mutual TLS)");
ABSL_FLAG(std::string, auth_token_file, "",
          "When set, every write RPC (layout/topology apply and delete) needs "
          "this bearer token");
ABSL_FLAG(std::string, ingest_token_file, "",
          "When set, agents must present this token to stream (their "
          "--ingest_token_file); with --tls_client_ca, the node must also be "
          "named in the agent's certificate");
ABSL_FLAG(absl::Duration, analysis_interval, absl::Seconds(1),
          "How often the analyzers run: a tenth of it after each whole "
          "multiple of it on the wall clock, where agents read");
ABSL_FLAG(bool, analysis_shards, false,
          "Cut a cluster's rate analysis into shards: every collector "
          "runs the per-port analyzers over its own agents and the job and "
          "switch analyzers of the shards it owns; the analysis leader "
          "keeps liveness and the layout analyzers. Every collector of a "
          "cluster must set it alike. A collector without --nats always "
          "runs its analysis so, owning every shard");
ABSL_FLAG(int, window_samples, 600,
          "Rates kept per series (600 = 10 minutes at 1 s)");
ABSL_FLAG(std::string, analysis_config, "",
          "YAML/JSON file of analyzer thresholds and hysteresis (see "
          "deploy/analysis.yaml); empty = documented defaults");

ABSL_FLAG(std::string, nats, "",
          "Join a collector cluster through these NATS JetStream servers "
          "(nats://H:4222[,nats://H2:4222...]); layouts and topology are "
          "shared there. Empty = one collector, state in --state_dir");
ABSL_FLAG(std::string, collector_id, "",
          "This collector's name in the cluster, in /healthz and metrics "
          "(default: the host name)");
ABSL_FLAG(int, nats_replicas, 3,
          "Replicas of the cluster's buckets (1 for a single NATS server)");
ABSL_FLAG(std::string, advertise_address, "",
          "With --nats: HOST:PORT agents reach this collector at, spelled "
          "as in their --collector lists; announced to the other collectors "
          "so they can hand agents back here (default: --listen when its "
          "host is not a wildcard)");
ABSL_FLAG(absl::Duration, nats_startup_timeout,
          fabricdiag::cluster::kDefaultStartupTimeout,
          "How long startup waits for the NATS servers to answer and "
          "JetStream to serve the cluster's buckets (a cluster that just "
          "restarted elects its leaders first); then exit 1 naming them");
ABSL_FLAG(std::string, nats_user, "",
          "With --nats: the user to connect to NATS as (the servers' "
          "authorization users); its password in --nats_password_file");
ABSL_FLAG(std::string, nats_password_file, "",
          "File holding --nats_user's password (mode 0600 or 0640 "
          "root-owned; never on the command line)");
ABSL_FLAG(std::string, nats_creds, "",
          "With --nats: a NATS .creds file (user JWT and NKey seed) for "
          "servers with JWT authentication; instead of --nats_user");
ABSL_FLAG(std::string, nats_tls_ca, "",
          "With --nats: connect to NATS over TLS, the servers' certificates "
          "signed by this PEM CA bundle");
ABSL_FLAG(std::string, nats_tls_cert, "",
          "With --nats: client certificate (PEM) for NATS servers that "
          "verify their clients");
ABSL_FLAG(std::string, nats_tls_key, "", "Private key of --nats_tls_cert");
ABSL_FLAG(std::string, findings_retention, "30d",
          "Keep resolved findings this long after they resolved (30d, 12h)");
ABSL_FLAG(uint64_t, findings_retention_bytes, 64ull << 20,
          "Keep at most this many bytes of resolved findings (the oldest go "
          "first)");

namespace {

std::string HostName() {
  char name[256] = {0};
  if (gethostname(name, sizeof(name) - 1) != 0) return "collector";
  return name;
}

}  // namespace

int main(int argc, char** argv) {
  // Debian's Abseil is built with deadlock detection on: every absl::Mutex
  // lock (gRPC takes several per message) walks a global lock graph. It
  // cost ~3% of the collector's ingest CPU and finds nothing our tests and
  // TSan-style reviews do not; switch it off.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  fabricdiag::InitProgram(
      "fabricdiag-collector",
      "Receives the fabricdiag agents' streams, holds job layouts and the "
      "fabric topology, and diagnoses what the fabric does to the jobs.");
  std::vector<char*> rest = absl::ParseCommandLine(argc, argv);
  if (rest.size() > 1) {
    std::cerr << "fabricdiag-collector: unexpected argument: " << rest[1]
              << "\n";
    return 2;
  }
  fabricdiag::collector::CollectorConfig config;
  config.listen = absl::GetFlag(FLAGS_listen);
  config.http_listen = absl::GetFlag(FLAGS_http_listen);
  config.http_tls_cert = absl::GetFlag(FLAGS_http_tls_cert);
  config.http_tls_key = absl::GetFlag(FLAGS_http_tls_key);
  config.state_dir = absl::GetFlag(FLAGS_state_dir);
  config.tls_cert = absl::GetFlag(FLAGS_tls_cert);
  config.tls_key = absl::GetFlag(FLAGS_tls_key);
  config.tls_client_ca = absl::GetFlag(FLAGS_tls_client_ca);
  config.auth_token_file = absl::GetFlag(FLAGS_auth_token_file);
  config.ingest_token_file = absl::GetFlag(FLAGS_ingest_token_file);
  config.analysis_interval = absl::GetFlag(FLAGS_analysis_interval);
  config.analysis_shards = absl::GetFlag(FLAGS_analysis_shards);
  const int window = absl::GetFlag(FLAGS_window_samples);
  config.window_samples = window < 0 ? 0 : static_cast<size_t>(window);
  config.analysis_config = absl::GetFlag(FLAGS_analysis_config);
  config.nats = absl::GetFlag(FLAGS_nats);
  config.collector_id = absl::GetFlag(FLAGS_collector_id);
  if (config.collector_id.empty()) config.collector_id = HostName();
  config.nats_replicas = absl::GetFlag(FLAGS_nats_replicas);
  config.nats_startup_timeout = absl::GetFlag(FLAGS_nats_startup_timeout);
  config.advertise_address = absl::GetFlag(FLAGS_advertise_address);
  config.nats_security.user = absl::GetFlag(FLAGS_nats_user);
  config.nats_security.password_file = absl::GetFlag(FLAGS_nats_password_file);
  config.nats_security.creds_file = absl::GetFlag(FLAGS_nats_creds);
  config.nats_security.tls_ca = absl::GetFlag(FLAGS_nats_tls_ca);
  config.nats_security.tls_cert = absl::GetFlag(FLAGS_nats_tls_cert);
  config.nats_security.tls_key = absl::GetFlag(FLAGS_nats_tls_key);
  absl::StatusOr<absl::Duration> retention =
      fabricdiag::collector::ParseQueryDuration(
          "--findings_retention", absl::GetFlag(FLAGS_findings_retention));
  if (!retention.ok()) {
    std::cerr << "fabricdiag-collector: " << retention.status().message()
              << "\n";
    return 2;
  }
  config.findings_retention = *retention;
  config.findings_retention_bytes =
      absl::GetFlag(FLAGS_findings_retention_bytes);
  absl::Status status = fabricdiag::collector::ValidateCollectorConfig(config);
  if (!status.ok()) {
    std::cerr << "fabricdiag-collector: " << status.message() << "\n";
    return 2;
  }
  return fabricdiag::collector::RunCollector(config);
}
