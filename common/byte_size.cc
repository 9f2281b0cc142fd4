#include "common/byte_size.h"

#include <limits>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace fabricdiag {
namespace {

struct Unit {
  const char* name;  // lower case
  uint64_t bytes;
};

constexpr Unit kUnits[] = {
    {"", 1},
    {"b", 1},
    {"kib", uint64_t{1} << 10},
    {"mib", uint64_t{1} << 20},
    {"gib", uint64_t{1} << 30},
    {"tib", uint64_t{1} << 40},
    {"kb", 1000},
    {"mb", uint64_t{1000} * 1000},
    {"gb", uint64_t{1000} * 1000 * 1000},
    {"tb", uint64_t{1000} * 1000 * 1000 * 1000},
};

absl::Status Invalid(absl::string_view text) {
  return absl::InvalidArgumentError(absl::StrCat(
      "\"", absl::CHexEscape(text),
      "\" is not a size: a whole number with an optional unit, e.g. 64MiB, "
      "512KiB, 2GiB, 100MB, 4096"));
}

}  // namespace

absl::StatusOr<uint64_t> ParseByteSize(absl::string_view text) {
  size_t digits = 0;
  while (digits < text.size() && absl::ascii_isdigit(text[digits])) ++digits;
  uint64_t number = 0;
  if (digits == 0 || !absl::SimpleAtoi(text.substr(0, digits), &number)) {
    return Invalid(text);
  }
  const std::string unit = absl::AsciiStrToLower(text.substr(digits));
  for (const Unit& u : kUnits) {
    if (unit != u.name) continue;
    constexpr uint64_t kMax = uint64_t{1} << 63;
    if (number > kMax / u.bytes) return Invalid(text);
    return number * u.bytes;
  }
  return Invalid(text);
}

std::string FormatByteSize(uint64_t bytes) {
  constexpr const char* kBinary[] = {"TiB", "GiB", "MiB", "KiB"};
  for (int i = 0; i < 4; ++i) {
    const uint64_t unit = uint64_t{1} << (10 * (4 - i));
    if (bytes >= unit && bytes % unit == 0) {
      return absl::StrCat(bytes / unit, kBinary[i]);
    }
  }
  return absl::StrCat(bytes, "B");
}

}  // namespace fabricdiag
