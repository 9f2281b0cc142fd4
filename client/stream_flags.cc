#include "client/stream_flags.h"

#include "absl/flags/flag.h"
#include "client/tls_flags.h"

ABSL_FLAG(std::string, collector, "",
          "HOST:PORT of the collector to stream to, or a comma-separated list "
          "of a cluster's collectors: each node (the agent's --node, each "
          "switch of the gNMI bridge) starts with the one its name hashes to "
          "(FNV-1a 64 modulo the list size) and fails over to the next when "
          "the stream ends; empty: the agent serves Prometheus only (the "
          "bridge needs it)");
ABSL_FLAG(std::string, ingest_token_file, "",
          "File holding the token the collector requires of agents "
          "(its --ingest_token_file); must not be readable by others");

namespace fabricdiag::client {

StreamFlags StreamFlagsFromCommandLine() {
  StreamFlags flags;
  flags.collector = absl::GetFlag(FLAGS_collector);
  flags.tls = TlsFlagsFromCommandLine();
  flags.ingest_token_file = absl::GetFlag(FLAGS_ingest_token_file);
  return flags;
}

}  // namespace fabricdiag::client
