// The HTTPS side of the HTTP server (common/http_server.h): an OpenSSL
// server context loaded once from a PEM certificate (chain) and its private
// key, with TLS 1.2 as the oldest version served.
//
//   absl::StatusOr<std::unique_ptr<HttpTlsContext>> tls =
//       HttpTlsContext::Load("/etc/fabricdiag/http.crt",
//                            "/etc/fabricdiag/http.key");
//   SSL* ssl = SSL_new((*tls)->get());   // one per accepted connection
//
// Thread-safe once loaded (OpenSSL contexts may be shared by connections).
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"

// OpenSSL's SSL_CTX, kept out of the includers' headers.
struct ssl_ctx_st;

namespace fabricdiag {

class HttpTlsContext {
 public:
  // InvalidArgument naming the file at fault: unreadable, not PEM, or a key
  // that does not belong to the certificate.
  static absl::StatusOr<std::unique_ptr<HttpTlsContext>> Load(
      const std::string& cert_file, const std::string& key_file);
  ~HttpTlsContext();
  HttpTlsContext(const HttpTlsContext&) = delete;
  HttpTlsContext& operator=(const HttpTlsContext&) = delete;

  ssl_ctx_st* get() const { return ctx_; }

 private:
  explicit HttpTlsContext(ssl_ctx_st* ctx) : ctx_(ctx) {}
  ssl_ctx_st* ctx_;
};

}  // namespace fabricdiag
