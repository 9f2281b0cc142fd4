// Sizes in flags, as people write them: "64MiB", "512KiB", "2GiB", "100MB",
// "4096". Binary units (KiB, MiB, GiB, TiB) are powers of 1024, decimal ones
// (kB/KB, MB, GB, TB) powers of 1000, a bare number or "B" is bytes.
// Upper- or lower-case unit letters are accepted; no fractions, no spaces
// inside the number.
//
//   absl::StatusOr<uint64_t> n = ParseByteSize("64MiB");  // 67108864
//   FormatByteSize(67108864);                              // "64MiB"
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace fabricdiag {

// InvalidArgument, saying what is accepted, for anything else (an unknown
// unit, a negative or empty number, a size above 2^63 bytes).
absl::StatusOr<uint64_t> ParseByteSize(absl::string_view text);

// The largest binary unit that divides `bytes` exactly: "64MiB", "1536KiB",
// "1000B".
std::string FormatByteSize(uint64_t bytes);

}  // namespace fabricdiag
