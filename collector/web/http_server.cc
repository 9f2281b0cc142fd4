#include "collector/web/http_server.h"

#include <atomic>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/http_server_metrics.h"
#include "prometheus/client_metric.h"
#include "prometheus/metric_family.h"
#include "prometheus/text_serializer.h"

namespace fabricdiag::collector {

absl::StatusOr<std::unique_ptr<HttpServer>> HttpServer::Start(
    HttpServerOptions options,
    std::vector<std::shared_ptr<prometheus::Collectable>> collectables,
    std::function<HealthReport()> health, std::vector<TextSource> text,
    std::vector<HttpRoute> more_routes) {
  // The server reports on itself in /metrics; it exists only once started.
  auto self =
      std::make_shared<std::atomic<const fabricdiag::HttpServer*>>(nullptr);
  std::vector<HttpRoute> routes;
  routes.push_back(
      {"/metrics", [collectables = std::move(collectables),
                    text = std::move(text), self](const HttpRequest&) {
         std::vector<prometheus::MetricFamily> families;
         for (const auto& c : collectables) {
           std::vector<prometheus::MetricFamily> more = c->Collect();
           families.insert(families.end(),
                           std::make_move_iterator(more.begin()),
                           std::make_move_iterator(more.end()));
         }
         if (const fabricdiag::HttpServer* server = self->load()) {
           for (const HttpServerMetric& m :
                HttpServerMetrics(server->stats())) {
             prometheus::MetricFamily f;
             f.name = m.name;
             f.help = m.help;
             f.type = m.counter ? prometheus::MetricType::Counter
                                : prometheus::MetricType::Gauge;
             prometheus::ClientMetric sample;
             if (m.counter) {
               sample.counter.value = m.value;
             } else {
               sample.gauge.value = m.value;
             }
             f.metric.push_back(std::move(sample));
             families.push_back(std::move(f));
           }
         }
         HttpResponse r;
         r.content_type = "text/plain; version=0.0.4; charset=utf-8";
         r.body = prometheus::TextSerializer().Serialize(families);
         for (const TextSource& source : text) source(&r.body);
         return r;
       }});
  routes.push_back({"/healthz",
                    [health = std::move(health)](const HttpRequest&) {
                      HealthReport report = health ? health() : HealthReport{};
                      HttpResponse r;
                      r.status = report.ok ? 200 : 503;
                      r.body = absl::StrCat(report.ok ? "ok\n" : "unhealthy\n",
                                            report.text);
                      r.compressible = false;
                      return r;
                    },
                    /*inline_handler=*/true});
  routes.insert(routes.end(), std::make_move_iterator(more_routes.begin()),
                std::make_move_iterator(more_routes.end()));
  absl::StatusOr<std::unique_ptr<fabricdiag::HttpServer>> server =
      fabricdiag::HttpServer::Start(std::move(options), std::move(routes));
  if (!server.ok()) return server.status();
  self->store(server->get());
  return std::unique_ptr<HttpServer>(new HttpServer(*std::move(server)));
}

}  // namespace fabricdiag::collector
