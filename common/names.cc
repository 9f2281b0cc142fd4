#include "common/names.h"

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace fabricdiag {
namespace {

// A letter or digit, then up to max_len - 1 letters, digits or `extra`.
bool IsName(absl::string_view name, size_t max_len, absl::string_view extra) {
  if (name.empty() || name.size() > max_len ||
      !absl::ascii_isalnum(static_cast<unsigned char>(name[0]))) {
    return false;
  }
  for (char c : name) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) &&
        extra.find(c) == absl::string_view::npos) {
      return false;
    }
  }
  return true;
}

}  // namespace

bool IsValidJobName(absl::string_view name) { return IsName(name, 64, "._-"); }

bool IsValidNodeName(absl::string_view name) {
  return IsName(name, 253, "._-");
}

bool IsValidDeviceName(absl::string_view name) {
  return IsName(name, 64, "._:/-");
}

std::string QuoteForMessage(absl::string_view value) {
  constexpr size_t kMax = 64;
  if (value.size() <= kMax) {
    return absl::StrCat("\"", absl::CHexEscape(value), "\"");
  }
  return absl::StrCat("\"", absl::CHexEscape(value.substr(0, kMax)), "...\"");
}

}  // namespace fabricdiag
