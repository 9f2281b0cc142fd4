// gzip (RFC 1952) compression of HTTP response bodies, through zlib.
//
//   absl::StatusOr<std::string> z = GzipCompress(body, /*level=*/1);
//   absl::StatusOr<std::string> back = GzipDecompress(*z, 64 << 20);
//
// Level 1 is zlib's fastest: on Prometheus text it still shrinks the body
// about 8-10 times, and a scrape's CPU matters more than its bytes. Pure;
// thread-safe.
#pragma once

#include <cstddef>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace fabricdiag {

absl::StatusOr<std::string> GzipCompress(absl::string_view data, int level = 1);

// For tests and clients; ResourceExhausted past `max_bytes` of output.
absl::StatusOr<std::string> GzipDecompress(absl::string_view data,
                                           size_t max_bytes);

}  // namespace fabricdiag
