#include "common/http_tls.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace fabricdiag {
namespace {

// OpenSSL's reason for the last failure ("no start line"), and clears its
// error queue so that a later connection does not report it again.
// `mismatch` (optional) says whether it was a key of another certificate.
std::string OpenSslError(bool* mismatch = nullptr) {
  std::string why;
  unsigned long code = 0;
  while ((code = ERR_get_error()) != 0) {
    if (!why.empty()) continue;
    char buf[256];
    ERR_error_string_n(code, buf, sizeof(buf));
    why = buf;
    if (mismatch != nullptr) {
      *mismatch = ERR_GET_REASON(code) == X509_R_KEY_VALUES_MISMATCH;
    }
  }
  return why.empty() ? "unknown OpenSSL error" : why;
}

absl::Status KeyMismatch(const std::string& cert_file,
                         const std::string& key_file, const std::string& why) {
  return absl::InvalidArgumentError(
      absl::StrCat("key ", key_file, " does not belong to the certificate ",
                   cert_file, ": ", why));
}

absl::Status CheckReadable(const char* what, const std::string& path) {
  if (path.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("no ", what, " file"));
  }
  if (::access(path.c_str(), R_OK) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " ", path, ": cannot read: ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<HttpTlsContext>> HttpTlsContext::Load(
    const std::string& cert_file, const std::string& key_file) {
  absl::Status readable = CheckReadable("certificate", cert_file);
  if (readable.ok()) readable = CheckReadable("key", key_file);
  if (!readable.ok()) return readable;
  SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
  if (ctx == nullptr) {
    return absl::InternalError(
        absl::StrCat("cannot create a TLS context: ", OpenSslError()));
  }
  std::unique_ptr<HttpTlsContext> tls(new HttpTlsContext(ctx));
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  // libevent writes a response in pieces as the socket takes them and may
  // retry a write from a buffer that moved meanwhile.
  SSL_CTX_set_mode(
      ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  if (SSL_CTX_use_certificate_chain_file(ctx, cert_file.c_str()) != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("certificate ", cert_file,
                     ": not a PEM certificate: ", OpenSslError()));
  }
  if (SSL_CTX_use_PrivateKey_file(ctx, key_file.c_str(), SSL_FILETYPE_PEM) !=
      1) {
    bool mismatch = false;
    const std::string why = OpenSslError(&mismatch);
    if (mismatch) return KeyMismatch(cert_file, key_file, why);
    return absl::InvalidArgumentError(
        absl::StrCat("key ", key_file, ": not a PEM private key: ", why));
  }
  if (SSL_CTX_check_private_key(ctx) != 1) {
    return KeyMismatch(cert_file, key_file, OpenSslError());
  }
  return tls;
}

HttpTlsContext::~HttpTlsContext() { SSL_CTX_free(ctx_); }

}  // namespace fabricdiag
