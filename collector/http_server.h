// The collector's HTTP endpoint: /metrics (Prometheus text) and /healthz.
//
// prometheus-cpp's Exposer serves only metrics, and a health check must be
// able to answer 503, so this is a small civetweb server of our own that
// serializes the given Collectables itself.
//
//   ASSIGN_OR_RETURN(auto http, HttpServer::Start("0.0.0.0:9812",
//       {findings_metrics, collector_metrics}, [&] { return Health(); }));
//   LogInfo(absl::StrCat("HTTP on port ", http->port()));
//
// Thread-safe; the collectables and the health function are called from
// civetweb's threads.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "prometheus/collectable.h"

class CivetServer;

namespace fabricdiag::collector {

struct HealthReport {
  bool ok = true;
  std::string text;  // one line per check, for humans
};

class HttpServer {
 public:
  // `listen` is ADDR:PORT (port 0 = any free port). Unavailable when the
  // address cannot be bound.
  static absl::StatusOr<std::unique_ptr<HttpServer>> Start(
      const std::string& listen,
      std::vector<std::shared_ptr<prometheus::Collectable>> collectables,
      std::function<HealthReport()> health);
  ~HttpServer();

  int port() const { return port_; }

 private:
  class MetricsHandler;
  class HealthHandler;
  HttpServer() = default;

  std::unique_ptr<MetricsHandler> metrics_;
  std::unique_ptr<HealthHandler> health_;
  std::unique_ptr<CivetServer> server_;
  int port_ = 0;
};

}  // namespace fabricdiag::collector
