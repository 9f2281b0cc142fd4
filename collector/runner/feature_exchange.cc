#include "collector/runner/feature_exchange.h"

#include <algorithm>
#include <cstddef>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_map.h"

namespace fabricdiag::collector {
namespace {

// Appends to `out`, run by run, every port of `runs` (each sorted by
// node) whose node `owner` gives to `slice`, or, for a node no slice has
// facts of, that `claimed` (the view's, filled as slices are moved in
// order) gives to it: the first slice with ports of it. Looks each node up
// once per run.
void MoveOwnedPorts(std::vector<std::vector<analysis::PortView>>& runs,
                    size_t slice,
                    const absl::flat_hash_map<std::string, size_t>& owner,
                    absl::flat_hash_map<std::string, size_t>* claimed,
                    analysis::FabricView* out) {
  for (std::vector<analysis::PortView>& ports : runs) {
    const std::string* node = nullptr;
    bool keep = false;
    auto kept = std::remove_if(
        ports.begin(), ports.end(), [&](const analysis::PortView& p) {
          if (node == nullptr || p.node != *node) {
            node = &p.node;
            auto it = owner.find(p.node);
            if (it == owner.end()) {
              it = claimed->try_emplace(p.node, slice).first;
            }
            keep = it->second == slice;
          }
          return !keep;
        });
    ports.erase(kept, ports.end());
    if (!ports.empty()) out->AppendSorted(std::move(ports));
  }
  runs.clear();
}

// Every slice's runs of one view into `out`, Finish()ed.
void MergeView(std::vector<std::vector<std::vector<analysis::PortView>>>& runs,
               const absl::flat_hash_map<std::string, size_t>& owner,
               analysis::FabricView* out) {
  absl::flat_hash_map<std::string, size_t> claimed;
  for (size_t i = 0; i < runs.size(); ++i) {
    MoveOwnedPorts(runs[i], i, owner, &claimed, out);
  }
  out->Finish();
}

}  // namespace

FeatureSlice MergeFeatureSlices(absl::Span<FeatureSlice* const> slices) {
  FeatureSlice merged;
  if (slices.empty()) return merged;
  merged.window.window_seconds = slices[0]->window.window_seconds;
  if (slices[0]->recent.has_value()) {
    merged.recent.emplace();
    merged.recent->window_seconds = slices[0]->recent->window_seconds;
  }
  // Each slice's ports as sorted runs: a Finish()ed view's one, or the
  // runs it was given (the chunks of a collector's slice).
  std::vector<std::vector<std::vector<analysis::PortView>>> window(
      slices.size());
  std::vector<std::vector<std::vector<analysis::PortView>>> recent(
      slices.size());
  for (size_t i = 0; i < slices.size(); ++i) {
    window[i] = slices[i]->window.TakeRuns();
    if (slices[i]->recent.has_value()) {
      recent[i] = slices[i]->recent->TakeRuns();
    }
  }
  // node -> the slice it is taken from, and that slice's last report of it.
  // (Ports of a node no slice has facts of are taken from the first slice
  // with ports of it, per view: MoveOwnedPorts.)
  absl::flat_hash_map<std::string, size_t> owner;
  absl::flat_hash_map<std::string, absl::Time> newest;
  size_t facts = 0;
  for (const FeatureSlice* s : slices) facts += s->nodes.size();
  owner.reserve(facts);
  newest.reserve(facts);
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
  // The two views on two threads: each moves and merges its own ports and
  // only reads `owner`. Without a second thread (the process is out of
  // them), one after the other.
  std::thread recent_merge;
  bool recent_handled = !merged.recent.has_value();
  if (!recent_handled) {
    try {
      recent_merge = std::thread([&recent, &owner, &merged] {
        MergeView(recent, owner, &*merged.recent);
      });
      recent_handled = true;
    } catch (const std::system_error&) {
    }
  }
  MergeView(window, owner, &merged.window);
  if (!recent_handled) MergeView(recent, owner, &*merged.recent);
  merged.nodes.reserve(owner.size());
  for (size_t i = 0; i < slices.size(); ++i) {
    FeatureSlice& s = *slices[i];
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
  if (recent_merge.joinable()) recent_merge.join();
  return merged;
}

}  // namespace fabricdiag::collector
