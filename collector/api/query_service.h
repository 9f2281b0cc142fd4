// The collector's ops API (fabricdiag.v1.Collector): layouts, topology,
// findings, nodes and series for the `fabricdiag` CLI and ops tooling.
//
// The service only converts between protos and the collector's domain
// objects; the logic lives in LayoutRegistry, the topology keeper
// (collector/topology/), FindingsStore and SeriesStore.
// It uses gRPC's synchronous API: every call is short except WatchFindings,
// which holds one server thread per watcher for as long as it streams; ops
// tooling opens a handful of watches, not thousands.
//
// With a token file (Options::access) every RPC needs `authorization:
// Bearer <token>` of a token with the RPC's scope (collector/api/
// rpc_scopes.h): UNAUTHENTICATED without a valid token, PERMISSION_DENIED
// naming the scope when it lacks it. Without one every RPC is open.
//
//   QueryService service(&registry, &topology, &findings, &series, options,
//                        clock);
//   CollectorServer::Start(server_options, {&ingest, &service});
//
// Thread-safe.
#pragma once

#include <atomic>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "collector/access/access_control.h"
#include "collector/declared/layout_registry.h"
#include "collector/declared/node_facts.h"
#include "collector/findings/findings_staleness.h"
#include "collector/findings/findings_store.h"
#include "collector/runner/feature_exchange.h"
#include "collector/store/series_store.h"
#include "collector/topology/topology_views.h"
#include "common/clock.h"
#include "proto/collector.grpc.pb.h"

namespace fabricdiag::collector {

// ListNodes in a cluster: adds to `response` the nodes of `fabric` (every
// node of the cluster, AnalysisRunner::LatestNodes) whose agents stream to
// another collector than `self`, as remote entries with their liveness. A
// node this collector listed too (`local`: node -> its index in
// `response`, last report here) is replaced when the other collector heard
// from it later (its agent moved away). A node whose collector's features
// stopped arriving (NodeFacts::unobserved) is listed unobserved, its up
// state as of when that collector last vouched for it; so is one whose
// agent its collector handed to another one (NodeFacts::handed_off), this
// collector's own too, with when. Sorted by node when any is added.
using LocalNodes = absl::flat_hash_map<std::string, std::pair<int, absl::Time>>;
void AddOtherCollectorsNodes(const std::vector<NodeFacts>& fabric,
                             absl::string_view self, const NodeUpRule& node_up,
                             absl::Time now, const LocalNodes& local,
                             v1::ListNodesResponse* response);

class QueryService final : public v1::Collector::Service {
 public:
  struct Options {
    // Who may call what (--auth_token_file); the default lets every call
    // in.
    std::shared_ptr<AccessControl> access = std::make_shared<AccessControl>();
    // Whether a node counts as up (ListNodes); null: reported within 3 s.
    NodeUpRule node_up;
    // Called after a layout was applied or deleted, with the job and the
    // time the answer is due; returns the findings the layout raises at
    // once (tp_cross_node). May be empty.
    std::function<std::vector<v1::Finding>(const std::string& job,
                                           absl::Time answer_by)>
        on_layouts_changed;
    // In a collector cluster: this collector's --collector_id, and every
    // node of the fabric (AnalysisRunner::LatestNodes), so that ListNodes
    // lists the nodes streaming to the other collectors too. Empty and
    // null with one collector.
    std::string collector_id;
    std::function<std::shared_ptr<const std::vector<NodeFacts>>()> fabric_nodes;
    // What looks wrong in an applied layout (names no agent reports),
    // returned with the answer; may be empty.
    std::function<std::vector<std::string>(const v1::Layout&)> layout_warnings;
    // Every node's facts now (NodeFactsStore::Snapshot), for GetLayout's
    // resolved answer (the NICs the agents pair); null: no node's facts are
    // known, and a rank the layout names no NIC for answers "unknown".
    std::function<std::shared_ptr<const NodeFactsMap>()> node_facts;
    // The store behind node_facts, whose entry of a node ForgetNode drops;
    // null: ForgetNode drops no facts.
    NodeFactsStore* facts_store = nullptr;
    // Whether the findings are stale (a cluster's collector that cannot
    // see the shared findings): told by ListFindings and WatchFindings.
    FindingsStalenessSource staleness = NeverStale();
    // The operator marks (acks, silences, forgotten nodes) the mark RPCs
    // write and WatchFindings sets on its events; null: those RPCs answer
    // UNIMPLEMENTED (a service built for tests that need none).
    Marks* marks = nullptr;
  };

  // All pointers must outlive the service.
  QueryService(LayoutRegistry* registry, const TopologySource* topology,
               FindingsStore* findings, SeriesStore* series, Options options,
               const Clock& clock);

  // Makes WatchFindings calls return promptly (server shutdown).
  void Shutdown() { shutting_down_ = true; }

  grpc::Status ApplyLayout(grpc::ServerContext* context,
                           const v1::ApplyLayoutRequest* request,
                           v1::ApplyLayoutResponse* response) override;
  grpc::Status GetLayout(grpc::ServerContext* context,
                         const v1::GetLayoutRequest* request,
                         v1::Layout* response) override;
  grpc::Status ListLayouts(grpc::ServerContext* context,
                           const v1::ListLayoutsRequest* request,
                           v1::ListLayoutsResponse* response) override;
  grpc::Status DeleteLayout(grpc::ServerContext* context,
                            const v1::DeleteLayoutRequest* request,
                            v1::DeleteLayoutResponse* response) override;
  grpc::Status ApplyTopology(grpc::ServerContext* context,
                             const v1::ApplyTopologyRequest* request,
                             v1::ApplyTopologyResponse* response) override;
  grpc::Status GetTopology(grpc::ServerContext* context,
                           const v1::GetTopologyRequest* request,
                           v1::Topology* response) override;
  grpc::Status AdoptTopology(grpc::ServerContext* context,
                             const v1::AdoptTopologyRequest* request,
                             v1::AdoptTopologyResponse* response) override;
  grpc::Status ListFindings(grpc::ServerContext* context,
                            const v1::ListFindingsRequest* request,
                            v1::ListFindingsResponse* response) override;
  grpc::Status WatchFindings(
      grpc::ServerContext* context, const v1::WatchFindingsRequest* request,
      grpc::ServerWriter<v1::FindingEvent>* writer) override;
  grpc::Status ListNodes(grpc::ServerContext* context,
                         const v1::ListNodesRequest* request,
                         v1::ListNodesResponse* response) override;
  grpc::Status GetSeries(grpc::ServerContext* context,
                         const v1::GetSeriesRequest* request,
                         v1::GetSeriesResponse* response) override;

  // Operator marks (collector/api/mark_rpcs.cc).
  grpc::Status AckFinding(grpc::ServerContext* context,
                          const v1::AckFindingRequest* request,
                          v1::AckFindingResponse* response) override;
  grpc::Status CreateSilence(grpc::ServerContext* context,
                             const v1::CreateSilenceRequest* request,
                             v1::Silence* response) override;
  grpc::Status ListSilences(grpc::ServerContext* context,
                            const v1::ListSilencesRequest* request,
                            v1::ListSilencesResponse* response) override;
  grpc::Status ExpireSilence(grpc::ServerContext* context,
                             const v1::ExpireSilenceRequest* request,
                             v1::Silence* response) override;
  grpc::Status ForgetNode(grpc::ServerContext* context,
                          const v1::ForgetNodeRequest* request,
                          v1::ForgetNodeResponse* response) override;

 private:
  // Whether the caller's token has `method`'s scope (RpcScope), or
  // `scope` itself; on success `who` (when not null) is the token's name,
  // "" on an open collector. A method the table lacks is refused.
  grpc::Status Authorize(const grpc::ServerContext& context,
                         absl::string_view method, std::string* who = nullptr);
  grpc::Status AuthorizeScope(const grpc::ServerContext& context, Scope scope,
                              std::string* who = nullptr);

  // Whether this collector keeps marks at all.
  grpc::Status CheckMarks() const;

  LayoutRegistry* const registry_;
  const TopologySource* const topology_;
  FindingsStore* const findings_;
  SeriesStore* const series_;
  const Options options_;
  const Clock& clock_;
  std::atomic<bool> shutting_down_{false};
};

}  // namespace fabricdiag::collector
