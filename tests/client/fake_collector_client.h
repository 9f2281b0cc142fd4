// An in-memory CollectorClient for unit tests of the commands: state is
// public, every call is recorded, and `fail` makes every call fail.
//
//   FakeCollectorClient client;
//   client.nodes.add_nodes()->set_node("gpu-000");
//   NodesCommand(client, options, env);
//
// Not thread-safe except CancelWatch (as the interface requires).
#pragma once

#include <atomic>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/synchronization/notification.h"
#include "client/collector_api.h"

namespace fabricdiag::client::testing {

class FakeCollectorClient final : public CollectorClient {
 public:
  // One WatchFindings call: whether the collector accepted it, the events it
  // sends, and how the stream ends.
  struct WatchSession {
    bool connected = true;
    std::vector<v1::FindingEvent> events;
    // Notified after the events, before returning `end` (a Ctrl-C).
    absl::Notification* interrupt = nullptr;
    absl::Status end = absl::UnavailableError(
        "cannot reach collector fake:9811: connection lost");
  };

  FakeCollectorClient() = default;
  explicit FakeCollectorClient(std::string address)
      : address_(std::move(address)) {}

  const std::string& address() const override { return address_; }

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
  // Plays `watch_sessions` in order; once they are used up, returns
  // CancelledError after notifying `after_last_session` (if set), as a user
  // pressing Ctrl-C would.
  absl::Status WatchFindings(const std::string& job,
                             const WatchCallbacks& callbacks) override;
  void CancelWatch() override { cancelled = true; }
  // Operator marks: record the request, answer `mark_answer` (or `fail`).
  absl::StatusOr<v1::AckFindingResponse> AckFinding(
      const v1::AckFindingRequest& request) override;
  absl::StatusOr<v1::Silence> CreateSilence(
      const v1::CreateSilenceRequest& request) override;
  absl::StatusOr<v1::ListSilencesResponse> ListSilences() override;
  absl::StatusOr<v1::Silence> ExpireSilence(
      const v1::ExpireSilenceRequest& request) override;
  absl::StatusOr<v1::ForgetNodeResponse> ForgetNode(
      const v1::ForgetNodeRequest& request) override;
  // Answers the entries of `series` of the node whose device and name match
  // (an empty filter matches all); NotFound for a node not in it, as the
  // collector does. `series_fail` fails this call alone.
  absl::StatusOr<v1::GetSeriesResponse> GetSeries(
      const v1::GetSeriesRequest& request) override;

  // Every call fails with this when not OK.
  absl::Status fail = absl::OkStatus();

  std::map<std::string, v1::Layout> layouts;
  // What GetResolvedLayout answers; a job not here answers its entry of
  // `layouts`, as a collector that does not resolve NICs would.
  std::map<std::string, v1::Layout> resolved_layouts;
  int64_t applied_unix_nanos = 0;
  std::vector<v1::Finding> apply_findings;  // returned by ApplyLayout
  v1::Topology topology;  // the declared one, when has_topology
  bool has_topology = true;
  uint64_t declared_version = 0;  // AdoptTopology compares it
  // Someone else declares a topology between a dry run and the write.
  bool adopt_race = false;
  // AdoptTopology answers a dry run's `snapshot` (false: as a collector
  // older than it, which ignores it).
  bool snapshots = true;
  v1::Topology discovered;
  v1::Topology effective;
  std::vector<v1::Finding> findings;
  v1::FindingsStaleness staleness;  // ListFindings' answer carries it
  // ListFindings of a job no layout and no finding names answers
  // InvalidArgument listing the known jobs, as the collector does.
  bool check_jobs = false;
  // ListFindings answers this many findings a page, with a token for the
  // next (0: every finding in one page, no token).
  size_t findings_page_size = 0;
  v1::ListNodesResponse nodes;
  std::vector<WatchSession> watch_sessions;
  absl::Notification* after_last_session = nullptr;

  // Recorded.
  int calls = 0;
  int apply_calls = 0;
  v1::ApplyLayoutRequest last_apply;        // the latest ApplyLayout request
  std::vector<std::string> apply_warnings;  // returned by ApplyLayout
  uint64_t apply_revision = 0;              // returned by ApplyLayout
  int watch_calls = 0;
  std::string last_watch_job;
  v1::ListFindingsRequest last_findings_request;
  int findings_calls = 0;
  std::vector<v1::AdoptTopologyRequest> adopt_requests;
  std::atomic<bool> cancelled{false};
  // The mark RPCs' requests, as text protos, in order; what they answer.
  std::vector<std::string> mark_requests;
  v1::ListSilencesResponse silences;
  v1::Silence silence_answer;
  v1::ForgetNodeResponse forget_answer;
  // GetSeries: node -> its series; the requests it received.
  std::map<std::string, std::vector<v1::SeriesRates>> series;
  absl::Status series_fail = absl::OkStatus();
  std::vector<v1::GetSeriesRequest> series_requests;

 private:
  std::string address_ = "fake:9811";
};

}  // namespace fabricdiag::client::testing
