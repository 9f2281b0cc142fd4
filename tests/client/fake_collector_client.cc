#include "tests/client/fake_collector_client.h"

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/notification.h"

namespace fabricdiag::client::testing {

absl::StatusOr<v1::ApplyLayoutResponse> FakeCollectorClient::ApplyLayout(
    const v1::ApplyLayoutRequest& request) {
  const v1::Layout& layout = request.layout();
  last_apply = request;
  ++calls;
  ++apply_calls;
  if (!fail.ok()) return fail;
  v1::ApplyLayoutResponse response;
  response.set_replaced(layouts.count(layout.job()) > 0);
  for (const v1::Finding& f : apply_findings) *response.add_findings() = f;
  for (const std::string& w : apply_warnings) response.add_warnings(w);
  response.set_revision(apply_revision);
  v1::Layout stored = layout;
  v1::LayoutDeclaration* d = stored.mutable_declaration();
  d->set_source(request.source());
  d->set_owner(request.owner());
  d->set_lease_seconds(request.lease_seconds());
  if (request.lease_seconds() > 0) {
    d->set_expires_unix_nanos(applied_unix_nanos +
                              int64_t{request.lease_seconds()} * 1000000000);
  }
  layouts[layout.job()] = stored;
  return response;
}

absl::Status FakeCollectorClient::DeleteLayout(const std::string& job) {
  ++calls;
  if (!fail.ok()) return fail;
  if (layouts.erase(job) == 0) {
    return absl::NotFoundError(absl::StrCat(
        "collector fake:9811: not found: no layout for job ", job));
  }
  return absl::OkStatus();
}

absl::Status FakeCollectorClient::ApplyTopology(const v1::Topology& t) {
  ++calls;
  if (!fail.ok()) return fail;
  topology = t;
  return absl::OkStatus();
}

absl::StatusOr<v1::Layout> FakeCollectorClient::GetLayout(
    const std::string& job) {
  ++calls;
  if (!fail.ok()) return fail;
  auto it = layouts.find(job);
  if (it == layouts.end()) {
    return absl::NotFoundError(absl::StrCat(
        "collector fake:9811: not found: no layout for job ", job));
  }
  return it->second;
}

absl::StatusOr<v1::Layout> FakeCollectorClient::GetResolvedLayout(
    const std::string& job) {
  auto it = resolved_layouts.find(job);
  if (it == resolved_layouts.end()) return GetLayout(job);
  ++calls;
  if (!fail.ok()) return fail;
  return it->second;
}

absl::StatusOr<v1::ListLayoutsResponse> FakeCollectorClient::ListLayouts() {
  ++calls;
  if (!fail.ok()) return fail;
  v1::ListLayoutsResponse response;
  for (const auto& [job, layout] : layouts) {
    v1::LayoutSummary* s = response.add_layouts();
    s->set_job(job);
    s->set_hosts(static_cast<uint32_t>(layout.hosts_size()));
    s->set_ranks(static_cast<uint32_t>(layout.hosts_size()) *
                 layout.gpus_per_node());
    s->set_parallelism(absl::StrCat("tp=", layout.parallelism().tp(),
                                    " pp=", layout.parallelism().pp(),
                                    " dp=", layout.parallelism().dp()));
    s->set_applied_unix_nanos(applied_unix_nanos);
    s->set_source(layout.declaration().source());
    s->set_owner(layout.declaration().owner());
    s->set_expires_unix_nanos(layout.declaration().expires_unix_nanos());
    s->mutable_labels()->insert(layout.labels().begin(), layout.labels().end());
  }
  return response;
}

absl::StatusOr<v1::Topology> FakeCollectorClient::GetTopology() {
  return GetTopologyView(v1::TOPOLOGY_VIEW_DECLARED);
}

absl::StatusOr<v1::Topology> FakeCollectorClient::GetTopologyView(
    v1::TopologyView view) {
  ++calls;
  if (!fail.ok()) return fail;
  switch (view) {
    case v1::TOPOLOGY_VIEW_DISCOVERED:
      return discovered;
    case v1::TOPOLOGY_VIEW_EFFECTIVE:
      return effective;
    default:
      if (!has_topology) {
        return absl::NotFoundError("no topology has been applied");
      }
      return topology;
  }
}

absl::StatusOr<v1::AdoptTopologyResponse> FakeCollectorClient::AdoptTopology(
    const v1::AdoptTopologyRequest& request) {
  ++calls;
  adopt_requests.push_back(request);
  if (!fail.ok()) return fail;
  v1::AdoptTopologyResponse response;
  *response.mutable_topology() = discovered;
  if (request.dry_run() && request.snapshot() && snapshots) {
    if (has_topology) *response.mutable_declared() = topology;
    response.set_declared_version(declared_version);
    response.set_is_snapshot(true);
    return response;
  }
  if (request.dry_run()) {
    response.set_declared_version(declared_version);
    if (adopt_race) ++declared_version;
    return response;
  }
  if (request.expected_declared_version() != declared_version) {
    return absl::AbortedError("the declared topology changed");
  }
  topology = discovered;
  has_topology = true;
  response.set_declared_version(++declared_version);
  return response;
}

absl::StatusOr<v1::ListFindingsResponse> FakeCollectorClient::ListFindings(
    const v1::ListFindingsRequest& request) {
  ++calls;
  ++findings_calls;
  last_findings_request = request;
  if (!fail.ok()) return fail;
  if (check_jobs && !request.job().empty() &&
      layouts.count(request.job()) == 0 &&
      std::none_of(findings.begin(), findings.end(), [&](const v1::Finding& f) {
        return f.job() == request.job();
      })) {
    std::set<std::string> known;
    for (const auto& [job, layout] : layouts) known.insert(job);
    for (const v1::Finding& f : findings) {
      if (!f.job().empty()) known.insert(f.job());
    }
    return absl::InvalidArgumentError(absl::StrCat(
        "collector fake:9811: invalid argument: job: unknown job \"",
        request.job(), "\" (no layout and no finding names it); known jobs: ",
        known.empty() ? "none" : absl::StrJoin(known, ", ")));
  }
  v1::ListFindingsResponse response;
  // The fake's token is the index of the page's first finding.
  size_t skip = 0;
  if (!request.page_token().empty() &&
      !absl::SimpleAtoi(request.page_token(), &skip)) {
    return absl::InvalidArgumentError("page_token: garbage");
  }
  for (const v1::Finding& f : findings) {
    if (!request.job().empty() && f.job() != request.job()) continue;
    if (!request.kind().empty() && f.kind() != request.kind()) continue;
    if (!request.all() && f.state() != v1::FINDING_STATE_ACTIVE) continue;
    if (skip > 0) {
      --skip;
      continue;
    }
    if (findings_page_size != 0 &&
        static_cast<size_t>(response.findings_size()) == findings_page_size) {
      size_t next = 0;
      if (!request.page_token().empty()) {
        (void)absl::SimpleAtoi(request.page_token(), &next);
      }
      response.set_next_page_token(absl::StrCat(next + findings_page_size));
      break;
    }
    *response.add_findings() = f;
  }
  *response.mutable_staleness() = staleness;
  return response;
}

absl::StatusOr<v1::ListNodesResponse> FakeCollectorClient::ListNodes() {
  ++calls;
  if (!fail.ok()) return fail;
  return nodes;
}

absl::Status FakeCollectorClient::WatchFindings(
    const std::string& job, const WatchCallbacks& callbacks) {
  ++calls;
  last_watch_job = job;
  const size_t index = static_cast<size_t>(watch_calls++);
  if (cancelled) return absl::CancelledError("watch cancelled");
  if (index >= watch_sessions.size()) {
    if (after_last_session != nullptr) after_last_session->Notify();
    return absl::CancelledError("watch cancelled");
  }
  const WatchSession& session = watch_sessions[index];
  if (session.connected && callbacks.on_connected) callbacks.on_connected();
  for (const v1::FindingEvent& e : session.events) callbacks.on_event(e);
  if (session.interrupt != nullptr) session.interrupt->Notify();
  return session.end;
}

absl::StatusOr<v1::AckFindingResponse> FakeCollectorClient::AckFinding(
    const v1::AckFindingRequest& request) {
  ++calls;
  mark_requests.push_back(request.ShortDebugString());
  if (!fail.ok()) return fail;
  v1::AckFindingResponse response;
  response.mutable_finding()->set_id(request.id());
  response.mutable_finding()->mutable_acked()->set_who(request.who());
  return response;
}

absl::StatusOr<v1::Silence> FakeCollectorClient::CreateSilence(
    const v1::CreateSilenceRequest& request) {
  ++calls;
  mark_requests.push_back(request.ShortDebugString());
  if (!fail.ok()) return fail;
  return silence_answer;
}

absl::StatusOr<v1::ListSilencesResponse> FakeCollectorClient::ListSilences() {
  ++calls;
  if (!fail.ok()) return fail;
  return silences;
}

absl::StatusOr<v1::Silence> FakeCollectorClient::ExpireSilence(
    const v1::ExpireSilenceRequest& request) {
  ++calls;
  mark_requests.push_back(request.ShortDebugString());
  if (!fail.ok()) return fail;
  return silence_answer;
}

absl::StatusOr<v1::ForgetNodeResponse> FakeCollectorClient::ForgetNode(
    const v1::ForgetNodeRequest& request) {
  ++calls;
  mark_requests.push_back(request.ShortDebugString());
  if (!fail.ok()) return fail;
  return forget_answer;
}

absl::StatusOr<v1::GetSeriesResponse> FakeCollectorClient::GetSeries(
    const v1::GetSeriesRequest& request) {
  ++calls;
  series_requests.push_back(request);
  if (!fail.ok()) return fail;
  if (!series_fail.ok()) return series_fail;
  auto node = series.find(request.node());
  if (node == series.end()) {
    return absl::NotFoundError(
        absl::StrCat("node ", request.node(), ": no such node"));
  }
  v1::GetSeriesResponse response;
  for (const v1::SeriesRates& s : node->second) {
    if (!request.device().empty() && s.device() != request.device()) continue;
    if (!request.name().empty() && s.name() != request.name()) continue;
    *response.add_series() = s;
  }
  return response;
}

}  // namespace fabricdiag::client::testing
