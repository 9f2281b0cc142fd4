#include "collector/web/web_routes.h"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/hash/hash.h"
#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "analysis/traffic_model.h"
#include "collector/findings/findings_query.h"
#include "collector/findings/findings_request.h"
#include "collector/web/json_answers.h"
#include "collector/web/topology_json.h"
#include "collector/web/web_api.h"
#include "collector/web/web_assets.h"
#include "common/gzip.h"
#include "common/http_request.h"
#include "common/names.h"

namespace fabricdiag::collector {
namespace {

using Json = nlohmann::ordered_json;

constexpr char kJsonType[] = "application/json";
// At most this many resolved findings per /api/v1/findings request.
constexpr uint32_t kMaxResolved = 1000;
constexpr uint32_t kDefaultResolved = 100;

HttpResponse Error(const absl::Status& status) { return JsonError(status); }

HttpResponse AssetResponse(const WebAsset& asset) {
  HttpResponse r;
  r.content_type = asset.content_type;
  r.body = std::string(asset.body);
  r.headers.push_back({"Cache-Control", "no-cache"});
  r.headers.push_back({"X-Content-Type-Options", "nosniff"});
  r.headers.push_back(
      {"Content-Security-Policy",
       "default-src 'none'; script-src 'self'; style-src 'self'; "
       "connect-src 'self'; img-src 'self' data:; base-uri 'none'; "
       "form-action 'none'; frame-ancestors 'none'"});
  return r;
}

// The query parameters of /api/v1/findings as the ListFindingsRequest the
// gRPC API answers, so that both check and filter alike.
absl::StatusOr<v1::ListFindingsRequest> FindingsRequestOf(
    absl::string_view query, absl::Time now, uint32_t* resolved_limit) {
  absl::StatusOr<std::vector<QueryParam>> params = ParseQuery(query);
  if (!params.ok()) return params.status();
  v1::ListFindingsRequest request;
  for (const auto& [key, value] : *params) {
    if (key == "job") {
      request.set_job(value);
    } else if (key == "kind") {
      request.set_kind(value);
    } else if (key == "node") {
      request.set_node(value);
    } else if (key == "device") {
      request.set_device(value);
    } else if (key == "severity") {
      absl::StatusOr<v1::Severity> severity = ParseSeverity(key, value);
      if (!severity.ok()) return severity.status();
      request.set_min_severity(*severity);
    } else if (key == "since" || key == "until") {
      absl::StatusOr<absl::Time> t = ParseQueryTime(key, value, now);
      if (!t.ok()) return t.status();
      const int64_t nanos = std::max<int64_t>(1, absl::ToUnixNanos(*t));
      if (key == "since") {
        request.set_since_unix_nanos(nanos);
      } else {
        request.set_until_unix_nanos(nanos);
      }
    } else if (key == "page_token") {
      request.set_page_token(value);
    } else if (key == "resolved") {
      if (!absl::SimpleAtoi(value, resolved_limit) ||
          *resolved_limit > kMaxResolved) {
        return absl::InvalidArgumentError(absl::StrCat(
            "resolved: '", value, "' is not between 0 and ", kMaxResolved));
      }
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown parameter '", key,
                       "' (job, kind, node, device, severity, since, until, "
                       "resolved, page_token)"));
    }
  }
  return request;
}

HttpResponse Findings(const WebSources& s, const HttpRequest& request) {
  const absl::Time now = s.clock->Now();
  uint32_t resolved_limit = kDefaultResolved;
  absl::StatusOr<v1::ListFindingsRequest> query =
      FindingsRequestOf(request.query, now, &resolved_limit);
  if (!query.ok()) return Error(query.status());
  const std::shared_ptr<const RegistrySnapshot> layouts =
      s.layouts != nullptr ? s.layouts->Snapshot()
                           : std::make_shared<const RegistrySnapshot>();
  absl::StatusOr<FindingsFilter> filter =
      FindingsFilterOf(*query, *s.findings, *layouts);
  if (!filter.ok()) return Error(filter.status());
  // A page token pages the resolved list; the active one is always whole.
  const uint64_t below_id = filter->below_id;
  filter->below_id = 0;
  filter->all = false;
  filter->state = v1::FINDING_STATE_ACTIVE;
  filter->limit = UINT32_MAX;
  const std::vector<v1::Finding> active = s.findings->List(*filter);
  FindingsPage resolved;
  if (resolved_limit > 0) {
    filter->below_id = below_id;
    filter->state = v1::FINDING_STATE_RESOLVED;
    filter->limit = resolved_limit;
    resolved = s.findings->ListPage(*filter);
  }
  Json body = FindingsJson(active, resolved.findings, s.staleness(), now);
  body["next_page_token"] =
      resolved.more
          ? Json(FindingsPageToken(FindingIdNumber(resolved.findings.back())))
          : Json(nullptr);
  return JsonResponse(200, body);
}

// /api/v1/fabric's body per input: the JSON of a fabric of 68,000 cells
// costs tens of milliseconds to build and megabytes to send, and its inputs
// change once per analysis pass while pages poll more often. The body is
// built once per (view, topology, findings named on it) and served again
// with a fresh "generated"; its weak ETag names the content, so a client
// that holds it gets 304 Not Modified and no body.
class FabricCache {
 public:
  HttpResponse Respond(const WebSources& s, const HttpRequest& request) {
    std::shared_ptr<const analysis::FabricView> view = s.view();
    const std::shared_ptr<const v1::Topology> topology =
        s.topology->Current()->effective;
    const std::vector<v1::Finding> active = s.findings->Active();
    const absl::Time now = s.clock->Now();
    const uint64_t findings = Fingerprint(active);
    std::lock_guard<std::mutex> lock(mu_);
    if (!Holds(view, topology, findings)) {
      std::string body =
          FabricJsonText(view.get(), s.scope, topology.get(), active, now);
      // Everything after "generated" ({"api_version":1,"generated":...,
      // "window_seconds":...): the part that depends on the inputs alone.
      const size_t tail = body.find(",\"window_seconds\":");
      tail_ = tail == std::string::npos ? body : body.substr(tail);
      etag_ = absl::StrCat(
          "W/\"f", absl::Hex(absl::HashOf(tail_), absl::kZeroPad16), "\"");
      tail_.push_back('\n');
      tail_gzip_.reset();
      view_ = view;
      view_ptr_ = view.get();
      topology_ = topology;
      topology_ptr_ = topology.get();
      findings_ = findings;
    }
    HttpResponse r;
    r.content_type = kJsonType;
    r.headers.push_back({"Cache-Control", "no-store"});
    r.headers.push_back({"ETag", etag_});
    if (EtagMatches(request.if_none_match, etag_)) {
      r.status = 304;
      r.compressible = false;
      return r;
    }
    Json head;
    head["api_version"] = kWebApiVersion;
    head["generated"] = TimeJson(now);
    std::string head_text = head.dump();
    head_text.pop_back();  // the closing brace: the tail continues the object
    r.body = head_text;
    r.body.append(tail_);
    // Compressing the whole body per request (level 1: 16 ms for the 2.6 MB
    // of 68,000 cells) for the sake of "generated" would cost more than
    // building it once: the tail is compressed once, on the first request
    // that accepts gzip, and each response's gzip is its head followed by
    // that (common/gzip.h GzipTail).
    if (request.accepts_gzip) {
      if (!tail_gzip_.has_value()) {
        absl::StatusOr<GzipTail> z = GzipTail::Compress(tail_);
        if (z.ok()) tail_gzip_ = *std::move(z);
      }
      // Without it, the server compresses the body as for any response.
      if (tail_gzip_.has_value()) r.gzip_body = tail_gzip_->WithHead(head_text);
    }
    return r;
  }

 private:
  // The findings as the fabric JSON shows them (outlines), in any order.
  static uint64_t Fingerprint(const std::vector<v1::Finding>& active) {
    uint64_t sum = 0;
    for (const v1::Finding& f : active) {
      sum += absl::HashOf(f.id(), f.kind(), static_cast<int>(f.severity()),
                          f.node(), f.device());
    }
    return sum ^ active.size();
  }

  bool Holds(const std::shared_ptr<const analysis::FabricView>& view,
             const std::shared_ptr<const v1::Topology>& topology,
             uint64_t findings) const {
    // A pointer compares equal only while the object it named is alive:
    // a freed view's address may be reused by the next one.
    return !etag_.empty() && findings == findings_ && view.get() == view_ptr_ &&
           (view == nullptr || !view_.expired()) &&
           topology.get() == topology_ptr_ &&
           (topology == nullptr || !topology_.expired());
  }

  std::mutex mu_;
  std::weak_ptr<const analysis::FabricView> view_;
  const void* view_ptr_ = nullptr;
  std::weak_ptr<const v1::Topology> topology_;
  const void* topology_ptr_ = nullptr;
  uint64_t findings_ = 0;
  std::string tail_;  // with the body's final newline
  std::optional<GzipTail> tail_gzip_;
  std::string etag_;
};

// /api/v1/topology?view=declared|discovered|effective.
HttpResponse Topology(const WebSources& s, const HttpRequest& request) {
  absl::StatusOr<std::vector<QueryParam>> params = ParseQuery(request.query);
  if (!params.ok()) return Error(params.status());
  std::string view;
  for (const auto& [key, value] : *params) {
    if (key != "view") {
      return Error(absl::InvalidArgumentError(
          absl::StrCat("unknown parameter '", key, "' (view)")));
    }
    view = value;
  }
  absl::StatusOr<Json> j = TopologyJson(*s.topology->Current(), view);
  if (!j.ok()) return Error(j.status());
  return JsonResponse(200, *j);
}

HttpResponse Fabric(const WebSources& s, FabricCache* cache,
                    const HttpRequest& request) {
  if (!request.query.empty()) {
    return Error(absl::InvalidArgumentError("/api/v1/fabric takes no query"));
  }
  return cache->Respond(s, request);
}

// The plan's prediction of the job last asked for: a page polls one job, and
// predicting a 200,000-rank job costs more than the rest of the request.
class TrafficCache {
 public:
  std::shared_ptr<const analysis::TrafficModel> For(
      const std::shared_ptr<const LayoutEntry>& entry) {
    std::lock_guard<std::mutex> lock(mu_);
    if (entry_.lock() != entry) {
      absl::StatusOr<analysis::TrafficModel> model =
          analysis::TrafficModel::Predict(entry->model, analysis::LinkParams{});
      traffic_ = model.ok() ? std::make_shared<const analysis::TrafficModel>(
                                  *std::move(model))
                            : nullptr;
      entry_ = entry;
    }
    return traffic_;
  }

 private:
  std::mutex mu_;
  std::weak_ptr<const LayoutEntry> entry_;
  std::shared_ptr<const analysis::TrafficModel> traffic_;
};

HttpResponse Job(const WebSources& s, TrafficCache* cache,
                 const HttpRequest& request) {
  const absl::string_view job =
      absl::StripPrefix(request.path, "/api/v1/jobs/");
  if (!IsValidJobName(job)) {
    return Error(
        absl::NotFoundError(absl::StrCat("'", job, "' is not a job name")));
  }
  absl::StatusOr<JobQuery> query = ParseJobQuery(request.query);
  if (!query.ok()) return Error(query.status());
  absl::StatusOr<std::shared_ptr<const LayoutEntry>> entry =
      FindLayout(*s.layouts->Snapshot(), job);
  if (!entry.ok()) return Error(entry.status());
  std::shared_ptr<const analysis::TrafficModel> traffic = cache->For(*entry);
  // A collector of a sharded cluster holds its own agents' ports, and the
  // whole job's where it owns the job's shard.
  std::shared_ptr<const analysis::FabricView> view;
  FabricScope scope = s.scope;
  if (scope == FabricScope::kCollector && s.job_view) {
    view = s.job_view(job);
    if (view != nullptr) scope = FabricScope::kFabric;
  }
  if (view == nullptr) view = s.view();
  absl::StatusOr<Json> j = JobJson(**entry, traffic.get(), *query, view.get(),
                                   scope, s.findings->Active(), s.clock->Now());
  if (!j.ok()) return Error(j.status());
  if (s.scope == FabricScope::kCollector && s.job_owner) {
    const std::string owner = s.job_owner(job);
    if (!owner.empty()) (*j)["shard_owner"] = owner;
  }
  return JsonResponse(200, *j);
}

}  // namespace

std::vector<HttpRoute> WebRoutes(const WebSources& sources) {
  std::vector<HttpRoute> routes;
  for (const WebAsset& asset : WebAssets()) {
    routes.push_back({asset.path, [&asset](const HttpRequest&) {
                        return AssetResponse(asset);
                      }});
  }
  routes.push_back({"/api/v1/findings", [sources](const HttpRequest& r) {
                      return Findings(sources, r);
                    }});
  routes.push_back({"/api/v1/topology", [sources](const HttpRequest& r) {
                      return Topology(sources, r);
                    }});
  auto fabric = std::make_shared<FabricCache>();
  routes.push_back({"/api/v1/fabric", [sources, fabric](const HttpRequest& r) {
                      return Fabric(sources, fabric.get(), r);
                    }});
  routes.push_back(
      {"/api/v1/jobs", [sources](const HttpRequest& r) {
         if (!r.query.empty()) {
           return Error(
               absl::InvalidArgumentError("/api/v1/jobs takes no query"));
         }
         return JsonResponse(200, JobsJson(*sources.layouts->Snapshot()));
       }});
  auto cache = std::make_shared<TrafficCache>();
  routes.push_back({"/api/v1/jobs/", [sources, cache](const HttpRequest& r) {
                      return Job(sources, cache.get(), r);
                    }});
  routes.push_back({"/api/", [](const HttpRequest& r) {
                      return Error(absl::NotFoundError(
                          absl::StrCat("no such endpoint: ", r.path)));
                    }});
  return routes;
}

}  // namespace fabricdiag::collector
