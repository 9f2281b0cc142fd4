// The counter table as Markdown, for docs/counters.md: one table per family,
// one row per spelling, with its driver, meaning, direction, unit, scale and
// width. counter_reference_test.cc checks that the docs hold exactly this
// text between the `<!-- counter-table:begin -->` and
// `<!-- counter-table:end -->` markers, and rewrites it there when run with
// FABRICDIAG_UPDATE_DOCS=1.
//
//   std::string md = RenderCounterReference();
//
// Pure; thread-safe.
#pragma once

#include <string>

namespace fabricdiag::counters {

std::string RenderCounterReference();

}  // namespace fabricdiag::counters
