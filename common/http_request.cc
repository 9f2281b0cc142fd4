#include "common/http_request.h"

#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace fabricdiag {
namespace {

absl::Status Bad(absl::string_view why) {
  return absl::InvalidArgumentError(why);
}

// RFC 9110 token characters (method names, header names).
bool IsToken(absl::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    const bool ok =
        absl::ascii_isalnum(static_cast<unsigned char>(c)) ||
        absl::string_view("!#$%&'*+-.^_`|~").find(c) != absl::string_view::npos;
    if (!ok) return false;
  }
  return true;
}

// Visible ASCII: a request target never holds spaces or controls.
bool IsVisible(absl::string_view s) {
  for (char c : s) {
    if (c <= ' ' || c == 0x7f) return false;
  }
  return true;
}

// Whether an Accept-Encoding value admits gzip: "gzip", "gzip;q=0.5",
// "*"; not "gzip;q=0" (RFC 9110 12.5.3).
bool AdmitsGzip(absl::string_view value) {
  for (absl::string_view item : absl::StrSplit(value, ',')) {
    std::vector<absl::string_view> parts = absl::StrSplit(item, ';');
    const absl::string_view coding = absl::StripAsciiWhitespace(parts[0]);
    if (!absl::EqualsIgnoreCase(coding, "gzip") && coding != "*") continue;
    double q = 1;
    for (size_t i = 1; i < parts.size(); ++i) {
      absl::string_view param = absl::StripAsciiWhitespace(parts[i]);
      if (absl::ConsumePrefix(&param, "q=") ||
          absl::ConsumePrefix(&param, "Q=")) {
        if (!absl::SimpleAtod(param, &q)) q = 0;
      }
    }
    if (q > 0) return true;
  }
  return false;
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

absl::StatusOr<std::string> PercentDecode(absl::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '+') {
      out.push_back(' ');
    } else if (s[i] != '%') {
      out.push_back(s[i]);
    } else {
      const int hi = i + 2 < s.size() ? HexDigit(s[i + 1]) : -1;
      const int lo = hi >= 0 ? HexDigit(s[i + 2]) : -1;
      if (lo < 0) return Bad("query: malformed percent escape");
      if (hi == 0 && lo == 0) return Bad("query: NUL in a parameter");
      out.push_back(static_cast<char>(hi * 16 + lo));
      i += 2;
    }
  }
  return out;
}

}  // namespace

absl::StatusOr<std::vector<QueryParam>> ParseQuery(absl::string_view query) {
  constexpr size_t kMaxParams = 32;
  std::vector<QueryParam> params;
  for (absl::string_view piece : absl::StrSplit(query, '&')) {
    if (piece.empty()) continue;
    if (params.size() == kMaxParams) {
      return Bad(absl::StrCat("query: more than ", kMaxParams, " parameters"));
    }
    const size_t eq = piece.find('=');
    absl::StatusOr<std::string> key = PercentDecode(piece.substr(0, eq));
    if (!key.ok()) return key.status();
    absl::StatusOr<std::string> value =
        PercentDecode(eq == absl::string_view::npos ? absl::string_view()
                                                    : piece.substr(eq + 1));
    if (!value.ok()) return value.status();
    params.push_back({*std::move(key), *std::move(value)});
  }
  return params;
}

absl::StatusOr<HttpRequest> ParseRequestHead(absl::string_view head) {
  if (absl::EndsWith(head, "\r\n")) head.remove_suffix(2);
  std::vector<absl::string_view> lines = absl::StrSplit(head, "\r\n");
  // request-line = method SP request-target SP HTTP-version
  std::vector<absl::string_view> parts = absl::StrSplit(lines[0], ' ');
  if (parts.size() != 3) return Bad("malformed request line");
  HttpRequest r;
  if (!IsToken(parts[0])) return Bad("malformed method");
  r.method = std::string(parts[0]);
  const absl::string_view target = parts[1];
  if (target.empty() || target[0] != '/' || !IsVisible(target)) {
    return Bad("the request target must be a path");
  }
  const size_t question = target.find('?');
  r.path = std::string(target.substr(0, question));
  if (question != absl::string_view::npos) {
    r.query = std::string(target.substr(question + 1));
  }
  if (parts[2] == "HTTP/1.1") {
    r.minor_version = 1;
  } else if (parts[2] == "HTTP/1.0") {
    r.minor_version = 0;
  } else {
    return Bad("unsupported HTTP version");
  }
  r.keep_alive = r.minor_version == 1;
  for (size_t i = 1; i < lines.size(); ++i) {
    const absl::string_view line = lines[i];
    const size_t colon = line.find(':');
    // Obsolete line folding (a line starting with white space) is refused,
    // as RFC 9112 5.2 allows.
    if (colon == absl::string_view::npos || !IsToken(line.substr(0, colon))) {
      return Bad("malformed header line");
    }
    const absl::string_view name = line.substr(0, colon);
    const absl::string_view value =
        absl::StripAsciiWhitespace(line.substr(colon + 1));
    if (absl::EqualsIgnoreCase(name, "Connection")) {
      for (absl::string_view option : absl::StrSplit(value, ',')) {
        option = absl::StripAsciiWhitespace(option);
        if (absl::EqualsIgnoreCase(option, "close")) r.keep_alive = false;
        if (absl::EqualsIgnoreCase(option, "keep-alive")) r.keep_alive = true;
      }
    } else if (absl::EqualsIgnoreCase(name, "Accept-Encoding")) {
      r.accepts_gzip = r.accepts_gzip || AdmitsGzip(value);
    } else if (absl::EqualsIgnoreCase(name, "If-None-Match")) {
      if (!r.if_none_match.empty()) r.if_none_match += ", ";
      r.if_none_match += std::string(value);
    } else if (absl::EqualsIgnoreCase(name, "If-Match")) {
      if (!r.if_match.empty()) r.if_match += ", ";
      r.if_match += std::string(value);
    } else if (absl::EqualsIgnoreCase(name, "Content-Length")) {
      uint64_t length = 0;
      if (!absl::SimpleAtoi(value, &length)) {
        return Bad("malformed Content-Length");
      }
      r.has_body = r.has_body || length > 0;
      r.content_length = length;
    } else if (absl::EqualsIgnoreCase(name, "Transfer-Encoding")) {
      r.has_body = true;
      r.chunked = true;
    } else if (absl::EqualsIgnoreCase(name, "Expect")) {
      r.expect_continue = absl::EqualsIgnoreCase(value, "100-continue");
    } else if (absl::EqualsIgnoreCase(name, "Authorization")) {
      r.authorization = std::string(value);
    }
  }
  return r;
}

namespace {

// `W/"x"` -> `"x"`; anything else as it is.
absl::string_view StrongForm(absl::string_view tag) {
  tag = absl::StripAsciiWhitespace(tag);
  if (absl::StartsWith(tag, "W/")) tag.remove_prefix(2);
  return tag;
}

}  // namespace

bool EtagMatches(absl::string_view if_none_match, absl::string_view etag) {
  const absl::string_view want = StrongForm(etag);
  if (want.size() < 2 || want.front() != '"' || want.back() != '"') {
    return false;
  }
  if (absl::StripAsciiWhitespace(if_none_match) == "*") return true;
  // Split at commas: a tag holding one (RFC 9110 allows it) can never
  // match, which only costs that client a full response.
  for (absl::string_view tag : absl::StrSplit(if_none_match, ',')) {
    if (StrongForm(tag) == want) return true;
  }
  return false;
}

}  // namespace fabricdiag
