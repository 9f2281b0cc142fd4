// The head of an HTTP/1.x request, parsed strictly: what fabricdiag's HTTP
// endpoints (/metrics, /healthz, the page and its JSON) need of it, and
// nothing a hostile client could use to make the server do more.
//
//   absl::StatusOr<HttpRequest> r = ParseRequestHead(
//       "GET /metrics HTTP/1.1\r\nAccept-Encoding: gzip\r\n");
//   // r->path == "/metrics", r->accepts_gzip, r->keep_alive
//
// `head` is everything before the blank line that ends the headers. Errors
// are InvalidArgument with a message fit for a 400 response. Pure;
// thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace fabricdiag {

struct HttpRequest {
  std::string method;     // "GET", as sent (methods are case-sensitive)
  std::string path;       // "/api/v1/jobs/moe", percent-decoding not applied
  std::string query;      // after '?', without it; "" when none
  int minor_version = 1;  // HTTP/1.0 or HTTP/1.1
  // Whether the connection stays open after the response: HTTP/1.1 unless
  // "Connection: close", HTTP/1.0 only with "Connection: keep-alive".
  bool keep_alive = true;
  // Accept-Encoding lists gzip (or *) with a quality above 0.
  bool accepts_gzip = false;
  // The If-None-Match header as sent ("" when none): the entity tags of
  // the representations the client holds (see EtagMatches).
  std::string if_none_match;
  // The If-Match header as sent ("" when none): a write's condition on the
  // entity tag of what it replaces.
  std::string if_match;
  // A request body was announced (Content-Length > 0 or Transfer-Encoding):
  // only routes that take one (HttpRoute::max_body_bytes) accept it.
  bool has_body = false;
  // Content-Length as sent (0 when none).
  uint64_t content_length = 0;
  // Transfer-Encoding was sent: a body of unknown length, never read.
  bool chunked = false;
  // "Expect: 100-continue": the client waits for an interim 100 before it
  // sends the body (curl does for large ones).
  bool expect_continue = false;
  // The Authorization header as sent ("" when none).
  std::string authorization;
  // The body, filled by the server before a route that takes one runs.
  std::string body;
};

absl::StatusOr<HttpRequest> ParseRequestHead(absl::string_view head);

// Whether an If-None-Match value lists `etag` (`W/"abc"` or `"abc"`; weak
// comparison, RFC 9110 13.1.2: the W/ prefix is ignored on both sides) or
// is "*". False for "" and for a malformed list.
bool EtagMatches(absl::string_view if_none_match, absl::string_view etag);

// One `key=value` of a query string, percent-decoded ('+' is a space).
struct QueryParam {
  std::string key;
  std::string value;
};

// "dim=dp&group=dp%3A3" -> {{"dim", "dp"}, {"group", "dp:3"}}, in order;
// a key without '=' has an empty value, empty pieces ("a=1&&b=2") are
// skipped. InvalidArgument for a malformed percent escape, a decoded NUL or
// more than 32 parameters.
absl::StatusOr<std::vector<QueryParam>> ParseQuery(absl::string_view query);

}  // namespace fabricdiag
