// What to do about each finding kind, as docs/findings.md (the runbook)
// says it: the "**What to do.**" paragraph of the kind's section and what
// follows it up to the section's end. The doc is compiled into the binary
// (cli/findings_doc.cmake), so the runbook stays the one copy of the text.
//
//   std::string advice = WhatToDo("pfc_storm");
//   // "Act on the source, not on the victims: they recover when it stops.
//   //
//   //  1. Source on a host NIC: ..."
//
// Markdown as the doc writes it. Pure functions; thread-safe.
#pragma once

#include <string>

#include "absl/strings/string_view.h"

namespace fabricdiag::cli {

// The text of docs/findings.md this binary was built with.
absl::string_view FindingsDocMarkdown();

// The advice for `kind` in `markdown`: from the line that starts with
// "**What to do.**" (the marker removed) in the section headed
// "## <kind>", to the next "---" line or heading of level 1 or 2,
// surrounding blank lines trimmed. "" when the section or the paragraph is
// missing.
std::string WhatToDoIn(absl::string_view markdown, absl::string_view kind);

// WhatToDoIn(FindingsDocMarkdown(), kind).
std::string WhatToDo(absl::string_view kind);

}  // namespace fabricdiag::cli
