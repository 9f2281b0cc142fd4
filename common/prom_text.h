// The Prometheus text exposition format (version 0.0.4), written in one
// place: sample values, escaped label values and help texts, series names
// and family headers. Every exposition fabricdiag writes by hand (the
// agent's renderer, the cluster's and the layouts' families) goes through
// these, so that a value or a label reads the same everywhere.
//
//   std::string out;
//   PromWriter w(&out);
//   w.Family("fabricdiag_x_total", "What it counts.", PromType::kCounter);
//   w.Sample({{"node", "gpu-001"}}, 42);   // fabricdiag_x_total{node=...} 42
//
// The agent's renderer prepares series text once and formats only values
// per scrape, with the same pieces (AppendSeries, AppendFamilyHeader,
// FormatValueTo).
//
// Pure functions; PromWriter is not thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace fabricdiag {

// `value` as Prometheus prints a sample value: the shortest text that reads
// back as the same double, in %g style with 16 significant digits as the
// switch to exponent form ("123456789", "0.94", "1e+16", "1e-07",
// "1.8446744073709552e+19"), "NaN", "+Inf", "-Inf".
std::string FormatValue(double value);

// Room FormatValueTo needs: the longest text is 24 bytes
// ("-1.2345678901234567e-308").
inline constexpr size_t kMaxValueTextBytes = 32;

// FormatValue into `out`, which has room for kMaxValueTextBytes; returns the
// length written (no terminating NUL). No allocation.
size_t FormatValueTo(double value, char* out);

namespace internal {
// FormatValue without its shortcut for integers (for tests that hold the
// two equal).
std::string FormatShortest(double value);
size_t FormatShortestTo(double value, char* out);
}  // namespace internal

// The TYPE of a metric family.
enum class PromType { kCounter, kGauge, kUntyped };

// "counter", "gauge", "untyped".
const char* PromTypeName(PromType type);

// Label name -> value, in the order they are printed.
using PromLabels = std::vector<std::pair<std::string, std::string>>;
// The same, borrowed: {{"node", node}, {"device", device}}.
using PromLabel = std::pair<absl::string_view, absl::string_view>;

// Appends `value` with backslash, double quote and newline escaped (a label
// value).
void AppendLabelValue(absl::string_view value, std::string* out);

// Appends `help` with backslash and newline escaped (a HELP text).
void AppendHelpText(absl::string_view help, std::string* out);

// Appends "name{k="v",...}" (no braces without labels), values escaped.
void AppendSeries(absl::string_view name, const PromLabels& labels,
                  std::string* out);
void AppendSeries(absl::string_view name, absl::Span<const PromLabel> labels,
                  std::string* out);

// Appends "# HELP name help\n# TYPE name type\n".
void AppendFamilyHeader(absl::string_view name, absl::string_view help,
                        PromType type, std::string* out);

// Appends families and their samples to a string: each family's HELP and
// TYPE once, then "name{labels} value" lines, labels escaped and values
// formatted by FormatValueTo. Label names are the caller's (constants).
class PromWriter {
 public:
  explicit PromWriter(std::string* out) : out_(out) {}

  // Starts family `name`: its HELP and TYPE lines. The samples that follow
  // are its own.
  void Family(absl::string_view name, absl::string_view help, PromType type);

  // Continues family `name` without a header, for sample lines kept apart
  // from their family's header (and joined under it later).
  void SamplesOf(absl::string_view name);

  // A sample of the current family.
  void Sample(double value) { Sample({}, value); }
  void Sample(absl::Span<const PromLabel> labels, double value);

 private:
  std::string* out_;
  std::string name_;
};

}  // namespace fabricdiag
