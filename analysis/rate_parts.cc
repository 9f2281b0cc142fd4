#include "analysis/rate_parts.h"

#include <algorithm>
#include <iterator>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/types/span.h"
#include "analysis/cabling_mismatch.h"
#include "analysis/congestion.h"
#include "analysis/ecmp_imbalance.h"
#include "analysis/hot_expert_incast.h"
#include "analysis/link_context.h"
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
  out->insert(out->end(), std::make_move_iterator(found.begin()),
              std::make_move_iterator(found.end()));
}

void AddPorts(const std::vector<Finding>& found,
              std::set<RateExcuses::Port>* ports) {
  for (const Finding& f : found) ports->emplace(f.node, f.device);
}

// `given` with a topology index and the layouts' NIC ports, built into the
// locals when the caller has none.
AnalysisInput Resolved(const AnalysisInput& given,
                       std::optional<TopologyIndex>* index,
                       std::optional<NicPorts>* ports) {
  AnalysisInput in = given;
  in.topology_index = &IndexOf(given, index);
  in.nic_ports = &NicPortsOf(given, ports);
  return in;
}

}  // namespace

void RateExcuses::Merge(const RateExcuses& other) {
  congestion.insert(other.congestion.begin(), other.congestion.end());
  ecmp.insert(other.ecmp.begin(), other.ecmp.end());
  straggler.insert(other.straggler.begin(), other.straggler.end());
}

bool IsPortPartKind(absl::string_view kind) {
  return kind == kCongestionKind || kind == kLinkErrorsKind ||
         kind == kLinkFlapKind || kind == kLinkDegradedKind ||
         kind == kRetransmissionsKind || kind == kCablingMismatchKind;
}

RatePart RunPortPart(const AnalysisInput& given, size_t ports_per_run) {
  RatePart part;
  if (given.view == nullptr || given.config == nullptr) return part;
  // Its analyzers judge one port at a time and never ask for a layout's
  // NICs by index: resolving them (NicPorts) was a third of this part.
  std::optional<TopologyIndex> index;
  AnalysisInput in = given;
  in.topology_index = &IndexOf(given, &index);
  // Congestion's medians over the whole view, not over each run below.
  std::optional<CongestionBaselines> medians;
  if (in.congestion_baselines == nullptr) {
    in.congestion_baselines = &medians.emplace(CongestionBaselinesOf(*in.view));
  }
  // The view in runs of whole nodes that fit in a core's cache with room
  // to spare, each brought in whole and read by every analyzer in turn:
  // each analyzer reads other fields of a port (other cache lines), and
  // over a view of 100,000 ports (65 MB) each waited for memory in turn.
  std::vector<Finding> congestion;
  std::vector<Finding> errors;
  std::vector<Finding> flap;
  std::vector<Finding> degraded;
  std::vector<Finding> retransmissions;
  const absl::Span<const PortView> ports = given.view->ports();
  const size_t run = std::max<size_t>(ports_per_run, 1);
  for (size_t begin = 0; begin < ports.size();) {
    size_t end = ports.size() - begin > run ? begin + run : ports.size();
    while (end < ports.size() && ports[end].node == ports[end - 1].node) ++end;
    in.judged = ports.subspan(begin, end - begin);
    begin = end;
    Prefetch(in.judged);
    Append(&congestion, CongestionFindings(in));
    Append(&errors, LinkErrorsFindings(in));
    Append(&flap, LinkFlapFindings(in));
    Append(&degraded, LinkDegradedFindings(in));
    Append(&retransmissions, RetransmissionsFindings(in));
  }
  in.judged = {};
  // In each analyzer's order over the whole view (a port's findings are
  // one per kind, so by node and device).
  for (std::vector<Finding>* found :
       {&congestion, &errors, &flap, &degraded, &retransmissions}) {
    SortLinkFindings(found);
  }
  // A NIC whose link flaps or trained slow moves less than its group: the
  // straggler is the symptom, this finding names the cause.
  AddPorts(flap, &part.excuses.straggler);
  AddPorts(degraded, &part.excuses.straggler);
  Append(&part.findings, std::move(congestion));
  Append(&part.findings, std::move(errors));
  Append(&part.findings, std::move(flap));
  Append(&part.findings, std::move(degraded));
  Append(&part.findings, std::move(retransmissions));
  Append(&part.findings, CablingMismatchFindings(in));
  return part;
}

RatePart RunJobPart(const AnalysisInput& given) {
  RatePart part;
  if (given.view == nullptr || given.config == nullptr) return part;
  std::optional<TopologyIndex> index;
  std::optional<NicPorts> ports;
  const AnalysisInput in = Resolved(given, &index, &ports);

  // An incast explains congestion signals and uplink skew that the
  // congestion and ECMP analyzers would otherwise blame on the fabric: the
  // hot NICs themselves, their nodes, and the switches they hang off.
  std::vector<Finding> incast = HotExpertIncastFindings(in);
  for (const Finding& f : incast) {
    part.excuses.congestion.emplace(f.node, f.device);
    part.excuses.ecmp.insert(f.node);
    if (const LinkEnd* sw = in.topology_index->SwitchPortOf(f.node, f.device)) {
      part.excuses.ecmp.insert(sw->node);
    }
  }
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
  AddPorts(HotExpertIncastFindings(relaxed_in), &part.excuses.congestion);

  Append(&part.findings, std::move(incast));
  Append(&part.findings, StragglerNicFindings(in));
  return part;
}

RatePart RunSwitchPart(const AnalysisInput& given) {
  RatePart part;
  if (given.view == nullptr || given.config == nullptr) return part;
  std::optional<TopologyIndex> index;
  std::optional<NicPorts> ports;
  const AnalysisInput in = Resolved(given, &index, &ports);
  std::vector<Finding> pfc = PfcStormFindings(in);
  // A PFC storm's source and its victims move less than their groups.
  AddPorts(pfc, &part.excuses.straggler);
  Append(&part.findings, EcmpImbalanceFindings(in));
  Append(&part.findings, std::move(pfc));
  return part;
}

void Excuse(const RateExcuses& excuses, std::vector<Finding>* findings) {
  if (excuses.empty()) return;
  auto excused = [&excuses](const Finding& f) {
    if (f.kind == kCongestionKind) {
      return excuses.congestion.count({f.node, f.device}) > 0;
    }
    if (f.kind == kEcmpImbalanceKind) return excuses.ecmp.count(f.node) > 0;
    if (f.kind == kStragglerNicKind) {
      return excuses.straggler.count({f.node, f.device}) > 0;
    }
    return false;
  };
  findings->erase(std::remove_if(findings->begin(), findings->end(), excused),
                  findings->end());
}

}  // namespace fabricdiag::analysis
