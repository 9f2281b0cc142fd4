// The flags of the binaries that stream reports to the collector (the agent
// and the gNMI bridge): --collector, the TLS flags (tls_flags.h) and
// --ingest_token_file, defined once with one help text each in
// stream_flags.cc. A binary that links fabricdiag_client_stream_flags has
// them (and lists them in --help); its main reads them with:
//
//   client::StreamFlags flags = client::StreamFlagsFromCommandLine();
//   config.collector = flags.collector;
//
// --stream_buffer_size stays with each binary: its default and what it
// bounds (one agent's stream, one switch's) differ. Call after
// absl::ParseCommandLine; thread-safe.
#pragma once

#include <string>

#include "client/tls.h"

namespace fabricdiag::client {

struct StreamFlags {
  // --collector: HOST:PORT or a comma-separated list (ParseCollectorList in
  // client/collector_list.h); empty when not given.
  std::string collector;
  TlsFlags tls;
  std::string ingest_token_file;  // empty: no token (ReadIngestToken)
};

// The values of the streaming flags as given.
StreamFlags StreamFlagsFromCommandLine();

}  // namespace fabricdiag::client
