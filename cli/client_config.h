// How to reach the collector: address (or a list of them, tried in order;
// see failover_client.h), TLS and token, loaded from the global flags. Files
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

namespace fabricdiag::cli {

inline constexpr char kDefaultCollector[] = "127.0.0.1:9811";

// The global flags as given.
struct ClientFlags {
  // --collector: HOST:PORT, a gRPC target URI, or a comma-separated list of
  // them.
  std::string address = kDefaultCollector;
  std::string token_file;       // empty: no token
  std::string tls_ca;           // empty: plaintext
  std::string tls_server_name;  // empty: the host part of the address
  std::string tls_cert;         // client certificate for mutual TLS
  std::string tls_key;          // and its key (mode 0600)
  absl::Duration timeout = absl::Seconds(10);
};

// What GrpcCollectorClient needs.
struct ClientConfig {
  // The address one GrpcCollectorClient connects to: the first of
  // `addresses` as loaded.
  std::string address = kDefaultCollector;
  // Every address of --collector, in the order given (at least one).
  std::vector<std::string> addresses = {kDefaultCollector};
  std::string token;       // empty: no authorization metadata
  std::string tls_ca_pem;  // empty: plaintext
  std::string tls_server_name;
  std::string tls_cert_pem;  // empty: no client certificate
  std::string tls_key_pem;
  absl::Duration timeout = absl::Seconds(10);
};

// Largest token or CA file read; anything bigger is not a token or a CA.
inline constexpr size_t kMaxCredentialFileBytes = 1 << 20;

// InvalidArgument naming the flag for: an empty or malformed address (or
// list entry, or an address listed twice), a
// non-positive timeout, an unreadable/empty/oversized token file, a token
// with characters that cannot go into an HTTP/2 header, an unreadable or
// empty CA file, a client certificate without its key (or either without
// --tls_ca), a key readable by others.
absl::StatusOr<ClientConfig> LoadClientConfig(const ClientFlags& flags);

}  // namespace fabricdiag::cli
