// The HTTP server of the agent and the collector: /metrics, /healthz, the
// page and its JSON. Read-only endpoints (GET and HEAD), built so that slow,
// idle or many clients cannot starve Prometheus or a health checker.
//
// Why not a thread per connection (CivetWeb, which prometheus-cpp's Exposer
// wraps): a client that sends one header line every few seconds holds a
// thread for as long as it likes, and a handful of them blinds /metrics and
// /healthz. Here one event loop (libevent) owns every connection and costs a
// slow client only its socket:
// - the request head must arrive within `header_timeout` of its first byte
//   (or of the connection), and be at most `max_header_bytes`;
// - an idle keep-alive connection is closed after `idle_timeout`;
// - at most `max_connections` in all and `max_connections_per_client` from
//   one address are open; more are closed at once (and counted);
// - handlers that do real work (rendering /metrics) run on `worker_threads`
//   with a bounded queue (full: 503 at once), while "inline" handlers
//   (/healthz) answer on the loop itself, so a busy /metrics never delays
//   /healthz;
// - a response is gzip-compressed (on the worker) when the client accepts
//   it and the route allows it.
// With a certificate and key (`tls_cert_file`, `tls_key_file`) it speaks
// HTTPS only: a plain-HTTP client's connection fails its handshake and is
// closed (and counted: Stats::tls_handshake_failures); the head deadline and
// the limits above apply to the handshake too.
// Routes serve GET and HEAD unless they name other methods; a request with a
// body is refused (413) unless its route takes one (`max_body_bytes`), and
// then its Content-Length must be within that bound (413) and the body must
// arrive within `header_timeout` of the head.
//
//   HttpServerOptions options;
//   options.listen = "0.0.0.0:9812";
//   std::vector<HttpRoute> routes;
//   routes.push_back({"/healthz", Health, /*inline_handler=*/true});
//   routes.push_back({"/metrics", Metrics});
//   ASSIGN_OR_RETURN(std::unique_ptr<HttpServer> server,
//                    HttpServer::Start(options, std::move(routes)));
//   LogInfo(absl::StrCat("HTTP on port ", server->port()));
//
// Thread-safe: handlers are called on the loop thread (inline) or on the
// worker threads, concurrently with each other; Stats() from any thread.
// Destroying the server closes every connection and joins its threads.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/http_request.h"

namespace fabricdiag {

struct HttpResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
  // Extra header lines, e.g. {"Cache-Control", "no-store"}.
  std::vector<std::pair<std::string, std::string>> headers;
  // Compress when the client accepts gzip (and the body is worth it).
  bool compressible = true;
  // The body compressed already (a cached page): sent as it is to clients
  // that accept gzip.
  std::string gzip_body;
};

using HttpHandler = std::function<HttpResponse(const HttpRequest&)>;

struct HttpRoute {
  // Exact path ("/metrics"), or a prefix when it ends with '/'
  // ("/api/v1/jobs/" matches "/api/v1/jobs/moe-42"); "/" alone is the root
  // only, never a prefix of every path. The longest match wins.
  std::string path;
  HttpHandler handler;
  // Runs on the event loop: must be fast and never block (a health check
  // that reads atomics). Everything else runs on a worker.
  bool inline_handler = false;
  // The methods served ("PUT", "DELETE"); empty: GET and HEAD. Several
  // routes may share a path with different methods.
  std::vector<std::string> methods = {};
  // The largest request body taken, in bytes; 0: none (413).
  size_t max_body_bytes = 0;
};

struct HttpServerOptions {
  std::string listen;  // ADDR:PORT; port 0 picks a free one
  size_t max_connections = 512;
  size_t max_connections_per_client = 32;
  absl::Duration header_timeout = absl::Seconds(10);
  absl::Duration idle_timeout = absl::Seconds(120);
  absl::Duration write_timeout = absl::Seconds(60);
  size_t max_header_bytes = 16 << 10;
  int worker_threads = 2;
  size_t max_queued_requests = 64;
  int gzip_level = 1;
  // PEM files; both set: HTTPS (common/http_tls.h), both empty: plain HTTP.
  std::string tls_cert_file;
  std::string tls_key_file;
};

class HttpServer {
 public:
  // Binds and starts serving. InvalidArgument for a malformed address or
  // TLS files that are unreadable, malformed or not a pair, Unavailable when it
  // cannot be bound (in use: another process already serves there; no port
  // reuse).
  static absl::StatusOr<std::unique_ptr<HttpServer>> Start(
      HttpServerOptions options, std::vector<HttpRoute> routes);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  int port() const;

  // Monotonic counters since start, for the owners' /metrics.
  struct Stats {
    uint64_t connections = 0;           // accepted
    uint64_t rejected_connections = 0;  // over a connection limit
    uint64_t requests = 0;
    uint64_t bad_requests = 0;  // 400, 405, 413, 431
    uint64_t timeouts = 0;      // head too slow, idle or write timed out
    uint64_t overloaded = 0;    // 503: the worker queue was full
    size_t open_connections = 0;
    // HTTPS only (`tls` true): connections whose TLS handshake failed (plain
    // HTTP, a malformed client hello, no common version or cipher, a client
    // that rejected the certificate). A client that closes before sending
    // anything is not counted; one that stalls is a timeout.
    bool tls = false;
    uint64_t tls_handshake_failures = 0;
  };
  Stats stats() const;

  class Impl;

 private:
  explicit HttpServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// The reason phrase of a status code ("Not Found").
const char* HttpStatusText(int status);

}  // namespace fabricdiag
