// CRC32C (Castagnoli, reflected polynomial 0x82F63B78), the checksum of
// iSCSI (RFC 3720), ext4 metadata and SCTP. The collector's state files
// carry it (collector/state/object_store.h, collector/state/findings_log.h), so
// its value for given bytes must never change.
//
//   const uint32_t crc = Crc32c(body);  // Crc32c("123456789") == 0xE3069283
//
// Table-driven, one byte at a time: the state files are small and written
// rarely. Thread-safe.
#pragma once

#include <cstdint>

#include "absl/strings/string_view.h"

namespace fabricdiag {

uint32_t Crc32c(absl::string_view data);

}  // namespace fabricdiag
