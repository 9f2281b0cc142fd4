// Checksummed object files, the format of the collector's layouts and
// topology in --state_dir (see collector/state/state_store.h for the
// directory):
//
//   "FDS1" | u32le payload length | u32le CRC32C(bytes 12..end) |
//   i64le written unix nanos | payload
//
// The checksum catches damage a protobuf parse would accept (protobuf reads
// a truncated message happily when the cut falls between fields). A write
// replaces the file atomically and durably (common/posix_file.h), so a
// crash leaves the old version or the new one, never a mix.
//
//   RETURN_IF_ERROR(WriteObjectFile(path, layout.SerializeAsString(), now));
//   absl::StatusOr<ObjectFile> file = ReadObjectFile(path);
//   if (absl::IsDataLoss(file.status())) ...  // damaged: move it aside
//
// The byte format is what existing state directories hold: it must not
// change. Thread-safe (no shared state); callers serialize writes to one
// path.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace fabricdiag::collector {

// Largest object file or log record accepted at load (a 1,000,000-rank
// layout with explicit placement is ~40 MB).
inline constexpr uint64_t kMaxStateObjectBytes = 256ull << 20;

// The whole file: the envelope around `payload`.
std::string EncodeObject(absl::string_view payload, absl::Time written);

// Checks the envelope of `data`; on success `payload` views into `data`.
// DataLoss naming what is wrong (header, length, checksum).
absl::Status DecodeObject(absl::string_view data, absl::string_view* payload,
                          absl::Time* written);

// Reads a whole state file (object file or findings log). DataLoss when it
// is not a regular file or larger than kMaxStateObjectBytes: damage the
// caller moves aside. Otherwise the errno's code (NotFound when absent).
absl::StatusOr<std::string> ReadStateFile(const std::string& path);

// Durably and atomically replaces `path` with the envelope of `payload`.
absl::Status WriteObjectFile(const std::string& path, absl::string_view payload,
                             absl::Time written);

struct ObjectFile {
  std::string payload;
  absl::Time written;  // the writer's clock
};

// Reads and checks an object file: NotFound when absent, DataLoss (with the
// reason) when damaged, the errno's code when unreadable.
absl::StatusOr<ObjectFile> ReadObjectFile(const std::string& path);

}  // namespace fabricdiag::collector
