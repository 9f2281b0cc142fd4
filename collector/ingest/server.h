// The collector's gRPC server: listen address, TLS, limits, keepalive.
//
// Builds one grpc::Server carrying every collector service: ingest (from
// completion queues, see cq_service.h), layouts, topology and queries. Settings
// every service shares:
// - messages up to 16 MiB (the largest agent Schema, 32,768 series with long
//   ethtool names, is about 8 MB);
// - agents ping every 30 s to detect dead connections (StreamClient's
//   GRPC_ARG_KEEPALIVE_TIME_MS); the server permits that even without data
//   instead of answering with GOAWAY "too_many_pings";
// - TLS when a certificate is configured, and mutual TLS (client
//   certificates required and verified) when a client CA is given.
//
//   CollectorServer::Options opts;
//   opts.listen = "0.0.0.0:9811";
//   opts.tls_cert_file = "/etc/fabricdiag/collector.pem";
//   opts.tls_key_file = "/etc/fabricdiag/collector.key";
//   ASSIGN_OR_RETURN(std::unique_ptr<CollectorServer> server,
//                    CollectorServer::Start(opts, {&ingest_service}));
//   LogInfo(absl::StrCat("listening on port ", server->port()));
//   server->Wait();
//
// Thread-safe.
#pragma once

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "collector/ingest/cq_service.h"

namespace fabricdiag::collector {

class CollectorServer {
 public:
  struct Options {
    std::string listen = "0.0.0.0:9811";  // port 0 = any free port
    std::string tls_cert_file;            // PEM; with tls_key_file
    std::string tls_key_file;
    std::string tls_client_ca_file;  // require client certs signed by it
    int max_receive_message_bytes = 16 * 1024 * 1024;
    // Shortest interval between client pings on a connection without data
    // that the server tolerates; a bit below the agents' 30 s for jitter.
    absl::Duration min_client_ping_interval = absl::Seconds(25);
    // Completion queues (one thread each) for the services that are
    // CqServices (ingest). One: with two, both threads wake for the same
    // events (5 context switches per report instead of under 2, and
    // second-long ack latency spikes under 2,000 agents); one thread ingests
    // ~6M values/s, and analysis runs on threads of its own.
    int cq_threads = 1;
  };

  // Loads the TLS files, binds and starts serving `services` (which must
  // outlive the server); those that are also CqServices are served from the
  // server's completion queues. InvalidArgument for bad options or unreadable
  // TLS files, Unavailable when the address cannot be bound.
  static absl::StatusOr<std::unique_ptr<CollectorServer>> Start(
      const Options& options, const std::vector<grpc::Service*>& services);

  CollectorServer(const CollectorServer&) = delete;
  CollectorServer& operator=(const CollectorServer&) = delete;
  ~CollectorServer();  // Shutdown(absl::ZeroDuration())

  // The bound port (the chosen one when listening on port 0).
  int port() const { return port_; }

  // Stops accepting streams; after `grace`, cancels the ones still open.
  // Idempotent.
  void Shutdown(absl::Duration grace);
  // Blocks until the server has shut down and its queues are drained.
  void Wait();

 private:
  struct Queue {
    std::unique_ptr<grpc::ServerCompletionQueue> cq;
    CqGate gate;
    std::thread thread;
  };

  CollectorServer(std::unique_ptr<grpc::Server> server, int port,
                  std::vector<std::unique_ptr<Queue>> queues)
      : server_(std::move(server)), port_(port), queues_(std::move(queues)) {}

  std::unique_ptr<grpc::Server> server_;
  const int port_;
  std::vector<std::unique_ptr<Queue>> queues_;
  std::atomic<bool> shut_down_{false};
  std::once_flag joined_;
};

// Server credentials for `options`: insecure without a certificate, TLS with
// one, mutual TLS with a client CA. Exposed for tests and other servers.
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> LoadServerCredentials(
    const CollectorServer::Options& options);

}  // namespace fabricdiag::collector
