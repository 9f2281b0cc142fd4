#include "common/gzip.h"

#include <zlib.h>

#include "absl/strings/str_cat.h"

namespace fabricdiag {
namespace {

// windowBits 15 (32 KiB) + 16: write and read a gzip header and trailer
// instead of a zlib one (zlib.h, deflateInit2).
constexpr int kGzipWindowBits = 15 + 16;

}  // namespace

absl::StatusOr<std::string> GzipCompress(absl::string_view data, int level) {
  z_stream z{};
  if (deflateInit2(&z, level, Z_DEFLATED, kGzipWindowBits, 8,
                   Z_DEFAULT_STRATEGY) != Z_OK) {
    return absl::InternalError("gzip: deflateInit2 failed");
  }
  std::string out;
  out.resize(deflateBound(&z, static_cast<uLong>(data.size())));
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  // deflateBound guarantees the whole output fits: one call finishes.
  const int rc = deflate(&z, Z_FINISH);
  const size_t written = z.total_out;
  deflateEnd(&z);
  if (rc != Z_STREAM_END) {
    return absl::InternalError(absl::StrCat("gzip: deflate returned ", rc));
  }
  out.resize(written);
  return out;
}

absl::StatusOr<std::string> GzipDecompress(absl::string_view data,
                                           size_t max_bytes) {
  z_stream z{};
  if (inflateInit2(&z, kGzipWindowBits) != Z_OK) {
    return absl::InternalError("gzip: inflateInit2 failed");
  }
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  std::string out;
  char chunk[16384];
  int rc = Z_OK;
  while (rc == Z_OK) {
    z.next_out = reinterpret_cast<Bytef*>(chunk);
    z.avail_out = sizeof(chunk);
    rc = inflate(&z, Z_NO_FLUSH);
    out.append(chunk, sizeof(chunk) - z.avail_out);
    if (out.size() > max_bytes) {
      inflateEnd(&z);
      return absl::ResourceExhaustedError("gzip: output exceeds the limit");
    }
    if (rc == Z_BUF_ERROR && z.avail_in == 0) break;  // truncated input
  }
  inflateEnd(&z);
  if (rc != Z_STREAM_END) {
    return absl::InvalidArgumentError("gzip: corrupt or truncated data");
  }
  return out;
}

}  // namespace fabricdiag
