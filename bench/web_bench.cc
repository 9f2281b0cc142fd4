// The collector page's JSON at fabric scale, on one core: what one poll of
// the page costs the collector.
//
// The fabric (bench/web_fabric.h): 8,512 GPU nodes x 8 NICs (68,096 node x
// rail cells), 32 nodes per leaf (266 leaves, 4 uplinks each), 2 jobs
// covering every node (a MoE and a dense job of 4,256 nodes, 34,048 ranks
// each), the findings the rate analyzers raise on a window with 5 faults.
// Each benchmark calls the route's handler as the HTTP server's worker does
// (collector/web/web_routes.h: build the JSON and serialize it) and reports
//   bytes:      the response body;
//   gzip_bytes: the body gzip-compressed at the server's level 1, and
//   gzip_ms:    the CPU the server spends compressing it (once per
//               response, for clients that accept gzip; 0 when the
//               handler returned it compressed, its cost then being in
//               the timing: /api/v1/fabric compresses its body's bulk once
//               per analysis pass);
//   BM_FabricJson/new_view:  a request after the analysis pass published a
//                            new view (the JSON is built);
//   BM_FabricJson/same_view: a request while the view is unchanged (the
//                            body built for the view is served again);
//   BM_FabricNotModified:    a request with the ETag of the last response
//                            (If-None-Match: 304, no body);
//   BM_Findings/0:   /api/v1/findings (the open findings: one per fault,
//                    no resolved ones);
//   BM_Findings/300: the same with 300 more congested NICs;
//   BM_JobGroups: /api/v1/jobs/job-000?dim=ep (a page of 64 groups) and
//                 ?dim=tp.
// Building the fabric is not timed. Numbers: docs/http-api.md#at-scale.
//
//   taskset -c 1 build/bench/fabricdiag_web_bench
#include <benchmark/benchmark.h>
#include <time.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "bench/web_fabric.h"
#include "collector/web/web_routes.h"
#include "common/gzip.h"
#include "common/http_request.h"
#include "common/http_server.h"
#include "tests/testing/temp_dir.h"

namespace fabricdiag::bench {
namespace {

// Congested NICs added for BM_Findings/<kBadDay>.
constexpr int kBadDay = 300;

struct Fixture {
  testing::TempDir dir;
  std::unique_ptr<WebFabric> fabric;
  std::vector<HttpRoute> routes;
};

// The fabric with `extra_faults` more congested NICs (0 or kBadDay).
Fixture& Fabric(int extra_faults = 0) {
  static auto* fixtures = new std::map<int, Fixture*>;
  Fixture*& fixture = (*fixtures)[extra_faults];
  if (fixture == nullptr) {
    auto* f = new Fixture;
    WebFabricSpec spec;
    spec.extra_faults = extra_faults;
    absl::StatusOr<std::unique_ptr<WebFabric>> built =
        WebFabric::Build(spec, f->dir.path() + "/state");
    if (!built.ok()) {
      std::fprintf(stderr, "web fabric: %s\n",
                   built.status().ToString().c_str());
      std::abort();
    }
    f->fabric = *std::move(built);
    f->routes = collector::WebRoutes(f->fabric->Sources());
    fixture = f;
  }
  return *fixture;
}

HttpResponse Get(const Fixture& f, const std::string& path,
                 const std::string& query = "",
                 const std::string& if_none_match = "") {
  HttpRequest request;
  request.method = "GET";
  request.path = path;
  request.query = query;
  request.accepts_gzip = true;
  request.if_none_match = if_none_match;
  const HttpRoute* best = nullptr;
  for (const HttpRoute& r : f.routes) {
    const bool match =
        r.path == path || (r.path.size() > 1 && r.path.back() == '/' &&
                           path.rfind(r.path, 0) == 0);
    if (match && (best == nullptr || r.path.size() > best->path.size())) {
      best = &r;
    }
  }
  if (best == nullptr) std::abort();
  return best->handler(request);
}

double CpuMs() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return 1e3 * static_cast<double>(ts.tv_sec) +
         1e-6 * static_cast<double>(ts.tv_nsec);
}

void Report(benchmark::State& state, const HttpResponse& r) {
  state.counters["bytes"] = static_cast<double>(r.body.size());
  if (!r.gzip_body.empty()) {
    // The handler compressed it (its CPU is in the timing): the server
    // sends it as it is.
    state.counters["gzip_bytes"] = static_cast<double>(r.gzip_body.size());
    state.counters["gzip_ms"] = 0;
    state.counters["status"] = r.status;
    return;
  }
  const double start = CpuMs();
  absl::StatusOr<std::string> z = GzipCompress(r.body, 1);
  const double gzip_ms = CpuMs() - start;
  state.counters["gzip_bytes"] = z.ok() ? static_cast<double>(z->size()) : 0;
  state.counters["gzip_ms"] = gzip_ms;
  state.counters["status"] = r.status;
}

void BM_FabricJson(benchmark::State& state) {
  Fixture& f = Fabric();
  const bool new_view = state.range(0) != 0;
  HttpResponse r = Get(Fabric(), "/api/v1/fabric");
  uint32_t seed = 10;
  for (auto _ : state) {
    if (new_view) {
      state.PauseTiming();
      f.fabric->NextView(++seed);
      state.ResumeTiming();
    }
    r = Get(Fabric(), "/api/v1/fabric");
    benchmark::DoNotOptimize(r.body.data());
  }
  Report(state, r);
  state.SetLabel(new_view ? "new_view" : "same_view");
}
BENCHMARK(BM_FabricJson)
    ->Arg(1)
    ->Arg(0)
    ->Unit(benchmark::kMillisecond)
    ->MeasureProcessCPUTime();

void BM_FabricNotModified(benchmark::State& state) {
  const std::string etag = [] {
    for (const auto& [name, value] : Get(Fabric(), "/api/v1/fabric").headers) {
      if (name == "ETag") return value;
    }
    return std::string();
  }();
  HttpResponse r;
  for (auto _ : state) {
    r = Get(Fabric(), "/api/v1/fabric", "", etag);
    benchmark::DoNotOptimize(r.body.data());
  }
  state.counters["status"] = r.status;
  state.counters["bytes"] = static_cast<double>(r.body.size());
}
BENCHMARK(BM_FabricNotModified)
    ->Unit(benchmark::kMillisecond)
    ->MeasureProcessCPUTime();

void BM_Findings(benchmark::State& state) {
  const Fixture& f = Fabric(static_cast<int>(state.range(0)));
  HttpResponse r;
  for (auto _ : state) {
    r = Get(f, "/api/v1/findings");
    benchmark::DoNotOptimize(r.body.data());
  }
  Report(state, r);
  state.counters["active"] =
      static_cast<double>(f.fabric->findings().Active().size());
}
BENCHMARK(BM_Findings)
    ->Arg(0)
    ->Arg(kBadDay)
    ->Unit(benchmark::kMillisecond)
    ->MeasureProcessCPUTime();

void BM_JobGroups(benchmark::State& state) {
  const std::string query = state.range(0) == 0 ? "dim=ep" : "dim=tp";
  HttpResponse r;
  for (auto _ : state) {
    r = Get(Fabric(), "/api/v1/jobs/job-000", query);
    benchmark::DoNotOptimize(r.body.data());
  }
  Report(state, r);
  state.SetLabel(query);
}
BENCHMARK(BM_JobGroups)
    ->Arg(0)
    ->Arg(1)
    ->Unit(benchmark::kMillisecond)
    ->MeasureProcessCPUTime();

}  // namespace
}  // namespace fabricdiag::bench

BENCHMARK_MAIN();
