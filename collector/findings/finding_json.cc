#include "collector/findings/finding_json.h"

#include <cmath>
#include <map>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "analysis/finding_wire.h"

namespace fabricdiag::collector {
namespace {

// Doubles with no fractional part and within 2^53 print as integers
// ("priority": 3, as in docs/findings.md), since every such double is exactly
// an integer and scripts compare them with ==.
constexpr double kMaxExactInteger = 9007199254740992.0;  // 2^53

nlohmann::ordered_json NumberJson(double v) {
  if (!std::isfinite(v)) return nullptr;
  if (std::trunc(v) == v && std::fabs(v) <= kMaxExactInteger) {
    return static_cast<int64_t>(v);
  }
  return v;
}

nlohmann::ordered_json TimeJson(int64_t unix_nanos) {
  if (unix_nanos == 0) return nullptr;
  return FormatRfc3339(unix_nanos);
}

}  // namespace

absl::string_view SeverityName(v1::Severity severity) {
  return analysis::SeverityName(severity, "unknown");
}

absl::string_view StateName(v1::FindingState state) {
  switch (state) {
    case v1::FINDING_STATE_ACTIVE:
      return "active";
    case v1::FINDING_STATE_RESOLVED:
      return "resolved";
    default:
      return "unknown";
  }
}

absl::string_view EventKindName(v1::FindingEvent::Kind kind) {
  switch (kind) {
    case v1::FindingEvent::SNAPSHOT:
      return "SNAPSHOT";
    case v1::FindingEvent::OPENED:
      return "OPENED";
    case v1::FindingEvent::UPDATED:
      return "UPDATED";
    case v1::FindingEvent::RESOLVED:
      return "RESOLVED";
    case v1::FindingEvent::STALENESS:
      return "STALENESS";
    default:
      return "UNKNOWN";
  }
}

std::string FormatRfc3339(int64_t unix_nanos) {
  // absl::FromUnixNanos + %S already truncates sub-seconds (it floors).
  return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::FromUnixNanos(unix_nanos),
                          absl::UTCTimeZone());
}

std::string FormatAge(absl::Duration age) {
  const int64_t s = absl::ToInt64Seconds(age);
  if (s <= 0) return "0s";
  if (s < 120) return absl::StrCat(s, "s");
  if (s < int64_t{2} * 3600) return absl::StrCat(s / 60, "m");
  if (s < int64_t{2} * 86400) return absl::StrCat(s / 3600, "h");
  return absl::StrCat(s / 86400, "d");
}

nlohmann::ordered_json FindingToJson(const v1::Finding& finding) {
  nlohmann::ordered_json j;
  j["id"] = finding.id();
  j["kind"] = finding.kind();
  j["severity"] = std::string(SeverityName(finding.severity()));
  j["state"] = std::string(StateName(finding.state()));
  j["job"] = finding.job();
  j["node"] = finding.node();
  j["nodes"] = nlohmann::ordered_json::array();
  for (const std::string& n : finding.nodes()) j["nodes"].push_back(n);
  j["device"] = finding.device();
  j["group"] = finding.group();
  j["summary"] = finding.summary();
  // The job's labels (its owners), only when it has some, so that a
  // finding without reads exactly as before; keys sorted.
  if (!finding.labels().empty()) {
    const std::map<std::string, std::string> labels(finding.labels().begin(),
                                                    finding.labels().end());
    j["labels"] = nlohmann::ordered_json::object();
    for (const auto& [key, value] : labels) j["labels"][key] = value;
  }

  // std::map sorts the keys; numbers are inserted first so they win clashes.
  std::map<std::string, nlohmann::ordered_json> evidence;
  for (const auto& [key, value] : finding.evidence()) {
    evidence.emplace(key, NumberJson(value));
  }
  for (const auto& [key, value] : finding.evidence_text()) {
    evidence.emplace(key, value);
  }
  j["evidence"] = nlohmann::ordered_json::object();
  for (auto& [key, value] : evidence) j["evidence"][key] = std::move(value);

  j["first_seen"] = TimeJson(finding.first_seen_unix_nanos());
  j["last_seen"] = TimeJson(finding.last_seen_unix_nanos());
  if (finding.state() == v1::FINDING_STATE_RESOLVED) {
    j["resolved_at"] = TimeJson(finding.resolved_unix_nanos());
  }
  // Operator marks, only when they apply, so that an unmarked finding reads
  // exactly as before.
  if (finding.has_acked()) {
    nlohmann::ordered_json acked;
    acked["who"] = finding.acked().who();
    acked["at"] = TimeJson(finding.acked().at_unix_nanos());
    acked["comment"] = finding.acked().comment();
    j["acked"] = std::move(acked);
  }
  if (!finding.silenced_by().empty()) {
    j["silenced_by"] = nlohmann::ordered_json::array();
    for (const std::string& id : finding.silenced_by()) {
      j["silenced_by"].push_back(id);
    }
  }
  return j;
}

nlohmann::ordered_json SilenceToJson(const v1::Silence& silence) {
  nlohmann::ordered_json j;
  j["id"] = silence.id();
  j["matchers"] = nlohmann::ordered_json::object();
  for (const v1::SilenceMatcher& m : silence.matchers()) {
    j["matchers"][m.key()] = m.value();
  }
  j["who"] = silence.who();
  j["created"] = TimeJson(silence.created_unix_nanos());
  j["until"] = TimeJson(silence.ends_unix_nanos());
  j["comment"] = silence.comment();
  j["expired"] = silence.expired();
  if (!silence.expired_by().empty()) j["expired_by"] = silence.expired_by();
  return j;
}

}  // namespace fabricdiag::collector
