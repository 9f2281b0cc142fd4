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
#include "common/status_macros.h"

namespace fabricdiag::cli {
namespace {

absl::Status FlagError(absl::string_view flag, absl::string_view message) {
  return absl::InvalidArgumentError(absl::StrCat("--", flag, ": ", message));
}

// Reads a small credential file; errors name the flag and the OS reason.
absl::StatusOr<std::string> ReadCredentialFile(absl::string_view flag,
                                               const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) {
    return FlagError(
        flag, absl::StrCat("cannot read ", path, ": ", std::strerror(errno)));
  }
  std::string data;
  char buf[4096];
  size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) {
    data.append(buf, n);
    if (data.size() > kMaxCredentialFileBytes) break;
  }
  const bool failed = std::ferror(f) != 0;
  const int read_errno = errno;
  std::fclose(f);
  if (failed) {
    return FlagError(flag, absl::StrCat("cannot read ", path, ": ",
                                        std::strerror(read_errno)));
  }
  if (data.size() > kMaxCredentialFileBytes) {
    return FlagError(flag, absl::StrCat(path, " is larger than ",
                                        kMaxCredentialFileBytes, " bytes"));
  }
  return data;
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
  RETURN_IF_ERROR(CheckAddress(flags.address));
  if (flags.timeout <= absl::ZeroDuration()) {
    return FlagError("timeout", "must be positive (e.g. 10s)");
  }
  ClientConfig config;
  config.address = flags.address;
  config.timeout = flags.timeout;
  config.tls_server_name = flags.tls_server_name;
  if (!flags.token_file.empty()) {
    ASSIGN_OR_RETURN(std::string text,
                     ReadCredentialFile("token_file", flags.token_file));
    // A trailing newline is what every editor and `echo` leave behind.
    absl::string_view token = absl::StripAsciiWhitespace(text);
    if (token.empty()) {
      return FlagError("token_file",
                       absl::StrCat(flags.token_file, " holds no token"));
    }
    for (char c : token) {
      // RFC 6750 b64token characters are a subset of visible ASCII; anything
      // else cannot travel in an HTTP/2 header value.
      if (c < 0x21 || c > 0x7e) {
        return FlagError("token_file",
                         absl::StrCat(flags.token_file,
                                      " holds a space or non-ASCII character "
                                      "inside the token"));
      }
    }
    config.token = std::string(token);
  }
  if (!flags.tls_ca.empty()) {
    ASSIGN_OR_RETURN(config.tls_ca_pem,
                     ReadCredentialFile("tls_ca", flags.tls_ca));
    if (!absl::StrContains(config.tls_ca_pem, "-----BEGIN CERTIFICATE-----")) {
      return FlagError("tls_ca",
                       absl::StrCat(flags.tls_ca, " holds no PEM certificate"));
    }
  } else if (!flags.tls_server_name.empty()) {
    return FlagError("tls_server_name",
                     "needs --tls_ca (TLS is off without it)");
  }
  return config;
}

}  // namespace fabricdiag::cli
