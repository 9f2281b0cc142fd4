// layout apply/list/show/check/delete, topology apply.
#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "analysis/layout_model.h"
#include "analysis/layout_parse.h"
#include "cli/command_util.h"
#include "cli/commands.h"
#include "cli/findings_table.h"
#include "cli/layout_check.h"
#include "cli/text_output.h"
#include "collector/declared/layout_lease_limits.h"
#include "collector/findings/finding_json.h"
#include "common/names.h"

namespace fabricdiag::cli {
namespace {

// The layout's JSON without the `"nic": ""` of ranks declared without a
// NIC: the JSON printer prints every empty field (rank 0 and gpu 0 must
// show), but a NIC that was never declared is not an empty name.
std::string WithoutEmptyNics(const std::string& json) {
  nlohmann::ordered_json doc =
      nlohmann::ordered_json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.contains("ranks")) return json;
  for (nlohmann::ordered_json& rank : doc["ranks"]) {
    if (rank.is_object() && rank.value("nic", "x").empty()) rank.erase("nic");
  }
  return doc.dump();
}

// The document `layout show` prints: the layout as declared, and when the
// collector resolved it (an older one does not), where each rank's NIC
// comes from, one line per rank in YAML.
std::string ShowDocument(const v1::Layout& declared,
                         const v1::Layout& resolved) {
  std::string json = WithoutEmptyNics(analysis::LayoutToJson(declared));
  const NicSources sources = CountNicSources(resolved);
  const uint64_t revision = declared.declaration().revision();
  if (!sources.known && revision == 0) return json;
  nlohmann::ordered_json doc =
      nlohmann::ordered_json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return json;
  // What --if_revision compares; 0 (not printed) from older collectors.
  if (revision != 0) doc["revision"] = revision;
  if (!sources.known) return doc.dump();
  doc["nic_sources"] = {{"rank", sources.rank},
                        {"rails", sources.rails},
                        {"agent", sources.agent},
                        {"unknown", sources.unknown}};
  nlohmann::ordered_json nics = nlohmann::ordered_json::array();
  for (const v1::RankPlacement& r : resolved.ranks()) {
    nlohmann::ordered_json o;
    o["rank"] = r.rank();
    o["host"] = r.host();
    o["gpu"] = r.gpu();
    if (!r.nic().empty()) o["nic"] = r.nic();
    o["source"] = r.nic_source();
    if (!r.nic_distance().empty()) o["distance"] = r.nic_distance();
    nics.push_back(std::move(o));
  }
  doc["nics"] = std::move(nics);
  return doc.dump();
}

// A layout's labels in key order (a proto map has none).
std::map<std::string, std::string> SortedLabels(const v1::LayoutSummary& l) {
  return std::map<std::string, std::string>(l.labels().begin(),
                                            l.labels().end());
}

absl::Status CheckJob(absl::string_view job) {
  if (!IsValidJobName(job)) {
    return absl::InvalidArgumentError(absl::StrCat("JOB: \"", Printable(job),
                                                   "\" is not a job name (",
                                                   kJobNamePattern, ")"));
  }
  return absl::OkStatus();
}

// `layout check`'s text for the names no agent reports.
void PrintNameCheck(absl::string_view job, const LayoutCheck& check,
                    int reporting_nodes, const CommandEnv& env) {
  size_t hosts = 0;
  for (const UnmatchedName& u : check.unmatched) hosts += u.kind == "host";
  const std::string unchecked =
      check.nics_unchecked == 0
          ? ""
          : absl::StrCat(" (", check.nics_unchecked,
                         " NICs of nodes streaming to other collectors not "
                         "checked)");
  if (check.unmatched.empty()) {
    *env.out << "layout " << job << ": every host (" << check.hosts
             << ") and NIC (" << check.nics << ") is reported by an agent"
             << unchecked << "\n";
    return;
  }
  *env.out << "layout " << job << ": " << hosts << " of " << check.hosts
           << " hosts and " << check.unmatched.size() - hosts << " of "
           << check.nics << " NICs are reported by no agent" << unchecked
           << "\n";
  if (reporting_nodes == 0) {
    *env.out << "(no agent has reported to this collector since it started)\n";
  }
  Table table({"KIND", "NAME", "HOST", "RANKS", "LOOKS LIKE"});
  for (const UnmatchedName& u : check.unmatched) {
    table.AddRow({u.kind, u.kind == "nic" ? u.nic : u.host,
                  u.kind == "nic" ? u.host : "-", absl::StrCat(u.ranks),
                  u.alike.empty() ? "-" : absl::StrJoin(u.alike, ", ")});
  }
  table.Print(*env.out);
}

// `layout check`'s text for where the ranks' NICs come from; nothing when
// the collector does not say (an older one).
void PrintNicSources(absl::string_view job, const NicSources& sources,
                     const CommandEnv& env) {
  if (!sources.known) return;
  const size_t ranks =
      sources.rank + sources.rails + sources.agent + sources.unknown;
  *env.out << "layout " << job << ": " << ranks - sources.unknown << " of "
           << ranks << " ranks have a known NIC (" << sources.rank
           << " declared in ranks, " << sources.rails << " from rails, "
           << sources.agent << " paired by the agent)\n";
  if (sources.unknown == 0) return;
  std::vector<std::string> named;
  for (const v1::RankPlacement& r : sources.unknown_ranks) {
    named.push_back(absl::StrCat(r.rank(), " (", Printable(r.host()), " GPU ",
                                 r.gpu(), ")"));
  }
  *env.out << sources.unknown
           << (sources.unknown == 1 ? " rank has" : " ranks have")
           << " no known NIC (no nic, no rails, no pairing from the host's "
              "agent): "
           << (named.size() == 1 ? "rank " : "ranks ")
           << absl::StrJoin(named, ", ")
           << (sources.unknown > named.size() ? ", ..." : "") << "\n";
}

}  // namespace

int LayoutApplyCommand(CollectorClient& client, absl::string_view file,
                       const CommandOptions& options, const CommandEnv& env) {
  int exit_code = kExitOk;
  std::optional<LayoutFile> input = ReadLayoutFile(file, env, &exit_code);
  if (!input.has_value()) return exit_code;
  const v1::Layout& layout = input->layout;

  v1::ApplyLayoutRequest request;
  if (options.lease != absl::ZeroDuration()) {
    const int64_t seconds =
        absl::ToInt64Seconds(absl::Ceil(options.lease, absl::Seconds(1)));
    if (options.lease < absl::ZeroDuration() ||
        seconds > collector::kMaxLeaseSeconds) {
      return ReportError(absl::InvalidArgumentError(absl::StrCat(
                             "--lease: ", absl::FormatDuration(options.lease),
                             " is not between 1s and ",
                             absl::FormatDuration(
                                 absl::Seconds(collector::kMaxLeaseSeconds)))),
                         env);
    }
    request.set_lease_seconds(static_cast<uint32_t>(seconds));
  }
  if (!options.if_revision.empty()) {
    uint64_t revision = 0;
    if (!absl::SimpleAtoi(options.if_revision, &revision)) {
      return ReportError(
          absl::InvalidArgumentError(absl::StrCat(
              "--if_revision: \"", Printable(options.if_revision),
              "\" is not a revision (a number that layout show prints; 0: "
              "only a new job)")),
          env);
    }
    request.set_if_revision(revision);
  }
  request.set_source("cli");
  // Only what the collector accepts as an owner.
  std::string owner = options.owner.substr(0, 128);
  owner.erase(std::remove_if(owner.begin(), owner.end(),
                             [](char c) { return c < ' ' || c > '~'; }),
              owner.end());
  request.set_owner(owner);
  *request.mutable_layout() = layout;
  absl::StatusOr<v1::ApplyLayoutResponse> response =
      client.ApplyLayout(request);
  if (!response.ok()) {
    const int code = ReportError(response.status(), env);
    // Not at that revision here (FAILED_PRECONDITION), or changed through
    // another collector meanwhile (ABORTED): the caller's copy is stale.
    const bool stale =
        request.has_if_revision() &&
        (response.status().code() == absl::StatusCode::kFailedPrecondition ||
         response.status().code() == absl::StatusCode::kAborted);
    return stale ? kExitStale : code;
  }
  for (const std::string& w : response->warnings()) {
    *env.err << "warning: " << w << "\n";
  }
  if (options.json) {
    nlohmann::ordered_json j;
    j["job"] = layout.job();
    j["replaced"] = response->replaced();
    j["revision"] = response->revision();
    j["warnings"] = nlohmann::ordered_json::array();
    for (const std::string& w : response->warnings())
      j["warnings"].push_back(w);
    j["findings"] = nlohmann::ordered_json::array();
    for (const v1::Finding& f : response->findings()) {
      j["findings"].push_back(collector::FindingToJson(f));
    }
    *env.out << j.dump() << "\n";
    return kExitOk;
  }
  *env.out << "layout " << layout.job() << " applied ("
           << (response->replaced() ? "replaced" : "new");
  if (response->revision() != 0) {
    *env.out << ", revision " << response->revision();
  }
  *env.out << ")\n";
  if (response->findings_size() > 0) {
    *env.out << response->findings_size()
             << (response->findings_size() == 1 ? " finding" : " findings")
             << " raised from the layout:\n";
    std::vector<v1::Finding> findings(response->findings().begin(),
                                      response->findings().end());
    PrintFindingsTable(findings, /*with_state=*/false, env);
  }
  return kExitOk;
}

int LayoutListCommand(CollectorClient& client, const CommandOptions& options,
                      const CommandEnv& env) {
  absl::StatusOr<v1::ListLayoutsResponse> response = client.ListLayouts();
  if (!response.ok()) return ReportError(response.status(), env);
  std::vector<v1::LayoutSummary> layouts(response->layouts().begin(),
                                         response->layouts().end());
  std::sort(layouts.begin(), layouts.end(),
            [](const v1::LayoutSummary& a, const v1::LayoutSummary& b) {
              return a.job() < b.job();
            });
  if (options.json) {
    nlohmann::ordered_json j = nlohmann::ordered_json::array();
    for (const v1::LayoutSummary& l : layouts) {
      nlohmann::ordered_json o;
      o["job"] = l.job();
      o["ranks"] = l.ranks();
      o["hosts"] = l.hosts();
      o["parallelism"] = l.parallelism();
      o["applied"] = l.applied_unix_nanos() == 0
                         ? nlohmann::ordered_json(nullptr)
                         : nlohmann::ordered_json(collector::FormatRfc3339(
                               l.applied_unix_nanos()));
      o["source"] = l.source();
      o["owner"] = l.owner();
      if (l.expires_unix_nanos() != 0) {
        o["expires"] = collector::FormatRfc3339(l.expires_unix_nanos());
      }
      o["labels"] = nlohmann::ordered_json::object();
      for (const auto& [key, value] : SortedLabels(l)) o["labels"][key] = value;
      j.push_back(std::move(o));
    }
    *env.out << j.dump() << "\n";
    return kExitOk;
  }
  if (layouts.empty()) {
    *env.out << "no layouts\n";
    return kExitOk;
  }
  // A LABELS column only when some layout has labels: the table of
  // layouts without reads as before.
  const bool with_labels = std::any_of(
      layouts.begin(), layouts.end(),
      [](const v1::LayoutSummary& l) { return l.labels_size() > 0; });
  std::vector<std::string> header = {"JOB",         "RANKS",  "HOSTS",
                                     "PARALLELISM", "SOURCE", "OWNER",
                                     "APPLIED",     "AGE",    "EXPIRES"};
  if (with_labels) header.push_back("LABELS");
  Table table(header);
  const absl::Time now = env.clock->Now();
  for (const v1::LayoutSummary& l : layouts) {
    const bool has_time = l.applied_unix_nanos() != 0;
    std::vector<std::string> row = {
        l.job(),
        absl::StrCat(l.ranks()),
        absl::StrCat(l.hosts()),
        l.parallelism(),
        l.source().empty() ? "-" : l.source(),
        l.owner().empty() ? "-" : l.owner(),
        has_time ? collector::FormatRfc3339(l.applied_unix_nanos()) : "",
        has_time ? collector::FormatAge(
                       now - absl::FromUnixNanos(l.applied_unix_nanos()))
                 : "",
        l.expires_unix_nanos() == 0
            ? "never"
            : collector::FormatRfc3339(l.expires_unix_nanos())};
    if (with_labels) {
      const std::map<std::string, std::string> labels = SortedLabels(l);
      row.push_back(labels.empty()
                        ? "-"
                        : absl::StrJoin(labels, ",", absl::PairFormatter("=")));
    }
    table.AddRow(row);
  }
  table.Print(*env.out);
  return kExitOk;
}

int LayoutShowCommand(CollectorClient& client, absl::string_view job,
                      const CommandOptions& options, const CommandEnv& env) {
  if (absl::Status s = CheckJob(job); !s.ok()) return ReportError(s, env);
  absl::StatusOr<v1::Layout> layout = client.GetLayout(std::string(job));
  if (!layout.ok()) return ReportError(layout.status(), env);
  absl::StatusOr<v1::Layout> resolved =
      client.GetResolvedLayout(std::string(job));
  if (!resolved.ok()) return ReportError(resolved.status(), env);
  return PrintDocument(ShowDocument(*layout, *resolved), options, env);
}

int LayoutCheckCommand(CollectorClient& client, absl::string_view job,
                       const CommandOptions& options, const CommandEnv& env) {
  if (absl::Status s = CheckJob(job); !s.ok()) return ReportError(s, env);
  absl::StatusOr<v1::Layout> layout = client.GetLayout(std::string(job));
  if (!layout.ok()) return ReportError(layout.status(), env);
  absl::StatusOr<v1::Layout> resolved =
      client.GetResolvedLayout(std::string(job));
  if (!resolved.ok()) return ReportError(resolved.status(), env);
  absl::StatusOr<v1::ListNodesResponse> nodes = client.ListNodes();
  if (!nodes.ok()) return ReportError(nodes.status(), env);
  const LayoutCheck check = CheckLayoutNames(*layout, ReportedNodes(*nodes));
  const NicSources sources = CountNicSources(*resolved);
  const int status = check.unmatched.empty() && sources.unknown == 0
                         ? kExitOk
                         : kExitUnmatched;
  if (options.json) {
    nlohmann::ordered_json j;
    j["job"] = std::string(job);
    j["hosts"] = check.hosts;
    j["nics"] = check.nics;
    j["nics_unchecked"] = check.nics_unchecked;
    j["reporting_nodes"] = nodes->nodes_size();
    nlohmann::ordered_json unmatched = nlohmann::ordered_json::array();
    for (const UnmatchedName& u : check.unmatched) {
      nlohmann::ordered_json o;
      o["kind"] = u.kind;
      o["host"] = u.host;
      o["nic"] = u.kind == "nic" ? nlohmann::ordered_json(u.nic)
                                 : nlohmann::ordered_json(nullptr);
      o["ranks"] = u.ranks;
      o["looks_like"] = u.alike;
      unmatched.push_back(std::move(o));
    }
    j["unmatched"] = std::move(unmatched);
    j["nic_sources"] = nullptr;
    nlohmann::ordered_json unknown = nlohmann::ordered_json::array();
    if (sources.known) {
      j["nic_sources"] = {{"rank", sources.rank},
                          {"rails", sources.rails},
                          {"agent", sources.agent},
                          {"unknown", sources.unknown}};
      for (const v1::RankPlacement& r : sources.unknown_ranks) {
        unknown.push_back(
            {{"rank", r.rank()}, {"host", r.host()}, {"gpu", r.gpu()}});
      }
    }
    j["unknown_nic_ranks"] = std::move(unknown);
    *env.out << j.dump() << "\n";
    return status;
  }
  PrintNameCheck(job, check, nodes->nodes_size(), env);
  PrintNicSources(job, sources, env);
  return status;
}

int LayoutDeleteCommand(CollectorClient& client, absl::string_view job,
                        const CommandOptions& /*options*/,
                        const CommandEnv& env) {
  if (absl::Status s = CheckJob(job); !s.ok()) return ReportError(s, env);
  absl::Status status = client.DeleteLayout(std::string(job));
  if (absl::IsNotFound(status)) {
    // What the user asked for holds: a retried delete, or a lease that
    // expired first, is not a failure for a script.
    *env.err << "fabricdiag: layout " << job
             << " was not declared; nothing to delete\n";
    return kExitOk;
  }
  if (!status.ok()) return ReportError(status, env);
  *env.out << "layout " << job << " deleted\n";
  return kExitOk;
}

int TopologyApplyCommand(CollectorClient& client, absl::string_view file,
                         const CommandOptions& /*options*/,
                         const CommandEnv& env) {
  const std::string name = InputName(file);
  absl::StatusOr<std::string> text =
      ReadInputFile(file, analysis::kMaxTopologyBytes, env);
  if (!text.ok()) return ReportInputError(name, text.status(), env);
  // ParseTopology validates completely (ValidateTopology).
  absl::StatusOr<v1::Topology> topology = analysis::ParseTopology(*text);
  if (!topology.ok()) return ReportInputError(name, topology.status(), env);
  absl::Status status = client.ApplyTopology(*topology);
  if (!status.ok()) return ReportError(status, env);
  *env.out << "topology applied (" << topology->switches_size()
           << (topology->switches_size() == 1 ? " switch, " : " switches, ")
           << topology->links_size()
           << (topology->links_size() == 1 ? " link)\n" : " links)\n");
  return kExitOk;
}

}  // namespace fabricdiag::cli
