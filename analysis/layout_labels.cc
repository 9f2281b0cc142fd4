#include "analysis/layout_labels.h"

#include <map>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/names.h"

namespace fabricdiag::analysis {
namespace {

constexpr size_t kMaxLabelKeyBytes = 63;

absl::Status LabelError(absl::string_view key, absl::string_view message) {
  return absl::InvalidArgumentError(
      absl::StrCat("labels", key.empty() ? "" : ".", key, ": ", message));
}

bool IsValidKey(absl::string_view key) {
  if (key.empty() || key.size() > kMaxLabelKeyBytes) return false;
  for (size_t i = 0; i < key.size(); ++i) {
    const char c = key[i];
    const bool ok =
        (c >= 'a' && c <= 'z') || c == '_' || (i > 0 && c >= '0' && c <= '9');
    if (!ok) return false;
  }
  return true;
}

// Well-formed UTF-8 (protobuf refuses to serialize anything else: no
// overlong form, no surrogate) with no control character (a label value is
// printed in alerts and terminals).
bool IsPrintableUtf8(absl::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c == 0x7f) return false;
    size_t len = 1;
    // The second byte's range, narrower than 80..BF after E0, ED, F0, F4.
    unsigned char low = 0x80;
    unsigned char high = 0xbf;
    if (c >= 0x80) {
      if (c >= 0xc2 && c <= 0xdf) {
        len = 2;
      } else if (c >= 0xe0 && c <= 0xef) {
        len = 3;
        if (c == 0xe0) low = 0xa0;
        if (c == 0xed) high = 0x9f;
      } else if (c >= 0xf0 && c <= 0xf4) {
        len = 4;
        if (c == 0xf0) low = 0x90;
        if (c == 0xf4) high = 0x8f;
      } else {
        return false;  // a continuation byte or an invalid lead
      }
      if (i + len > s.size()) return false;
      const auto second = static_cast<unsigned char>(s[i + 1]);
      if (second < low || second > high) return false;
      for (size_t k = 2; k < len; ++k) {
        if ((static_cast<unsigned char>(s[i + k]) & 0xc0) != 0x80) {
          return false;
        }
      }
    }
    i += len;
  }
  return true;
}

}  // namespace

absl::Status ValidateLayoutLabels(
    const google::protobuf::Map<std::string, std::string>& labels) {
  if (labels.size() > kMaxLayoutLabels) {
    return LabelError(
        "", absl::StrCat(labels.size(), " labels exceed the limit of ",
                         kMaxLayoutLabels));
  }
  const std::map<std::string, std::string> sorted(labels.begin(), labels.end());
  for (const auto& [key, value] : sorted) {
    if (!IsValidKey(key)) {
      return LabelError(QuoteForMessage(key),
                        absl::StrCat("a key must match ", kLabelKeyPattern));
    }
    if (value.empty()) return LabelError(key, "the value is empty");
    if (value.size() > kMaxLabelValueBytes) {
      return LabelError(key, absl::StrCat("the value is ", value.size(),
                                          " bytes, more than the limit of ",
                                          kMaxLabelValueBytes));
    }
    if (!IsPrintableUtf8(value)) {
      return LabelError(
          key, absl::StrCat(QuoteForMessage(value), " is not printable UTF-8"));
    }
  }
  return absl::OkStatus();
}

}  // namespace fabricdiag::analysis
