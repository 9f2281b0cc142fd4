// The TLS flags every client binary takes (--tls_ca, --tls_cert, --tls_key,
// --tls_server_name), defined once with one help text each in tls_flags.cc.
// A binary that links fabricdiag_client_tls_flags has them (and lists them in
// --help); its main reads them with:
//
//   client::TlsFlags tls = client::TlsFlagsFromCommandLine();
//   ASSIGN_OR_RETURN(client::TlsConfig config, client::LoadTls(tls));
//
// Call after absl::ParseCommandLine; thread-safe.
#pragma once

#include "client/tls.h"

namespace fabricdiag::client {

// The values of the TLS flags as given.
TlsFlags TlsFlagsFromCommandLine();

}  // namespace fabricdiag::client
