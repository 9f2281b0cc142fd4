#include "client/tls.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "common/files.h"
#include "common/status_macros.h"

namespace fabricdiag::client {
namespace {

absl::Status FlagError(absl::string_view flag, absl::string_view message) {
  return absl::InvalidArgumentError(absl::StrCat("--", flag, ": ", message));
}

// A CA bundle or a certificate chain: ReadPemFile's checks plus a
// certificate block (a key or a CSR given by mistake fails here, naming the
// flag, instead of at the first handshake).
absl::StatusOr<std::string> ReadCertificate(absl::string_view flag,
                                            const std::string& path) {
  const std::string what = absl::StrCat("--", flag);
  ASSIGN_OR_RETURN(std::string pem, ReadPemFile(what, path, false));
  if (!absl::StrContains(pem, "-----BEGIN CERTIFICATE-----")) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, "=", path, " holds no PEM certificate"));
  }
  return pem;
}

}  // namespace

absl::Status CheckTlsFlags(const TlsFlags& flags) {
  if (flags.cert.empty() != flags.key.empty()) {
    return FlagError(flags.cert.empty() ? "tls_cert" : "tls_key",
                     "--tls_cert and --tls_key go together (mutual TLS)");
  }
  if (flags.ca.empty()) {
    if (!flags.cert.empty()) {
      return FlagError("tls_cert", "needs --tls_ca (TLS is off without it)");
    }
    if (!flags.server_name.empty()) {
      return FlagError("tls_server_name",
                       "needs --tls_ca (TLS is off without it)");
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<TlsConfig> LoadTls(const TlsFlags& flags) {
  RETURN_IF_ERROR(CheckTlsFlags(flags));
  TlsConfig tls;
  if (flags.ca.empty()) return tls;
  ASSIGN_OR_RETURN(tls.ca_pem, ReadCertificate("tls_ca", flags.ca));
  tls.server_name = flags.server_name;
  if (!flags.cert.empty()) {
    ASSIGN_OR_RETURN(tls.cert_pem, ReadCertificate("tls_cert", flags.cert));
    ASSIGN_OR_RETURN(tls.key_pem, ReadPemFile("--tls_key", flags.key, true));
  }
  return tls;
}

std::shared_ptr<grpc::ChannelCredentials> ChannelCredentials(
    const TlsConfig& tls) {
  if (!tls.enabled()) return grpc::InsecureChannelCredentials();
  grpc::SslCredentialsOptions ssl;
  ssl.pem_root_certs = tls.ca_pem;
  ssl.pem_cert_chain = tls.cert_pem;
  ssl.pem_private_key = tls.key_pem;
  return grpc::SslCredentials(ssl);
}

void SetTlsChannelArguments(const TlsConfig& tls,
                            grpc::ChannelArguments* args) {
  if (tls.enabled() && !tls.server_name.empty()) {
    args->SetSslTargetNameOverride(tls.server_name);
  }
}

}  // namespace fabricdiag::client
