// fabricdiag-gnmi-bridge: flags -> BridgeConfig -> RunBridge. See
// gnmi/bridge_app.h and docs/gnmi-bridge.md.
#include <iostream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/time/time.h"
#include "client/stream_flags.h"
#include "common/program.h"
#include "gnmi/bridge_app.h"

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
ABSL_FLAG(std::string, token_file, "",
          "A token with the read scope of the collector's --auth_token_file, "
          "for reading the topology from it (mode 0600)");
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
  // --collector, --tls_*, --ingest_token_file: client/stream_flags.h.
  const fabricdiag::client::StreamFlags stream =
      fabricdiag::client::StreamFlagsFromCommandLine();
  config.collector = stream.collector;
  config.tls = stream.tls;
  config.ingest_token_file = stream.ingest_token_file;
  config.interval = absl::GetFlag(FLAGS_interval);
  config.topology_refresh = absl::GetFlag(FLAGS_topology_refresh);
  config.topology_file = absl::GetFlag(FLAGS_topology);
  config.token_file = absl::GetFlag(FLAGS_token_file);
  config.http_listen = absl::GetFlag(FLAGS_http_listen);
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
