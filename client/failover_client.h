// FailoverCollectorClient: the CollectorClient of a `--collector` list.
//
// Each call goes to the collectors in list order and returns the answer of
// the first that answers. Only connection-level failures move on to the
// next address: UNAVAILABLE (refused, unreachable, TLS handshake) and
// DEADLINE_EXCEEDED (no answer within --timeout). Any other error comes
// from a collector that is up and has decided (NotFound, InvalidArgument,
// Unauthenticated...): asking another collector of the same cluster would
// only repeat or, worse, contradict it, so it is returned as is. When no
// collector answers, the error names every address tried, in order:
//
//   "no collector answered: cannot reach collector c0:9811: connection
//    refused; cannot reach collector c1:9811: no answer within 10s
//    (--timeout)"
//
// Every call starts again from the first address: the CLI is short-lived,
// and the list order is the operator's preference.
//
//   std::vector<std::shared_ptr<CollectorClient>> members = ...;  // per
//   address FailoverCollectorClient client(std::move(members));
//   absl::StatusOr<v1::ListNodesResponse> nodes = client.ListNodes();
//
// Thread-safe as its members are: calls do not share state except the
// address last answered (under a lock), and CancelWatch may be called from
// any thread.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "client/collector_api.h"

namespace fabricdiag::client {

// True for the failures after which another collector is worth asking:
// UNAVAILABLE and DEADLINE_EXCEEDED.
bool IsConnectionFailure(const absl::Status& status);

class FailoverCollectorClient final : public CollectorClient {
 public:
  // `members` in preference order, at least one, none null.
  explicit FailoverCollectorClient(
      std::vector<std::shared_ptr<CollectorClient>> members);

  // The address of the collector that answered last; the first one's
  // before any call answered.
  const std::string& address() const override;

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
  // Moves on only while a collector fails before accepting the watch; once
  // one has accepted it, how the watch ends is returned as is (the watch
  // command's reconnect loop then calls again, from the first address).
  absl::Status WatchFindings(const std::string& job,
                             const WatchCallbacks& callbacks) override;
  void CancelWatch() override;

 private:
  // Runs `call` on each member in order until one does not fail at the
  // connection level; returns that status or, when none answered, the
  // combined error.
  absl::Status TryInOrder(
      const std::function<absl::Status(CollectorClient&)>& call);
  template <typename T>
  absl::StatusOr<T> TryInOrder(
      const std::function<absl::StatusOr<T>(CollectorClient&)>& call);

  const std::vector<std::shared_ptr<CollectorClient>> members_;
  mutable absl::Mutex mu_;
  size_t answered_ ABSL_GUARDED_BY(mu_) = 0;  // index into members_
};

}  // namespace fabricdiag::client
