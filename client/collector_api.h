// The collector as its clients (the CLI, the gNMI bridge) see it: one method
// per ops RPC of proto/collector.proto, without gRPC types, so that every
// command can be unit-tested against an in-memory fake.
//
// Errors are absl::Status with the canonical code of the RPC and a message
// that already names the collector's address and says why, ready to print:
//
//   absl::StatusOr<v1::ListNodesResponse> nodes = client.ListNodes();
//   if (!nodes.ok()) {
//     err << "fabricdiag: " << nodes.status().message() << "\n";
//     // "cannot reach collector 127.0.0.1:9811: connection refused"
//   }
//
// GrpcCollectorClient (collector_client.h) is the real implementation.
#pragma once

#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "proto/collector.pb.h"
#include "proto/layout.pb.h"

namespace fabricdiag::client {

class CollectorClient {
 public:
  virtual ~CollectorClient() = default;

  // "HOST:PORT", for messages.
  virtual const std::string& address() const = 0;

  // Writes: sent with the bearer token when one is configured.
  // The request carries the layout and its lease, source and owner.
  virtual absl::StatusOr<v1::ApplyLayoutResponse> ApplyLayout(
      const v1::ApplyLayoutRequest& request) = 0;
  virtual absl::Status DeleteLayout(const std::string& job) = 0;
  virtual absl::Status ApplyTopology(const v1::Topology& topology) = 0;
  // The discovered topology written as the declared one, compare-and-set on
  // request.expected_declared_version (Aborted when it moved).
  virtual absl::StatusOr<v1::AdoptTopologyResponse> AdoptTopology(
      const v1::AdoptTopologyRequest& request) = 0;

  // Reads.
  virtual absl::StatusOr<v1::Layout> GetLayout(const std::string& job) = 0;
  // The same with every rank listed, its NIC as the collector's analysis
  // uses it and where that came from (GetLayoutRequest.resolved). An older
  // collector answers the layout as applied (no RankPlacement.nic_source).
  virtual absl::StatusOr<v1::Layout> GetResolvedLayout(
      const std::string& job) = 0;
  virtual absl::StatusOr<v1::ListLayoutsResponse> ListLayouts() = 0;
  // The declared topology (NotFound when none was applied).
  virtual absl::StatusOr<v1::Topology> GetTopology() = 0;
  // The declared, discovered or effective topology.
  virtual absl::StatusOr<v1::Topology> GetTopologyView(
      v1::TopologyView view) = 0;
  virtual absl::StatusOr<v1::ListFindingsResponse> ListFindings(
      const v1::ListFindingsRequest& request) = 0;
  virtual absl::StatusOr<v1::ListNodesResponse> ListNodes() = 0;

  struct WatchCallbacks {
    // Called once the collector has accepted the stream (before or with the
    // first event). May be empty.
    std::function<void()> on_connected;
    // Called for every event, in order, on the calling thread, STALENESS
    // events included (the collector sends them when its findings turn
    // stale or current again).
    std::function<void(const v1::FindingEvent&)> on_event;
  };
  // Streams WatchFindings until it ends. Returns OK when the collector ended
  // the stream cleanly, CancelledError after CancelWatch(), and the RPC's
  // error otherwise (Unavailable when the collector went away).
  virtual absl::Status WatchFindings(const std::string& job,
                                     const WatchCallbacks& callbacks) = 0;
  // Operator marks (writes, with the bearer token). Not pure: a client
  // that does not implement them (a test fake) answers Unimplemented.
  virtual absl::StatusOr<v1::AckFindingResponse> AckFinding(
      const v1::AckFindingRequest& request);
  virtual absl::StatusOr<v1::Silence> CreateSilence(
      const v1::CreateSilenceRequest& request);
  virtual absl::StatusOr<v1::ListSilencesResponse> ListSilences();
  virtual absl::StatusOr<v1::Silence> ExpireSilence(
      const v1::ExpireSilenceRequest& request);
  virtual absl::StatusOr<v1::ForgetNodeResponse> ForgetNode(
      const v1::ForgetNodeRequest& request);
  // The recent rates of one node's series (read); Unimplemented by default,
  // as the marks.
  virtual absl::StatusOr<v1::GetSeriesResponse> GetSeries(
      const v1::GetSeriesRequest& request);

  // Ends the running WatchFindings (and makes every later one return
  // CancelledError at once). Thread-safe: meant to be called from a signal
  // handling thread while WatchFindings blocks another.
  virtual void CancelWatch() = 0;
};

}  // namespace fabricdiag::client
