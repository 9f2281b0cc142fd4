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
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace fabricdiag {

absl::StatusOr<std::string> GzipCompress(absl::string_view data, int level = 1);

// For tests and clients; ResourceExhausted past `max_bytes` of output.
absl::StatusOr<std::string> GzipDecompress(absl::string_view data,
                                           size_t max_bytes);

// The gzip of bodies that differ only in a short head (a timestamp) before
// a long tail that stays the same for many responses: the tail is
// compressed once, and each body's gzip is the head as a stored
// (uncompressed) deflate block followed by the tail's deflate blocks, in
// one gzip member that any gzip reader accepts. RFC 1951 lets blocks follow
// one another when the earlier ones are not final; a stored block ends on a
// byte boundary, where the tail's independently compressed blocks begin
// (their back-references stay within the tail). The CRC-32 of the whole
// body comes from the two parts' (zlib's crc32_combine).
//
//   absl::StatusOr<GzipTail> tail = GzipTail::Compress(rest_of_body);
//   std::string z = tail->WithHead(absl::StrCat("{\"generated\":", now));
//
// Immutable once made; thread-safe.
class GzipTail {
 public:
  static absl::StatusOr<GzipTail> Compress(absl::string_view tail,
                                           int level = 1);

  // The gzip of `head` followed by the tail. Costs a copy of the compressed
  // tail, not a compression.
  std::string WithHead(absl::string_view head) const;

  size_t compressed_bytes() const { return deflated_.size(); }

 private:
  GzipTail() = default;
  std::string deflated_;  // raw deflate (RFC 1951), final block last
  uint32_t crc_ = 0;      // CRC-32 of the tail
  uint64_t size_ = 0;     // its length
};

}  // namespace fabricdiag
