// The HTTP server's own counters as metric samples, one list for the agent's
// and the collector's /metrics alike (each renders them its own way):
//
//   for (const HttpServerMetric& m : HttpServerMetrics(server->stats())) {
//     family(m.name, m.help, m.counter ? kCounter : kGauge).Add(m.value);
//   }
//
// They show what slow, idle or too many clients cost: refused connections,
// timed-out requests, 503s for a full worker queue, and on an HTTPS port
// failed TLS handshakes.
#pragma once

#include <vector>

#include "common/http_server.h"

namespace fabricdiag {

struct HttpServerMetric {
  const char* name;
  const char* help;
  bool counter;  // else a gauge
  double value;
};

std::vector<HttpServerMetric> HttpServerMetrics(const HttpServer::Stats& s);

}  // namespace fabricdiag
