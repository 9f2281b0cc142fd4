#include "collector/web/route_access.h"

#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace fabricdiag::collector {
namespace {

constexpr absl::string_view kApi = "/api/";
constexpr absl::string_view kJobs = "/api/v1/jobs/";

HttpResponse Refused(const absl::Status& status, Scope scope) {
  HttpResponse r;
  const bool unauthenticated = absl::IsUnauthenticated(status);
  r.status = unauthenticated ? 401 : 403;
  r.content_type = "application/json";
  r.body = nlohmann::json{{"error", unauthenticated
                                        ? absl::StrCat(status.message(),
                                                       " (Authorization: "
                                                       "Bearer TOKEN)")
                                        : std::string(status.message())},
                          {"scope", std::string(ScopeName(scope))}}
               .dump();
  r.body.push_back('\n');
  r.headers.push_back({"Cache-Control", "no-store"});
  if (unauthenticated) r.headers.push_back({"WWW-Authenticate", "Bearer"});
  r.compressible = false;
  return r;
}

}  // namespace

std::optional<Scope> RouteScope(const HttpRoute& route) {
  if (!absl::StartsWith(route.path, kApi)) return std::nullopt;
  bool writes = false;
  for (const std::string& m : route.methods) {
    if (m != "GET" && m != "HEAD") writes = true;
  }
  if (!writes) return Scope::kRead;
  if (absl::StartsWith(route.path, kJobs)) return Scope::kDeclare;
  return Scope::kAdmin;
}

std::vector<HttpRoute> GuardRoutes(
    std::vector<HttpRoute> routes,
    const std::shared_ptr<AccessControl>& access) {
  if (access->open()) return routes;
  for (HttpRoute& route : routes) {
    const std::optional<Scope> scope = RouteScope(route);
    if (!scope.has_value()) continue;
    route.handler = [access, scope = *scope,
                     handler = std::move(route.handler)](const HttpRequest& r) {
      absl::StatusOr<std::string> who =
          access->Authorize(r.authorization, scope);
      if (!who.ok()) return Refused(who.status(), scope);
      return handler(r);
    };
  }
  return routes;
}

}  // namespace fabricdiag::collector
