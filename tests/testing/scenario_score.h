// Compares the findings the analyzers opened in a scenario with what its
// injected faults should raise: true positives, misses and false positives.
//
//   ScenarioScore s = ScoreFindings(expectations, open_findings);
//   s.found == s.expected && s.false_positives.empty()   // a clean pass
//
// A finding matches an ExpectedFinding when kind and node are equal and, if
// the expectation names a device, the device too. A finding matching a
// fault's primary expectation is a true positive; one matching only a
// secondary expectation is tolerated (counted in `secondary`, neither true
// nor false); anything else is a false positive. Pure functions.
#pragma once

#include <string>
#include <vector>

#include "absl/types/span.h"
#include "analysis/finding.h"
#include "tests/testing/scenario_builder.h"

namespace fabricdiag::analysis::scenario {

struct ScenarioScore {
  int expected = 0;                // primary expectations
  int found = 0;                   // primary expectations some finding matched
  int true_positive_findings = 0;  // findings matching a primary
  std::vector<ExpectedFinding> missed;
  std::vector<Finding> secondary;
  std::vector<Finding> false_positives;
};

bool Matches(const ExpectedFinding& expected, const Finding& finding);

ScenarioScore ScoreFindings(absl::Span<const FaultExpectation> expected,
                            absl::Span<const Finding> open);

// "pfc_storm gpu-003/mlx5_2 [ep:1]" for tables and failure messages.
std::string Describe(const Finding& f);
std::string Describe(const ExpectedFinding& e);

}  // namespace fabricdiag::analysis::scenario
