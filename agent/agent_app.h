// The agent process: configuration, validation and the run loop, kept out
// of main.cc so that the binary stays a thin flags -> config -> run shim.
//
//   AgentConfig config;            // filled from flags
//   absl::Status s = ValidateAgentConfig(config);
//   if (!s.ok()) { ...print s.message(), exit 2... }
//   return RunAgent(config);       // until SIGINT/SIGTERM
#pragma once

#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "client/tls.h"

namespace fabricdiag::agent {

struct AgentConfig {
  std::string node;  // --node; the host name when empty
  std::string sysfs_root = "/sys";
  std::string ethtool_dir;  // --ethtool_dir; ioctl when empty
  absl::Duration interval = absl::Seconds(1);
  std::string listen = "0.0.0.0:9810";
  std::string collector;  // HOST:PORT; Prometheus-only when empty
  bool once = false;
  // --tls_ca, --tls_cert, --tls_key, --tls_server_name (client/tls.h).
  client::TlsFlags tls;
  std::string ingest_token_file;  // the collector's --ingest_token_file
  std::string netdev_exclude;     // regex; see kDefaultNetdevExclude
  bool ethtool_per_queue = false;
  // "auto" (keep sysfs descriptors open on real sysfs only), "always",
  // "never": see agent/sysfs_reader.h.
  std::string sysfs_fd_cache = "auto";
  size_t stream_buffer_reports = 0;  // 0: ten minutes of reports
  // --stream_buffer_size: memory the unacknowledged reports may take
  // ("64MiB"); the oldest are dropped beyond it.
  std::string stream_buffer_size = "64MiB";
  // LLDP neighbors (docs/agent.md): from lldpd's control socket, or, when
  // lldp_file is set, from that file of `lldpcli -f json show neighbors`
  // output. An empty socket and no file: LLDP is not read.
  std::string lldpd_socket = "/run/lldpd.socket";
  std::string lldp_file;
  absl::Duration lldp_interval = absl::Seconds(10);  // how often lldpd is asked
};

// Checks every field; the message names the flag at fault. Does not touch
// the network. Fills nothing in: call ResolveDefaults() first.
absl::Status ValidateAgentConfig(const AgentConfig& config);

// Fills in defaults that depend on the machine (the node name).
void ResolveDefaults(AgentConfig* config);

// Runs the agent. With `once`, prints one JSON snapshot on stdout and
// returns 0, or 1 with a message on stderr when nothing could be read.
// Otherwise serves /metrics (and streams to the collector) until SIGINT or
// SIGTERM, then returns 0; returns 1 when it cannot start (port in use,
// bad TLS files).
int RunAgent(const AgentConfig& config);

}  // namespace fabricdiag::agent
