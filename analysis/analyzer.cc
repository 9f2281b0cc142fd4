#include "analysis/analyzer.h"

#include <set>
#include <string>
#include <utility>

#include "analysis/congestion.h"
#include "analysis/ecmp_imbalance.h"
#include "analysis/hot_expert_incast.h"
#include "analysis/link_degraded.h"
#include "analysis/link_errors.h"
#include "analysis/link_flap.h"
#include "analysis/pfc_storm.h"
#include "analysis/retransmissions.h"
#include "analysis/straggler_nic.h"

namespace fabricdiag::analysis {
namespace {

void Append(std::vector<Finding>* out, std::vector<Finding> found) {
  for (Finding& f : found) out->push_back(std::move(f));
}

// What a pass's hot-expert findings explain: the hot NICs themselves, their
// nodes, and the switches they hang off (per the topology).
struct IncastExplains {
  std::set<std::pair<std::string, std::string>> ports;  // (node, device)
  std::set<std::string> nodes;
  std::set<std::string> switches;

  IncastExplains(const TopologyIndex& topology,
                 const std::vector<Finding>& incast) {
    for (const Finding& f : incast) {
      ports.emplace(f.node, f.device);
      nodes.insert(f.node);
      if (const LinkEnd* sw = topology.SwitchPortOf(f.node, f.device)) {
        switches.insert(sw->node);
      }
    }
  }
};

}  // namespace

std::string JobOfNic(const AnalysisInput& in, absl::string_view node,
                     absl::string_view device, absl::string_view netdev) {
  const std::string* job = nullptr;
  for (const LayoutModel* model : in.layouts) {
    if (model == nullptr) continue;
    const bool uses =
        (!device.empty() && !model->RanksOnNic(node, device).empty()) ||
        (!netdev.empty() && !model->RanksOnNic(node, netdev).empty());
    if (!uses) continue;
    if (job != nullptr && *job != model->job()) return "";
    job = &model->job();
  }
  return job != nullptr ? *job : "";
}

const TopologyIndex& IndexOf(const AnalysisInput& in,
                             std::optional<TopologyIndex>* local) {
  if (in.topology_index != nullptr) return *in.topology_index;
  return local->emplace(in.topology);
}

std::vector<Finding> RunRateAnalyzers(const AnalysisInput& given) {
  std::vector<Finding> out;
  if (given.view == nullptr || given.config == nullptr) return out;
  std::optional<TopologyIndex> local;
  AnalysisInput in = given;
  in.topology_index = &IndexOf(given, &local);

  // Incast first: it explains congestion signals and uplink skew that the
  // congestion and ECMP analyzers would otherwise blame on the fabric.
  std::vector<Finding> incast = HotExpertIncastFindings(in);
  const IncastExplains explains(*in.topology_index, incast);
  Append(&out, std::move(incast));

  for (Finding& f : CongestionFindings(in)) {
    // The hot NIC sends CNPs because it is the incast target: one finding
    // (hot_expert_incast) says it better.
    if (explains.ports.count({f.node, f.device}) > 0) continue;
    out.push_back(std::move(f));
  }
  Append(&out, EcmpImbalanceFindings(in, [&](const Finding& candidate) {
    return explains.switches.count(candidate.node) > 0 ||
           explains.nodes.count(candidate.node) > 0;
  }));
  Append(&out, PfcStormFindings(in));
  Append(&out, StragglerNicFindings(in));
  Append(&out, LinkErrorsFindings(in));
  Append(&out, LinkFlapFindings(in));
  Append(&out, LinkDegradedFindings(in));
  Append(&out, RetransmissionsFindings(in));
  return out;
}

}  // namespace fabricdiag::analysis
