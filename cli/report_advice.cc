#include "cli/report_advice.h"

#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace fabricdiag::cli {
namespace {

constexpr absl::string_view kMarker = "**What to do.**";

// A line that ends a kind's section: "# ", "## " or a "---" rule.
bool EndsSection(absl::string_view line) {
  return absl::StartsWith(line, "# ") || absl::StartsWith(line, "## ") ||
         absl::StripTrailingAsciiWhitespace(line) == "---";
}

}  // namespace

std::string WhatToDoIn(absl::string_view markdown, absl::string_view kind) {
  const std::vector<absl::string_view> lines = absl::StrSplit(markdown, '\n');
  size_t i = 0;
  while (i < lines.size() && absl::StripTrailingAsciiWhitespace(lines[i]) !=
                                 absl::StrCat("## ", kind)) {
    ++i;
  }
  if (i == lines.size()) return "";
  for (++i; i < lines.size() && !EndsSection(lines[i]); ++i) {
    if (!absl::StartsWith(lines[i], kMarker)) continue;
    std::vector<absl::string_view> advice = {
        absl::StripLeadingAsciiWhitespace(lines[i].substr(kMarker.size()))};
    for (++i; i < lines.size() && !EndsSection(lines[i]); ++i) {
      advice.push_back(absl::StripTrailingAsciiWhitespace(lines[i]));
    }
    while (!advice.empty() && advice.back().empty()) advice.pop_back();
    return absl::StrJoin(advice, "\n");
  }
  return "";
}

std::string WhatToDo(absl::string_view kind) {
  return WhatToDoIn(FindingsDocMarkdown(), kind);
}

}  // namespace fabricdiag::cli
