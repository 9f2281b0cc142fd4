#include "common/bearer_token.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"

namespace fabricdiag {

bool BearerTokenMatches(absl::string_view header, absl::string_view token) {
  constexpr absl::string_view kScheme = "bearer";
  if (token.empty() || header.size() <= kScheme.size() ||
      !absl::StartsWithIgnoreCase(header, kScheme) ||
      header[kScheme.size()] != ' ') {
    return false;
  }
  // One or more spaces may separate the scheme from the token.
  const absl::string_view presented =
      absl::StripLeadingAsciiWhitespace(header.substr(kScheme.size()));
  // Compare every byte regardless of where the first difference is.
  unsigned char diff = presented.size() == token.size() ? 0 : 1;
  for (size_t i = 0; i < presented.size(); ++i) {
    diff |= static_cast<unsigned char>(presented[i] ^ token[i % token.size()]);
  }
  return diff == 0;
}

}  // namespace fabricdiag
