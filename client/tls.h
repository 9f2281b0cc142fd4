// TLS to the collector: the one rule set every client (agent, CLI, gNMI
// bridge) applies to --tls_ca, --tls_cert, --tls_key and --tls_server_name,
// the PEM checks, and the gRPC credentials built from them. The rules and
// messages are documented in docs/client-tls.md:
//
//   none of them                      plaintext
//   --tls_ca                          TLS; the collector's certificate must
//                                     chain to this CA
//   --tls_ca --tls_cert --tls_key     mutual TLS
//   --tls_server_name                 (with --tls_ca) the name expected in the
//                                     collector's certificate
//
// Anything else is an InvalidArgument naming the flag: a certificate without
// its key or a key without its certificate, and --tls_cert or
// --tls_server_name without --tls_ca (TLS is off without a CA to verify the
// collector with: a client certificate sent to an unverified server is a
// mistake, not a configuration).
//
//   TlsFlags flags{.ca = "/etc/fabricdiag/ca.pem"};
//   ASSIGN_OR_RETURN(TlsConfig tls, LoadTls(flags));
//   grpc::ChannelArguments args;
//   SetTlsChannelArguments(tls, &args);
//   auto channel = grpc::CreateCustomChannel(target, ChannelCredentials(tls),
//                                            args);
//
// Files are read once (rotating certificates needs a restart). Pure apart
// from reading the files; thread-safe.
#pragma once

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace fabricdiag::client {

// The TLS flags as given (file names; empty = not given).
struct TlsFlags {
  std::string ca;           // --tls_ca
  std::string cert;         // --tls_cert
  std::string key;          // --tls_key
  std::string server_name;  // --tls_server_name
};

// The TLS flags' files, read and checked. TLS is on when `ca_pem` is set.
struct TlsConfig {
  std::string ca_pem;    // empty: plaintext
  std::string cert_pem;  // empty: no client certificate
  std::string key_pem;
  std::string server_name;  // empty: the host part of the address
  bool enabled() const { return !ca_pem.empty(); }
};

// The combination rules only (no file is opened): OK or InvalidArgument
// "--FLAG: ..." naming the flag at fault.
absl::Status CheckTlsFlags(const TlsFlags& flags);

// CheckTlsFlags, then reads the files: --tls_ca and --tls_cert must be
// readable regular files of at most 1 MiB holding a PEM certificate
// ("-----BEGIN CERTIFICATE-----"); --tls_key a PEM block in a file only its
// owner may read (see ReadSecretFile in common/files.h). Every error is
// InvalidArgument and names the flag and the file.
absl::StatusOr<TlsConfig> LoadTls(const TlsFlags& flags);

// SSL credentials when `tls` is enabled, insecure ones otherwise.
std::shared_ptr<grpc::ChannelCredentials> ChannelCredentials(
    const TlsConfig& tls);

// Sets the name the collector's certificate must carry when
// `tls.server_name` is set (and TLS is on).
void SetTlsChannelArguments(const TlsConfig& tls, grpc::ChannelArguments* args);

}  // namespace fabricdiag::client
