#include "agent/ethtool_text.h"

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/decimal.h"

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

inline absl::string_view TrimBlanks(absl::string_view s) {
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

inline bool IsBlank(char c) { return c == ' ' || c == '\t'; }

// The steady-state line, "<blanks><want>:<blanks><digits><blanks>\n", in one
// pass over its bytes. Returns where the next line starts, or nullptr when
// the line is anything else (the general path then decides what it is; it
// accepts every line this accepts, with the same name and value).
inline const char* MatchExpectedLine(const char* p, const char* end,
                                     const std::string& want,
                                     EthtoolTextView* out) {
  while (p < end && IsBlank(*p)) ++p;
  if (static_cast<size_t>(end - p) <= want.size() || p[want.size()] != ':' ||
      std::memcmp(p, want.data(), want.size()) != 0) {
    return nullptr;
  }
  const char* name = p;
  p += want.size() + 1;
  while (p < end && IsBlank(*p)) ++p;
  // At most 19 digits cannot overflow; longer values take the general path.
  constexpr ptrdiff_t kSafeDigits = 19;
  const char* digits = p;
  uint64_t value = 0;
  while (p < end && static_cast<unsigned char>(*p - '0') <= 9) {
    value = value * 10 + static_cast<unsigned char>(*p - '0');
    ++p;
  }
  if (p == digits || p - digits > kSafeDigits) return nullptr;
  while (p < end && (IsBlank(*p) || *p == '\r')) ++p;
  if (p < end && *p != '\n') return nullptr;
  out->stats.emplace_back(absl::string_view(name, want.size()), value);
  return p < end ? p + 1 : end;
}

// Keeps the first kMaxEthtoolTextErrors messages and only counts the rest, so
// a garbage file cannot grow the agent's memory.
void AddError(EthtoolTextView* out, int line, std::string message) {
  if (out->errors.size() < kMaxEthtoolTextErrors) {
    out->errors.push_back({line, std::move(message)});
  } else {
    ++out->dropped_errors;
  }
}

// The line at `p` without its newline and surrounding blanks; returns where
// the next line starts.
inline const char* NextLine(const char* p, const char* end,
                            absl::string_view* line) {
  const char* eol = static_cast<const char*>(
      std::memchr(p, '\n', static_cast<size_t>(end - p)));
  if (eol == nullptr) eol = end;
  *line = TrimBlanks(absl::string_view(p, static_cast<size_t>(eol - p)));
  return eol == end ? end : eol + 1;
}

// Why `name` (found on `line`) cannot be a statistic's name, if it cannot.
std::optional<std::string> NameError(absl::string_view name,
                                     absl::string_view line) {
  if (name.empty()) return absl::StrCat("empty name in ", Quote(line));
  if (name.size() > kMaxEthtoolNameLength) {
    return absl::StrCat("name longer than ", kMaxEthtoolNameLength,
                        " bytes: ", Quote(name));
  }
  if (!IsPrintableName(name)) {
    return absl::StrCat("name has non-printable bytes: ", Quote(name));
  }
  return std::nullopt;
}

}  // namespace

void ParseEthtoolStatsText(absl::string_view text, EthtoolTextView* out,
                           const std::vector<std::string>* expected) {
  out->stats.clear();
  out->errors.clear();
  out->dropped_errors = 0;
  bool matching = expected != nullptr;

  // Pointer walk: this runs over every line of every netdev each interval.
  const char* p = text.data();
  const char* const end = p + text.size();
  int line_number = 0;
  while (p < end) {
    ++line_number;
    if (matching && out->stats.size() < expected->size()) {
      const char* next =
          MatchExpectedLine(p, end, (*expected)[out->stats.size()], out);
      if (next != nullptr) {
        p = next;
        continue;
      }
    }
    absl::string_view line;
    p = NextLine(p, end, &line);
    if (line.empty() || line == "NIC statistics:") continue;

    // The value follows the LAST ':' (bnxt_en names contain ": ").
    const char* last =
        static_cast<const char*>(memrchr(line.data(), ':', line.size()));
    const size_t colon =
        last == nullptr ? 0 : static_cast<size_t>(last - line.data()) + 1;
    if (colon == 0) {
      AddError(out, line_number,
               absl::StrCat("no \"name: value\" in ", Quote(line)));
      continue;
    }
    absl::string_view name = TrimBlanks(line.substr(0, colon - 1));
    absl::string_view value_text = TrimBlanks(line.substr(colon));
    // A name equal to the expected one passed these checks before.
    matching = matching && out->stats.size() < expected->size() &&
               name == (*expected)[out->stats.size()];
    if (!matching) {
      if (std::optional<std::string> error = NameError(name, line)) {
        AddError(out, line_number, *std::move(error));
        continue;
      }
    }
    uint64_t value = 0;
    bool overflow = false;
    if (!ParseDecimalU64(value_text, &value, &overflow)) {
      AddError(out, line_number,
               absl::StrCat(
                   "value of ", Quote(name),
                   " is not an unsigned 64-bit decimal: ", Quote(value_text)));
      continue;
    }
    out->stats.emplace_back(name, value);
  }
  out->matches_expected =
      matching && out->errors.empty() && out->stats.size() == expected->size();
}

EthtoolText ParseEthtoolStatsText(absl::string_view text) {
  EthtoolTextView view;
  ParseEthtoolStatsText(text, &view);
  EthtoolText result;
  result.stats.reserve(view.stats.size());
  for (const auto& [name, value] : view.stats) {
    result.stats.emplace_back(std::string(name), value);
  }
  result.errors = std::move(view.errors);
  result.dropped_errors = view.dropped_errors;
  return result;
}

}  // namespace fabricdiag::agent
