#include "collector/findings/findings_query.h"

#include <algorithm>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "analysis/finding.h"
#include "analysis/finding_wire.h"
#include "collector/findings/finding_json.h"

namespace fabricdiag::collector {
namespace {

// Versioned so that a later encoding can tell old tokens apart.
constexpr absl::string_view kPageTokenPrefix = "v1.";

absl::Status Invalid(absl::string_view field, absl::string_view message) {
  return absl::InvalidArgumentError(absl::StrCat(field, ": ", message));
}

// Shown as the user typed it, but never a screenful.
std::string Quoted(absl::string_view text) {
  constexpr size_t kMax = 64;
  if (text.size() <= kMax) return absl::StrCat("\"", text, "\"");
  return absl::StrCat("\"", text.substr(0, kMax), "...\"");
}

}  // namespace

absl::StatusOr<absl::Duration> ParseQueryDuration(absl::string_view field,
                                                  absl::string_view text) {
  absl::Duration d;
  uint32_t days = 0;
  absl::string_view number = text;
  if (absl::ConsumeSuffix(&number, "d") && absl::SimpleAtoi(number, &days) &&
      !number.empty() && absl::ascii_isdigit(number[0])) {
    d = absl::Hours(24) * static_cast<int64_t>(days);
  } else if (!absl::ParseDuration(text, &d)) {
    return Invalid(
        field, absl::StrCat(Quoted(text), " is not a duration (2h, 30m, 7d)"));
  }
  // A thousand years: no collector kept anything that old, and the
  // arithmetic on it stays finite.
  if (d >= absl::Hours(24 * 365 * 1000)) {
    return Invalid(field, absl::StrCat(Quoted(text), " is too long"));
  }
  if (d <= absl::ZeroDuration()) {
    return Invalid(field,
                   absl::StrCat(Quoted(text), " is not a positive duration"));
  }
  return d;
}

absl::StatusOr<absl::Time> ParseQueryTime(absl::string_view field,
                                          absl::string_view text,
                                          absl::Time now) {
  absl::Time t;
  std::string error;
  if (absl::ParseTime(absl::RFC3339_full, text, &t, &error)) return t;
  absl::StatusOr<absl::Duration> ago = ParseQueryDuration(field, text);
  if (!ago.ok()) {
    return Invalid(field, absl::StrCat(Quoted(text),
                                       " is neither a duration ago (2h, 30m, "
                                       "7d) nor an RFC 3339 time "
                                       "(2026-11-29T10:00:00Z)"));
  }
  return now - *ago;
}

absl::StatusOr<v1::Severity> ParseSeverity(absl::string_view field,
                                           absl::string_view text) {
  std::vector<absl::string_view> names;
  for (v1::Severity s :
       {v1::SEVERITY_INFO, v1::SEVERITY_WARNING, v1::SEVERITY_CRITICAL}) {
    absl::string_view name = analysis::SeverityName(s, "");
    if (name == text) return s;
    names.push_back(name);
  }
  return Invalid(field,
                 absl::StrCat("unknown severity ", Quoted(text), " (one of ",
                              absl::StrJoin(names, ", "), ")"));
}

absl::Status CheckFindingKind(absl::string_view field, absl::string_view kind) {
  if (kind.empty()) return absl::OkStatus();
  std::vector<std::string> known(std::begin(analysis::kKnownFindingKinds),
                                 std::end(analysis::kKnownFindingKinds));
  if (std::find(known.begin(), known.end(), kind) != known.end()) {
    return absl::OkStatus();
  }
  std::sort(known.begin(), known.end());
  return Invalid(field,
                 absl::StrCat("unknown finding kind ", Quoted(kind),
                              "; known kinds: ", absl::StrJoin(known, ", ")));
}

absl::Status UnknownJobError(absl::string_view field, absl::string_view job,
                             std::vector<std::string> known) {
  std::sort(known.begin(), known.end());
  known.erase(std::unique(known.begin(), known.end()), known.end());
  return Invalid(
      field, absl::StrCat("unknown job ", Quoted(job),
                          " (no layout and no finding names it); known jobs: ",
                          known.empty() ? "none" : absl::StrJoin(known, ", ")));
}

std::string FindingsPageToken(uint64_t last_id_number) {
  return absl::StrCat(kPageTokenPrefix, last_id_number);
}

absl::StatusOr<uint64_t> ParseFindingsPageToken(absl::string_view field,
                                                absl::string_view token) {
  if (token.empty()) return 0;
  uint64_t n = 0;
  absl::string_view number = token;
  if (!absl::ConsumePrefix(&number, kPageTokenPrefix) ||
      !absl::SimpleAtoi(number, &n) || n == 0) {
    return Invalid(field, absl::StrCat(Quoted(token),
                                       " is not a page token this collector "
                                       "gave (send next_page_token as is)"));
  }
  return n;
}

absl::Status CheckListFindingsRequest(const v1::ListFindingsRequest& request) {
  if (absl::Status s = CheckFindingKind("kind", request.kind()); !s.ok()) {
    return s;
  }
  if (request.min_severity() != v1::SEVERITY_UNSPECIFIED &&
      analysis::SeverityName(request.min_severity(), "").empty()) {
    return Invalid("min_severity",
                   absl::StrCat("unknown severity ", request.min_severity()));
  }
  if (request.since_unix_nanos() < 0 || request.until_unix_nanos() < 0) {
    return Invalid(request.since_unix_nanos() < 0 ? "since" : "until",
                   "before 1970");
  }
  if (request.since_unix_nanos() != 0 && request.until_unix_nanos() != 0 &&
      request.until_unix_nanos() < request.since_unix_nanos()) {
    return Invalid("until",
                   absl::StrCat(FormatRfc3339(request.until_unix_nanos()),
                                " is before since ",
                                FormatRfc3339(request.since_unix_nanos())));
  }
  return ParseFindingsPageToken("page_token", request.page_token()).status();
}

}  // namespace fabricdiag::collector
