#include "collector/feature_exchange.h"

#include <algorithm>
#include <cstddef>
#include <string>

#include "absl/container/flat_hash_map.h"

namespace fabricdiag::collector {
namespace {

// Adds to `out` every port of `in` whose node `owner` gives to `slice`.
void CopyOwnedPorts(const analysis::FabricView& in, size_t slice,
                    const absl::flat_hash_map<std::string, size_t>& owner,
                    analysis::FabricView* out) {
  for (const analysis::PortView& p : in.ports()) {
    auto it = owner.find(p.node);
    if (it == owner.end() || it->second != slice) continue;
    out->AddPort(p.node, p.device) = p;
  }
}

}  // namespace

FeatureSlice MergeFeatureSlices(absl::Span<const FeatureSlice* const> slices) {
  FeatureSlice merged;
  if (slices.empty()) return merged;
  // node -> the slice it is taken from, and that slice's last report of it.
  absl::flat_hash_map<std::string, size_t> owner;
  absl::flat_hash_map<std::string, absl::Time> newest;
  for (size_t i = 0; i < slices.size(); ++i) {
    for (const NodeFacts& n : slices[i]->nodes) {
      auto [it, inserted] =
          newest.try_emplace(n.liveness.node, n.liveness.last_report);
      if (inserted || n.liveness.last_report > it->second) {
        it->second = n.liveness.last_report;
        owner[n.liveness.node] = i;
      }
    }
  }
  for (size_t i = 0; i < slices.size(); ++i) {
    for (const analysis::PortView& p : slices[i]->window.ports()) {
      owner.try_emplace(p.node, i);
    }
  }
  merged.window.window_seconds = slices[0]->window.window_seconds;
  if (slices[0]->recent.has_value()) {
    merged.recent.emplace();
    merged.recent->window_seconds = slices[0]->recent->window_seconds;
  }
  for (size_t i = 0; i < slices.size(); ++i) {
    const FeatureSlice& s = *slices[i];
    CopyOwnedPorts(s.window, i, owner, &merged.window);
    if (merged.recent.has_value() && s.recent.has_value()) {
      CopyOwnedPorts(*s.recent, i, owner, &*merged.recent);
    }
    for (const NodeFacts& n : s.nodes) {
      if (owner.at(n.liveness.node) == i) merged.nodes.push_back(n);
    }
  }
  // The same order whichever collector merges.
  std::sort(merged.nodes.begin(), merged.nodes.end(),
            [](const NodeFacts& a, const NodeFacts& b) {
              return a.liveness.node < b.liveness.node;
            });
  merged.window.Finish();
  if (merged.recent.has_value()) merged.recent->Finish();
  return merged;
}

}  // namespace fabricdiag::collector
