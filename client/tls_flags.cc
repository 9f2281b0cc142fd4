#include "client/tls_flags.h"

#include <string>

#include "absl/flags/flag.h"

// The rules these follow are in client/tls.h and docs/client-tls.md.
ABSL_FLAG(std::string, tls_ca, "",
          "PEM CA certificate the collector's certificate must chain to; "
          "turns TLS on (plaintext without it)");
ABSL_FLAG(std::string, tls_cert, "",
          "PEM client certificate for mutual TLS (with --tls_key, and "
          "--tls_ca to verify the collector)");
ABSL_FLAG(std::string, tls_key, "",
          "PEM private key of --tls_cert; must not be readable by others");
ABSL_FLAG(std::string, tls_server_name, "",
          "Name expected in the collector's certificate when it differs from "
          "the host in --collector (with --tls_ca)");

namespace fabricdiag::client {

TlsFlags TlsFlagsFromCommandLine() {
  TlsFlags flags;
  flags.ca = absl::GetFlag(FLAGS_tls_ca);
  flags.cert = absl::GetFlag(FLAGS_tls_cert);
  flags.key = absl::GetFlag(FLAGS_tls_key);
  flags.server_name = absl::GetFlag(FLAGS_tls_server_name);
  return flags;
}

}  // namespace fabricdiag::client
