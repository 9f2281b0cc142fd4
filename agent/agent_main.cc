// fabricdiag-agent: flags -> AgentConfig -> RunAgent. See agent/agent_app.h.
#include <iostream>
#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/time/time.h"
#include "agent/agent_app.h"
#include "client/stream_flags.h"
#include "common/program.h"

ABSL_FLAG(std::string, node, "",
          "Name of this node in job layouts and topology (default: host name)");
ABSL_FLAG(std::string, sysfs_root, "/sys",
          "Reads DIR/class/infiniband/... and DIR/class/net/...");
ABSL_FLAG(std::string, ethtool_dir, "",
          "When set, ethtool statistics of netdev IF come from the file DIR/IF "
          "holding `ethtool -S IF` output instead of the SIOCETHTOOL ioctl");
ABSL_FLAG(absl::Duration, interval, absl::Seconds(1),
          "Sampling period (200ms, 1s, ...); reads fall on whole multiples "
          "of it on the wall clock");
ABSL_FLAG(std::string, listen, "0.0.0.0:9810",
          "ADDR:PORT serving Prometheus /metrics");
ABSL_FLAG(bool, once, false,
          "Read one snapshot, print it as JSON on stdout and exit");
ABSL_FLAG(std::string, netdev_exclude, "",
          "Regex of netdev names to skip (default: loopback, veth, docker, "
          "bridges, tunnels and other virtual interfaces)");
ABSL_FLAG(std::string, sysfs_fd_cache, "auto",
          "Keep sysfs file descriptors open between reads: auto (only on "
          "real sysfs), always (any tree whose files are rewritten in place), "
          "never");
ABSL_FLAG(std::string, stream_buffer_size, "64MiB",
          "Memory the reports the collector has not acknowledged may take "
          "(kept for replay after an outage; oldest dropped beyond it): "
          "64MiB, 512MiB, 1GiB ...");
ABSL_FLAG(bool, ethtool_per_queue, false,
          "Also export per-queue/ring/channel ethtool statistics");
ABSL_FLAG(std::string, lldpd_socket, "/run/lldpd.socket",
          "lldpd's control socket, asked for the LLDP neighbors of every "
          "netdev; no lldpd there means no neighbors, not an error; empty: "
          "LLDP is not read");
ABSL_FLAG(std::string, lldp_file, "",
          "When set, LLDP neighbors come from this file holding "
          "`lldpcli -f json show neighbors` output (re-read when it "
          "changes) instead of --lldpd_socket");
ABSL_FLAG(absl::Duration, lldp_interval, absl::Seconds(10),
          "How often lldpd is asked for the LLDP neighbors (1s..1h)");

int main(int argc, char** argv) {
  fabricdiag::InitProgram(
      "fabricdiag-agent",
      "Reads every RDMA and NIC counter of this node, serves them to "
      "Prometheus and streams them to a fabricdiag collector.");
  std::vector<char*> rest = absl::ParseCommandLine(argc, argv);
  if (rest.size() > 1) {
    std::cerr << "fabricdiag-agent: unexpected argument: " << rest[1] << "\n";
    return 2;
  }
  fabricdiag::agent::AgentConfig config;
  config.node = absl::GetFlag(FLAGS_node);
  config.sysfs_root = absl::GetFlag(FLAGS_sysfs_root);
  config.ethtool_dir = absl::GetFlag(FLAGS_ethtool_dir);
  config.interval = absl::GetFlag(FLAGS_interval);
  config.listen = absl::GetFlag(FLAGS_listen);
  config.once = absl::GetFlag(FLAGS_once);
  // --collector, --tls_*, --ingest_token_file: client/stream_flags.h.
  const fabricdiag::client::StreamFlags stream =
      fabricdiag::client::StreamFlagsFromCommandLine();
  config.collector = stream.collector;
  config.tls = stream.tls;
  config.ingest_token_file = stream.ingest_token_file;
  config.netdev_exclude = absl::GetFlag(FLAGS_netdev_exclude);
  config.ethtool_per_queue = absl::GetFlag(FLAGS_ethtool_per_queue);
  config.sysfs_fd_cache = absl::GetFlag(FLAGS_sysfs_fd_cache);
  config.stream_buffer_size = absl::GetFlag(FLAGS_stream_buffer_size);
  config.lldpd_socket = absl::GetFlag(FLAGS_lldpd_socket);
  config.lldp_file = absl::GetFlag(FLAGS_lldp_file);
  config.lldp_interval = absl::GetFlag(FLAGS_lldp_interval);
  fabricdiag::agent::ResolveDefaults(&config);
  absl::Status status = fabricdiag::agent::ValidateAgentConfig(config);
  if (!status.ok()) {
    std::cerr << "fabricdiag-agent: " << status.message() << "\n";
    return 2;
  }
  return fabricdiag::agent::RunAgent(config);
}
