#include "tests/analysis/shard_findings.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace fabricdiag::analysis::testing {

std::set<std::string> FindingKeys(const std::vector<Finding>& found) {
  std::set<std::string> out;
  for (const Finding& f : found) {
    const bool storm = f.kind == "pfc_storm";
    std::string s = absl::StrCat(f.kind, " ", f.job, " ", f.node, " ", f.device,
                                 " ", f.group, " ", storm ? "" : f.summary);
    for (const auto& [k, v] : f.evidence) {
      if (!storm || k != "victims") absl::StrAppend(&s, " ", k, "=", v);
    }
    out.insert(std::move(s));
  }
  return out;
}

StormVictimsBySource StormVictims(const std::vector<Finding>& found) {
  StormVictimsBySource out;
  for (const Finding& f : found) {
    if (f.kind != "pfc_storm") continue;
    out[f.node + " " + f.device] = {
        f.evidence.at("victims"),
        std::set<std::string>(f.nodes.begin(), f.nodes.end())};
  }
  return out;
}

FabricView PortsOf(const FabricView& view, const std::vector<uint32_t>& ports) {
  FabricView out;
  out.window_seconds = view.window_seconds;
  for (uint32_t i : ports) {
    const PortView& p = view.ports()[i];
    out.AddPort(p.node, p.device) = p;
  }
  out.Finish();
  return out;
}

FabricView ShardView(const FabricView& view, const std::vector<uint32_t>& ports,
                     ShardKind kind) {
  FabricView out;
  out.window_seconds = view.window_seconds;
  out.ReservePorts(ports.size());
  for (uint32_t i : ports) {
    PortView& p = out.AddPort(view.ports()[i].node, view.ports()[i].device);
    p = view.ports()[i];
    KeepOnly(ShardSlots(kind), &p.s);
  }
  out.Finish();
  return out;
}

const std::vector<scenario::Fault>& EveryRateFault() {
  using scenario::FaultKind;
  static const auto* faults = new std::vector<scenario::Fault>{
      {FaultKind::kHotExpert, "gpu-001", "mlx5_2"},
      {FaultKind::kPfcStorm, "gpu-041", "mlx5_5"},
      {FaultKind::kEcmpImbalance, "leaf-1", ""},
      {FaultKind::kStragglerNic, "gpu-050", "mlx5_0"},
      {FaultKind::kStragglerNic, "gpu-006", "mlx5_3"},
      {FaultKind::kLinkFlap, "gpu-020", "mlx5_1"},
      {FaultKind::kLinkDegraded, "gpu-060", "mlx5_4"},
      {FaultKind::kLinkDegraded, "gpu-006", "mlx5_3"},
      {FaultKind::kLinkErrors, "gpu-030", "mlx5_6"},
      {FaultKind::kRetransmissions, "gpu-010", "mlx5_7"},
      {FaultKind::kCongestion, "gpu-045", "mlx5_3"}};
  return *faults;
}

}  // namespace fabricdiag::analysis::testing
