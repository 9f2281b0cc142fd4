#include "collector/agent_liveness.h"

#include <optional>
#include <string>

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

}  // namespace fabricdiag::collector
