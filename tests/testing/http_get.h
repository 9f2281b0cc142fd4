// Minimal loopback HTTP client and port helper for benchmarks and black-box
// tests of HTTP exporters (the agent's /metrics, node_exporter's /metrics).
//
// HTTP/1.0 GET over a plain socket: no keep-alive, no compression, the
// server closes the connection after the body, so "read until EOF" is the
// whole response. Deliberately tiny, so that the client's own cost is
// negligible next to the server's.
//
//   absl::StatusOr<int> port = PickFreeTcpPort();
//   ... start a server on 127.0.0.1:*port ...
//   absl::StatusOr<std::string> body =
//       WaitForHttpBody(*port, "/metrics", absl::Seconds(10),
//                       [](absl::string_view b) { return !b.empty(); },
//                       [&] { return child->Running(); });
//
// Thread safety: the functions are thread-safe (no shared state).
#pragma once

#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace fabricdiag::testing {

// A TCP port on 127.0.0.1 that was free a moment ago: binds port 0, reads
// the port the kernel chose, closes the socket. Another process may take it
// before the caller does (a small race the callers accept).
absl::StatusOr<int> PickFreeTcpPort();

// GET http://127.0.0.1:`port``path` with HTTP/1.0. Returns the body of a 200
// response; kUnavailable when the connection is refused (server not up
// yet), kDeadlineExceeded on timeout, kInternal for a malformed response or
// any other status code (then the message is the status line, a newline and
// the start of the body: a 503 says why in its body).
absl::StatusOr<std::string> HttpGet(int port, absl::string_view path,
                                    absl::Duration timeout = absl::Seconds(10));

// A response of any status.
struct HttpResponse {
  int code = 0;             // 200, 503, ...
  std::string status_line;  // "HTTP/1.1 503 Service Unavailable"
  std::string body;
};
// The same GET, any status's body whole (a 503 /healthz says why);
// errors for a connection or a response that is not HTTP, as HttpGet.
absl::StatusOr<HttpResponse> HttpGetAnyStatus(
    int port, absl::string_view path,
    absl::Duration timeout = absl::Seconds(10));

// Polls HttpGet until it returns a body for which `ready(body)` is true, or
// until `timeout`. Fails early (kAborted) as soon as `alive()` returns false,
// so a server that died on startup is reported at once, not after the
// deadline.
absl::StatusOr<std::string> WaitForHttpBody(
    int port, absl::string_view path, absl::Duration timeout,
    const std::function<bool(absl::string_view body)>& ready,
    const std::function<bool()>& alive);

}  // namespace fabricdiag::testing
