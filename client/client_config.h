// How the CLI and the gNMI bridge's topology reader reach the collector's
// query service: address (or a list of them, tried in order; see
// failover_client.h), TLS (client/tls.h) and token, loaded from flags. Files
// are read here, before any RPC, so that a missing token or CA file is reported
// as invalid input (exit 2) naming the flag, not as a collector failure.
//
//   ClientFlags flags;
//   flags.address = "collector-0:9811";
//   flags.token_file = "/etc/fabricdiag/token";
//   absl::StatusOr<ClientConfig> config = LoadClientConfig(flags);
//   // InvalidArgument "--token_file: cannot read /etc/...: Permission denied"
//
// Pure apart from reading the two files; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "client/tls.h"

namespace fabricdiag::client {

inline constexpr char kDefaultCollector[] = "127.0.0.1:9811";

// The global flags as given.
struct ClientFlags {
  // --collector: HOST:PORT, a gRPC target URI, or a comma-separated list of
  // them.
  std::string address = kDefaultCollector;
  std::string token_file;  // empty: no token
  TlsFlags tls;            // --tls_ca, --tls_cert, --tls_key, ...
  absl::Duration timeout = absl::Seconds(10);
};

// What GrpcCollectorClient needs.
struct ClientConfig {
  // The address one GrpcCollectorClient connects to: the first of
  // `addresses` as loaded.
  std::string address = kDefaultCollector;
  // Every address of --collector, in the order given (at least one).
  std::vector<std::string> addresses = {kDefaultCollector};
  std::string token;  // empty: no authorization metadata
  TlsConfig tls;      // plaintext unless enabled()
  absl::Duration timeout = absl::Seconds(10);
};

// InvalidArgument naming the flag for: an empty or malformed address (or
// list entry, or an address listed twice), a
// non-positive timeout, an unreadable/empty/oversized token file, a token
// with characters that cannot go into an HTTP/2 header, and every TLS error
// of LoadTls (client/tls.h).
absl::StatusOr<ClientConfig> LoadClientConfig(const ClientFlags& flags);

}  // namespace fabricdiag::client
