#include "collector/runner/agent_liveness.h"

#include <optional>
#include <string>
#include <utility>

#include "absl/time/time.h"

namespace fabricdiag::collector {

std::optional<analysis::NodeLiveness> LivenessFromFinding(
    const v1::Finding& finding) {
  auto last = finding.evidence_text().find("last_report");
  if (last == finding.evidence_text().end() || finding.node().empty()) {
    return std::nullopt;
  }
  analysis::NodeLiveness l;
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

analysis::NodeLiveness LivenessOf(const NodeInfo& info) {
  return LivenessOf(info.node, info.last_report, info.interval_ms);
}

analysis::NodeLiveness LivenessOf(std::string node, absl::Time last_report,
                                  uint32_t interval_ms) {
  analysis::NodeLiveness l;
  l.node = std::move(node);
  l.last_report = last_report;
  l.interval = absl::Milliseconds(interval_ms);
  l.ever_reported = last_report != absl::InfinitePast();
  return l;
}

NodeUpRule AgentUpRule(const analysis::AgentDownConfig& config) {
  return [config](const NodeInfo& info, absl::Time now) {
    return analysis::IsAgentUp(LivenessOf(info), now, config);
  };
}

}  // namespace fabricdiag::collector
