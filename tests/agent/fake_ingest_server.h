// A real fabricdiag.v1.Ingest gRPC server for the StreamClient tests.
//
// Listens on 127.0.0.1 (port 0 = pick one), records every message it
// receives per node, and acknowledges each report like the collector will
// (an Ack after Hello with the highest seq it holds for that boot id, then
// one per report). It can be stopped and started again on the SAME port to
// simulate a collector outage, told to withhold acks, or told to stall
// (accept streams but stop reading them, like a wedged collector).
//
//   FakeIngestServer server;
//   ASSERT_TRUE(server.Start().ok());
//   ... client.Start() against server.target() ...
//   ASSERT_TRUE(server.WaitFor("gpu-1", [](const FakeIngestServer::Node& n) {
//     return n.report_seqs.size() >= 3; }));
//
// Thread-safe.
#pragma once

#include <grpcpp/grpcpp.h>

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "proto/ingest.grpc.pb.h"

namespace fabricdiag::agent::testing {

class FakeIngestServer {
 public:
  struct Tls {
    std::string cert_pem;
    std::string key_pem;
    std::string client_ca_pem;  // empty: no client certificates
    bool require_client_cert = false;
  };

  // What one node sent, over all its streams.
  struct Node {
    int streams = 0;  // Hellos received
    std::vector<v1::Hello> hellos;
    std::vector<v1::AgentMessage> messages;  // in arrival order
    std::vector<uint64_t> report_seqs;       // every report, duplicates too
    std::map<uint64_t, v1::Schema> schemas;  // by schema_id
    int inventories = 0;
    // Reports whose schema had not been received on the same stream before.
    int reports_without_schema = 0;
  };

  FakeIngestServer();
  ~FakeIngestServer();

  // Starts listening on 127.0.0.1:`port` (0 = any free port).
  absl::Status Start(int port = 0, std::optional<Tls> tls = std::nullopt);
  // Cancels every stream and stops listening. Idempotent.
  void Stop();
  // Starts again on the port and with the TLS settings of the last Start().
  absl::Status Restart();

  int port() const { return port_; }
  std::string target() const;

  void set_withhold_acks(bool withhold);
  // While stalled, stream handlers stop reading (and acking).
  void set_stall(bool stall);
  // While set, the next Hello or report of every stream is answered with a
  // Handoff and the stream ends (UNAVAILABLE), as a cluster's analysis
  // leader does; that message is recorded first.
  void set_hand_off(bool hand_off);
  // The Handoff's target while handing off ("" = none, the default).
  void set_hand_off_target(std::string target);
  // Sent with the Ack that answers each Hello (Ack.weights), as a
  // cluster's collectors do.
  void set_hello_weights(v1::CollectorWeights weights);

  // Copy of what `node` sent so far (empty Node if nothing).
  Node node(const std::string& name) const;
  // Waits until `pred` holds for `name`'s record, or `timeout` passes.
  bool WaitFor(const std::string& name, std::function<bool(const Node&)> pred,
               absl::Duration timeout = absl::Seconds(10)) const;

 private:
  class Service;

  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  std::map<std::string, Node> nodes_;
  // (node, boot_id) -> highest seq received; the collector's dedup state.
  std::map<std::pair<std::string, std::string>, uint64_t> highest_;
  bool withhold_acks_ = false;
  bool stall_ = false;
  bool hand_off_ = false;
  std::string hand_off_target_;
  std::optional<v1::CollectorWeights> hello_weights_;
  bool stopping_ = false;

  std::unique_ptr<Service> service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
  std::optional<Tls> tls_;
};

}  // namespace fabricdiag::agent::testing
