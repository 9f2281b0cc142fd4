// The Prometheus text exposition format (version 0.0.4), its low-level
// pieces: sample values, escaped label values and help texts, series names
// and family headers. Every exposition fabricdiag writes by hand goes
// through these, so that a value or a label reads the same everywhere.
//
//   std::string out;
//   AppendFamilyHeader("fabricdiag_x_total", "What it counts.",
//                      PromType::kCounter, &out);
//   AppendSeries("fabricdiag_x_total", {{"node", "gpu-001"}}, &out);
//   out.push_back(' ');
//   char value[kMaxValueTextBytes];
//   out.append(value, FormatValueTo(42, value));
//
// Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"

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

// Appends `value` with backslash, double quote and newline escaped (a label
// value).
void AppendLabelValue(absl::string_view value, std::string* out);

// Appends `help` with backslash and newline escaped (a HELP text).
void AppendHelpText(absl::string_view help, std::string* out);

// Appends "name{k="v",...}" (no braces without labels), values escaped.
void AppendSeries(absl::string_view name, const PromLabels& labels,
                  std::string* out);

// Appends "# HELP name help\n# TYPE name type\n".
void AppendFamilyHeader(absl::string_view name, absl::string_view help,
                        PromType type, std::string* out);

}  // namespace fabricdiag
