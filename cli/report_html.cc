// The HTML form of a job report: one file that opens anywhere, offline. The
// CSS and the timeline's SVG are inline; there is no script and nothing is
// fetched (the Content-Security-Policy says so to the browser too). Every
// string from the collector is escaped.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "cli/findings_table.h"
#include "cli/report.h"
#include "cli/text_output.h"
#include "collector/findings/finding_json.h"

namespace fabricdiag::cli {
namespace {

constexpr char kStyle[] = R"css(
body{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:64em;
color:#1b1f24;padding:0 1em}
h1{font-size:1.5em}h2{font-size:1.2em;border-bottom:1px solid #d0d7de;
margin-top:1.6em}h3{font-size:1.05em}
table{border-collapse:collapse;margin:.5em 0}
td,th{border:1px solid #d0d7de;padding:.2em .5em;text-align:left;
vertical-align:top}
th{background:#f3f5f7}
code{background:#f3f5f7;padding:0 .2em;border-radius:3px}
.sev{font-weight:600}.critical{color:#b3261e}.warning{color:#8a5a00}
.info{color:#1f5fa8}.note{color:#57606a}.stale{background:#fff4ce;
padding:.5em}
.advice{white-space:pre-line}
svg text{font:11px system-ui,sans-serif;fill:#1b1f24}
svg .bar.critical{fill:#d93025}svg .bar.warning{fill:#e8a200}
svg .bar.info{fill:#4a86c5}svg .bar.unknown{fill:#8c959f}
svg .axis{stroke:#8c959f}svg .ack{fill:#1b1f24}
svg .peak{fill:#d0d7de}svg .mean{fill:#4a86c5}svg .mean.far{fill:#d93025}
svg .expected{stroke:#1b1f24;stroke-width:2}
td.far{color:#b3261e;font-weight:600}
)css";

// Text from the collector, safe in element content and quoted attribute
// values; control characters as '?'.
std::string Html(absl::string_view text) {
  std::string out;
  for (char c : Printable(text)) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out.push_back(c);
    }
  }
  return out;
}

// The CSS class of a severity: one of a fixed set, never collector text.
std::string SeverityClass(v1::Severity severity) {
  return std::string(collector::SeverityName(severity));
}

// The runbook's Markdown (docs/findings.md) as HTML: escaped, `code` spans
// and **strong** kept, paragraphs split on blank lines; list items keep
// their line breaks (white-space: pre-line).
std::string AdviceHtml(absl::string_view markdown) {
  std::string out;
  for (absl::string_view paragraph :
       absl::StrSplit(markdown, "\n\n", absl::SkipWhitespace())) {
    std::string escaped = Html(paragraph);
    std::string html;
    bool in_code = false;
    bool in_strong = false;
    for (size_t i = 0; i < escaped.size(); ++i) {
      if (escaped[i] == '`') {
        html += in_code ? "</code>" : "<code>";
        in_code = !in_code;
      } else if (!in_code && escaped.compare(i, 2, "**") == 0) {
        html += in_strong ? "</strong>" : "<strong>";
        in_strong = !in_strong;
        ++i;
      } else {
        html.push_back(escaped[i]);
      }
    }
    if (in_code) html += "</code>";
    if (in_strong) html += "</strong>";
    absl::StrAppend(&out, "<p class=\"advice\">", html, "</p>\n");
  }
  return out;
}

// One row per finding: a bar from opened to resolved (or the range's end),
// clipped to the range, a dot where it was acknowledged.
std::string TimelineSvg(const JobReport& r) {
  constexpr int kLabel = 120;
  constexpr int kPlot = 640;
  constexpr int kRow = 20;
  constexpr int kTop = 8;
  const int rows = static_cast<int>(std::max<size_t>(1, r.findings.size()));
  const int height = kTop + rows * kRow + 24;
  int64_t t0 = r.since_unix_nanos;
  if (t0 == 0) {
    t0 = r.until_unix_nanos;
    for (const ReportFinding& rf : r.findings) {
      t0 = std::min(t0, rf.finding.first_seen_unix_nanos());
    }
  }
  const int64_t t1 = std::max(r.until_unix_nanos, t0 + 1);
  auto x = [&](int64_t t) {
    const double frac = static_cast<double>(std::clamp(t, t0, t1) - t0) /
                        static_cast<double>(t1 - t0);
    return kLabel + static_cast<int>(frac * kPlot);
  };
  std::string svg = absl::StrCat(
      "<svg id=\"timeline\" xmlns=\"http://www.w3.org/2000/svg\" width=\"",
      kLabel + kPlot + 10, "\" height=\"", height, "\" viewBox=\"0 0 ",
      kLabel + kPlot + 10, " ", height,
      "\" role=\"img\" aria-label=\"findings timeline\">\n");
  if (r.findings.empty()) {
    absl::StrAppend(&svg, "<text x=\"", kLabel, "\" y=\"", kTop + 14,
                    "\">no findings in this range</text>\n");
  }
  int y = kTop;
  for (const ReportFinding& rf : r.findings) {
    const v1::Finding& f = rf.finding;
    const int64_t end =
        f.resolved_unix_nanos() != 0 ? f.resolved_unix_nanos() : t1;
    const int x0 = x(f.first_seen_unix_nanos());
    const int x1 = std::max(x(end), x0 + 2);
    absl::StrAppend(&svg, "<g class=\"row\" data-finding=\"", Html(f.id()),
                    "\"><text x=\"0\" y=\"", y + 13, "\">", Html(f.id()),
                    "</text><rect class=\"bar ", SeverityClass(f.severity()),
                    "\" x=\"", x0, "\" y=\"", y + 3, "\" width=\"", x1 - x0,
                    "\" height=\"", kRow - 6, "\"><title>", Html(f.kind()), " ",
                    ReportTime(f.first_seen_unix_nanos()), " to ",
                    f.resolved_unix_nanos() == 0
                        ? std::string("now")
                        : ReportTime(f.resolved_unix_nanos()),
                    "</title></rect>");
    if (f.has_acked() && f.acked().at_unix_nanos() != 0) {
      absl::StrAppend(&svg, "<circle class=\"ack\" cx=\"",
                      x(f.acked().at_unix_nanos()), "\" cy=\"", y + kRow / 2,
                      "\" r=\"3\"><title>acked by ", Html(f.acked().who()),
                      "</title></circle>");
    }
    absl::StrAppend(&svg, "</g>\n");
    y += kRow;
  }
  const int axis = kTop + rows * kRow + 4;
  absl::StrAppend(&svg, "<line class=\"axis\" x1=\"", kLabel, "\" y1=\"", axis,
                  "\" x2=\"", kLabel + kPlot, "\" y2=\"", axis, "\"/>\n",
                  "<text x=\"", kLabel, "\" y=\"", axis + 14, "\">",
                  ReportTime(t0), "</text>\n<text x=\"", kLabel + kPlot,
                  "\" y=\"", axis + 14, "\" text-anchor=\"end\">",
                  ReportTime(t1), "</text>\n</svg>\n");
  return svg;
}

void Row(absl::string_view header, absl::string_view html_value,
         std::string* out) {
  absl::StrAppend(out, "<tr><th>", header, "</th><td>", html_value,
                  "</td></tr>\n");
}

void Layout(const JobReport& r, std::string* out) {
  absl::StrAppend(out, "<h2>Layout</h2>\n");
  if (!r.layout.has_value()) {
    absl::StrAppend(out, "<p class=\"note\">", kNoLayoutText, "</p>\n");
    return;
  }
  const v1::Layout& l = *r.layout;
  const v1::LayoutDeclaration& d = l.declaration();
  absl::StrAppend(out, "<table id=\"layout\">\n");
  Row("Parallelism", Html(r.parallelism), out);
  Row("GPUs per node", absl::StrCat(l.gpus_per_node()), out);
  if (l.has_nvlink_domain()) {
    Row("NVLink domain", absl::StrCat(l.nvlink_domain(), " GPUs"), out);
  }
  Row(absl::StrCat("Hosts (", l.hosts_size(), ")"),
      Html(absl::StrJoin(l.hosts(), ", ")), out);
  Row("Rails", Html(absl::StrJoin(l.rails(), ", ")), out);
  Row("Declared",
      absl::StrCat(ReportTime(d.declared_unix_nanos()), " by ",
                   Html(d.owner().empty() ? "-" : d.owner()), " via ",
                   Html(d.source().empty() ? "-" : d.source()), ", revision ",
                   d.revision()),
      out);
  Row("Lease", LeaseText(d), out);
  absl::StrAppend(out, "</table>\n");
  if (!r.dimensions.empty()) {
    absl::StrAppend(out,
                    "<table><tr><th>Dimension</th><th>Degree</th>"
                    "<th>Groups</th></tr>\n");
    for (const ReportDimension& dim : r.dimensions) {
      absl::StrAppend(out, "<tr><td>", Html(dim.dim), "</td><td>", dim.degree,
                      "</td><td>", dim.groups, "</td></tr>\n");
    }
    absl::StrAppend(out, "</table>\n");
  }
  if (!r.groups.empty()) {
    absl::StrAppend(out, "<h3>Groups the findings name</h3>\n<ul>\n");
    for (const ReportGroup& g : r.groups) {
      absl::StrAppend(out, "<li>", Html(g.name), ": ",
                      g.hosts.empty() ? std::string("not in the layout")
                                      : Html(absl::StrJoin(g.hosts, ", ")),
                      "</li>\n");
    }
    absl::StrAppend(out, "</ul>\n");
  }
}

void Finding(const ReportFinding& rf, std::string* out) {
  const v1::Finding& f = rf.finding;
  const std::string sev = SeverityClass(f.severity());
  absl::StrAppend(out, "<section class=\"finding\" id=\"", Html(f.id()),
                  "\">\n<h3>", Html(f.id()), " ", Html(f.kind()),
                  " <span class=\"sev ", sev, "\">", sev, "</span> ",
                  collector::StateName(f.state()), "</h3>\n<p>",
                  Html(f.summary()), "</p>\n<table>\n");
  std::string where = Html(f.node().empty() ? "-" : f.node());
  if (f.nodes_size() > 1) {
    absl::StrAppend(&where,
                    " (involved: ", Html(absl::StrJoin(f.nodes(), ", ")), ")");
  }
  Row("Node", where, out);
  Row("Device", Html(f.device().empty() ? "-" : f.device()), out);
  Row("Group", Html(f.group().empty() ? "-" : f.group()), out);
  Row("Opened", ReportTime(f.first_seen_unix_nanos()), out);
  Row("Last seen", ReportTime(f.last_seen_unix_nanos()), out);
  Row("Resolved",
      f.resolved_unix_nanos() == 0 ? std::string("active")
                                   : ReportTime(f.resolved_unix_nanos()),
      out);
  Row("Open for", ReportDuration(rf.duration_seconds), out);
  if (f.has_acked()) {
    Row("Acknowledged",
        absl::StrCat("by ", Html(f.acked().who()), " at ",
                     ReportTime(f.acked().at_unix_nanos()),
                     f.acked().comment().empty() ? "" : ": ",
                     Html(f.acked().comment())),
        out);
  }
  if (!f.silenced_by().empty()) {
    Row("Silenced by", Html(absl::StrJoin(f.silenced_by(), ", ")), out);
  }
  const std::vector<std::string> evidence = EvidenceLines(f);
  if (!evidence.empty()) {
    std::vector<std::string> escaped;
    escaped.reserve(evidence.size());
    for (const std::string& e : evidence) escaped.push_back(Html(e));
    Row("Evidence",
        absl::StrCat("<code>", absl::StrJoin(escaped, "</code><br><code>"),
                     "</code>"),
        out);
  }
  absl::StrAppend(out, "</table>\n</section>\n");
}

// A group's mean as a bar over its peak, the expected rate as a tick; all
// scaled to `top` Gb/s.
std::string RateBar(const GroupRate& g, double top) {
  constexpr int kWidth = 200;
  constexpr int kHeight = 14;
  auto x = [&](std::optional<double> gbps) {
    if (!gbps.has_value() || top <= 0) return 0;
    return static_cast<int>(std::lround(std::min(*gbps / top, 1.0) * kWidth));
  };
  std::string svg = absl::StrCat("<svg class=\"rate\" width=\"", kWidth,
                                 "\" height=\"", kHeight, "\">");
  absl::StrAppend(&svg, "<rect class=\"peak\" x=\"0\" y=\"2\" width=\"",
                  x(g.peak_gbps), "\" height=\"10\"/>", "<rect class=\"mean",
                  g.far_off ? " far" : "", "\" x=\"0\" y=\"2\" width=\"",
                  x(g.mean_gbps), "\" height=\"10\"/>");
  if (g.expected_gbps.has_value()) {
    const int e = x(g.expected_gbps);
    absl::StrAppend(&svg, "<line class=\"expected\" x1=\"", e,
                    "\" y1=\"0\" x2=\"", e, "\" y2=\"", kHeight, "\"/>");
  }
  absl::StrAppend(&svg, "</svg>");
  return svg;
}

void Rates(const JobReport& r, std::string* out) {
  absl::StrAppend(out, "<h2>Per-group rates</h2>\n");
  if (r.group_rates.has_value()) {
    absl::StrAppend(out, "<p>", RatesSummary(*r.group_rates),
                    " Bars: mean over peak (grey), the tick what is "
                    "expected.</p>\n");
  }
  if (!r.rates_note.empty()) {
    absl::StrAppend(out, "<p class=\"note\" id=\"rates-note\">",
                    Html(r.rates_note), "</p>\n");
  }
  if (!r.group_rates.has_value()) return;
  for (const DimensionRates& d : r.group_rates->dimensions) {
    double top = 0;
    for (const GroupRate& g : d.shown) {
      top = std::max({top, g.peak_gbps.value_or(0), g.mean_gbps.value_or(0),
                      g.expected_gbps.value_or(0)});
    }
    absl::StrAppend(out, "<h3>", Html(d.dim), " (", d.groups, " groups, ",
                    d.far_off, " far off)</h3>\n",
                    "<table class=\"rates\" data-dim=\"", Html(d.dim),
                    "\"><tr><th>Group</th><th>NICs reporting</th><th>Mean "
                    "Gb/s</th><th>Peak Gb/s</th><th>Expected Gb/s</th><th>"
                    "</th><th></th></tr>\n");
    for (const GroupRate& g : d.shown) {
      absl::StrAppend(out, "<tr data-group=\"", Html(g.group), "\"><td>",
                      Html(g.group), "</td><td>", g.reporting, "/", g.nics,
                      "</td><td>", FormatGbps(g.mean_gbps), "</td><td>",
                      FormatGbps(g.peak_gbps), "</td><td>",
                      FormatGbps(g.expected_gbps), "</td><td>", RateBar(g, top),
                      "</td><td", g.far_off ? " class=\"far\"" : "", ">",
                      FarOffText(g), "</td></tr>\n");
    }
    absl::StrAppend(out, "</table>\n");
    if (d.shown.size() < d.groups) {
      absl::StrAppend(out, "<p class=\"note\">", d.groups - d.shown.size(),
                      " more groups not shown.</p>\n");
    }
  }
}

}  // namespace

std::string RenderReportHtml(const JobReport& r) {
  std::string out = absl::StrCat(
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      // Nothing to fetch, nothing to run: a report is a document.
      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src "
      "'none'; style-src 'unsafe-inline'; img-src data:\">\n"
      "<title>Report: job ",
      Html(r.job), "</title>\n<style>", kStyle, "</style>\n</head>\n<body>\n");
  absl::StrAppend(&out, "<h1>Report: job ", Html(r.job), "</h1>\n<p>Generated ",
                  ReportTime(r.generated_unix_nanos), " from collector ",
                  Html(r.collector), ". Range: ", RangeText(r), ".</p>\n");
  if (r.staleness.stale()) {
    absl::StrAppend(&out,
                    "<p class=\"stale\">Stale: this collector had not seen "
                    "the cluster's findings for ",
                    static_cast<int64_t>(r.staleness.age_seconds()),
                    " s; the report may be out of date.</p>\n");
  }
  absl::StrAppend(&out, "<p><strong>", r.findings.size(),
                  " finding(s)</strong>, ", r.active, " still active.</p>\n");
  Layout(r, &out);
  Rates(r, &out);
  absl::StrAppend(&out, "<h2>Timeline</h2>\n", TimelineSvg(r));
  if (!r.findings.empty()) {
    absl::StrAppend(&out, "<h2>Findings</h2>\n");
    for (const ReportFinding& rf : r.findings) Finding(rf, &out);
  }
  if (!r.silences.empty()) {
    absl::StrAppend(&out,
                    "<h2>Silences</h2>\n<table><tr><th>ID</th><th>Matchers"
                    "</th><th>Who</th><th>Created</th><th>Until</th>"
                    "<th>Comment</th></tr>\n");
    for (const v1::Silence& s : r.silences) {
      absl::StrAppend(&out, "<tr><td>", Html(s.id()), "</td><td>",
                      Html(SilenceMatchersText(s)), "</td><td>", Html(s.who()),
                      "</td><td>", ReportTime(s.created_unix_nanos()),
                      "</td><td>", ReportTime(s.ends_unix_nanos()),
                      s.expired() ? " (expired)" : "", "</td><td>",
                      Html(s.comment()), "</td></tr>\n");
    }
    absl::StrAppend(&out, "</table>\n");
  }
  if (!r.advice.empty()) {
    absl::StrAppend(&out, "<h2>What to do</h2>\n");
    for (const ReportAdvice& a : r.advice) {
      absl::StrAppend(&out, "<h3>", Html(a.kind), "</h3>\n",
                      a.what_to_do.empty()
                          ? std::string("<p>See docs/findings.md.</p>\n")
                          : AdviceHtml(a.what_to_do));
    }
  }
  absl::StrAppend(&out, "</body>\n</html>\n");
  return out;
}

}  // namespace fabricdiag::cli
