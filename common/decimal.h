// Strict unsigned decimal parsing for counter values, the innermost loop of
// the agent's reads (one call per sysfs file and per ethtool text line).
//
//   uint64_t v = 0;
//   bool overflow = false;
//   ParseDecimalU64("18126345378", &v, &overflow);  // true, v = 18126345378
//   ParseDecimalU64("18446744073709551616", &v, &overflow);  // false, overflow
//
// Digits only: no sign, blanks, "0x" or empty input. Thread-safe (pure).
#pragma once

#include <cstddef>
#include <cstdint>

#include "absl/strings/string_view.h"

namespace fabricdiag {

// Parses `digits` into *out. Returns false on an empty input, a non-digit
// byte, or a value above 2^64-1 (then *overflow is set). *out is only
// written on success.
inline bool ParseDecimalU64(absl::string_view digits, uint64_t* out,
                            bool* overflow) {
  *overflow = false;
  if (digits.empty()) return false;
  // Leading zeros do not count towards the 20 digits of 2^64-1.
  while (digits.size() > 1 && digits.front() == '0') digits.remove_prefix(1);
  // Up to 19 digits cannot overflow: accumulate without checks.
  constexpr size_t kSafeDigits = 19;
  const size_t unchecked =
      digits.size() < kSafeDigits ? digits.size() : kSafeDigits;
  uint64_t value = 0;
  for (size_t i = 0; i < unchecked; ++i) {
    const unsigned d = static_cast<unsigned char>(digits[i]) - '0';
    if (d > 9) return false;
    value = value * 10 + d;
  }
  for (size_t i = unchecked; i < digits.size(); ++i) {
    const unsigned d = static_cast<unsigned char>(digits[i]) - '0';
    if (d > 9) return false;
    if (value > (UINT64_MAX - d) / 10) {
      *overflow = true;
      return false;
    }
    value = value * 10 + d;
  }
  *out = value;
  return true;
}

}  // namespace fabricdiag
