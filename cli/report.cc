#include "cli/report.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "analysis/layout_model.h"
#include "analysis/traffic_model.h"
#include "cli/report_advice.h"
#include "collector/findings/finding_json.h"

namespace fabricdiag::cli {
namespace {

// The dimensions a layout declares, in the order `layout list` names them.
constexpr analysis::Dim kDeclaredDims[] = {
    analysis::Dim::kTp, analysis::Dim::kPp, analysis::Dim::kDp,
    analysis::Dim::kCp, analysis::Dim::kEp};

// The hosts of the ranks of `name` ("tp:3") in the model's host order;
// empty when the model has no such group.
std::vector<std::string> GroupHosts(const analysis::LayoutModel& model,
                                    const std::string& name) {
  absl::StatusOr<analysis::GroupId> id = analysis::ParseGroupName(name);
  if (!id.ok() || id->index >= model.NumGroups(id->dim)) return {};
  std::set<uint32_t> hosts;
  for (uint32_t rank : model.Group(id->dim, id->index)) {
    hosts.insert(model.Rank(rank).host);
  }
  std::vector<std::string> names;
  names.reserve(hosts.size());
  for (uint32_t host : hosts) names.push_back(model.Hosts()[host]);
  return names;
}

// The collector validated the layout when it was applied; one it cannot
// model here (a newer collector's) still shows as declared, without groups.
absl::StatusOr<analysis::LayoutModel> ModelOf(
    const std::optional<v1::Layout>& layout) {
  if (!layout.has_value()) return absl::NotFoundError("no layout");
  return analysis::LayoutModel::Build(*layout);
}

}  // namespace

absl::StatusOr<ReportFormat> ParseReportFormat(absl::string_view text) {
  if (text.empty() || text == "md") return ReportFormat::kMarkdown;
  if (text == "html") return ReportFormat::kHtml;
  if (text == "json") return ReportFormat::kJson;
  return absl::InvalidArgumentError(absl::StrCat("--format: unknown format \"",
                                                 text.substr(0, 64),
                                                 "\" (one of md, html, json)"));
}

std::string ReportTime(int64_t unix_nanos) {
  return unix_nanos == 0 ? std::string("-")
                         : collector::FormatRfc3339(unix_nanos);
}

std::string ReportDuration(int64_t seconds) {
  seconds = std::max<int64_t>(0, seconds);
  // The largest unit that fits, and the next one when it is not zero.
  auto two = [](int64_t big, const char* big_unit, int64_t small,
                const char* small_unit) {
    return small == 0 ? absl::StrCat(big, big_unit)
                      : absl::StrCat(big, big_unit, " ", small, small_unit);
  };
  if (seconds < 60) return absl::StrCat(seconds, "s");
  if (seconds < 3600) return two(seconds / 60, "m", seconds % 60, "s");
  if (seconds < 86400)
    return two(seconds / 3600, "h", seconds % 3600 / 60, "m");
  return two(seconds / 86400, "d", seconds % 86400 / 3600, "h");
}

std::string RangeText(const JobReport& report) {
  return absl::StrCat(
      report.since_unix_nanos == 0
          ? std::string("the job's whole recorded history")
          : absl::StrCat("from ", ReportTime(report.since_unix_nanos)),
      " to ", ReportTime(report.until_unix_nanos),
      report.until_given ? "" : " (now)");
}

std::string LeaseText(const v1::LayoutDeclaration& declaration) {
  return declaration.expires_unix_nanos() == 0
             ? std::string("none")
             : absl::StrCat("expires ",
                            ReportTime(declaration.expires_unix_nanos()));
}

std::vector<std::string> EvidenceLines(const v1::Finding& finding) {
  const nlohmann::ordered_json evidence =
      collector::FindingToJson(finding)["evidence"];
  std::vector<std::string> lines;
  for (auto it = evidence.begin(); it != evidence.end(); ++it) {
    lines.push_back(absl::StrCat(it.key(), "=",
                                 it.value().is_string()
                                     ? it.value().get<std::string>()
                                     : it.value().dump()));
  }
  return lines;
}

JobReport BuildReport(const ReportInput& input) {
  JobReport report;
  report.job = input.job;
  report.collector = input.collector;
  report.generated_unix_nanos = input.generated_unix_nanos;
  report.since_unix_nanos = input.since_unix_nanos;
  report.until_given = input.until_unix_nanos != 0;
  report.until_unix_nanos =
      report.until_given ? input.until_unix_nanos : input.generated_unix_nanos;
  report.layout = input.layout;
  report.parallelism = input.parallelism;
  report.staleness = input.staleness;

  for (const v1::Finding& f : input.findings) {
    ReportFinding rf;
    rf.finding = f;
    const int64_t end = f.resolved_unix_nanos() != 0
                            ? f.resolved_unix_nanos()
                            : input.generated_unix_nanos;
    rf.duration_seconds = absl::ToInt64Seconds(
        absl::Nanoseconds(end - f.first_seen_unix_nanos()));
    if (f.resolved_unix_nanos() == 0) ++report.active;
    report.findings.push_back(std::move(rf));
  }
  std::sort(report.findings.begin(), report.findings.end(),
            [](const ReportFinding& a, const ReportFinding& b) {
              return std::make_tuple(a.finding.first_seen_unix_nanos(),
                                     a.finding.id()) <
                     std::make_tuple(b.finding.first_seen_unix_nanos(),
                                     b.finding.id());
            });

  std::set<std::string> kinds;
  std::set<std::string> groups;
  std::set<std::string> silence_ids;
  for (const v1::Finding& f : input.findings) {
    kinds.insert(f.kind());
    if (!f.group().empty()) groups.insert(f.group());
    silence_ids.insert(f.silenced_by().begin(), f.silenced_by().end());
  }
  for (const std::string& kind : kinds) {
    report.advice.push_back({kind, WhatToDo(kind)});
  }
  for (const v1::Silence& s : input.silences) {
    if (silence_ids.count(s.id()) != 0) report.silences.push_back(s);
  }

  const absl::StatusOr<analysis::LayoutModel> model = ModelOf(input.layout);
  std::vector<analysis::Dim> dims;
  if (model.ok()) {
    // A dimension of degree 1 gives every rank its own group: nothing to
    // hand over.
    for (analysis::Dim dim : kDeclaredDims) {
      if (model->Degree(dim) < 2) continue;
      dims.push_back(dim);
      report.dimensions.push_back({std::string(analysis::DimName(dim)),
                                   model->Degree(dim), model->NumGroups(dim)});
    }
  }
  for (const std::string& name : groups) {
    report.groups.push_back({name, model.ok() ? GroupHosts(*model, name)
                                              : std::vector<std::string>{}});
  }
  if (!model.ok()) {
    report.rates_note = "No per-group rates: the job has no layout now.";
  } else if (!input.rates_unavailable.empty()) {
    report.rates_note = input.rates_unavailable;
  } else {
    // Predicted bytes do not depend on the link rates.
    const absl::StatusOr<analysis::TrafficModel> traffic =
        analysis::TrafficModel::Predict(*model, analysis::LinkParams{});
    GroupRatesResult rates = BuildGroupRates(
        *model, traffic.ok() ? &*traffic : nullptr, dims, input.nic_rates,
        report.since_unix_nanos, report.until_unix_nanos);
    report.group_rates = std::move(rates.rates);
    report.rates_note = std::move(rates.note);
    if (!input.rates_elsewhere.empty()) {
      absl::StrAppend(&report.rates_note, report.rates_note.empty() ? "" : " ",
                      input.rates_elsewhere);
    }
  }
  return report;
}

}  // namespace fabricdiag::cli
