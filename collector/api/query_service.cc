#include "collector/api/query_service.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "collector/api/rpc_scopes.h"
#include "collector/declared/layout_leases.h"
#include "collector/declared/layout_nics.h"
#include "collector/declared/write_deadline.h"
#include "collector/findings/findings_request.h"
#include "collector/topology/topology_adopt.h"
#include "common/grpc_status.h"

namespace fabricdiag::collector {
namespace {

// How long a snapshot of the topology views waits for the keeper to take
// the declared topology in effect: a poll (200 ms) and one drawing (up to
// ~1 s at 25k hosts), with room for a loaded machine.
constexpr absl::Duration kDeclaredCatchUp = absl::Seconds(5);

int64_t UnixNanos(absl::Time t) {
  return t == absl::InfinitePast() ? 0 : absl::ToUnixNanos(t);
}

bool IsRdmaSubsystem(v1::Subsystem s) {
  return s == v1::SUBSYSTEM_RDMA_PORT_COUNTERS ||
         s == v1::SUBSYSTEM_RDMA_PORT_COUNTERS_EXT ||
         s == v1::SUBSYSTEM_RDMA_PORT_HW_COUNTERS ||
         s == v1::SUBSYSTEM_RDMA_DEVICE_HW_COUNTERS ||
         s == v1::SUBSYSTEM_RDMA_PORT_ATTRIBUTE || s == v1::SUBSYSTEM_VERBS;
}

// When a write made for this request stops retrying (the caller's
// deadline, a little before, so that the answer arrives in time).
absl::Time AnswerByOf(const grpc::ServerContext& context) {
  return AnswerBy(FromChronoDeadline(context.deadline()), absl::Now());
}

// Series queries are for people and scripts; bound what one call returns.
constexpr size_t kMaxSeriesPerCall = 5000;
constexpr uint32_t kMaxSeriesSeconds = 3600;

v1::FindingsStaleness StalenessProto(const FindingsStaleness& staleness) {
  v1::FindingsStaleness out;
  out.set_stale(staleness.stale);
  out.set_age_seconds(absl::ToDoubleSeconds(staleness.age));
  return out;
}

}  // namespace

void AddOtherCollectorsNodes(const std::vector<NodeFacts>& fabric,
                             absl::string_view self, const NodeUpRule& node_up,
                             absl::Time now, const LocalNodes& local,
                             v1::ListNodesResponse* response) {
  bool added = false;
  for (const NodeFacts& facts : fabric) {
    if (facts.collector.empty()) continue;
    const analysis::NodeLiveness& l = facts.liveness;
    // Its collector handed its agent to another one, where it has not
    // reported yet.
    const bool moving =
        facts.unobserved && facts.handed_off != absl::InfinitePast();
    v1::NodeStatus* out = nullptr;
    auto it = local.find(l.node);
    if (facts.collector == self) {
      // This collector's own: the series store said it all, but for an
      // agent handed off from here.
      if (!moving || it == local.end() || it->second.second > l.last_report) {
        continue;
      }
      out = response->mutable_nodes(it->second.first);
    } else if (it != local.end()) {
      // The agent moved here, or away from here: the later word counts.
      if (it->second.second >= l.last_report) continue;
      out = response->mutable_nodes(it->second.first);
      out->Clear();
    } else {
      out = response->add_nodes();
      added = true;
    }
    NodeInfo info;
    info.node = l.node;
    info.last_report = l.last_report;
    info.interval_ms = static_cast<uint32_t>(
        std::max<int64_t>(0, l.interval / absl::Milliseconds(1)));
    // An unobserved node (its collector's features stopped arriving, or
    // its agent is on its way to another collector) is told as of when
    // that collector last vouched for it, as agent_down judges it: its
    // silence since is the cluster's, not the agent's.
    const absl::Time as_of =
        facts.unobserved ? std::min(now, l.observed_until) : now;
    out->set_up(node_up ? node_up(info, as_of)
                        : l.ever_reported &&
                              as_of - l.last_report < absl::Seconds(3));
    if (facts.unobserved) {
      out->set_unobserved(true);
      if (l.observed_until != absl::InfiniteFuture()) {
        out->set_unobserved_since_unix_nanos(UnixNanos(l.observed_until));
      }
    }
    if (moving) out->set_handed_off_unix_nanos(UnixNanos(facts.handed_off));
    if (facts.collector == self) continue;  // the rest as the store said
    out->set_node(l.node);
    if (l.ever_reported) {
      out->set_last_report_unix_nanos(UnixNanos(l.last_report));
    }
    out->set_interval_ms(info.interval_ms);
    out->set_collector(facts.collector);
    out->set_remote(true);
  }
  if (added) {
    std::sort(response->mutable_nodes()->begin(),
              response->mutable_nodes()->end(),
              [](const v1::NodeStatus& a, const v1::NodeStatus& b) {
                return a.node() < b.node();
              });
  }
}

QueryService::QueryService(LayoutRegistry* registry,
                           const TopologySource* topology,
                           FindingsStore* findings, SeriesStore* series,
                           Options options, const Clock& clock)
    : registry_(registry),
      topology_(topology),
      findings_(findings),
      series_(series),
      options_(std::move(options)),
      clock_(clock) {}

grpc::Status QueryService::Authorize(const grpc::ServerContext& context,
                                     absl::string_view method,
                                     std::string* who) {
  const std::optional<Scope> scope = RpcScope(method);
  if (!scope.has_value()) {
    // Fails closed: an RPC added without a row in the table.
    return grpc::Status(grpc::StatusCode::PERMISSION_DENIED,
                        absl::StrCat(method,
                                     " has no scope on this collector "
                                     "(collector/api/rpc_scopes.cc)"));
  }
  return AuthorizeScope(context, *scope, who);
}

grpc::Status QueryService::AuthorizeScope(const grpc::ServerContext& context,
                                          Scope scope, std::string* who) {
  absl::string_view header;
  const auto& metadata = context.client_metadata();
  if (auto it = metadata.find("authorization"); it != metadata.end()) {
    header = absl::string_view(it->second.data(), it->second.size());
  }
  absl::StatusOr<std::string> name = options_.access->Authorize(header, scope);
  if (!name.ok()) {
    if (absl::IsUnauthenticated(name.status())) {
      return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                          absl::StrCat(name.status().message(),
                                       "; this needs a token with the ",
                                       ScopeName(scope), " scope"));
    }
    return ToGrpcStatus(name.status());
  }
  if (who != nullptr) *who = *std::move(name);
  return grpc::Status::OK;
}

grpc::Status QueryService::ApplyLayout(grpc::ServerContext* context,
                                       const v1::ApplyLayoutRequest* request,
                                       v1::ApplyLayoutResponse* response) {
  if (grpc::Status s = Authorize(*context, "ApplyLayout"); !s.ok()) return s;
  const std::string source =
      request->source().empty() ? "cli" : request->source();
  std::optional<int64_t> lease;
  if (request->lease_seconds() > 0) lease = request->lease_seconds();
  if (absl::Status valid = ValidateDeclaration(source, request->owner(), lease);
      !valid.ok()) {
    return ToGrpcStatus(valid);
  }
  v1::Layout layout = request->layout();
  *layout.mutable_declaration() =
      NewDeclaration(source, request->owner(), lease, clock_.Now());
  const absl::Time answer_by = AnswerByOf(*context);
  absl::StatusOr<ApplyResult> applied =
      request->has_if_revision()
          ? registry_->ApplyIf(layout, request->if_revision(), answer_by)
          : registry_->Apply(layout, answer_by);
  if (!applied.ok()) return ToGrpcStatus(applied.status());
  response->set_replaced(applied->replaced);
  response->set_revision(LayoutRevision(*applied->entry));
  if (options_.layout_warnings) {
    for (std::string& w : options_.layout_warnings(layout)) {
      response->add_warnings(std::move(w));
    }
  }
  // The layout pass writes findings (to the cluster's bucket in a cluster):
  // skipped for a caller that is gone; the next periodic pass runs it.
  if (options_.on_layouts_changed && absl::Now() < answer_by) {
    for (v1::Finding& f :
         options_.on_layouts_changed(request->layout().job(), answer_by)) {
      *response->add_findings() = std::move(f);
    }
  }
  return grpc::Status::OK;
}

grpc::Status QueryService::GetLayout(grpc::ServerContext* context,
                                     const v1::GetLayoutRequest* request,
                                     v1::Layout* response) {
  if (grpc::Status s = Authorize(*context, "GetLayout"); !s.ok()) return s;
  absl::StatusOr<std::shared_ptr<const LayoutEntry>> entry =
      registry_->Get(request->job());
  if (!entry.ok()) return ToGrpcStatus(entry.status());
  if (!request->resolved()) {
    *response = (*entry)->applied_layout;
  } else {
    const std::shared_ptr<const NodeFactsMap> facts =
        options_.node_facts ? options_.node_facts()
                            : std::make_shared<const NodeFactsMap>();
    const std::vector<RankNic> nics = ResolveRankNics((*entry)->model, *facts);
    *response = ResolvedLayout((*entry)->applied_layout, (*entry)->model, nics);
  }
  response->mutable_declaration()->set_revision(LayoutRevision(**entry));
  return grpc::Status::OK;
}

grpc::Status QueryService::ListLayouts(grpc::ServerContext* context,
                                       const v1::ListLayoutsRequest*,
                                       v1::ListLayoutsResponse* response) {
  if (grpc::Status s = Authorize(*context, "ListLayouts"); !s.ok()) return s;
  for (const LayoutSummary& s : registry_->List()) {
    v1::LayoutSummary* out = response->add_layouts();
    out->set_job(s.job);
    out->set_ranks(s.ranks);
    out->set_hosts(s.hosts);
    out->set_parallelism(s.parallelism);
    out->set_applied_unix_nanos(UnixNanos(s.applied));
    out->set_source(s.declaration.source());
    out->set_owner(s.declaration.owner());
    out->mutable_labels()->insert(s.labels.begin(), s.labels.end());
    if (LeaseExpiry(s.declaration).has_value()) {
      out->set_expires_unix_nanos(s.declaration.expires_unix_nanos());
    }
  }
  return grpc::Status::OK;
}

grpc::Status QueryService::DeleteLayout(grpc::ServerContext* context,
                                        const v1::DeleteLayoutRequest* request,
                                        v1::DeleteLayoutResponse*) {
  if (grpc::Status s = Authorize(*context, "DeleteLayout"); !s.ok()) return s;
  const absl::Time answer_by = AnswerByOf(*context);
  absl::Status deleted = registry_->Delete(request->job(), answer_by);
  if (!deleted.ok()) return ToGrpcStatus(deleted);
  if (options_.on_layouts_changed && absl::Now() < answer_by) {
    options_.on_layouts_changed(request->job(), answer_by);
  }
  return grpc::Status::OK;
}

grpc::Status QueryService::ApplyTopology(
    grpc::ServerContext* context, const v1::ApplyTopologyRequest* request,
    v1::ApplyTopologyResponse*) {
  if (grpc::Status s = Authorize(*context, "ApplyTopology"); !s.ok()) return s;
  return ToGrpcStatus(
      registry_->ApplyTopology(request->topology(), AnswerByOf(*context)));
}

grpc::Status QueryService::GetTopology(grpc::ServerContext* context,
                                       const v1::GetTopologyRequest* request,
                                       v1::Topology* response) {
  if (grpc::Status s = Authorize(*context, "GetTopology"); !s.ok()) return s;
  absl::StatusOr<std::shared_ptr<const v1::Topology>> topology;
  switch (request->view()) {
    case v1::TOPOLOGY_VIEW_DISCOVERED:
      topology =
          TopologyOfView(*topology_->Current(), TopologyKind::kDiscovered);
      break;
    case v1::TOPOLOGY_VIEW_EFFECTIVE:
      topology =
          TopologyOfView(*topology_->Current(), TopologyKind::kEffective);
      break;
    case v1::TOPOLOGY_VIEW_DECLARED:
      // The registry's, not the keeper's: a topology just applied reads
      // back at once.
      topology = registry_->GetTopology();
      break;
    default:
      return grpc::Status(
          grpc::StatusCode::INVALID_ARGUMENT,
          absl::StrCat("view: unknown topology view ", request->view()));
  }
  if (!topology.ok()) return ToGrpcStatus(topology.status());
  *response = **topology;
  return grpc::Status::OK;
}

grpc::Status QueryService::AdoptTopology(
    grpc::ServerContext* context, const v1::AdoptTopologyRequest* request,
    v1::AdoptTopologyResponse* response) {
  // A dry run only shows what adopting would write: a read.
  grpc::Status auth = request->dry_run()
                          ? AuthorizeScope(*context, Scope::kRead)
                          : Authorize(*context, "AdoptTopology");
  if (!auth.ok()) return auth;
  if (request->dry_run() && request->snapshot()) {
    // The keeper takes a topology just applied or adopted at its next poll
    // and drawing: wait for it (bounded), so that `topology diff` right
    // after `topology adopt` compares against what was written.
    std::shared_ptr<const TopologyViews> views = topology_->Current();
    const uint64_t declared_now = registry_->Snapshot()->topology_version;
    const absl::Time give_up = absl::Now() + kDeclaredCatchUp;
    while (views->declared_version != declared_now && absl::Now() < give_up &&
           !context->IsCancelled()) {
      absl::SleepFor(absl::Milliseconds(20));
      views = topology_->Current();
    }
    AdoptResult preview = AdoptPreview(*views);
    *response->mutable_topology() = std::move(preview.written);
    response->set_declared_version(preview.declared_version);
    if (preview.declared != nullptr) {
      *response->mutable_declared() = *preview.declared;
    }
    response->set_is_snapshot(true);
    return grpc::Status::OK;
  }
  absl::StatusOr<AdoptResult> adopted = AdoptDiscovered(
      *topology_, registry_, request->expected_declared_version(),
      request->dry_run(), AnswerByOf(*context));
  if (!adopted.ok()) return ToGrpcStatus(adopted.status());
  *response->mutable_topology() = std::move(adopted->written);
  response->set_declared_version(adopted->declared_version);
  return grpc::Status::OK;
}

grpc::Status QueryService::ListFindings(grpc::ServerContext* context,
                                        const v1::ListFindingsRequest* request,
                                        v1::ListFindingsResponse* response) {
  if (grpc::Status s = Authorize(*context, "ListFindings"); !s.ok()) return s;
  absl::StatusOr<v1::ListFindingsResponse> page =
      AnswerListFindings(*request, *findings_, *registry_->Snapshot());
  if (!page.ok()) return ToGrpcStatus(page.status());
  *response = std::move(*page);
  *response->mutable_staleness() = StalenessProto(options_.staleness());
  return grpc::Status::OK;
}

grpc::Status QueryService::WatchFindings(
    grpc::ServerContext* context, const v1::WatchFindingsRequest* request,
    grpc::ServerWriter<v1::FindingEvent>* writer) {
  if (grpc::Status s = Authorize(*context, "WatchFindings"); !s.ok()) {
    return s;
  }
  std::unique_ptr<Watcher> watcher = findings_->Watch(request->job());
  // Tell the client at once that the watch is live, even when no finding is
  // active (the CLI uses it to say "reconnected" after a collector restart).
  writer->SendInitialMetadata();
  // What the client was last told: a STALENESS event when it changes.
  bool told_stale = false;
  while (!context->IsCancelled() && !shutting_down_.load()) {
    const v1::FindingsStaleness staleness =
        StalenessProto(options_.staleness());
    if (request->staleness_events() && staleness.stale() != told_stale) {
      v1::FindingEvent told;
      told.set_kind(v1::FindingEvent::STALENESS);
      *told.mutable_staleness() = staleness;
      if (!writer->Write(told)) break;
      told_stale = staleness.stale();
    }
    std::optional<WatchEvent> event = watcher->Next(absl::Milliseconds(250));
    if (!event.has_value()) continue;
    v1::FindingEvent out;
    *out.mutable_staleness() = staleness;
    switch (event->type) {
      case WatchEvent::Type::kSnapshot:
        out.set_kind(v1::FindingEvent::SNAPSHOT);
        break;
      case WatchEvent::Type::kOpened:
        out.set_kind(v1::FindingEvent::OPENED);
        break;
      case WatchEvent::Type::kUpdated:
        out.set_kind(v1::FindingEvent::UPDATED);
        break;
      case WatchEvent::Type::kResolved:
        out.set_kind(v1::FindingEvent::RESOLVED);
        break;
      case WatchEvent::Type::kOverflow:
        return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                            "the watch fell behind the findings and was "
                            "closed; reconnect to get a fresh snapshot");
      case WatchEvent::Type::kClosed:
        return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                            "the collector closed the watch");
    }
    *out.mutable_finding() = std::move(event->finding);
    if (options_.marks != nullptr) options_.marks->Mark(out.mutable_finding());
    if (!writer->Write(out)) break;  // the client went away
  }
  watcher->Close();
  if (shutting_down_.load()) {
    return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                        "the collector is shutting down");
  }
  return grpc::Status::OK;
}

grpc::Status QueryService::ListNodes(grpc::ServerContext* context,
                                     const v1::ListNodesRequest*,
                                     v1::ListNodesResponse* response) {
  if (grpc::Status s = Authorize(*context, "ListNodes"); !s.ok()) return s;
  const std::vector<NodeStatus> nodes =
      options_.node_up ? series_->ListNodes(options_.node_up)
                       : series_->ListNodes(absl::Seconds(3));
  // node -> its entry in the response, and when this collector last heard
  // from it.
  LocalNodes local;
  for (const NodeStatus& n : nodes) {
    // Forgotten by an operator and silent since: not listed until it
    // reports again.
    if (options_.marks != nullptr) {
      std::optional<absl::Time> forgotten =
          options_.marks->ForgottenAt(n.info.node);
      if (forgotten.has_value() && n.info.last_report <= *forgotten) continue;
    }
    local[n.info.node] = {response->nodes_size(), n.info.last_report};
    v1::NodeStatus* out = response->add_nodes();
    out->set_node(n.info.node);
    out->set_up(n.up);
    out->set_last_report_unix_nanos(UnixNanos(n.info.last_report));
    out->set_interval_ms(n.info.interval_ms);
    out->set_series(n.info.series);
    out->set_reports(n.info.reports);
    out->set_gaps(n.info.missing_reports);
    out->set_peer(n.info.peer);
    out->set_collector(options_.collector_id);
    out->set_duplicate_streams(n.info.duplicate_streams);
    if (n.info.duplicate_streams > 0) {
      out->set_last_duplicate_peer(n.info.last_duplicate_peer);
      out->set_last_duplicate_unix_nanos(UnixNanos(n.info.last_duplicate));
    }
    // Split the inventory into RDMA devices and netdevs by what the series
    // say each device is.
    std::set<std::string> rdma;
    absl::StatusOr<std::vector<SeriesMeta>> series =
        series_->ListSeries(n.info.node);
    if (series.ok()) {
      for (const SeriesMeta& m : *series) {
        if (IsRdmaSubsystem(m.key.subsystem)) rdma.insert(m.key.device);
      }
    }
    for (const std::string& device : n.info.devices) {
      if (rdma.count(device) > 0) {
        out->add_rdma_devices(device);
      } else {
        out->add_netdevs(device);
      }
    }
  }
  if (options_.fabric_nodes) {
    const std::shared_ptr<const std::vector<NodeFacts>> fabric =
        options_.fabric_nodes();
    if (fabric != nullptr) {
      AddOtherCollectorsNodes(*fabric, options_.collector_id, options_.node_up,
                              clock_.Now(), local, response);
    }
  }
  return grpc::Status::OK;
}

grpc::Status QueryService::GetSeries(grpc::ServerContext* context,
                                     const v1::GetSeriesRequest* request,
                                     v1::GetSeriesResponse* response) {
  if (grpc::Status s = Authorize(*context, "GetSeries"); !s.ok()) return s;
  if (request->node().empty()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "node: required");
  }
  absl::StatusOr<std::vector<SeriesMeta>> series =
      series_->ListSeries(request->node());
  if (!series.ok()) return ToGrpcStatus(series.status());
  const uint32_t seconds =
      request->last_seconds() == 0
          ? 60
          : std::min(request->last_seconds(), kMaxSeriesSeconds);
  const absl::Time since = clock_.Now() - absl::Seconds(seconds);
  for (const SeriesMeta& meta : *series) {
    if (!request->device().empty() && meta.key.device != request->device()) {
      continue;
    }
    if (!request->name().empty() && meta.key.name != request->name()) continue;
    if (static_cast<size_t>(response->series_size()) >= kMaxSeriesPerCall) {
      return grpc::Status(
          grpc::StatusCode::RESOURCE_EXHAUSTED,
          absl::StrCat("more than ", kMaxSeriesPerCall,
                       " series match; name a device or a series"));
    }
    absl::StatusOr<std::vector<RatePoint>> points =
        series_->Window(request->node(), meta.key, since);
    if (!points.ok()) continue;
    v1::SeriesRates* out = response->add_series();
    out->set_subsystem(v1::Subsystem_Name(meta.key.subsystem));
    out->set_device(meta.key.device);
    out->set_port(meta.key.port);
    out->set_name(meta.key.name);
    out->set_unit(meta.unit);
    for (const RatePoint& p : *points) {
      if (p.rate != p.rate) continue;  // NaN: no rate for that sample
      v1::SeriesPoint* point = out->add_points();
      point->set_unix_nanos(p.unix_nanos);
      point->set_rate(p.rate);
    }
  }
  return grpc::Status::OK;
}

}  // namespace fabricdiag::collector
