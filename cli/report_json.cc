// The JSON form of a job report (docs/cli.md, "Reports"): for tooling that
// files tickets or archives incidents. Findings and silences are the
// objects `findings --json` and `silences --json` print.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>

#include "cli/report.h"
#include "collector/findings/finding_json.h"

namespace fabricdiag::cli {
namespace {

using Json = nlohmann::ordered_json;

// The version of the report's JSON; bumped only by incompatible changes.
constexpr int kReportVersion = 1;

Json TimeOrNull(int64_t unix_nanos) {
  return unix_nanos == 0 ? Json(nullptr)
                         : Json(collector::FormatRfc3339(unix_nanos));
}

Json LayoutJson(const JobReport& r) {
  if (!r.layout.has_value()) return nullptr;
  const v1::Layout& l = *r.layout;
  const v1::LayoutDeclaration& d = l.declaration();
  Json j;
  j["parallelism"] = r.parallelism;
  j["gpus_per_node"] = l.gpus_per_node();
  j["nvlink_domain"] =
      l.has_nvlink_domain() ? Json(l.nvlink_domain()) : Json(nullptr);
  j["hosts"] = std::vector<std::string>(l.hosts().begin(), l.hosts().end());
  j["rails"] = std::vector<std::string>(l.rails().begin(), l.rails().end());
  j["dimensions"] = Json::array();
  for (const ReportDimension& dim : r.dimensions) {
    j["dimensions"].push_back(
        {{"dim", dim.dim}, {"degree", dim.degree}, {"groups", dim.groups}});
  }
  j["source"] = d.source();
  j["owner"] = d.owner();
  j["declared"] = TimeOrNull(d.declared_unix_nanos());
  j["expires"] = TimeOrNull(d.expires_unix_nanos());
  j["revision"] = d.revision();
  return j;
}

Json GbpsOrNull(std::optional<double> gbps) {
  return gbps.has_value() ? Json(*gbps) : Json(nullptr);
}

Json GroupRatesJson(const JobReport& r) {
  if (!r.group_rates.has_value()) return nullptr;
  const GroupRates& rates = *r.group_rates;
  Json j;
  j["from"] = TimeOrNull(rates.from_unix_nanos);
  j["to"] = TimeOrNull(rates.to_unix_nanos);
  j["basis"] = rates.basis;
  j["nics"] = rates.nics;
  j["nics_reporting"] = rates.reporting;
  j["dimensions"] = Json::array();
  for (const DimensionRates& d : rates.dimensions) {
    Json dim;
    dim["dim"] = d.dim;
    dim["groups"] = d.groups;
    dim["far_off"] = d.far_off;
    dim["shown"] = Json::array();
    for (const GroupRate& g : d.shown) {
      dim["shown"].push_back({{"group", g.group},
                              {"nics", g.nics},
                              {"nics_reporting", g.reporting},
                              {"mean_gbps", GbpsOrNull(g.mean_gbps)},
                              {"peak_gbps", GbpsOrNull(g.peak_gbps)},
                              {"expected_gbps", GbpsOrNull(g.expected_gbps)},
                              {"far_off", g.far_off}});
    }
    j["dimensions"].push_back(std::move(dim));
  }
  return j;
}

}  // namespace

std::string RenderReportJson(const JobReport& r) {
  Json j;
  j["report_version"] = kReportVersion;
  j["job"] = r.job;
  j["collector"] = r.collector;
  j["generated"] = TimeOrNull(r.generated_unix_nanos);
  j["since"] = TimeOrNull(r.since_unix_nanos);
  j["until"] = TimeOrNull(r.until_unix_nanos);
  j["stale_seconds"] =
      r.staleness.stale()
          ? Json(static_cast<int64_t>(r.staleness.age_seconds()))
          : Json(nullptr);
  j["layout"] = LayoutJson(r);
  j["groups"] = Json::array();
  for (const ReportGroup& g : r.groups) {
    j["groups"].push_back({{"group", g.name}, {"hosts", g.hosts}});
  }
  j["group_rates"] = GroupRatesJson(r);
  j["group_rates_note"] = r.rates_note;
  j["active"] = r.active;
  j["findings"] = Json::array();
  for (const ReportFinding& rf : r.findings) {
    Json f = collector::FindingToJson(rf.finding);
    f["duration_seconds"] = rf.duration_seconds;
    j["findings"].push_back(std::move(f));
  }
  j["silences"] = Json::array();
  for (const v1::Silence& s : r.silences) {
    j["silences"].push_back(collector::SilenceToJson(s));
  }
  j["what_to_do"] = Json::object();
  for (const ReportAdvice& a : r.advice) j["what_to_do"][a.kind] = a.what_to_do;
  // Strings from the collector may hold invalid UTF-8: replace, never throw.
  return j.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

}  // namespace fabricdiag::cli
