// Operators' marks over HTTP (docs/http-api.md#acknowledge-and-silence):
// routes beside the read-only ones of collector/web/web_routes.h, for the
// page and for tooling without a gRPC client. They do what `fabricdiag
// ack`, `silence`, `maintenance`, `silences` and `silence expire` do
// (collector/findings/silences.h), with the same checks and messages:
//   GET    /api/v1/silences            {"api_version", "silences": [...]},
//                                      newest first, expired ones marked
//   POST   /api/v1/silences            {"matchers": {"kind": "pfc_storm",
//                                      "node": "leaf-3"}, "for": "4h",
//                                      "comment": "RMA 4711"}; 201 with the
//                                      silence (a maintenance is a silence
//                                      on {"node": ...})
//   DELETE /api/v1/silences/{id}       ends it now; 200 with the silence,
//                                      404 for an unknown id
//   POST   /api/v1/findings/{id}/ack   optional {"comment": "..."}; 200
//                                      with the finding, marked; 404 when
//                                      no active finding has the id
// The writes need the `admin` scope when the collector has a token file
// (collector/web/route_access.h), and the token's name is the "who" of the
// mark; without a token file, the body's optional "who" (else "unknown").
// Answers are JSON; an error is {"error": "..."} naming the field.
//
//   MarkSources sources{&marks, &findings, access};
//   for (HttpRoute& r : MarkRoutes(sources)) routes.push_back(r);
//
// The handlers are thread-safe; they run on the HTTP server's workers.
#pragma once

#include <memory>
#include <vector>

#include "collector/access/access_control.h"
#include "collector/findings/findings_store.h"
#include "collector/findings/silences.h"
#include "common/http_server.h"

namespace fabricdiag::collector {

// The largest body of a mark write: matchers and a comment.
inline constexpr size_t kMaxMarkBodyBytes = 64 << 10;

struct MarkSources {
  Marks* marks = nullptr;
  const FindingsStore* findings = nullptr;
  // Who a token is (its name), for the "who" of a mark; never null.
  std::shared_ptr<AccessControl> access;
};

// The pointers must outlive the routes.
std::vector<HttpRoute> MarkRoutes(const MarkSources& sources);

}  // namespace fabricdiag::collector
