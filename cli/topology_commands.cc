// topology show [--discovered|--effective], topology diff, topology adopt.
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "analysis/layout_parse.h"
#include "analysis/lldp_topology.h"
#include "cli/command_util.h"
#include "cli/commands.h"
#include "cli/text_output.h"

namespace fabricdiag::cli {
namespace {

nlohmann::ordered_json EndJson(const analysis::LinkEnd& end) {
  if (end.node.empty()) return nullptr;
  nlohmann::ordered_json j;
  j["node"] = end.node;
  j["port"] = end.device;
  j["switch"] = end.is_switch;
  return j;
}

// "2 switches, 16 host links, 4 switch links".
std::string Summary(const v1::Topology& t) {
  return absl::StrCat(
      t.switches_size(), t.switches_size() == 1 ? " switch, " : " switches, ",
      t.links_size(), t.links_size() == 1 ? " host link, " : " host links, ",
      t.switch_links_size(),
      t.switch_links_size() == 1 ? " switch link" : " switch links");
}

// Declared (empty when none is) and discovered, of one drawing: a dry run
// of adopt with `snapshot`. A collector older than `snapshot` answers
// without it, or FAILED_PRECONDITION when nothing is discovered: then two
// reads, which a redraw between them can make a diff of two moments.
struct BothViews {
  v1::Topology declared;
  v1::Topology discovered;
};
absl::StatusOr<BothViews> ReadBothViews(CollectorClient& client,
                                        const CommandEnv& env) {
  v1::AdoptTopologyRequest request;
  request.set_dry_run(true);
  request.set_snapshot(true);
  absl::StatusOr<v1::AdoptTopologyResponse> snapshot =
      client.AdoptTopology(request);
  if (snapshot.ok() && snapshot->is_snapshot()) {
    return BothViews{std::move(*snapshot->mutable_declared()),
                     std::move(*snapshot->mutable_topology())};
  }
  if (!snapshot.ok() && !absl::IsFailedPrecondition(snapshot.status())) {
    return snapshot.status();
  }
  *env.err << "fabricdiag: note: collector " << client.address()
           << " cannot answer both views at once (older version): read "
              "them one after the other\n";
  absl::StatusOr<v1::Topology> declared =
      client.GetTopologyView(v1::TOPOLOGY_VIEW_DECLARED);
  // No topology declared: everything discovered is extra.
  if (!declared.ok() && !absl::IsNotFound(declared.status())) {
    return declared.status();
  }
  absl::StatusOr<v1::Topology> discovered =
      client.GetTopologyView(v1::TOPOLOGY_VIEW_DISCOVERED);
  if (!discovered.ok()) return discovered.status();
  return BothViews{declared.ok() ? *std::move(declared) : v1::Topology(),
                   *std::move(discovered)};
}

}  // namespace

int TopologyShowCommand(CollectorClient& client, const CommandOptions& options,
                        const CommandEnv& env) {
  if (options.discovered && options.effective) {
    return ReportError(absl::InvalidArgumentError(
                           "--discovered and --effective: choose one view"),
                       env);
  }
  const v1::TopologyView view =
      options.discovered  ? v1::TOPOLOGY_VIEW_DISCOVERED
      : options.effective ? v1::TOPOLOGY_VIEW_EFFECTIVE
                          : v1::TOPOLOGY_VIEW_DECLARED;
  absl::StatusOr<v1::Topology> topology = client.GetTopologyView(view);
  if (!topology.ok()) return ReportError(topology.status(), env);
  // The declared view prints as a file `topology apply` reads back; the
  // others show what is derived too (tiers, each link's source).
  return PrintDocument(
      analysis::TopologyToJson(*topology,
                               view == v1::TOPOLOGY_VIEW_DECLARED
                                   ? analysis::TopologyJson::kFile
                                   : analysis::TopologyJson::kWithDerived),
      options, env);
}

int TopologyDiffCommand(CollectorClient& client, const CommandOptions& options,
                        const CommandEnv& env) {
  absl::StatusOr<BothViews> views = ReadBothViews(client, env);
  if (!views.ok()) return ReportError(views.status(), env);
  const std::vector<analysis::TopologyDifference> differences =
      analysis::DiffTopology(views->declared, views->discovered);
  if (options.json) {
    nlohmann::ordered_json j = nlohmann::ordered_json::array();
    for (const analysis::TopologyDifference& d : differences) {
      nlohmann::ordered_json o;
      o["kind"] = analysis::KindName(d.kind);
      o["near"] = EndJson(d.near);
      o["declared"] = EndJson(d.declared);
      o["observed"] = EndJson(d.observed);
      o["description"] = d.Describe();
      j.push_back(std::move(o));
    }
    *env.out << j.dump(2) << "\n";
  } else {
    for (const analysis::TopologyDifference& d : differences) {
      *env.out << Printable(d.Describe()) << "\n";
    }
    if (differences.empty()) {
      *env.out << "the discovered cabling matches the declared topology\n";
    }
  }
  return differences.empty() ? kExitOk : kExitDiffers;
}

int TopologyAdoptCommand(CollectorClient& client, const CommandOptions& options,
                         const CommandEnv& env) {
  // The declared version now, then the write over exactly that one: a
  // topology someone applies in between is never silently replaced.
  v1::AdoptTopologyRequest request;
  request.set_dry_run(true);
  absl::StatusOr<v1::AdoptTopologyResponse> seen =
      client.AdoptTopology(request);
  if (!seen.ok()) return ReportError(seen.status(), env);
  request.set_dry_run(false);
  request.set_expected_declared_version(seen->declared_version());
  absl::StatusOr<v1::AdoptTopologyResponse> adopted =
      client.AdoptTopology(request);
  if (!adopted.ok()) return ReportError(adopted.status(), env);
  if (!options.json) {
    *env.out << "# adopted as the declared topology ("
             << Summary(adopted->topology()) << ")\n";
  }
  return PrintDocument(analysis::TopologyToJson(adopted->topology()), options,
                       env);
}

}  // namespace fabricdiag::cli
