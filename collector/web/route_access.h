// Which HTTP route needs which scope of --auth_token_file
// (docs/http-api.md#access), and the guard that checks it before the
// route's handler runs:
//   the page's files, /metrics, /healthz     public: Prometheus and health
//                                            checkers scrape without a token,
//                                            and the page asks for one
//   GET and HEAD under /api/                 read
//   PUT, DELETE and POST under /api/v1/jobs/ declare
//   any other method under /api/             admin: a write route added
//                                            without a row here is closed,
//                                            not open
// A missing or wrong token is a 401 with `WWW-Authenticate: Bearer`, a
// token without the scope a 403 naming the scope; both JSON
// {"error": "...", "scope": "read"}. Without a token file every route is
// open.
//
//   routes = GuardRoutes(std::move(routes), access);
//   HttpServer::Start(options, std::move(routes));
//
// Thread-safe: the guarded handlers may run concurrently.
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "collector/access/access_control.h"
#include "common/http_server.h"

namespace fabricdiag::collector {

// The scope `route` needs; nullopt when it is public.
std::optional<Scope> RouteScope(const HttpRoute& route);

// `routes`, each that needs a scope checking it first against `access`.
std::vector<HttpRoute> GuardRoutes(
    std::vector<HttpRoute> routes,
    const std::shared_ptr<AccessControl>& access);

}  // namespace fabricdiag::collector
