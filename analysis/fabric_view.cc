#include "analysis/fabric_view.h"

#include <algorithm>
#include <tuple>
#include <utility>

namespace fabricdiag::analysis {

PortView& FabricView::AddPort(std::string node, std::string device) {
  PortView& p = ports_.emplace_back();
  p.node = std::move(node);
  p.device = std::move(device);
  return p;
}

void FabricView::Finish() {
  std::sort(ports_.begin(), ports_.end(),
            [](const PortView& a, const PortView& b) {
              return std::tie(a.node, a.device) < std::tie(b.node, b.device);
            });
  nodes_.clear();
  for (uint32_t i = 0; i < ports_.size();) {
    uint32_t j = i;
    while (j < ports_.size() && ports_[j].node == ports_[i].node) ++j;
    nodes_[ports_[i].node] = {i, j};
    i = j;
  }
}

absl::Span<const PortView> FabricView::PortsOf(absl::string_view node) const {
  auto it = nodes_.find(node);
  if (it == nodes_.end()) return {};
  return absl::MakeConstSpan(ports_).subspan(
      it->second.first, it->second.second - it->second.first);
}

const PortView* FabricView::Find(absl::string_view node,
                                 absl::string_view name) const {
  for (const PortView& p : PortsOf(node)) {
    if (p.device == name) return &p;
  }
  for (const PortView& p : PortsOf(node)) {
    if (!p.netdev.empty() && p.netdev == name) return &p;
  }
  return nullptr;
}

}  // namespace fabricdiag::analysis
