// GrpcCollectorClient: the CollectorClient of collector_api.h over gRPC.
//
// - TLS when a CA is given (grpc::SslCredentials), with an optional server
//   name override for certificates issued to a name the address does not
//   carry; plaintext otherwise.
// - The bearer token travels as `authorization: Bearer <token>` metadata on
//   every call (writes need it; reads ignore it).
// - Every unary call has the configured deadline; WatchFindings has none.
// - Errors name the address and say why (see DescribeRpcError).
//
//   ClientConfig config;
//   config.address = "127.0.0.1:9811";
//   GrpcCollectorClient client(config);
//   absl::StatusOr<v1::ListNodesResponse> nodes = client.ListNodes();
//
// Thread-safe: concurrent calls are fine, and CancelWatch may be called from
// any thread.
#pragma once

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "client/client_config.h"
#include "client/collector_api.h"
#include "proto/collector.grpc.pb.h"

namespace fabricdiag::client {

// Turns a failed RPC into an absl::Status with the same code and a message
// for humans that names `address`:
//   UNAVAILABLE        "cannot reach collector ADDR: connection refused", or
//                      "collector ADDR: cluster unavailable: ..." when the
//                      collector answered but its NATS cluster did not
//   DEADLINE_EXCEEDED  "cannot reach collector ADDR: no answer within 10s", or
//                      "collector ADDR: cluster unavailable: ... (stopped at
//                      the request's deadline ...)" when the collector
//                      answered in time but its NATS cluster did not
//   UNAUTHENTICATED    "collector ADDR: unauthenticated: <why> (check
//                       --token_file)"
//   others             "collector ADDR: <code>: <message>"
absl::Status DescribeRpcError(const grpc::Status& status,
                              const std::string& address,
                              absl::Duration timeout);

// The client main() uses: a GrpcCollectorClient for config.address when
// `config` names one address, a FailoverCollectorClient over one
// GrpcCollectorClient per address otherwise.
std::shared_ptr<CollectorClient> MakeCollectorClient(
    const ClientConfig& config);

class GrpcCollectorClient final : public CollectorClient {
 public:
  explicit GrpcCollectorClient(const ClientConfig& config);

  const std::string& address() const override { return config_.address; }

  absl::StatusOr<v1::ApplyLayoutResponse> ApplyLayout(
      const v1::ApplyLayoutRequest& request) override;
  absl::Status DeleteLayout(const std::string& job) override;
  absl::Status ApplyTopology(const v1::Topology& topology) override;
  absl::StatusOr<v1::AdoptTopologyResponse> AdoptTopology(
      const v1::AdoptTopologyRequest& request) override;
  absl::StatusOr<v1::Layout> GetLayout(const std::string& job) override;
  absl::StatusOr<v1::Layout> GetResolvedLayout(const std::string& job) override;
  absl::StatusOr<v1::ListLayoutsResponse> ListLayouts() override;
  absl::StatusOr<v1::Topology> GetTopology() override;
  absl::StatusOr<v1::Topology> GetTopologyView(v1::TopologyView view) override;
  absl::StatusOr<v1::ListFindingsResponse> ListFindings(
      const v1::ListFindingsRequest& request) override;
  absl::StatusOr<v1::ListNodesResponse> ListNodes() override;
  absl::StatusOr<v1::AckFindingResponse> AckFinding(
      const v1::AckFindingRequest& request) override;
  absl::StatusOr<v1::Silence> CreateSilence(
      const v1::CreateSilenceRequest& request) override;
  absl::StatusOr<v1::ListSilencesResponse> ListSilences() override;
  absl::StatusOr<v1::Silence> ExpireSilence(
      const v1::ExpireSilenceRequest& request) override;
  absl::StatusOr<v1::ForgetNodeResponse> ForgetNode(
      const v1::ForgetNodeRequest& request) override;
  absl::StatusOr<v1::GetSeriesResponse> GetSeries(
      const v1::GetSeriesRequest& request) override;
  absl::Status WatchFindings(const std::string& job,
                             const WatchCallbacks& callbacks) override;
  void CancelWatch() override;

 private:
  // Metadata and, when `unary`, the deadline.
  void Prepare(grpc::ClientContext* context, bool unary) const;
  absl::Status Fail(const grpc::Status& status) const;
  absl::StatusOr<v1::Layout> GetLayout(const std::string& job, bool resolved);

  const ClientConfig config_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Collector::Stub> stub_;

  absl::Mutex mu_;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  grpc::ClientContext* watch_context_ ABSL_GUARDED_BY(mu_) = nullptr;
};

}  // namespace fabricdiag::client
