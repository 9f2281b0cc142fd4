#include "agent/ethtool_text.h"

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace fabricdiag::agent {
namespace {

constexpr size_t kQuotedBytes = 64;

// Quotes untrusted input for an error message: printable ASCII only, capped.
std::string Quote(absl::string_view s) {
  std::string out = "\"";
  for (size_t i = 0; i < s.size() && i < kQuotedBytes; ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    out += (c >= 0x20 && c < 0x7f) ? static_cast<char>(c) : '?';
  }
  if (s.size() > kQuotedBytes) out += "...";
  out += "\"";
  return out;
}

absl::string_view TrimBlanks(absl::string_view s) {
  while (!s.empty() &&
         (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) {
    s.remove_prefix(1);
  }
  while (!s.empty() &&
         (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
}

bool IsPrintableName(absl::string_view name) {
  for (char ch : name) {
    unsigned char c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c >= 0x7f) return false;
  }
  return true;
}

// Strict unsigned decimal: digits only (no sign, no spaces, no hex).
bool ParseU64(absl::string_view s, uint64_t* out) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) return false;
  }
  return absl::SimpleAtoi(s, out);  // fails on overflow
}

}  // namespace

EthtoolText ParseEthtoolStatsText(absl::string_view text) {
  EthtoolText result;
  auto add_error = [&result](int line, std::string message) {
    if (result.errors.size() < kMaxEthtoolTextErrors) {
      result.errors.push_back({line, std::move(message)});
    } else {
      ++result.dropped_errors;
    }
  };

  int line_number = 0;
  while (!text.empty()) {
    ++line_number;
    size_t newline = text.find('\n');
    absl::string_view raw = text.substr(0, newline);
    text.remove_prefix(newline == absl::string_view::npos ? text.size()
                                                          : newline + 1);
    absl::string_view line = TrimBlanks(raw);
    if (line.empty() || line == "NIC statistics:") continue;

    size_t colon = line.rfind(':');
    if (colon == absl::string_view::npos) {
      add_error(line_number,
                absl::StrCat("no \"name: value\" in ", Quote(line)));
      continue;
    }
    absl::string_view name = TrimBlanks(line.substr(0, colon));
    absl::string_view value_text = TrimBlanks(line.substr(colon + 1));
    if (name.empty()) {
      add_error(line_number, absl::StrCat("empty name in ", Quote(line)));
      continue;
    }
    if (name.size() > kMaxEthtoolNameLength) {
      add_error(line_number,
                absl::StrCat("name longer than ", kMaxEthtoolNameLength,
                             " bytes: ", Quote(name)));
      continue;
    }
    if (!IsPrintableName(name)) {
      add_error(line_number,
                absl::StrCat("name has non-printable bytes: ", Quote(name)));
      continue;
    }
    uint64_t value = 0;
    if (!ParseU64(value_text, &value)) {
      add_error(line_number,
                absl::StrCat(
                    "value of ", Quote(name),
                    " is not an unsigned 64-bit decimal: ", Quote(value_text)));
      continue;
    }
    result.stats.emplace_back(std::string(name), value);
  }
  return result;
}

}  // namespace fabricdiag::agent
