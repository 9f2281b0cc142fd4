#include "collector/findings/silence_matchers.h"

#include <algorithm>
#include <iterator>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "collector/findings/silences.h"
#include "common/names.h"

namespace fabricdiag::collector {
namespace {

// More than a handful is a mistake, not a silence.
constexpr size_t kMaxMatchers = 16;

bool KnownKey(absl::string_view key) {
  return std::find(std::begin(kSilenceKeys), std::end(kSilenceKeys), key) !=
         std::end(kSilenceKeys);
}

// The lower-case severity word of a finding, as a matcher names it.
std::string SeverityWord(v1::Severity severity) {
  switch (severity) {
    case v1::SEVERITY_INFO:
      return "info";
    case v1::SEVERITY_WARNING:
      return "warning";
    case v1::SEVERITY_CRITICAL:
      return "critical";
    default:
      return "";
  }
}

absl::Status CheckMatcher(const v1::SilenceMatcher& m,
                          absl::flat_hash_set<std::string>& seen) {
  if (!KnownKey(m.key())) {
    return absl::InvalidArgumentError(
        absl::StrCat("--matcher: unknown key ", QuoteForMessage(m.key()),
                     " (known: ", absl::StrJoin(kSilenceKeys, ", "), ")"));
  }
  if (m.value().empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--matcher: ", m.key(), " has an empty value"));
  }
  if (!seen.insert(m.key()).second) {
    return absl::InvalidArgumentError(
        absl::StrCat("--matcher: ", m.key(), " is given twice"));
  }
  if (m.key() == "severity" && m.value() != "info" && m.value() != "warning" &&
      m.value() != "critical") {
    return absl::InvalidArgumentError(
        absl::StrCat("--matcher: severity must be info, warning or critical, "
                     "not ",
                     QuoteForMessage(m.value())));
  }
  return absl::OkStatus();
}

absl::string_view FieldOf(const v1::Finding& f, absl::string_view key) {
  if (key == "kind") return f.kind();
  if (key == "job") return f.job();
  if (key == "node") return f.node();
  if (key == "device") return f.device();
  if (key == "group") return f.group();
  return {};
}

}  // namespace

absl::StatusOr<std::vector<v1::SilenceMatcher>> ParseMatchers(
    absl::string_view text) {
  if (absl::StripAsciiWhitespace(text).empty()) {
    return absl::InvalidArgumentError(
        "--matcher: missing (KEY=VALUE[,KEY=VALUE], e.g. "
        "kind=pfc_storm,node=leaf-3)");
  }
  std::vector<v1::SilenceMatcher> matchers;
  for (absl::string_view item : absl::StrSplit(text, ',')) {
    item = absl::StripAsciiWhitespace(item);
    const size_t eq = item.find('=');
    if (eq == absl::string_view::npos) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--matcher: ", QuoteForMessage(item), " is not KEY=VALUE"));
    }
    v1::SilenceMatcher m;
    m.set_key(std::string(absl::StripAsciiWhitespace(item.substr(0, eq))));
    m.set_value(std::string(absl::StripAsciiWhitespace(item.substr(eq + 1))));
    matchers.push_back(std::move(m));
  }
  google::protobuf::RepeatedPtrField<v1::SilenceMatcher> field(matchers.begin(),
                                                               matchers.end());
  if (absl::Status s = CheckMatchers(field); !s.ok()) return s;
  return matchers;
}

absl::Status CheckMatchers(
    const google::protobuf::RepeatedPtrField<v1::SilenceMatcher>& matchers) {
  if (matchers.empty()) {
    return absl::InvalidArgumentError(
        "--matcher: missing (KEY=VALUE[,KEY=VALUE])");
  }
  if (matchers.size() > static_cast<int>(kMaxMatchers)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--matcher: more than ", kMaxMatchers, " matchers"));
  }
  absl::flat_hash_set<std::string> seen;
  for (const v1::SilenceMatcher& m : matchers) {
    if (absl::Status s = CheckMatcher(m, seen); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::StatusOr<absl::Duration> ParseSilenceDuration(absl::string_view text,
                                                    absl::string_view field) {
  text = absl::StripAsciiWhitespace(text);
  if (text.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": missing (e.g. 4h)"));
  }
  absl::Duration d;
  int64_t days = 0;
  absl::string_view number = text;
  if (absl::ConsumeSuffix(&number, "d") && absl::SimpleAtoi(number, &days)) {
    d = absl::Hours(24) * days;
  } else if (!absl::ParseDuration(text, &d)) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": not a duration: ", QuoteForMessage(text),
                     " (e.g. 30m, 4h, 7d)"));
  }
  if (d <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": must be positive"));
  }
  if (d > kMaxSilence) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": at most 30 days (30d)"));
  }
  return d;
}

bool SilenceMatches(const v1::Silence& silence, const v1::Finding& finding) {
  if (silence.matchers().empty()) return false;
  for (const v1::SilenceMatcher& m : silence.matchers()) {
    if (m.key() == "severity") {
      if (SeverityWord(finding.severity()) != m.value()) return false;
    } else if (FieldOf(finding, m.key()) != m.value()) {
      return false;
    }
  }
  return true;
}

}  // namespace fabricdiag::collector
