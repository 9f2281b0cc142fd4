// report --job=JOB: gathers the job's layout, findings and silences over
// the collector's RPCs and writes the report (cli/report.h) in one format.
#include <cerrno>
#include <cstring>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "analysis/layout_model.h"
#include "cli/command_util.h"
#include "cli/commands.h"
#include "cli/findings_list.h"
#include "cli/report.h"
#include "cli/report_rates.h"
#include "counters/counter_table.h"

namespace fabricdiag::cli {
namespace {

// The collector refuses a job it knows nothing of as InvalidArgument on the
// `job` field, "job: unknown job ... known jobs: ..."
// (collector/findings/findings_query.h), which is exit 2 for `findings`;
// for the report the job is what it names, so "not found", with the
// collector's list of known jobs.
absl::Status JobNotFound(const absl::Status& status) {
  if (absl::IsInvalidArgument(status) &&
      absl::StrContains(status.message(), "job: unknown job ")) {
    return absl::NotFoundError(status.message());
  }
  return status;
}

// The names of the RDMA port data counters of `direction`, as the counter
// table spells them (port_rcv_data, then the counters_ext/ port_rcv_data_64
// of old kernels).
std::vector<std::string> RdmaDataNames(counters::Direction direction) {
  std::vector<std::string> names;
  for (const counters::CounterSpec& row : counters::Rows()) {
    if (row.meaning == counters::Meaning::kRdmaBytes &&
        row.direction == direction) {
      names.emplace_back(row.name);
    }
  }
  return names;
}

// The points of the first series of `names` that the collector holds for
// (host, nic): NotFound when it knows no such node.
absl::StatusOr<std::vector<v1::SeriesPoint>> ReadRates(
    CollectorClient& client, const NicRates& nic,
    const std::vector<std::string>& names) {
  for (const std::string& name : names) {
    v1::GetSeriesRequest request;
    request.set_node(nic.host);
    request.set_device(nic.nic);
    request.set_name(name);
    request.set_last_seconds(static_cast<uint32_t>(kSeriesServedSeconds));
    absl::StatusOr<v1::GetSeriesResponse> response = client.GetSeries(request);
    if (!response.ok()) return response.status();
    for (const v1::SeriesRates& series : response->series()) {
      if (series.points_size() == 0) continue;
      return std::vector<v1::SeriesPoint>(series.points().begin(),
                                          series.points().end());
    }
  }
  return std::vector<v1::SeriesPoint>{};
}

// Fills input->nic_rates with the rates of the layout's NICs, all the
// collector still holds (the oldest tells how far back it keeps them), or
// says in input->rates_unavailable why not.
void GatherRates(CollectorClient& client, const v1::Layout& layout,
                 int64_t now_unix_nanos, ReportInput* input) {
  // A layout the CLI cannot model gets no groups: BuildReport says so.
  const absl::StatusOr<analysis::LayoutModel> model =
      analysis::LayoutModel::Build(layout);
  if (!model.ok()) return;
  const int64_t until =
      input->until_unix_nanos != 0 ? input->until_unix_nanos : now_unix_nanos;
  if (until < now_unix_nanos - kSeriesServedSeconds * 1'000'000'000) {
    input->rates_unavailable = RatesNotServedNote(until, now_unix_nanos);
    return;
  }
  const std::vector<std::string> rx_names =
      RdmaDataNames(counters::Direction::kRx);
  const std::vector<std::string> tx_names =
      RdmaDataNames(counters::Direction::kTx);
  std::vector<NicRates> nics = LayoutNics(*model);
  std::string unknown_host;
  for (NicRates& nic : nics) {
    // A node the collector never heard of has none of its NICs.
    if (nic.host == unknown_host) continue;
    absl::StatusOr<std::vector<v1::SeriesPoint>> rx =
        ReadRates(client, nic, rx_names);
    absl::Status status = rx.status();
    if (rx.ok()) {
      absl::StatusOr<std::vector<v1::SeriesPoint>> tx =
          ReadRates(client, nic, tx_names);
      status = tx.status();
      if (tx.ok()) {
        nic.rx = *std::move(rx);
        nic.tx = *std::move(tx);
      }
    }
    if (absl::IsNotFound(status)) {
      unknown_host = nic.host;
      continue;
    }
    if (!status.ok()) {
      input->rates_unavailable = absl::StrCat(
          "No per-group rates: reading them from the collector "
          "failed: ",
          status.message());
      return;
    }
  }
  input->nic_rates = std::move(nics);
}

}  // namespace

int ReportCommand(CollectorClient& client, const CommandOptions& options,
                  const CommandEnv& env) {
  if (options.job.empty()) {
    return ReportError(absl::InvalidArgumentError(
                           "--job: required (the job to report on; fabricdiag "
                           "layout list shows them)"),
                       env);
  }
  absl::StatusOr<ReportFormat> format = ParseReportFormat(options.format);
  if (!format.ok()) return ReportError(format.status(), env);
  // Only the job and the range select what a report shows.
  CommandOptions selection;
  selection.job = options.job;
  selection.since = options.since;
  selection.until = options.until;
  const absl::Time now = env.clock->Now();
  absl::StatusOr<v1::ListFindingsRequest> request =
      FindingsRequestOf(selection, now);
  if (!request.ok()) return ReportError(request.status(), env);
  request->set_all(true);

  ReportInput input;
  input.job = options.job;
  input.collector = client.address();
  input.generated_unix_nanos = absl::ToUnixNanos(now);
  input.since_unix_nanos = request->since_unix_nanos();
  input.until_unix_nanos = request->until_unix_nanos();

  absl::StatusOr<v1::Layout> layout = client.GetLayout(options.job);
  if (layout.ok()) {
    input.layout = *std::move(layout);
    absl::StatusOr<v1::ListLayoutsResponse> layouts = client.ListLayouts();
    if (!layouts.ok()) return ReportError(layouts.status(), env);
    for (const v1::LayoutSummary& s : layouts->layouts()) {
      if (s.job() == options.job) input.parallelism = s.parallelism();
    }
  } else if (!absl::IsNotFound(layout.status())) {
    return ReportError(layout.status(), env);
  }
  if (input.layout.has_value()) {
    GatherRates(client, *input.layout, input.generated_unix_nanos, &input);
  }
  // Without a layout the job is known only if findings name it: the
  // collector says which jobs it knows otherwise.
  absl::StatusOr<FindingsList> list = ListAllFindings(client, *request);
  if (!list.ok()) return ReportError(JobNotFound(list.status()), env);
  input.findings = std::move(list->findings);
  input.staleness = list->staleness;
  for (const v1::Finding& f : input.findings) {
    if (f.silenced_by().empty()) continue;
    absl::StatusOr<v1::ListSilencesResponse> silences = client.ListSilences();
    if (!silences.ok()) return ReportError(silences.status(), env);
    input.silences.assign(silences->silences().begin(),
                          silences->silences().end());
    break;
  }

  const JobReport report = BuildReport(input);
  std::string text;
  switch (*format) {
    case ReportFormat::kMarkdown:
      text = RenderReportMarkdown(report);
      break;
    case ReportFormat::kHtml:
      text = RenderReportHtml(report);
      break;
    case ReportFormat::kJson:
      text = RenderReportJson(report);
      break;
  }
  if (options.output.empty() || options.output == "-") {
    *env.out << text;
    env.out->flush();
    return kExitOk;
  }
  std::ofstream file(options.output, std::ios::binary | std::ios::trunc);
  if (!file) {
    return ReportError(absl::InvalidArgumentError(absl::StrCat(
                           "--output: cannot write ", options.output, ": ",
                           std::strerror(errno))),
                       env);
  }
  file << text;
  file.close();
  if (!file) {
    return ReportError(absl::UnknownError(absl::StrCat(
                           "--output: writing ", options.output, " failed")),
                       env);
  }
  *env.err << "fabricdiag: report on job " << options.job << " written to "
           << options.output << "\n";
  return kExitOk;
}

}  // namespace fabricdiag::cli
