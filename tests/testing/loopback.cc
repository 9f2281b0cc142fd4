#include "tests/testing/loopback.h"

#include <arpa/inet.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace fabricdiag::testing {

sockaddr_in LoopbackAddress(int port) {
  sockaddr_in addr;
  std::memset(&addr, 0, sizeof(addr));
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return addr;
}

absl::Status ErrnoError(absl::string_view what) {
  const int error = errno;
  return absl::Status(absl::ErrnoToStatusCode(error),
                      absl::StrCat(what, ": ", std::strerror(error)));
}

}  // namespace fabricdiag::testing
