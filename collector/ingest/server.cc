#include "collector/ingest/server.h"

#include <grpcpp/impl/service_type.h>

#include <algorithm>
#include <chrono>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/files.h"
#include "common/status_macros.h"

namespace fabricdiag::collector {

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
                   ReadPemFile("--tls_cert", o.tls_cert_file, false));
  ASSIGN_OR_RETURN(pair.private_key,
                   ReadPemFile("--tls_key", o.tls_key_file, true));
  ssl.pem_key_cert_pairs.push_back(std::move(pair));
  if (!o.tls_client_ca_file.empty()) {
    ASSIGN_OR_RETURN(
        ssl.pem_root_certs,
        ReadPemFile("--tls_client_ca", o.tls_client_ca_file, false));
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
  // gRPC sets SO_REUSEPORT by default: a second collector on the same
  // address would start and silently take half of the connections.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
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
  std::vector<CqService*> cq_services;
  for (grpc::Service* service : services) {
    builder.RegisterService(service);
    if (auto* cq_service = dynamic_cast<CqService*>(service)) {
      cq_services.push_back(cq_service);
    }
  }
  std::vector<std::unique_ptr<Queue>> queues;
  if (!cq_services.empty()) {
    for (int i = 0; i < std::max(1, options.cq_threads); ++i) {
      queues.push_back(std::make_unique<Queue>());
      queues.back()->cq = builder.AddCompletionQueue();
    }
  }
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || port == 0) {
    if (server != nullptr) server->Shutdown();
    // A queue must be shut down and drained before it is destroyed.
    for (auto& q : queues) {
      q->cq->Shutdown();
      void* tag;
      bool ok;
      while (q->cq->Next(&tag, &ok)) {
      }
    }
    return absl::UnavailableError(absl::StrCat(
        "cannot listen on ", options.listen,
        " (in use by another process, or not an address of this host)"));
  }
  for (auto& q : queues) {
    for (CqService* service : cq_services)
      service->Serve(q->cq.get(), &q->gate);
    grpc::ServerCompletionQueue* cq = q->cq.get();
    q->thread = std::thread([cq] {
      void* tag;
      bool ok;
      while (cq->Next(&tag, &ok)) static_cast<CqTag*>(tag)->Proceed(ok);
    });
  }
  return std::unique_ptr<CollectorServer>(
      new CollectorServer(std::move(server), port, std::move(queues)));
}

CollectorServer::~CollectorServer() {
  Shutdown(absl::ZeroDuration());
  Wait();
}

void CollectorServer::Shutdown(absl::Duration grace) {
  if (shut_down_.exchange(true)) return;
  // Calls still open after `grace` are cancelled; their handlers keep
  // running on the queues' threads and finish them.
  server_->Shutdown(std::chrono::system_clock::now() +
                    absl::ToChronoNanoseconds(grace));
  // gRPC's order: the server first, then its queues. The gate keeps any
  // handler from starting an operation on a queue that is shutting down.
  for (auto& q : queues_) {
    q->gate.Close();
    q->cq->Shutdown();
  }
}

void CollectorServer::Wait() {
  server_->Wait();
  // The queues' threads end once Shutdown() has shut the queues down and
  // every tag is drained.
  std::call_once(joined_, [this] {
    for (auto& q : queues_) {
      if (q->thread.joinable()) q->thread.join();
    }
  });
}

}  // namespace fabricdiag::collector
