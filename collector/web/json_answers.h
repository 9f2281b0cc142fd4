// What every JSON route of the collector's HTTP API answers with: the body
// and headers of a JSON answer, an error as {"error": "..."} with the HTTP
// status its absl code maps to, and a request body parsed as one JSON
// object with bounded nesting. Shared by the read routes
// (collector/web/web_routes.h) and the write routes (job_write_routes.h,
// mark_routes.h) so that they answer alike.
//
// Pure functions; thread-safe.
#pragma once

#include <nlohmann/json.hpp>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/http_server.h"

namespace fabricdiag::collector {

// `body` as JSON (invalid UTF-8 replaced, never thrown), not cached.
HttpResponse JsonResponse(int status, const nlohmann::ordered_json& body);

// 400 InvalidArgument, 404 NotFound, 409 FailedPrecondition and Aborted,
// 413 ResourceExhausted, 503 Unavailable, 504 DeadlineExceeded, else 500.
int HttpStatusOf(const absl::Status& status);

// {"error": status.message()} with HttpStatusOf(status).
HttpResponse JsonError(const absl::Status& status);

// The deepest nesting a request body may have (as a layout file).
inline constexpr int kMaxJsonBodyDepth = 32;

// `body` as one JSON object; an empty body is {} when `empty_is_object`.
// InvalidArgument "body: ..." naming where it is malformed, too deep, or
// not an object.
absl::StatusOr<nlohmann::ordered_json> ParseJsonBody(absl::string_view body,
                                                     bool empty_is_object);

}  // namespace fabricdiag::collector
