#include "client/client_config.h"

#include <string>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "client/tls.h"
#include "client/token.h"
#include "common/address_list.h"
#include "common/status_macros.h"

namespace fabricdiag::client {
namespace {

absl::Status FlagError(absl::string_view flag, absl::string_view message) {
  return absl::InvalidArgumentError(absl::StrCat("--", flag, ": ", message));
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
  if (!flags.token_file.empty()) {
    // The collector decides how long a token must be.
    ASSIGN_OR_RETURN(config.token,
                     ReadApiToken("token_file", flags.token_file));
  }
  ASSIGN_OR_RETURN(config.tls, LoadTls(flags.tls));
  return config;
}

}  // namespace fabricdiag::client
