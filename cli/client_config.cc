#include "cli/client_config.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "common/address_list.h"
#include "common/files.h"
#include "common/status_macros.h"

namespace fabricdiag::cli {
namespace {

absl::Status FlagError(absl::string_view flag, absl::string_view message) {
  return absl::InvalidArgumentError(absl::StrCat("--", flag, ": ", message));
}

// Reads a small file a flag names; every error is invalid input (exit 2)
// and names the flag. A secret (the token) must not be readable by others.
absl::StatusOr<std::string> ReadFlagFile(absl::string_view flag,
                                         const std::string& path, bool secret) {
  const std::string what = absl::StrCat("--", flag);
  absl::StatusOr<std::string> data =
      secret ? ReadSecretFile(what, path, kMaxCredentialFileBytes)
             : ReadFileCapped(path, kMaxCredentialFileBytes);
  if (data.ok()) return data;
  const std::string message(data.status().message());
  return absl::InvalidArgumentError(absl::StartsWith(message, what)
                                        ? message
                                        : absl::StrCat(what, ": ", message));
}

absl::Status CheckAddress(absl::string_view address) {
  if (address.empty()) return FlagError("collector", "empty address");
  for (char c : address) {
    if (absl::ascii_isspace(static_cast<unsigned char>(c)) ||
        !absl::ascii_isprint(static_cast<unsigned char>(c))) {
      return FlagError("collector",
                       "the address contains a space or control character");
    }
  }
  // gRPC target URIs ("dns:///name:9811", "unix:/run/x.sock", "ipv6:...")
  // are passed through; plain addresses must be HOST:PORT.
  if (absl::StrContains(address, ":/") || absl::StartsWith(address, "unix:") ||
      absl::StartsWith(address, "ipv4:") ||
      absl::StartsWith(address, "ipv6:")) {
    return absl::OkStatus();
  }
  const size_t colon = address.rfind(':');
  uint32_t port = 0;
  if (colon == absl::string_view::npos || colon == 0 ||
      !absl::SimpleAtoi(address.substr(colon + 1), &port) || port == 0 ||
      port > 65535) {
    return FlagError("collector",
                     absl::StrCat("\"", address,
                                  "\" is not HOST:PORT (e.g. 127.0.0.1:9811)"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ClientConfig> LoadClientConfig(const ClientFlags& flags) {
  if (flags.address.empty()) return FlagError("collector", "empty address");
  ASSIGN_OR_RETURN(std::vector<std::string> addresses,
                   SplitAddressList("collector", flags.address));
  for (const std::string& address : addresses) {
    RETURN_IF_ERROR(CheckAddress(address));
  }
  if (flags.timeout <= absl::ZeroDuration()) {
    return FlagError("timeout", "must be positive (e.g. 10s)");
  }
  ClientConfig config;
  config.address = addresses.front();
  config.addresses = std::move(addresses);
  config.timeout = flags.timeout;
  config.tls_server_name = flags.tls_server_name;
  if (!flags.token_file.empty()) {
    // The collector decides how long a token must be.
    absl::StatusOr<std::string> token =
        ReadTokenFile("--token_file", flags.token_file, 1);
    if (!token.ok())
      return absl::InvalidArgumentError(token.status().message());
    config.token = *std::move(token);
  }
  if (!flags.tls_ca.empty()) {
    ASSIGN_OR_RETURN(config.tls_ca_pem,
                     ReadFlagFile("tls_ca", flags.tls_ca, false));
    if (!absl::StrContains(config.tls_ca_pem, "-----BEGIN CERTIFICATE-----")) {
      return FlagError("tls_ca",
                       absl::StrCat(flags.tls_ca, " holds no PEM certificate"));
    }
  } else if (!flags.tls_server_name.empty()) {
    return FlagError("tls_server_name",
                     "needs --tls_ca (TLS is off without it)");
  }
  if (flags.tls_cert.empty() != flags.tls_key.empty()) {
    return FlagError(flags.tls_cert.empty() ? "tls_cert" : "tls_key",
                     "--tls_cert and --tls_key go together");
  }
  if (!flags.tls_cert.empty()) {
    if (flags.tls_ca.empty()) {
      return FlagError("tls_cert", "needs --tls_ca (TLS is off without it)");
    }
    ASSIGN_OR_RETURN(config.tls_cert_pem,
                     ReadPemFile("--tls_cert", flags.tls_cert, false));
    ASSIGN_OR_RETURN(config.tls_key_pem,
                     ReadPemFile("--tls_key", flags.tls_key, true));
  }
  return config;
}

}  // namespace fabricdiag::cli
