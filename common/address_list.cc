#include "common/address_list.h"

#include <cstdint>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace fabricdiag {

absl::StatusOr<std::vector<std::string>> SplitAddressList(
    absl::string_view flag, absl::string_view value) {
  const std::string prefix = absl::StrCat("--", flag, "=", value, ": ");
  if (absl::StripAsciiWhitespace(value).empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", flag, ": empty address list"));
  }
  std::vector<std::string> out;
  std::set<absl::string_view> seen;
  size_t index = 0;
  for (absl::string_view entry : absl::StrSplit(value, ',')) {
    ++index;
    entry = absl::StripAsciiWhitespace(entry);
    if (entry.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(prefix, "entry ", index, " is empty (stray comma?)"));
    }
    for (char c : entry) {
      const auto u = static_cast<unsigned char>(c);
      if (absl::ascii_isspace(u) || !absl::ascii_isprint(u)) {
        return absl::InvalidArgumentError(
            absl::StrCat(prefix, "entry \"", absl::CEscape(entry),
                         "\" contains a space or control character"));
      }
    }
    if (!seen.insert(entry).second) {
      // A repeated collector would take twice its share of failovers and
      // is almost always a typo for another host.
      return absl::InvalidArgumentError(
          absl::StrCat(prefix, "\"", entry, "\" is listed twice"));
    }
    out.emplace_back(entry);
  }
  return out;
}

absl::Status CheckHostPort(absl::string_view flag, absl::string_view value,
                           bool allow_port_zero) {
  const size_t colon = value.rfind(':');
  if (colon == absl::string_view::npos || colon == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", flag, "=", value, ": expected HOST:PORT"));
  }
  uint32_t port = 0;
  if (!absl::SimpleAtoi(value.substr(colon + 1), &port) || port > 65535 ||
      (port == 0 && !allow_port_zero)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", flag, "=", value, ": the port must be a number in ",
                     allow_port_zero ? "0" : "1", "..65535"));
  }
  return absl::OkStatus();
}

}  // namespace fabricdiag
