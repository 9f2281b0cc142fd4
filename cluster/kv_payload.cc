#include "cluster/kv_payload.h"

#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "common/gzip.h"

namespace fabricdiag::cluster {
namespace {

// Values are written rarely and read by every collector: the ratio matters
// more than the time.
constexpr int kCompressLevel = 6;

}  // namespace

std::string KvPayload(const google::protobuf::MessageLite& message) {
  std::string bytes = message.SerializeAsString();
  if (bytes.size() <= kKvCompressAbove) return bytes;
  absl::StatusOr<std::string> z = GzipCompress(bytes, kCompressLevel);
  return z.ok() && z->size() < bytes.size() ? *std::move(z) : bytes;
}

bool ParseKvPayload(absl::string_view payload, uint64_t max_bytes,
                    google::protobuf::MessageLite* message) {
  std::string inflated;
  if (absl::StartsWith(payload, "\x1f\x8b")) {
    absl::StatusOr<std::string> plain = GzipDecompress(payload, max_bytes);
    if (!plain.ok()) return false;
    inflated = *std::move(plain);
    payload = inflated;
  }
  return message->ParseFromArray(payload.data(),
                                 static_cast<int>(payload.size()));
}

}  // namespace fabricdiag::cluster
