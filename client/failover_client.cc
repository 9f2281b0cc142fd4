#include "client/failover_client.h"

#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace fabricdiag::client {

bool IsConnectionFailure(const absl::Status& status) {
  return absl::IsUnavailable(status) || absl::IsDeadlineExceeded(status);
}

namespace {

// The error when every member failed: the code of the last failure (both
// are exit 1 for the CLI) and every member's message, in the order tried.
absl::Status NoneAnswered(const std::vector<absl::Status>& failures) {
  if (failures.size() == 1) return failures[0];
  std::vector<std::string> messages;
  messages.reserve(failures.size());
  for (const absl::Status& s : failures) {
    messages.emplace_back(s.message());
  }
  return absl::Status(
      failures.back().code(),
      absl::StrCat("no collector answered: ", absl::StrJoin(messages, "; ")));
}

}  // namespace

FailoverCollectorClient::FailoverCollectorClient(
    std::vector<std::shared_ptr<CollectorClient>> members)
    : members_(std::move(members)) {}

const std::string& FailoverCollectorClient::address() const {
  absl::MutexLock lock(&mu_);
  return members_[answered_]->address();
}

absl::Status FailoverCollectorClient::TryInOrder(
    const std::function<absl::Status(CollectorClient&)>& call) {
  std::vector<absl::Status> failures;
  for (size_t i = 0; i < members_.size(); ++i) {
    absl::Status status = call(*members_[i]);
    if (!IsConnectionFailure(status)) {
      absl::MutexLock lock(&mu_);
      answered_ = i;
      return status;
    }
    failures.push_back(std::move(status));
  }
  return NoneAnswered(failures);
}

template <typename T>
absl::StatusOr<T> FailoverCollectorClient::TryInOrder(
    const std::function<absl::StatusOr<T>(CollectorClient&)>& call) {
  std::optional<absl::StatusOr<T>> result;
  absl::Status status = TryInOrder([&](CollectorClient& member) {
    result = call(member);
    return result->status();
  });
  if (!status.ok()) return status;
  return *std::move(result);
}

absl::StatusOr<v1::ApplyLayoutResponse> FailoverCollectorClient::ApplyLayout(
    const v1::ApplyLayoutRequest& request) {
  return TryInOrder<v1::ApplyLayoutResponse>(
      [&](CollectorClient& c) { return c.ApplyLayout(request); });
}

absl::Status FailoverCollectorClient::DeleteLayout(const std::string& job) {
  return TryInOrder([&](CollectorClient& c) { return c.DeleteLayout(job); });
}

absl::Status FailoverCollectorClient::ApplyTopology(
    const v1::Topology& topology) {
  return TryInOrder(
      [&](CollectorClient& c) { return c.ApplyTopology(topology); });
}

absl::StatusOr<v1::Layout> FailoverCollectorClient::GetLayout(
    const std::string& job) {
  return TryInOrder<v1::Layout>(
      [&](CollectorClient& c) { return c.GetLayout(job); });
}

absl::StatusOr<v1::Layout> FailoverCollectorClient::GetResolvedLayout(
    const std::string& job) {
  return TryInOrder<v1::Layout>(
      [&](CollectorClient& c) { return c.GetResolvedLayout(job); });
}

absl::StatusOr<v1::ListLayoutsResponse> FailoverCollectorClient::ListLayouts() {
  return TryInOrder<v1::ListLayoutsResponse>(
      [](CollectorClient& c) { return c.ListLayouts(); });
}

absl::StatusOr<v1::Topology> FailoverCollectorClient::GetTopology() {
  return TryInOrder<v1::Topology>(
      [](CollectorClient& c) { return c.GetTopology(); });
}

absl::StatusOr<v1::Topology> FailoverCollectorClient::GetTopologyView(
    v1::TopologyView view) {
  return TryInOrder<v1::Topology>(
      [view](CollectorClient& c) { return c.GetTopologyView(view); });
}

absl::StatusOr<v1::AdoptTopologyResponse>
FailoverCollectorClient::AdoptTopology(
    const v1::AdoptTopologyRequest& request) {
  return TryInOrder<v1::AdoptTopologyResponse>(
      [&](CollectorClient& c) { return c.AdoptTopology(request); });
}

absl::StatusOr<v1::ListFindingsResponse> FailoverCollectorClient::ListFindings(
    const v1::ListFindingsRequest& request) {
  return TryInOrder<v1::ListFindingsResponse>(
      [&](CollectorClient& c) { return c.ListFindings(request); });
}

absl::StatusOr<v1::ListNodesResponse> FailoverCollectorClient::ListNodes() {
  return TryInOrder<v1::ListNodesResponse>(
      [](CollectorClient& c) { return c.ListNodes(); });
}

absl::StatusOr<v1::AckFindingResponse> FailoverCollectorClient::AckFinding(
    const v1::AckFindingRequest& request) {
  return TryInOrder<v1::AckFindingResponse>(
      [&](CollectorClient& c) { return c.AckFinding(request); });
}

absl::StatusOr<v1::Silence> FailoverCollectorClient::CreateSilence(
    const v1::CreateSilenceRequest& request) {
  return TryInOrder<v1::Silence>(
      [&](CollectorClient& c) { return c.CreateSilence(request); });
}

absl::StatusOr<v1::ListSilencesResponse>
FailoverCollectorClient::ListSilences() {
  return TryInOrder<v1::ListSilencesResponse>(
      [](CollectorClient& c) { return c.ListSilences(); });
}

absl::StatusOr<v1::Silence> FailoverCollectorClient::ExpireSilence(
    const v1::ExpireSilenceRequest& request) {
  return TryInOrder<v1::Silence>(
      [&](CollectorClient& c) { return c.ExpireSilence(request); });
}

absl::StatusOr<v1::ForgetNodeResponse> FailoverCollectorClient::ForgetNode(
    const v1::ForgetNodeRequest& request) {
  return TryInOrder<v1::ForgetNodeResponse>(
      [&](CollectorClient& c) { return c.ForgetNode(request); });
}

absl::StatusOr<v1::GetSeriesResponse> FailoverCollectorClient::GetSeries(
    const v1::GetSeriesRequest& request) {
  return TryInOrder<v1::GetSeriesResponse>(
      [&](CollectorClient& c) { return c.GetSeries(request); });
}

absl::Status FailoverCollectorClient::WatchFindings(
    const std::string& job, const WatchCallbacks& callbacks) {
  std::vector<absl::Status> failures;
  for (size_t i = 0; i < members_.size(); ++i) {
    bool connected = false;
    WatchCallbacks wrapped;
    wrapped.on_connected = [&, i] {
      connected = true;
      {
        // address() names this member from now on, in the callback too.
        absl::MutexLock lock(&mu_);
        answered_ = i;
      }
      if (callbacks.on_connected) callbacks.on_connected();
    };
    wrapped.on_event = callbacks.on_event;
    absl::Status status = members_[i]->WatchFindings(job, wrapped);
    // A watch the collector accepted and then lost is returned as is: the
    // caller reconnects, and that call starts from the first address again.
    if (connected || !IsConnectionFailure(status)) {
      absl::MutexLock lock(&mu_);
      answered_ = i;
      return status;
    }
    failures.push_back(std::move(status));
  }
  return NoneAnswered(failures);
}

void FailoverCollectorClient::CancelWatch() {
  for (const std::shared_ptr<CollectorClient>& member : members_) {
    member->CancelWatch();
  }
}

}  // namespace fabricdiag::client
