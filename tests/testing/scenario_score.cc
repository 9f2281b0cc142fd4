#include "tests/testing/scenario_score.h"

#include "absl/strings/str_cat.h"

namespace fabricdiag::analysis::scenario {

bool Matches(const ExpectedFinding& expected, const Finding& finding) {
  return expected.kind == finding.kind && expected.node == finding.node &&
         (expected.device.empty() || expected.device == finding.device);
}

ScenarioScore ScoreFindings(absl::Span<const FaultExpectation> expected,
                            absl::Span<const Finding> open) {
  ScenarioScore score;
  score.expected = static_cast<int>(expected.size());
  for (const FaultExpectation& e : expected) {
    bool hit = false;
    for (const Finding& f : open) hit = hit || Matches(e.primary, f);
    if (hit) {
      ++score.found;
    } else {
      score.missed.push_back(e.primary);
    }
  }
  for (const Finding& f : open) {
    bool primary = false, secondary = false;
    for (const FaultExpectation& e : expected) {
      primary = primary || Matches(e.primary, f);
      for (const ExpectedFinding& s : e.secondary) {
        secondary = secondary || Matches(s, f);
      }
    }
    if (primary) {
      ++score.true_positive_findings;
    } else if (secondary) {
      score.secondary.push_back(f);
    } else {
      score.false_positives.push_back(f);
    }
  }
  return score;
}

std::string Describe(const Finding& f) {
  return absl::StrCat(f.kind, " ", f.node, "/", f.device,
                      f.group.empty() ? "" : absl::StrCat(" [", f.group, "]"));
}

std::string Describe(const ExpectedFinding& e) {
  return absl::StrCat(e.kind, " ", e.node, "/",
                      e.device.empty() ? "*" : e.device,
                      e.group.empty() ? "" : absl::StrCat(" [", e.group, "]"));
}

}  // namespace fabricdiag::analysis::scenario
