#include "common/http_server_metrics.h"

namespace fabricdiag {

std::vector<HttpServerMetric> HttpServerMetrics(const HttpServer::Stats& s) {
  auto d = [](uint64_t v) { return static_cast<double>(v); };
  std::vector<HttpServerMetric> metrics = {
      {"fabricdiag_http_connections_total",
       "HTTP connections accepted (and kept within the limits).", true,
       d(s.connections)},
      {"fabricdiag_http_connections_rejected_total",
       "HTTP connections closed at once: over the per-client or total "
       "connection limit.",
       true, d(s.rejected_connections)},
      {"fabricdiag_http_open_connections", "HTTP connections open now.", false,
       d(s.open_connections)},
      {"fabricdiag_http_requests_total", "HTTP requests answered.", true,
       d(s.requests)},
      {"fabricdiag_http_bad_requests_total",
       "HTTP requests refused as malformed, too large or not GET/HEAD.", true,
       d(s.bad_requests)},
      {"fabricdiag_http_timeouts_total",
       "HTTP connections closed because the request head came too slowly, "
       "the connection idled or the client did not read the response.",
       true, d(s.timeouts)},
      {"fabricdiag_http_overloaded_total",
       "HTTP requests answered 503 because every worker was busy and the "
       "queue was full.",
       true, d(s.overloaded)},
  };
  // Only where HTTPS is served: on a plain-HTTP port the family would be a
  // constant 0 that says nothing.
  if (s.tls) {
    metrics.push_back(
        {"fabricdiag_http_tls_handshake_failures_total",
         "HTTPS connections closed because their TLS handshake failed: plain "
         "HTTP, a malformed client hello, no common version or cipher, or a "
         "client that rejected the certificate.",
         true, d(s.tls_handshake_failures)});
  }
  return metrics;
}

}  // namespace fabricdiag
