// The Markdown form of a job report: what `fabricdiag report` prints by
// default, for a ticket or a chat thread.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cli/findings_table.h"
#include "cli/report.h"
#include "cli/text_output.h"
#include "collector/findings/finding_json.h"

namespace fabricdiag::cli {
namespace {

// Text from the collector as inert Markdown: control characters and line
// breaks cannot start a block, and every character Markdown gives a meaning
// to (emphasis, links, raw HTML, table cells, entities) is
// backslash-escaped, as CommonMark allows for any ASCII punctuation.
std::string Md(absl::string_view text) {
  std::string out;
  for (char c : Printable(text)) {
    switch (c) {
      case '\\':
      case '`':
      case '*':
      case '_':
      case '[':
      case ']':
      case '<':
      case '>':
      case '|':
      case '#':
      case '!':
      case '&':
        out.push_back('\\');
        out.push_back(c);
        break;
      default:
        out.push_back(c);
    }
  }
  return out;
}

std::string OrDash(absl::string_view text) {
  return text.empty() ? std::string("-") : Md(text);
}

std::string Marks(const v1::Finding& f) {
  std::vector<std::string> marks;
  if (f.has_acked())
    marks.push_back(absl::StrCat("acked by ", Md(f.acked().who())));
  if (!f.silenced_by().empty()) {
    marks.push_back(
        absl::StrCat("silenced by ", Md(absl::StrJoin(f.silenced_by(), ", "))));
  }
  return marks.empty() ? std::string("-") : absl::StrJoin(marks, "; ");
}

void Layout(const JobReport& r, std::string* out) {
  absl::StrAppend(out, "## Layout\n\n");
  if (!r.layout.has_value()) {
    absl::StrAppend(out,
                    "The job has no layout now (deleted, or its lease ran "
                    "out); its findings remain.\n\n");
    return;
  }
  const v1::Layout& l = *r.layout;
  const v1::LayoutDeclaration& d = l.declaration();
  absl::StrAppend(out, "| | |\n|---|---|\n");
  absl::StrAppend(out, "| Parallelism | ", OrDash(r.parallelism), " |\n");
  absl::StrAppend(out, "| GPUs per node | ", l.gpus_per_node(), " |\n");
  if (l.has_nvlink_domain()) {
    absl::StrAppend(out, "| NVLink domain | ", l.nvlink_domain(), " GPUs |\n");
  }
  absl::StrAppend(out, "| Hosts (", l.hosts_size(), ") | ",
                  Md(absl::StrJoin(l.hosts(), ", ")), " |\n");
  absl::StrAppend(out, "| Rails | ", OrDash(absl::StrJoin(l.rails(), ", ")),
                  " |\n");
  absl::StrAppend(out, "| Declared | ", ReportTime(d.declared_unix_nanos()),
                  " by ", OrDash(d.owner()), " via ", OrDash(d.source()),
                  ", revision ", d.revision(), " |\n");
  absl::StrAppend(
      out, "| Lease | ",
      d.expires_unix_nanos() == 0
          ? std::string("none")
          : absl::StrCat("expires ", ReportTime(d.expires_unix_nanos())),
      " |\n\n");
  if (!r.dimensions.empty()) {
    absl::StrAppend(out, "| Dimension | Degree | Groups |\n|---|---|---|\n");
    for (const ReportDimension& dim : r.dimensions) {
      absl::StrAppend(out, "| ", dim.dim, " | ", dim.degree, " | ", dim.groups,
                      " |\n");
    }
    absl::StrAppend(out, "\n");
  }
}

void Groups(const JobReport& r, std::string* out) {
  if (r.groups.empty()) return;
  absl::StrAppend(out, "### Groups the findings name\n\n");
  for (const ReportGroup& g : r.groups) {
    absl::StrAppend(out, "- ", Md(g.name), ": ",
                    g.hosts.empty() ? std::string("not in the layout")
                                    : Md(absl::StrJoin(g.hosts, ", ")),
                    "\n");
  }
  absl::StrAppend(out, "\n");
}

void Rates(const JobReport& r, std::string* out) {
  absl::StrAppend(out, "## Per-group rates\n\n");
  if (r.group_rates.has_value()) {
    absl::StrAppend(out, RatesSummary(*r.group_rates), "\n\n");
  }
  // The note may quote the collector's error.
  if (!r.rates_note.empty()) absl::StrAppend(out, Md(r.rates_note), "\n\n");
  if (!r.group_rates.has_value()) return;
  for (const DimensionRates& d : r.group_rates->dimensions) {
    absl::StrAppend(out, "### ", d.dim, " (", d.groups, " groups, ", d.far_off,
                    " far off)\n\n",
                    "| Group | NICs reporting | Mean | Peak | Expected | |\n"
                    "|---|---|---|---|---|---|\n");
    for (const GroupRate& g : d.shown) {
      const std::string far = FarOffText(g);
      absl::StrAppend(out, "| ", Md(g.group), " | ", g.reporting, "/", g.nics,
                      " | ", FormatGbps(g.mean_gbps), " | ",
                      FormatGbps(g.peak_gbps), " | ",
                      FormatGbps(g.expected_gbps), " | ",
                      far.empty() ? "" : absl::StrCat("**", far, "**"), " |\n");
    }
    if (d.shown.size() < d.groups) {
      absl::StrAppend(out, "\n", d.groups - d.shown.size(),
                      " more groups not shown.\n");
    }
    absl::StrAppend(out, "\n");
  }
}

void Timeline(const JobReport& r, std::string* out) {
  absl::StrAppend(out, "## Timeline\n\n");
  if (r.findings.empty()) {
    absl::StrAppend(out, "No finding touched the job in this range.\n\n");
    return;
  }
  absl::StrAppend(out,
                  "| Finding | Kind | Severity | Opened | Last seen | "
                  "Resolved | Open for | Marks |\n"
                  "|---|---|---|---|---|---|---|---|\n");
  for (const ReportFinding& rf : r.findings) {
    const v1::Finding& f = rf.finding;
    absl::StrAppend(
        out, "| ", Md(f.id()), " | ", Md(f.kind()), " | ",
        collector::SeverityName(f.severity()), " | ",
        ReportTime(f.first_seen_unix_nanos()), " | ",
        ReportTime(f.last_seen_unix_nanos()), " | ",
        f.resolved_unix_nanos() == 0 ? std::string("active")
                                     : ReportTime(f.resolved_unix_nanos()),
        " | ", ReportDuration(rf.duration_seconds), " | ", Marks(f), " |\n");
  }
  absl::StrAppend(out, "\n");
}

void Finding(const ReportFinding& rf, std::string* out) {
  const v1::Finding& f = rf.finding;
  absl::StrAppend(out, "### ", Md(f.id()), " ", Md(f.kind()), " (",
                  collector::SeverityName(f.severity()), ", ",
                  collector::StateName(f.state()), ")\n\n");
  absl::StrAppend(out, Md(f.summary()), "\n\n");
  absl::StrAppend(out, "- Node: ", OrDash(f.node()));
  if (f.nodes_size() > 1) {
    absl::StrAppend(out, " (involved: ", Md(absl::StrJoin(f.nodes(), ", ")),
                    ")");
  }
  absl::StrAppend(out, "; device: ", OrDash(f.device()),
                  "; group: ", OrDash(f.group()), "\n");
  absl::StrAppend(out, "- Opened ", ReportTime(f.first_seen_unix_nanos()),
                  ", last seen ", ReportTime(f.last_seen_unix_nanos()));
  if (f.resolved_unix_nanos() != 0) {
    absl::StrAppend(out, ", resolved ", ReportTime(f.resolved_unix_nanos()),
                    " after ", ReportDuration(rf.duration_seconds), "\n");
  } else {
    absl::StrAppend(out, ", active for ", ReportDuration(rf.duration_seconds),
                    "\n");
  }
  if (f.has_acked()) {
    absl::StrAppend(out, "- Acknowledged by ", OrDash(f.acked().who()), " at ",
                    ReportTime(f.acked().at_unix_nanos()));
    if (!f.acked().comment().empty()) {
      absl::StrAppend(out, ": ", Md(f.acked().comment()));
    }
    absl::StrAppend(out, "\n");
  }
  if (!f.silenced_by().empty()) {
    absl::StrAppend(out, "- Silenced by ",
                    Md(absl::StrJoin(f.silenced_by(), ", ")), "\n");
  }
  const std::vector<std::string> evidence = EvidenceLines(f);
  if (!evidence.empty()) {
    absl::StrAppend(out, "- Evidence:\n");
    for (const std::string& e : evidence) {
      absl::StrAppend(out, "  - ", Md(e), "\n");
    }
  }
  absl::StrAppend(out, "\n");
}

void Silences(const JobReport& r, std::string* out) {
  if (r.silences.empty()) return;
  absl::StrAppend(out,
                  "## Silences\n\n| ID | Matchers | Who | Created | Until | "
                  "Comment |\n|---|---|---|---|---|---|\n");
  for (const v1::Silence& s : r.silences) {
    absl::StrAppend(
        out, "| ", Md(s.id()), " | ", Md(SilenceMatchersText(s)), " | ",
        OrDash(s.who()), " | ", ReportTime(s.created_unix_nanos()), " | ",
        ReportTime(s.ends_unix_nanos()), s.expired() ? " (expired)" : "", " | ",
        OrDash(s.comment()), " |\n");
  }
  absl::StrAppend(out, "\n");
}

}  // namespace

std::string RenderReportMarkdown(const JobReport& r) {
  std::string out;
  absl::StrAppend(&out, "# Report: job ", Md(r.job), "\n\n");
  absl::StrAppend(&out, "Generated ", ReportTime(r.generated_unix_nanos),
                  " from collector ", Md(r.collector), ". Range: ",
                  r.since_unix_nanos == 0
                      ? std::string("the job's whole recorded history")
                      : absl::StrCat("from ", ReportTime(r.since_unix_nanos)),
                  " to ", ReportTime(r.until_unix_nanos),
                  r.until_given ? "" : " (now)", ".\n\n");
  if (r.staleness.stale()) {
    absl::StrAppend(&out,
                    "**Stale:** this collector had not seen the "
                    "cluster's findings for ",
                    static_cast<int64_t>(r.staleness.age_seconds()),
                    " s; the report may be out of date.\n\n");
  }
  absl::StrAppend(&out, "**", r.findings.size(), " finding(s)**, ", r.active,
                  " still active.\n\n");
  Layout(r, &out);
  Groups(r, &out);
  Rates(r, &out);
  Timeline(r, &out);
  if (!r.findings.empty()) {
    absl::StrAppend(&out, "## Findings\n\n");
    for (const ReportFinding& rf : r.findings) Finding(rf, &out);
  }
  Silences(r, &out);
  if (!r.advice.empty()) {
    absl::StrAppend(&out, "## What to do\n\n");
    for (const ReportAdvice& a : r.advice) {
      // The runbook's own Markdown (docs/findings.md), not the collector's.
      absl::StrAppend(&out, "### ", Md(a.kind), "\n\n",
                      a.what_to_do.empty()
                          ? std::string("See docs/findings.md.")
                          : a.what_to_do,
                      "\n\n");
    }
  }
  return out;
}

}  // namespace fabricdiag::cli
