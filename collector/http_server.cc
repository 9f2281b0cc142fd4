#include "collector/http_server.h"

#include <CivetServer.h>

#include <exception>
#include <utility>

#include "absl/strings/str_cat.h"
#include "prometheus/text_serializer.h"

namespace fabricdiag::collector {

class HttpServer::MetricsHandler : public CivetHandler {
 public:
  explicit MetricsHandler(
      std::vector<std::shared_ptr<prometheus::Collectable>> collectables)
      : collectables_(std::move(collectables)) {}

  bool handleGet(CivetServer*, mg_connection* conn) override {
    std::vector<prometheus::MetricFamily> families;
    for (const auto& c : collectables_) {
      std::vector<prometheus::MetricFamily> more = c->Collect();
      families.insert(families.end(), std::make_move_iterator(more.begin()),
                      std::make_move_iterator(more.end()));
    }
    const std::string body = prometheus::TextSerializer().Serialize(families);
    mg_printf(conn,
              "HTTP/1.1 200 OK\r\n"
              "Content-Type: text/plain; version=0.0.4; charset=utf-8\r\n"
              "Content-Length: %zu\r\nConnection: close\r\n\r\n",
              body.size());
    mg_write(conn, body.data(), body.size());
    return true;
  }

 private:
  std::vector<std::shared_ptr<prometheus::Collectable>> collectables_;
};

class HttpServer::HealthHandler : public CivetHandler {
 public:
  explicit HealthHandler(std::function<HealthReport()> health)
      : health_(std::move(health)) {}

  bool handleGet(CivetServer*, mg_connection* conn) override {
    HealthReport report = health_ ? health_() : HealthReport{};
    const std::string body =
        absl::StrCat(report.ok ? "ok\n" : "unhealthy\n", report.text);
    mg_printf(conn,
              "HTTP/1.1 %s\r\nContent-Type: text/plain; charset=utf-8\r\n"
              "Content-Length: %zu\r\nConnection: close\r\n\r\n",
              report.ok ? "200 OK" : "503 Service Unavailable", body.size());
    mg_write(conn, body.data(), body.size());
    return true;
  }

 private:
  std::function<HealthReport()> health_;
};

absl::StatusOr<std::unique_ptr<HttpServer>> HttpServer::Start(
    const std::string& listen,
    std::vector<std::shared_ptr<prometheus::Collectable>> collectables,
    std::function<HealthReport()> health) {
  std::unique_ptr<HttpServer> server(new HttpServer());
  server->metrics_ = std::make_unique<MetricsHandler>(std::move(collectables));
  server->health_ = std::make_unique<HealthHandler>(std::move(health));
  std::vector<std::string> options = {"listening_ports", listen, "num_threads",
                                      "4"};
  try {
    server->server_ = std::make_unique<CivetServer>(options);
  } catch (const std::exception& e) {
    return absl::UnavailableError(
        absl::StrCat("cannot serve HTTP on ", listen, ": ", e.what()));
  }
  server->server_->addHandler("/metrics", server->metrics_.get());
  server->server_->addHandler("/healthz", server->health_.get());
  std::vector<int> ports = server->server_->getListeningPorts();
  server->port_ = ports.empty() ? 0 : ports.front();
  return server;
}

HttpServer::~HttpServer() {
  if (server_ != nullptr) server_->close();
}

}  // namespace fabricdiag::collector
