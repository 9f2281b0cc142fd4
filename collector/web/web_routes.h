// The collector's live page and the JSON behind it, as HTTP routes on the
// collector's --http_listen (next to /metrics and /healthz):
//   /                 the page (collector/web/index.html, app.js, app.css,
//                     compiled into the binary: no CDN, nothing fetched)
//   /api/v1/...       the JSON of collector/web/web_api.h and
//                     collector/web/topology_json.h (docs/http-api.md)
// Read-only; every response says `Cache-Control: no-store` and the page
// runs under a Content-Security-Policy that allows only its own script.
// /api/v1/fabric's body (its switches from the effective topology: declared,
// else discovered over LLDP) is built once per analysis pass (view, topology,
// the findings it outlines), and so is its gzip but for the fresh
// "generated"; it carries a weak ETag: If-None-Match with it gets 304 and
// no body.
//
//   WebSources sources{&findings, &registry,
//                      [&runner] { return runner.LatestView(); }, &clock,
//                      &topology_keeper};
//   std::vector<HttpRoute> routes = WebRoutes(sources);
//
// The handlers are thread-safe (they read snapshots); they run on the HTTP
// server's worker threads.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "analysis/fabric_view.h"
#include "collector/declared/layout_registry.h"
#include "collector/findings/findings_staleness.h"
#include "collector/findings/findings_store.h"
#include "collector/topology/topology_views.h"
#include "collector/web/web_api.h"
#include "common/clock.h"
#include "common/http_server.h"

namespace fabricdiag::collector {

struct WebSources {
  const FindingsStore* findings = nullptr;
  // The layouts as analysed (in the collector, with the NICs the agents
  // pair filled in: collector/declared/filled_layouts.h).
  const LayoutSnapshots* layouts = nullptr;
  // The latest analysis pass's view; null before the first.
  std::function<std::shared_ptr<const analysis::FabricView>()> view;
  // Whose ports `view` holds (the same for the routes' life).
  FabricScope scope = FabricScope::kFabric;
  const Clock* clock = nullptr;
  // The declared, discovered and effective topologies (/api/v1/topology;
  // the effective one draws /api/v1/fabric's switches).
  const TopologySource* topology = nullptr;
  // Whether the findings may be out of date (/api/v1/findings says it, the
  // page shows a banner).
  FindingsStalenessSource staleness = NeverStale();
  // With `scope` kCollector: a declared job's view of every member's
  // ports, where this collector has one (it owns the job's analysis
  // shard), else null; /api/v1/jobs/JOB then says "scope": "fabric".
  std::function<std::shared_ptr<const analysis::FabricView>(
      absl::string_view job)>
      job_view = nullptr;
  // With `scope` kCollector: the collector that owns a declared job's
  // analysis shard ("" unknown); /api/v1/jobs/JOB names it.
  std::function<std::string(absl::string_view job)> job_owner = nullptr;
};

// The pointers must outlive the routes.
std::vector<HttpRoute> WebRoutes(const WebSources& sources);

}  // namespace fabricdiag::collector
