#include "collector/feature_exchange.h"

#include <algorithm>
#include <cstddef>
#include <string>

#include "absl/container/flat_hash_map.h"

namespace fabricdiag::collector {
namespace {

// Moves into `out`, as one sorted run, every port of `in` (Finish()ed:
// sorted by node) whose node `owner` gives to `slice`; looks each node up
// once.
void MoveOwnedPorts(analysis::FabricView& in, size_t slice,
                    const absl::flat_hash_map<std::string, size_t>& owner,
                    analysis::FabricView* out) {
  std::vector<analysis::PortView> ports = in.TakePorts();
  const std::string* node = nullptr;
  bool keep = false;
  auto kept = std::remove_if(
      ports.begin(), ports.end(), [&](const analysis::PortView& p) {
        if (node == nullptr || p.node != *node) {
          node = &p.node;
          auto it = owner.find(p.node);
          keep = it != owner.end() && it->second == slice;
        }
        return !keep;
      });
  ports.erase(kept, ports.end());
  out->AppendSorted(std::move(ports));
}

}  // namespace

FeatureSlice MergeFeatureSlices(absl::Span<FeatureSlice* const> slices) {
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
    const std::string* node = nullptr;  // ports are sorted by node
    for (const analysis::PortView& p : slices[i]->window.ports()) {
      if (node != nullptr && p.node == *node) continue;
      node = &p.node;
      owner.try_emplace(p.node, i);
    }
  }
  merged.window.window_seconds = slices[0]->window.window_seconds;
  if (slices[0]->recent.has_value()) {
    merged.recent.emplace();
    merged.recent->window_seconds = slices[0]->recent->window_seconds;
  }
  for (size_t i = 0; i < slices.size(); ++i) {
    FeatureSlice& s = *slices[i];
    MoveOwnedPorts(s.window, i, owner, &merged.window);
    if (merged.recent.has_value() && s.recent.has_value()) {
      MoveOwnedPorts(*s.recent, i, owner, &*merged.recent);
    }
    for (NodeFacts& n : s.nodes) {
      if (owner.at(n.liveness.node) == i) merged.nodes.push_back(std::move(n));
    }
    s.nodes.clear();
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
