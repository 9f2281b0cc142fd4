// `promtool check metrics`, the reference for the Prometheus text format and
// its naming lint, for tests of what our exporters write.
//
//   if (!PromtoolInstalled()) GTEST_SKIP() << "promtool not installed";
//   std::string lint;
//   EXPECT_TRUE(PromtoolAccepts(text, &lint)) << lint;
//
// Debian ships promtool in the `prometheus` package. Thread-safe (each call
// writes its own temporary file).
#pragma once

#include <string>

namespace fabricdiag::testing {

bool PromtoolInstalled();

// True when promtool parses `exposition` and finds nothing to lint; its
// output (errors and lint findings) goes to *output.
bool PromtoolAccepts(const std::string& exposition, std::string* output);

}  // namespace fabricdiag::testing
