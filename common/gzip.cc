#include "common/gzip.h"

#include <zlib.h>

#include <algorithm>
#include <cstdint>

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

absl::StatusOr<GzipTail> GzipTail::Compress(absl::string_view tail, int level) {
  z_stream z{};
  // Negative windowBits: a raw deflate stream, no header or trailer.
  if (deflateInit2(&z, level, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    return absl::InternalError("gzip: deflateInit2 failed");
  }
  GzipTail out;
  out.deflated_.resize(deflateBound(&z, static_cast<uLong>(tail.size())));
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(tail.data()));
  z.avail_in = static_cast<uInt>(tail.size());
  z.next_out = reinterpret_cast<Bytef*>(out.deflated_.data());
  z.avail_out = static_cast<uInt>(out.deflated_.size());
  const int rc = deflate(&z, Z_FINISH);
  const size_t written = z.total_out;
  deflateEnd(&z);
  if (rc != Z_STREAM_END) {
    return absl::InternalError(absl::StrCat("gzip: deflate returned ", rc));
  }
  out.deflated_.resize(written);
  out.crc_ = static_cast<uint32_t>(
      crc32(0, reinterpret_cast<const Bytef*>(tail.data()),
            static_cast<uInt>(tail.size())));
  out.size_ = tail.size();
  return out;
}

std::string GzipTail::WithHead(absl::string_view head) const {
  // A stored block holds at most 65,535 bytes (RFC 1951 3.2.4).
  constexpr size_t kMaxStored = 65535;
  constexpr size_t kStoredHeader = 5;
  std::string out;
  out.reserve(10 + head.size() +
              (head.size() / kMaxStored + 1) * kStoredHeader +
              deflated_.size() + 8);
  // RFC 1952 member header: ID1 ID2, CM = deflate, no flags, no MTIME,
  // XFL 0, OS 3 (Unix), as zlib writes it on Linux.
  constexpr unsigned char kHeader[] = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3};
  out.append(reinterpret_cast<const char*>(kHeader), sizeof(kHeader));
  for (size_t pos = 0; pos < head.size(); pos += kMaxStored) {
    const auto len =
        static_cast<uint16_t>(std::min(kMaxStored, head.size() - pos));
    const auto nlen = static_cast<uint16_t>(~len);
    // BFINAL 0, BTYPE 00 (stored), then padding to the byte boundary: a
    // zero byte. LEN and its complement, little-endian.
    const char block[kStoredHeader] = {
        0, static_cast<char>(len & 0xff), static_cast<char>(len >> 8),
        static_cast<char>(nlen & 0xff), static_cast<char>(nlen >> 8)};
    out.append(block, kStoredHeader);
    out.append(head.data() + pos, len);
  }
  out.append(deflated_);
  const uLong head_crc = crc32(0, reinterpret_cast<const Bytef*>(head.data()),
                               static_cast<uInt>(head.size()));
  const auto crc = static_cast<uint32_t>(
      crc32_combine(head_crc, crc_, static_cast<z_off_t>(size_)));
  const auto isize = static_cast<uint32_t>(head.size() + size_);  // mod 2^32
  for (const uint32_t v : {crc, isize}) {
    for (int shift = 0; shift < 32; shift += 8) {
      out.push_back(static_cast<char>((v >> shift) & 0xff));
    }
  }
  return out;
}

}  // namespace fabricdiag
