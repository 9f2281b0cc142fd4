#include "analysis/agent_down.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "analysis/analyzer_util.h"

namespace fabricdiag::analysis {
namespace {

absl::Duration IntervalOf(const NodeLiveness& node,
                          const AgentDownConfig& config) {
  return node.interval > absl::ZeroDuration()
             ? node.interval
             : absl::Seconds(config.default_interval_seconds);
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
               const AgentDownConfig& config) {
  if (!node.ever_reported) return false;
  absl::Duration limit = IntervalOf(node, config) * config.missed_intervals;
  // A report stamped in the future (clock skew) counts as fresh.
  return std::min(now, node.observed_until) - node.last_report < limit;
}

bool IsAgentQuiet(const NodeLiveness& node, absl::Time now,
                  const AgentDownConfig& config) {
  return IsAgentUp(node, now, config) &&
         std::min(now, node.observed_until) - node.last_report >
             IntervalOf(node, config);
}

std::vector<Finding> AgentDownFindings(absl::Span<const NodeLiveness> nodes,
                                       absl::Time now,
                                       const AgentDownConfig& config) {
  std::vector<Finding> out;
  for (const NodeLiveness& node : nodes) {
    if (!node.ever_reported || IsAgentUp(node, now, config)) continue;
    absl::Duration interval = IntervalOf(node, config);
    absl::Duration silence = now - node.last_report;
    int64_t missed = absl::IDivDuration(silence, interval, &silence);
    silence = now - node.last_report;
    Finding f;
    f.kind = kAgentDownKind;
    f.severity = Severity::kWarning;
    f.node = node.node;
    f.nodes = {node.node};
    f.summary = absl::StrCat(
        node.node, "'s agent has not reported for ", HumanDuration(silence),
        " (", missed, " intervals of ", HumanDuration(interval),
        "); its NICs are not being watched. Check the fabricdiag-agent "
        "service on ",
        node.node, ".");
    f.evidence["silence_seconds"] = absl::ToDoubleSeconds(silence);
    f.evidence["interval_seconds"] = absl::ToDoubleSeconds(interval);
    f.evidence["missed_intervals"] = static_cast<double>(missed);
    SetOverThreshold(static_cast<double>(missed), config.missed_intervals, &f);
    f.evidence_text["last_report"] = absl::FormatTime(
        "%Y-%m-%dT%H:%M:%E*SZ", node.last_report, absl::UTCTimeZone());
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace fabricdiag::analysis
