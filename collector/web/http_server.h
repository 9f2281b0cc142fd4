// The collector's HTTP endpoint: /metrics (Prometheus text), /healthz and
// the routes its owner adds (the live page), on
// the event-driven server of common/http_server.h (slow clients cannot
// starve it; /healthz answers on the event loop even while /metrics is being
// rendered).
//
//   HttpServerOptions options;
//   options.listen = "0.0.0.0:9812";
//   ASSIGN_OR_RETURN(auto http, HttpServer::Start(options,
//       {findings_metrics, collector_metrics}, [&] { return Health(); }));
//   LogInfo(absl::StrCat("HTTP on port ", http->port()));
//
// Thread-safe; the collectables are called from the server's worker
// threads, the health function from its event loop (it must be quick).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/http_server.h"
#include "prometheus/collectable.h"

namespace fabricdiag::collector {

struct HealthReport {
  bool ok = true;
  std::string text;  // one line per check, for humans
};

class HttpServer {
 public:
  // `options.listen` is ADDR:PORT (port 0 = any free port); with its TLS
  // files set it serves HTTPS. Unavailable when the address cannot be bound
  // (in use by another process, for instance), InvalidArgument for bad TLS
  // files.
  // `text` sources append ready-made exposition text after the
  // collectables' families (series rendered once, not per scrape).
  // `more_routes` are further routes served beside them (the live page and its
  // JSON, collector/web/web_routes.h).
  using TextSource = std::function<void(std::string*)>;
  static absl::StatusOr<std::unique_ptr<HttpServer>> Start(
      HttpServerOptions options,
      std::vector<std::shared_ptr<prometheus::Collectable>> collectables,
      std::function<HealthReport()> health, std::vector<TextSource> text = {},
      std::vector<HttpRoute> more_routes = {});

  int port() const { return server_->port(); }
  fabricdiag::HttpServer::Stats stats() const { return server_->stats(); }

 private:
  explicit HttpServer(std::unique_ptr<fabricdiag::HttpServer> server)
      : server_(std::move(server)) {}
  std::unique_ptr<fabricdiag::HttpServer> server_;
};

}  // namespace fabricdiag::collector
