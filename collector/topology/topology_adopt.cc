#include "collector/topology/topology_adopt.h"

#include <utility>

#include "absl/status/status.h"
#include "common/status_macros.h"

namespace fabricdiag::collector {

absl::StatusOr<std::shared_ptr<const v1::Topology>> TopologyOfView(
    const TopologyViews& views, TopologyKind kind) {
  switch (kind) {
    case TopologyKind::kDiscovered:
      return views.discovered;
    case TopologyKind::kEffective:
      return views.effective;
    case TopologyKind::kDeclared:
      break;
  }
  if (views.declared == nullptr) {
    return absl::NotFoundError(
        "no topology has been applied (fabricdiag topology apply FILE, or "
        "fabricdiag topology adopt)");
  }
  return views.declared;
}

v1::Topology AdoptableTopology(const v1::Topology& discovered) {
  v1::Topology out = discovered;
  for (v1::Switch& sw : *out.mutable_switches()) sw.clear_tier();
  for (v1::Link& link : *out.mutable_links()) link.clear_source();
  for (v1::SwitchLink& link : *out.mutable_switch_links()) {
    link.clear_source();
  }
  return out;
}

AdoptResult AdoptPreview(const TopologyViews& views) {
  AdoptResult result;
  result.written = AdoptableTopology(*views.discovered);
  result.declared_version = views.declared_version;
  result.declared = views.declared;
  return result;
}

absl::StatusOr<AdoptResult> AdoptDiscovered(const TopologySource& source,
                                            LayoutRegistry* registry,
                                            uint64_t expected_version,
                                            bool dry_run, absl::Time deadline) {
  std::shared_ptr<const TopologyViews> views = source.Current();
  const v1::Topology& discovered = *views->discovered;
  if (discovered.links().empty() && discovered.switch_links().empty()) {
    return absl::FailedPreconditionError(
        "nothing is discovered yet (no node reported LLDP neighbors): "
        "adopting would erase the declared topology");
  }
  AdoptResult result;
  result.written = AdoptableTopology(discovered);
  if (dry_run) {
    result.declared_version = registry->Snapshot()->topology_version;
    return result;
  }
  ASSIGN_OR_RETURN(
      result.declared_version,
      registry->ApplyTopologyIf(result.written, expected_version, deadline));
  return result;
}

}  // namespace fabricdiag::collector
