// Parser for the Prometheus text exposition format (version 0.0.4), enough
// to compare what two exporters serve: one ExpositionSample per sample line.
//
// Handled: `# HELP` / `# TYPE` and other comment lines (skipped), blank
// lines, metric names without labels, label values with the escapes \\ \"
// and \n, an optional timestamp after the value, and the values Go and
// prometheus-cpp print (1.234e+12, NaN, +Inf, -Inf).
//
//   absl::StatusOr<std::vector<ExpositionSample>> samples =
//       ParseExpositionText("m{device=\"mlx5_0\",port=\"1\"} 4.2e+10\n");
//   // (*samples)[0].labels.at("device") == "mlx5_0"
//
// Pure function; thread-safe.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace fabricdiag::testing {

struct ExpositionSample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};

// kInvalidArgument naming the 1-based line number of the first malformed
// line.
absl::StatusOr<std::vector<ExpositionSample>> ParseExpositionText(
    absl::string_view text);

}  // namespace fabricdiag::testing
