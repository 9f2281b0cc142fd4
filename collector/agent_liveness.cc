#include "collector/agent_liveness.h"

#include <cstdint>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"

namespace fabricdiag::collector {
namespace {

absl::Duration IntervalOf(const NodeLiveness& node,
                          const LivenessOptions& options) {
  return node.interval > absl::ZeroDuration() ? node.interval
                                              : options.default_interval;
}

}  // namespace

std::string HumanDuration(absl::Duration d) {
  if (d < absl::ZeroDuration()) d = absl::ZeroDuration();
  if (d < absl::Seconds(1)) {
    return absl::StrCat(absl::ToInt64Milliseconds(d), " ms");
  }
  int64_t s = absl::ToInt64Seconds(d);
  if (s < 60) return absl::StrCat(s, " s");
  if (s < 3600) {
    return s % 60 == 0 ? absl::StrCat(s / 60, " min")
                       : absl::StrCat(s / 60, " min ", s % 60, " s");
  }
  if (s < 86400) {
    int64_t min = (s % 3600) / 60;
    return min == 0 ? absl::StrCat(s / 3600, " h")
                    : absl::StrCat(s / 3600, " h ", min, " min");
  }
  int64_t hours = (s % 86400) / 3600;
  return hours == 0 ? absl::StrCat(s / 86400, " d")
                    : absl::StrCat(s / 86400, " d ", hours, " h");
}

bool IsAgentUp(const NodeLiveness& node, absl::Time now,
               const LivenessOptions& options) {
  if (!node.ever_reported) return false;
  absl::Duration limit = IntervalOf(node, options) * options.missed_intervals;
  // A report stamped in the future (clock skew) counts as fresh.
  return now - node.last_report < limit;
}

std::vector<analysis::Finding> AgentDownFindings(
    absl::Span<const NodeLiveness> nodes, absl::Time now,
    const LivenessOptions& options) {
  std::vector<analysis::Finding> out;
  for (const NodeLiveness& node : nodes) {
    if (!node.ever_reported || IsAgentUp(node, now, options)) continue;
    absl::Duration interval = IntervalOf(node, options);
    absl::Duration silence = now - node.last_report;
    int64_t missed = absl::IDivDuration(silence, interval, &silence);
    silence = now - node.last_report;
    analysis::Finding r;
    r.kind = kAgentDownKind;
    r.severity = analysis::Severity::kWarning;
    r.node = node.node;
    r.nodes = {node.node};
    r.summary = absl::StrCat(
        node.node, "'s agent has not reported for ", HumanDuration(silence),
        " (", missed, " intervals of ", HumanDuration(interval),
        "); its NICs are not being watched. Check the fabricdiag-agent "
        "service on ",
        node.node, ".");
    r.evidence["silence_seconds"] = absl::ToDoubleSeconds(silence);
    r.evidence["interval_seconds"] = absl::ToDoubleSeconds(interval);
    r.evidence["missed_intervals"] = static_cast<double>(missed);
    r.evidence_text["last_report"] = absl::FormatTime(
        "%Y-%m-%dT%H:%M:%E*SZ", node.last_report, absl::UTCTimeZone());
    out.push_back(std::move(r));
  }
  return out;
}

std::optional<NodeLiveness> LivenessFromFinding(const v1::Finding& finding) {
  auto last = finding.evidence_text().find("last_report");
  if (last == finding.evidence_text().end() || finding.node().empty()) {
    return std::nullopt;
  }
  NodeLiveness l;
  std::string error;
  if (!absl::ParseTime(absl::RFC3339_full, last->second, &l.last_report,
                       &error)) {
    return std::nullopt;
  }
  l.node = finding.node();
  l.ever_reported = true;
  auto interval = finding.evidence().find("interval_seconds");
  if (interval != finding.evidence().end() && interval->second > 0) {
    l.interval = absl::Seconds(interval->second);
  }
  return l;
}

}  // namespace fabricdiag::collector
