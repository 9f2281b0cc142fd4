#include "analysis/analyzer.h"

#include <algorithm>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include "analysis/cabling_mismatch.h"
#include "analysis/congestion.h"
#include "analysis/ecmp_imbalance.h"
#include "analysis/hot_expert_incast.h"
#include "analysis/link_degraded.h"
#include "analysis/link_errors.h"
#include "analysis/link_flap.h"
#include "analysis/nic_ports.h"
#include "analysis/pfc_storm.h"
#include "analysis/rate_parts.h"
#include "analysis/retransmissions.h"
#include "analysis/straggler_nic.h"

namespace fabricdiag::analysis {
namespace {

// Where findings of `kind` come in RunRateAnalyzers' answer.
int RateKindOrder(absl::string_view kind) {
  static const absl::string_view kOrder[] = {
      kHotExpertIncastKind, kCongestionKind,   kEcmpImbalanceKind,
      kStragglerNicKind,    kPfcStormKind,     kLinkErrorsKind,
      kLinkFlapKind,        kLinkDegradedKind, kRetransmissionsKind,
      kCablingMismatchKind};
  const auto* at = std::find(std::begin(kOrder), std::end(kOrder), kind);
  return static_cast<int>(at - std::begin(kOrder));
}

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

  // The whole fabric is one part of each kind (analysis/rate_parts.h): a
  // sharded pass finds the same, shard by shard.
  RatePart parts[] = {RunJobPart(in), RunSwitchPart(in), RunPortPart(in)};
  RateExcuses excuses;
  for (const RatePart& p : parts) excuses.Merge(p.excuses);
  for (RatePart& p : parts) {
    Excuse(excuses, &p.findings);
    out.insert(out.end(), std::make_move_iterator(p.findings.begin()),
               std::make_move_iterator(p.findings.end()));
  }
  // The fixed order: findings opened in one pass are numbered in it.
  std::stable_sort(out.begin(), out.end(),
                   [](const Finding& a, const Finding& b) {
                     return RateKindOrder(a.kind) < RateKindOrder(b.kind);
                   });
  return out;
}

}  // namespace fabricdiag::analysis
