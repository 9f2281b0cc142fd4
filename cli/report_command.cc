// report --job=JOB: gathers the job's layout, findings and silences over
// the collector's RPCs and writes the report (cli/report.h) in one format.
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
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

// The names of the RDMA data counters, per direction.
struct RdmaNames {
  std::vector<std::string> rx = RdmaDataNames(counters::Direction::kRx);
  std::vector<std::string> tx = RdmaDataNames(counters::Direction::kTx);
};

// The rates of `nic` that `client` holds, RX and TX: NotFound when it knows
// no such node.
absl::Status ReadNicRates(CollectorClient& client, const RdmaNames& names,
                          NicRates* nic) {
  absl::StatusOr<std::vector<v1::SeriesPoint>> rx =
      ReadRates(client, *nic, names.rx);
  if (!rx.ok()) return rx.status();
  absl::StatusOr<std::vector<v1::SeriesPoint>> tx =
      ReadRates(client, *nic, names.tx);
  if (!tx.ok()) return tx.status();
  nic->rx = *std::move(rx);
  nic->tx = *std::move(tx);
  return absl::OkStatus();
}

// `more` added to `points`, in time order, a point of one time once: an
// agent's report that one collector received but did not acknowledge
// before the agent moved is replayed to the next one.
void MergePoints(std::vector<v1::SeriesPoint> more,
                 std::vector<v1::SeriesPoint>* points) {
  if (more.empty()) return;
  points->insert(points->end(), std::make_move_iterator(more.begin()),
                 std::make_move_iterator(more.end()));
  const auto earlier = [](const v1::SeriesPoint& a, const v1::SeriesPoint& b) {
    return a.unix_nanos() < b.unix_nanos();
  };
  std::stable_sort(points->begin(), points->end(), earlier);
  points->erase(
      std::unique(points->begin(), points->end(),
                  [](const v1::SeriesPoint& a, const v1::SeriesPoint& b) {
                    return a.unix_nanos() == b.unix_nanos();
                  }),
      points->end());
}

// The other collectors of --collector, and which nodes' series each holds
// (ListNodes: the nodes whose agents stream to it, not those it lists as
// another collector's).
struct OtherCollectors {
  std::vector<std::string> addresses;
  // Null once a read from it failed: a collector that stopped answering is
  // not asked again for every NIC (each a --timeout).
  std::vector<std::shared_ptr<CollectorClient>> clients;
  absl::flat_hash_map<std::string, std::vector<size_t>> holders;
  // "ADDR (why)", per collector that could not be read.
  std::vector<std::string> failures;
};

OtherCollectors AskOtherCollectors(const std::string& answered,
                                   const CommandEnv& env) {
  OtherCollectors others;
  if (!env.connect) return others;
  for (const std::string& address : env.collectors) {
    if (address == answered) continue;
    std::shared_ptr<CollectorClient> client = env.connect(address);
    absl::StatusOr<v1::ListNodesResponse> nodes = client->ListNodes();
    if (!nodes.ok()) {
      others.failures.push_back(
          absl::StrCat(address, " (", nodes.status().message(), ")"));
      continue;
    }
    const size_t index = others.clients.size();
    others.addresses.push_back(address);
    others.clients.push_back(std::move(client));
    for (const v1::NodeStatus& n : nodes->nodes()) {
      if (!n.remote()) others.holders[n.node()].push_back(index);
    }
  }
  return others;
}

// What the report could not read of the nodes that stream to other
// collectors of a cluster: "" when nothing.
std::string RatesElsewhereNote(
    const std::map<std::string, std::set<std::string>>& unread,
    const std::set<std::string>& failures) {
  std::string note;
  if (!unread.empty()) {
    std::set<std::string> hosts;
    std::vector<std::string> collectors;
    for (const auto& [collector, of] : unread) {
      collectors.push_back(collector);
      hosts.insert(of.begin(), of.end());
    }
    std::vector<std::string> first;
    for (const std::string& host : hosts) {
      if (first.size() == 5) break;
      first.push_back(host);
    }
    absl::StrAppend(
        &note, "The rates of ", hosts.size(),
        hosts.size() == 1 ? " host (" : " hosts (", absl::StrJoin(first, ", "),
        hosts.size() > first.size() ? ", ..." : "",
        ") are not in this report: their agents stream to collector",
        collectors.size() == 1 ? " " : "s ", absl::StrJoin(collectors, ", "),
        ", which no address of --collector answered for (list every "
        "collector of the cluster in --collector to read them).");
  }
  for (const std::string& failure : failures) {
    absl::StrAppend(&note, note.empty() ? "" : " ",
                    "No rates could be read from collector ", failure, ".");
  }
  return note;
}

// Fills input->nic_rates with the rates of the layout's NICs, all the
// collectors still hold (the oldest tells how far back they keep them), or
// says in input->rates_unavailable why not. In a cluster each collector
// holds the series of the agents that stream to it: a node the collector
// that answers lists as another's is read from the other collectors of
// --collector that hold it (input->rates_elsewhere says what could not be).
void GatherRates(CollectorClient& client, const v1::Layout& layout,
                 int64_t now_unix_nanos, const CommandEnv& env,
                 ReportInput* input) {
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
  const RdmaNames names;
  std::vector<NicRates> nics = LayoutNics(*model);
  // host -> the --collector_id of the collector its agent streams to, for
  // the nodes this collector lists as another's. A collector that cannot
  // list its nodes is asked for every NIC, as one that is alone.
  absl::flat_hash_map<std::string, std::string> remote;
  if (absl::StatusOr<v1::ListNodesResponse> listed = client.ListNodes();
      listed.ok()) {
    for (const v1::NodeStatus& n : listed->nodes()) {
      if (n.remote()) remote[n.node()] = n.collector();
    }
  }
  std::optional<OtherCollectors> others;
  std::map<std::string, std::set<std::string>> unread;
  std::set<std::string> failures;
  std::string unknown_host;
  for (NicRates& nic : nics) {
    // A node the collector never heard of has none of its NICs.
    if (nic.host == unknown_host) continue;
    if (auto r = remote.find(nic.host); r != remote.end()) {
      if (!others.has_value()) {
        others = AskOtherCollectors(client.address(), env);
        failures.insert(others->failures.begin(), others->failures.end());
      }
      auto held = others->holders.find(nic.host);
      if (held == others->holders.end()) {
        unread[r->second].insert(nic.host);
        continue;
      }
      // Every collector that holds some of the node's series: the agent
      // may have moved within the range.
      for (size_t i : held->second) {
        if (others->clients[i] == nullptr) continue;
        NicRates part{nic.host, nic.nic, {}, {}};
        const absl::Status status =
            ReadNicRates(*others->clients[i], names, &part);
        if (!status.ok()) {
          if (!absl::IsNotFound(status)) {
            failures.insert(
                absl::StrCat(others->addresses[i], " (", status.message(),
                             "); the hosts it holds have no rates here"));
            others->clients[i] = nullptr;
          }
          continue;
        }
        MergePoints(std::move(part.rx), &nic.rx);
        MergePoints(std::move(part.tx), &nic.tx);
      }
      continue;
    }
    const absl::Status status = ReadNicRates(client, names, &nic);
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
  input->rates_elsewhere = RatesElsewhereNote(unread, failures);
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
    GatherRates(client, *input.layout, input.generated_unix_nanos, env, &input);
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
