// fabricdiag-gnmi-bridge: flags -> BridgeConfig -> RunBridge. See
// gnmi/bridge_app.h and docs/gnmi-bridge.md.
#include <iostream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/time/time.h"
#include "common/program.h"
#include "gnmi/bridge_app.h"

ABSL_FLAG(std::string, collector, "",
          "HOST:PORT of the collector, or a comma-separated list of a "
          "cluster's collectors (required): the topology is read from it and "
          "each switch streams to the collector its name hashes to, failing "
          "over to the next");
ABSL_FLAG(absl::Duration, interval, absl::Seconds(1),
          "Report interval and gNMI SAMPLE interval of the counters (match "
          "the collector's --analysis_interval)");
ABSL_FLAG(absl::Duration, topology_refresh, absl::Seconds(10),
          "How often the topology is read; switches with a gnmi "
          "block are added, removed or re-subscribed when it changes");
ABSL_FLAG(std::string, topology, "",
          "Read the topology from this file (YAML or JSON, as `fabricdiag "
          "topology apply` takes it) every --topology_refresh instead of "
          "from the collector");
ABSL_FLAG(std::string, http_listen, "0.0.0.0:9813",
          "ADDR:PORT serving /metrics and /healthz");
ABSL_FLAG(std::string, tls_ca, "", "CA certificate to trust for the collector");
ABSL_FLAG(std::string, tls_cert, "",
          "Client certificate for mutual TLS to the collector (its DNS "
          "names must list every switch the bridge speaks for)");
ABSL_FLAG(std::string, tls_key, "", "Client private key for mutual TLS");
ABSL_FLAG(std::string, tls_server_name, "",
          "Name expected in the collector's certificate when it differs from "
          "the host in --collector");
ABSL_FLAG(std::string, ingest_token_file, "",
          "File holding the token the collector requires of agents (its "
          "--ingest_token_file); must not be readable by others");
ABSL_FLAG(std::string, stream_buffer_size, "16MiB",
          "Per switch: memory the reports the collector has not acknowledged "
          "may take (oldest dropped beyond it)");
ABSL_FLAG(absl::Duration, gnmi_backoff_max, absl::Seconds(30),
          "Longest wait before subscribing to a switch again after its "
          "stream ended (exponential backoff from 250ms, with jitter)");
ABSL_FLAG(std::string, shard, "0/1",
          "I/N: subscribe only to the switches whose name hashes to I of N, "
          "so that N bridges with the same topology split its switches "
          "(each switch to exactly one bridge)");
ABSL_FLAG(std::string, gnmi_max_message_size, "64MiB",
          "Largest gNMI response accepted from a switch (a SONiC COUNTERS "
          "table of 128 ports is ~5.6 MB)");

int main(int argc, char** argv) {
  fabricdiag::InitProgram(
      "fabricdiag-gnmi-bridge",
      "Subscribes to every switch with a gnmi block in the collector's "
      "topology and streams its port counters to the collector as one agent "
      "per switch.");
  std::vector<char*> rest = absl::ParseCommandLine(argc, argv);
  if (rest.size() > 1) {
    std::cerr << "fabricdiag-gnmi-bridge: unexpected argument: " << rest[1]
              << "\n";
    return 2;
  }
  fabricdiag::gnmi::BridgeConfig config;
  config.collector = absl::GetFlag(FLAGS_collector);
  config.interval = absl::GetFlag(FLAGS_interval);
  config.topology_refresh = absl::GetFlag(FLAGS_topology_refresh);
  config.topology_file = absl::GetFlag(FLAGS_topology);
  config.http_listen = absl::GetFlag(FLAGS_http_listen);
  config.tls_ca = absl::GetFlag(FLAGS_tls_ca);
  config.tls_cert = absl::GetFlag(FLAGS_tls_cert);
  config.tls_key = absl::GetFlag(FLAGS_tls_key);
  config.tls_server_name = absl::GetFlag(FLAGS_tls_server_name);
  config.ingest_token_file = absl::GetFlag(FLAGS_ingest_token_file);
  config.stream_buffer_size = absl::GetFlag(FLAGS_stream_buffer_size);
  config.gnmi_backoff_max = absl::GetFlag(FLAGS_gnmi_backoff_max);
  config.gnmi_max_message_size = absl::GetFlag(FLAGS_gnmi_max_message_size);
  config.shard = absl::GetFlag(FLAGS_shard);
  absl::Status status = fabricdiag::gnmi::ValidateBridgeConfig(config);
  if (!status.ok()) {
    std::cerr << "fabricdiag-gnmi-bridge: " << status.message() << "\n";
    return 2;
  }
  return fabricdiag::gnmi::RunBridge(config);
}
