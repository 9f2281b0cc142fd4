#include "cli/findings_table.h"

#include <algorithm>
#include <string>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cli/text_output.h"
#include "collector/findings/finding_json.h"

namespace fabricdiag::cli {

void SortFindings(std::vector<v1::Finding>* findings) {
  std::stable_sort(findings->begin(), findings->end(),
                   [](const v1::Finding& a, const v1::Finding& b) {
                     return std::make_tuple(-static_cast<int>(a.severity()),
                                            a.first_seen_unix_nanos(), a.id()) <
                            std::make_tuple(-static_cast<int>(b.severity()),
                                            b.first_seen_unix_nanos(), b.id());
                   });
}

std::string MarkPrefix(const v1::Finding& finding) {
  std::string prefix;
  if (finding.has_acked()) {
    absl::StrAppend(&prefix, "[acked by ", finding.acked().who(), "] ");
  }
  if (!finding.silenced_by().empty()) {
    absl::StrAppend(&prefix, "[silenced ",
                    absl::StrJoin(finding.silenced_by(), ","), "] ");
  }
  return prefix;
}

std::string SilenceMatchersText(const v1::Silence& silence) {
  std::vector<std::string> parts;
  for (const v1::SilenceMatcher& m : silence.matchers()) {
    parts.push_back(absl::StrCat(m.key(), "=", m.value()));
  }
  return absl::StrJoin(parts, ",");
}

void PrintFindingsTable(const std::vector<v1::Finding>& findings,
                        bool with_state, const CommandEnv& env) {
  std::vector<std::string> header = {"SEVERITY"};
  if (with_state) header.push_back("STATE");
  for (const char* h :
       {"KIND", "JOB", "GROUP", "NODE", "DEVICE", "AGE", "SUMMARY"}) {
    header.push_back(h);
  }
  Table table(std::move(header));
  const absl::Time now = env.clock->Now();
  for (const v1::Finding& f : findings) {
    std::vector<std::string> row = {
        std::string(collector::SeverityName(f.severity()))};
    if (with_state) row.push_back(std::string(collector::StateName(f.state())));
    row.push_back(f.kind());
    row.push_back(f.job());
    row.push_back(f.group());
    row.push_back(f.node());
    row.push_back(f.device());
    row.push_back(
        f.first_seen_unix_nanos() == 0
            ? std::string()
            : collector::FormatAge(
                  now - absl::FromUnixNanos(f.first_seen_unix_nanos())));
    row.push_back(absl::StrCat(MarkPrefix(f), f.summary()));
    table.AddRow(std::move(row));
  }
  table.Print(*env.out);
}

}  // namespace fabricdiag::cli
