// The incident hand-over report of one job (`fabricdiag report`,
// docs/cli.md "Reports"): the job's layout as declared, every finding that
// touched the job in a time range with its timeline, evidence and marks,
// each group's rates against the plan (cli/report_rates.h), and what to do
// per kind. What the collector answered is gathered into a
// ReportInput (cli/report_command.cc); BuildReport derives what every format
// shows; one renderer per format writes it:
//
//   JobReport report = BuildReport(input);
//   std::string md = RenderReportMarkdown(report);    // cli/report_markdown.cc
//   std::string html = RenderReportHtml(report);      // cli/report_html.cc
//   std::string json = RenderReportJson(report);      // cli/report_json.cc
//
// Renderers are pure (same report, same bytes) and treat every string from
// the collector as hostile: the HTML escapes it, the Markdown keeps it from
// breaking out of its table cell or code span. Thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "cli/report_rates.h"
#include "proto/collector.pb.h"
#include "proto/layout.pb.h"

namespace fabricdiag::cli {

enum class ReportFormat { kMarkdown, kHtml, kJson };

// "md" (also ""), "html", "json"; InvalidArgument naming --format otherwise.
absl::StatusOr<ReportFormat> ParseReportFormat(absl::string_view text);

// What the collector answered for the report.
struct ReportInput {
  std::string job;
  std::string collector;  // the address that answered
  int64_t generated_unix_nanos = 0;
  // The range asked for; 0: unbounded (the job's whole recorded history,
  // up to now).
  int64_t since_unix_nanos = 0;
  int64_t until_unix_nanos = 0;
  // Unset when the job has no layout now (deleted, or its lease ran out),
  // yet findings name it.
  std::optional<v1::Layout> layout;
  std::string parallelism;  // LayoutSummary.parallelism: "tp=8 pp=2 dp=4"
  std::vector<v1::Finding> findings;  // any order
  // Every silence the collector lists; the report shows those that mark
  // one of `findings`.
  std::vector<v1::Silence> silences;
  v1::FindingsStaleness staleness;
  // The rates of the layout's NICs (LayoutNics) as GetSeries answered.
  std::vector<NicRates> nic_rates;
  // Why the rates were not read (the range is older than the collector
  // serves, or it failed); "" when they were.
  std::string rates_unavailable;
  // In a cluster, what of the rates of nodes that stream to other
  // collectors could not be read, and why; "" when nothing.
  std::string rates_elsewhere;
};

// One parallelism dimension of the layout: its groups and their size.
struct ReportDimension {
  std::string dim;  // "tp", "pp", "dp", "cp", "ep", ...
  uint32_t degree = 0;
  uint32_t groups = 0;
};

// A group that a finding names ("tp:3"), with the hosts of its ranks.
struct ReportGroup {
  std::string name;
  std::vector<std::string> hosts;  // empty: the layout does not have it
};

struct ReportFinding {
  v1::Finding finding;
  // How long it was open (to its resolution, or to the report's end while
  // active).
  int64_t duration_seconds = 0;
};

// A finding kind of the report and the runbook's advice for it.
struct ReportAdvice {
  std::string kind;
  std::string what_to_do;  // Markdown from docs/findings.md; "" if none
};

struct JobReport {
  std::string job;
  std::string collector;
  int64_t generated_unix_nanos = 0;
  int64_t since_unix_nanos = 0;  // 0: the job's whole recorded history
  // The range's end: until, or generated when none was asked.
  int64_t until_unix_nanos = 0;
  bool until_given = false;
  std::optional<v1::Layout> layout;
  std::string parallelism;
  // Those of degree > 1 (tp, pp, dp, cp, ep); empty without a layout.
  std::vector<ReportDimension> dimensions;
  std::vector<ReportGroup> groups;      // those the findings name
  std::vector<ReportFinding> findings;  // oldest first, then by id
  std::vector<v1::Silence> silences;    // those marking a finding
  std::vector<ReportAdvice> advice;     // one per kind, by kind
  int active = 0;                       // findings still active
  v1::FindingsStaleness staleness;
  // Per parallel dimension, its groups' rates against the plan; unset when
  // there are none, and rates_note says why.
  std::optional<GroupRates> group_rates;
  // What the rates leave out ("" when they cover the range).
  std::string rates_note;
};

JobReport BuildReport(const ReportInput& input);

std::string RenderReportMarkdown(const JobReport& report);
// A standalone document: inline CSS, an inline SVG timeline, no script and
// nothing fetched.
std::string RenderReportHtml(const JobReport& report);
// The JSON object of docs/cli.md ("Reports"), indented.
std::string RenderReportJson(const JobReport& report);

// Shared by the renderers.
// "2026-11-29T10:00:00Z", or "-" for 0.
std::string ReportTime(int64_t unix_nanos);
// "3h 12m", "45s", "2d 4h": the two largest units.
std::string ReportDuration(int64_t seconds);
// "the job's whole recorded history to T (now)" or "from T to T": the
// range in words (times only: safe in every format).
std::string RangeText(const JobReport& report);
// "none" or "expires T".
std::string LeaseText(const v1::LayoutDeclaration& declaration);
// What a report without a layout says instead.
inline constexpr char kNoLayoutText[] =
    "The job has no layout now (deleted, or its lease ran out); its findings "
    "remain.";
// The evidence of a finding as "key=value" strings, by key; numbers as
// collector::FindingToJson spells them.
std::vector<std::string> EvidenceLines(const v1::Finding& finding);

}  // namespace fabricdiag::cli
