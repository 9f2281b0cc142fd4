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

}  // namespace fabricdiag::analysis::testing
