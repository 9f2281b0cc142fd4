// Jobs declared over HTTP (docs/http-api.md#declaring-a-job): routes beside
// the read-only ones of collector/web/web_routes.h on the collector's
// --http_listen, for scripts, containers and schedulers that have no gRPC
// client:
//   PUT    /api/v1/jobs/{job}        the layout as JSON (the layout file's
//                                    format) plus optional "lease_seconds",
//                                    "source" and "owner"; 201 new, 200
//                                    replaced
//   POST   /api/v1/jobs/{job}/renew  moves the lease's expiry; 404 when gone
//   DELETE /api/v1/jobs/{job}        200 {"deleted": true|false}
// A layout is checked by the same parser and model as `fabricdiag layout
// apply` (analysis/layout_parse.h, analysis/layout_model.h), so a 400 names
// the field exactly as the CLI does. Writes go through the LayoutRegistry
// (and so through the cluster's compare-and-set when there is one) and need
// the bearer token when the collector has one (401 and WWW-Authenticate
// otherwise). Every answer of these handlers is JSON, an error
// {"error": "..."}; a body over kMaxJobBodyBytes is refused (413) by the
// HTTP server before it is read.
//
//   JobWriteSources sources{&registry, &leases, &clock, on_layouts_changed};
//   for (HttpRoute& r : JobWriteRoutes(sources)) routes.push_back(r);
//
// The handlers are thread-safe; they run on the HTTP server's workers.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "collector/declared/layout_leases.h"
#include "collector/declared/layout_registry.h"
#include "common/clock.h"
#include "common/http_server.h"
#include "proto/layout.pb.h"

namespace fabricdiag::collector {

// The largest request body: a layout file's bound plus room for the
// declaration's fields.
inline constexpr size_t kMaxJobBodyBytes = (16 << 20) + 4096;

struct JobWriteSources {
  LayoutRegistry* registry = nullptr;
  LayoutLeases* leases = nullptr;
  const Clock* clock = nullptr;
  // After a layout was declared or deleted (the layout pass: findings
  // raised or resolved at once); may be empty.
  std::function<void(const std::string& job, absl::Time answer_by)>
      on_layouts_changed;
  // What looks wrong in an accepted layout (names no agent reports); may be
  // empty.
  std::function<std::vector<std::string>(const v1::Layout&)> warnings;
};

// A PUT's body, parsed: the layout (its job filled from the path when the
// body has none) and what the writer says of itself.
struct JobDeclaration {
  v1::Layout layout;
  std::optional<int64_t> lease_seconds;
  std::string source = "http";
  std::string owner;
};

// InvalidArgument naming the field (or "body: ..." with the line and column
// of malformed JSON). Checks the declaration's fields and the layout's
// structure (analysis::ParseLayout); the model is checked at apply.
absl::StatusOr<JobDeclaration> ParseJobDeclaration(absl::string_view path_job,
                                                   absl::string_view body);

// The pointers must outlive the routes.
std::vector<HttpRoute> JobWriteRoutes(const JobWriteSources& sources);

}  // namespace fabricdiag::collector
