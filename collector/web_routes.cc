#include "collector/web_routes.h"

#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "analysis/traffic_model.h"
#include "collector/web_api.h"
#include "collector/web_assets.h"
#include "common/http_request.h"
#include "common/names.h"

namespace fabricdiag::collector {
namespace {

using Json = nlohmann::ordered_json;

constexpr char kJsonType[] = "application/json";
// At most this many resolved findings per /api/v1/findings request.
constexpr uint32_t kMaxResolved = 1000;
constexpr uint32_t kDefaultResolved = 100;

HttpResponse JsonResponse(int status, const Json& body) {
  HttpResponse r;
  r.status = status;
  r.content_type = kJsonType;
  // Names come from agents and layouts: never let a broken UTF-8 sequence
  // turn into an exception on a worker thread.
  r.body = body.dump(-1, ' ', false, Json::error_handler_t::replace);
  r.body.push_back('\n');
  r.headers.push_back({"Cache-Control", "no-store"});
  return r;
}

HttpResponse Error(const absl::Status& status) {
  int code = 500;
  if (absl::IsInvalidArgument(status)) code = 400;
  if (absl::IsNotFound(status)) code = 404;
  return JsonResponse(code, {{"error", std::string(status.message())}});
}

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

HttpResponse Findings(const WebSources& s, const HttpRequest& request) {
  FindingsFilter filter;
  uint32_t resolved_limit = kDefaultResolved;
  absl::StatusOr<std::vector<QueryParam>> params = ParseQuery(request.query);
  if (!params.ok()) return Error(params.status());
  for (const auto& [key, value] : *params) {
    if (key == "job") {
      filter.job = value;
    } else if (key == "kind") {
      filter.kind = value;
    } else if (key == "resolved") {
      if (!absl::SimpleAtoi(value, &resolved_limit) ||
          resolved_limit > kMaxResolved) {
        return Error(absl::InvalidArgumentError(absl::StrCat(
            "resolved: '", value, "' is not between 0 and ", kMaxResolved)));
      }
    } else {
      return Error(absl::InvalidArgumentError(
          absl::StrCat("unknown parameter '", key, "' (job, kind, resolved)")));
    }
  }
  filter.state = v1::FINDING_STATE_ACTIVE;
  filter.limit = UINT32_MAX;
  const std::vector<v1::Finding> active = s.findings->List(filter);
  std::vector<v1::Finding> resolved;
  if (resolved_limit > 0) {
    filter.state = v1::FINDING_STATE_RESOLVED;
    filter.limit = resolved_limit;
    resolved = s.findings->List(filter);
  }
  return JsonResponse(200, FindingsJson(active, resolved, s.clock->Now()));
}

HttpResponse Fabric(const WebSources& s, const HttpRequest& request) {
  if (!request.query.empty()) {
    return Error(absl::InvalidArgumentError("/api/v1/fabric takes no query"));
  }
  std::shared_ptr<const analysis::FabricView> view = s.view();
  std::shared_ptr<const RegistrySnapshot> snapshot = s.registry->Snapshot();
  return JsonResponse(200, FabricJson(view.get(), snapshot->topology.get(),
                                      s.findings->Active(), s.clock->Now()));
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
      s.registry->Get(job);
  if (!entry.ok()) return Error(entry.status());
  std::shared_ptr<const analysis::TrafficModel> traffic = cache->For(*entry);
  std::shared_ptr<const analysis::FabricView> view = s.view();
  absl::StatusOr<Json> j = JobJson(**entry, traffic.get(), *query, view.get(),
                                   s.findings->Active(), s.clock->Now());
  if (!j.ok()) return Error(j.status());
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
  routes.push_back({"/api/v1/fabric", [sources](const HttpRequest& r) {
                      return Fabric(sources, r);
                    }});
  routes.push_back(
      {"/api/v1/jobs", [sources](const HttpRequest& r) {
         if (!r.query.empty()) {
           return Error(
               absl::InvalidArgumentError("/api/v1/jobs takes no query"));
         }
         return JsonResponse(200, JobsJson(*sources.registry->Snapshot()));
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
