#include "collector/server.h"

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace fabricdiag::collector {
namespace {

// PEM files are a few KB; anything bigger is the wrong file.
constexpr size_t kMaxPemBytes = 1 << 20;

absl::StatusOr<std::string> ReadPem(const std::string& path,
                                    absl::string_view what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cannot read ", what, " '", path, "': ", std::strerror(errno)));
  }
  std::string data(kMaxPemBytes + 1, '\0');
  in.read(data.data(), static_cast<std::streamsize>(data.size()));
  data.resize(static_cast<size_t>(in.gcount()));
  if (data.size() > kMaxPemBytes || !absl::StrContains(data, "-----BEGIN ")) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " '", path, "' is not a PEM file"));
  }
  return data;
}

}  // namespace

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> LoadServerCredentials(
    const CollectorServer::Options& o) {
  if (o.tls_cert_file.empty() != o.tls_key_file.empty()) {
    return absl::InvalidArgumentError(
        "--tls_cert and --tls_key must be given together");
  }
  if (o.tls_cert_file.empty()) {
    if (!o.tls_client_ca_file.empty()) {
      return absl::InvalidArgumentError(
          "--tls_client_ca needs --tls_cert and --tls_key");
    }
    return grpc::InsecureServerCredentials();
  }
  grpc::SslServerCredentialsOptions ssl(
      o.tls_client_ca_file.empty()
          ? GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE
          : GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  grpc::SslServerCredentialsOptions::PemKeyCertPair pair;
  ASSIGN_OR_RETURN(pair.cert_chain,
                   ReadPem(o.tls_cert_file, "TLS certificate"));
  ASSIGN_OR_RETURN(pair.private_key, ReadPem(o.tls_key_file, "TLS key"));
  ssl.pem_key_cert_pairs.push_back(std::move(pair));
  if (!o.tls_client_ca_file.empty()) {
    ASSIGN_OR_RETURN(ssl.pem_root_certs,
                     ReadPem(o.tls_client_ca_file, "TLS client CA"));
  }
  return grpc::SslServerCredentials(ssl);
}

absl::StatusOr<std::unique_ptr<CollectorServer>> CollectorServer::Start(
    const Options& options, const std::vector<grpc::Service*>& services) {
  if (options.listen.empty()) {
    return absl::InvalidArgumentError("listen address is empty");
  }
  if (options.max_receive_message_bytes <= 0) {
    return absl::InvalidArgumentError("max receive message size must be > 0");
  }
  ASSIGN_OR_RETURN(std::shared_ptr<grpc::ServerCredentials> creds,
                   LoadServerCredentials(options));
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(options.listen, creds, &port);
  builder.SetMaxReceiveMessageSize(options.max_receive_message_bytes);
  builder.AddChannelArgument(
      GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS,
      static_cast<int>(
          absl::ToInt64Milliseconds(options.min_client_ping_interval)));
  // Two pings faster than allowed are forgiven (timer jitter); the third
  // closes the connection, as gRPC's default does - stated explicitly
  // because it goes with the interval above.
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PING_STRIKES, 2);
  // Agents keep their stream open between reports; allow their pings even
  // when a stream is momentarily idle.
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  for (grpc::Service* service : services) builder.RegisterService(service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || port == 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot listen on ", options.listen));
  }
  return std::unique_ptr<CollectorServer>(
      new CollectorServer(std::move(server), port));
}

CollectorServer::~CollectorServer() {
  Shutdown(absl::ZeroDuration());
  Wait();
}

void CollectorServer::Shutdown(absl::Duration grace) {
  if (shut_down_.exchange(true)) return;
  server_->Shutdown(std::chrono::system_clock::now() +
                    absl::ToChronoNanoseconds(grace));
}

void CollectorServer::Wait() { server_->Wait(); }

}  // namespace fabricdiag::collector
