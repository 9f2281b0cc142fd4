#include "analysis/analyzer.h"

#include <algorithm>
#include <set>
#include <string>
#include <utility>

#include "analysis/cabling_mismatch.h"
#include "analysis/congestion.h"
#include "analysis/ecmp_imbalance.h"
#include "analysis/hot_expert_incast.h"
#include "analysis/link_degraded.h"
#include "analysis/link_errors.h"
#include "analysis/link_flap.h"
#include "analysis/nic_ports.h"
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
  std::optional<NicPorts> local_ports;
  in.nic_ports = &NicPortsOf(given, &local_ports);

  // Incast first: it explains congestion signals and uplink skew that the
  // congestion and ECMP analyzers would otherwise blame on the fabric.
  std::vector<Finding> incast = HotExpertIncastFindings(in);
  const IncastExplains explains(*in.topology_index, incast);
  Append(&out, std::move(incast));

  // A NIC on its way into or out of an incast (half the incast ratio over
  // the window) already sends the incast's CNPs: those explain its
  // congestion too, so a congestion finding does not flicker open around
  // the hot_expert_incast one. Only congestion: half the ratio is within a
  // busy MoE job's normal skew, too weak to excuse an ECMP imbalance.
  AnalysisConfig relaxed_config = *in.config;
  HotExpertIncastConfig& relaxed = relaxed_config.hot_expert_incast;
  relaxed.rx_over_median = std::max(1.0, relaxed.rx_over_median / 2);
  relaxed.min_link_fraction /= 2;
  relaxed.min_rx_bytes_per_second /= 2;
  AnalysisInput relaxed_in = in;
  relaxed_in.config = &relaxed_config;
  const IncastExplains nearly(*in.topology_index,
                              HotExpertIncastFindings(relaxed_in));

  for (Finding& f : CongestionFindings(in)) {
    // The hot NIC sends CNPs because it is the incast target: one finding
    // (hot_expert_incast) says it better.
    if (explains.ports.count({f.node, f.device}) > 0 ||
        nearly.ports.count({f.node, f.device}) > 0) {
      continue;
    }
    out.push_back(std::move(f));
  }
  Append(&out, EcmpImbalanceFindings(in, [&](const Finding& candidate) {
    return explains.switches.count(candidate.node) > 0 ||
           explains.nodes.count(candidate.node) > 0;
  }));

  // A NIC that is a PFC storm's source, or whose link flaps or trained
  // slow, moves less than its group: the straggler is the symptom and the
  // other finding names the cause.
  std::vector<Finding> pfc = PfcStormFindings(in);
  std::vector<Finding> flap = LinkFlapFindings(in);
  std::vector<Finding> degraded = LinkDegradedFindings(in);
  std::set<std::pair<std::string, std::string>> slow_for_a_reason;
  for (const std::vector<Finding>* found : {&pfc, &flap, &degraded}) {
    for (const Finding& f : *found) slow_for_a_reason.emplace(f.node, f.device);
  }
  for (Finding& f : StragglerNicFindings(in)) {
    if (slow_for_a_reason.count({f.node, f.device}) > 0) continue;
    out.push_back(std::move(f));
  }
  Append(&out, std::move(pfc));
  Append(&out, LinkErrorsFindings(in));
  Append(&out, std::move(flap));
  Append(&out, std::move(degraded));
  Append(&out, RetransmissionsFindings(in));
  Append(&out, CablingMismatchFindings(in));
  return out;
}

}  // namespace fabricdiag::analysis
