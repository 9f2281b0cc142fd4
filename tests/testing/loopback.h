// Small socket helpers the loopback clients and servers of the testing
// library share.
//
//   sockaddr_in addr = LoopbackAddress(port);   // 127.0.0.1:port
//   if (connect(fd, ...) != 0) return ErrnoError("connect");
//
// Thread-safe.
#pragma once

#include <netinet/in.h>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace fabricdiag::testing {

// 127.0.0.1:`port` (0: any free port, for bind).
sockaddr_in LoopbackAddress(int port);

// errno as a status of its canonical code: "`what`: <strerror>".
absl::Status ErrnoError(absl::string_view what);

}  // namespace fabricdiag::testing
