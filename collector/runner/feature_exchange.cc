#include "collector/runner/feature_exchange.h"

#include <algorithm>
#include <cstddef>
#include <queue>
#include <string>
#include <system_error>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

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

bool ByNode(const NodeFacts& a, const NodeFacts& b) {
  return a.liveness.node < b.liveness.node;
}

// Sorts a run of one slice's facts by name, stably, unless it is sorted
// already (as a rule: a slice's chunks hold ascending nodes).
void SortByNode(std::vector<NodeFacts*>* run) {
  const auto by_node = [](const NodeFacts* a, const NodeFacts* b) {
    return ByNode(*a, *b);
  };
  if (!std::is_sorted(run->begin(), run->end(), by_node)) {
    std::stable_sort(run->begin(), run->end(), by_node);
  }
}

// Calls `fn` with every fact of `runs` (each sorted by name) in (name, run,
// position) order: the runs merged through a heap of their heads, smallest
// name on top.
template <typename Fn>
void ForEachByNode(const std::vector<std::vector<NodeFacts*>>& runs, Fn fn) {
  struct Head {
    absl::string_view node;
    size_t run;
    size_t at;  // in its run
  };
  auto after = [](const Head& a, const Head& b) {
    const int c = a.node.compare(b.node);
    return c > 0 || (c == 0 && std::tie(a.run, a.at) > std::tie(b.run, b.at));
  };
  std::priority_queue<Head, std::vector<Head>, decltype(after)> heads(after);
  for (size_t i = 0; i < runs.size(); ++i) {
    if (!runs[i].empty()) heads.push(Head{runs[i][0]->liveness.node, i, 0});
  }
  while (!heads.empty()) {
    const Head head = heads.top();
    heads.pop();
    const std::vector<NodeFacts*>& run = runs[head.run];
    fn(run[head.at]);
    if (head.at + 1 < run.size()) {
      heads.push(Head{run[head.at + 1]->liveness.node, head.run, head.at + 1});
    }
  }
}

// MergeFeatureSlices() of slices without a port (a sharded cluster's
// liveness, each pass): what it keeps of each node, found by merging the
// slices' facts as sorted runs, without a map of every node's name (125,000
// at 1M GPUs). A node's facts meet in the merge in (slice, position) order;
// the newest is kept, the first of a tie.
void MergeFactsOnly(absl::Span<FeatureSlice* const> slices,
                    std::vector<NodeFacts>* out) {
  std::vector<std::vector<NodeFacts*>> runs(slices.size());
  size_t total = 0;
  for (size_t i = 0; i < slices.size(); ++i) {
    std::vector<NodeFacts>& nodes = slices[i]->nodes;
    runs[i].reserve(nodes.size());
    for (NodeFacts& n : nodes) runs[i].push_back(&n);
    SortByNode(&runs[i]);
    total += nodes.size();
  }
  out->reserve(total);
  NodeFacts* kept = nullptr;  // the newest so far of the current node
  ForEachByNode(runs, [&](NodeFacts* n) {
    if (kept == nullptr || n->liveness.node != kept->liveness.node) {
      if (kept != nullptr) out->push_back(std::move(*kept));
      kept = n;
    } else if (n->liveness.last_report > kept->liveness.last_report) {
      kept = n;
    }
  });
  if (kept != nullptr) out->push_back(std::move(*kept));
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
  bool any_ports = false;
  for (const auto* runs : {&window, &recent}) {
    for (const auto& slice_runs : *runs) {
      for (const auto& run : slice_runs) any_ports = any_ports || !run.empty();
    }
  }
  if (!any_ports) {
    MergeFactsOnly(slices, &merged.nodes);
    for (FeatureSlice* s : slices) s->nodes.clear();
    merged.window.Finish();
    if (merged.recent.has_value()) merged.recent->Finish();
    return merged;
  }
  // node -> the facts it is taken from: those whose last report of it is
  // newest (the first of a tie), of whichever slice, so that a node given
  // twice (two collectors, or a broken peer's one slice) is listed once.
  // The names are those of the slices' facts,
  // not copied: which facts each slice gives is settled (`entries`, then
  // `runs`) before any is moved out. (Ports of a node no slice has facts of are
  // taken from the first slice with ports of it, per view: MoveOwnedPorts.)
  struct Newest {  // 16 bytes, as a map entry's value: 125,000 at 1M GPUs
    uint32_t slice;
    uint32_t at;  // in the slice's nodes
    absl::Time last_report;
  };
  absl::flat_hash_map<absl::string_view, Newest> newest;
  size_t facts = 0;
  for (const FeatureSlice* s : slices) facts += s->nodes.size();
  // Reserved for every fact: no rehash, so the entries stay where
  // `entries` points (each slice's facts' entry, by position).
  newest.reserve(facts);
  std::vector<std::vector<const Newest*>> entries(slices.size());
  for (size_t i = 0; i < slices.size(); ++i) {
    const std::vector<NodeFacts>& nodes = slices[i]->nodes;
    entries[i].reserve(nodes.size());
    for (size_t k = 0; k < nodes.size(); ++k) {
      const NodeFacts& n = nodes[k];
      const Newest here{static_cast<uint32_t>(i), static_cast<uint32_t>(k),
                        n.liveness.last_report};
      auto [it, inserted] = newest.try_emplace(n.liveness.node, here);
      if (!inserted && n.liveness.last_report > it->second.last_report) {
        it->second = here;
      }
      entries[i].push_back(&it->second);
    }
  }
  // Only the views' merge reads it.
  absl::flat_hash_map<std::string, size_t> owner;
  owner.reserve(newest.size());
  for (const auto& [node, n] : newest) owner.emplace(node, n.slice);
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
  // The facts each slice gives, by position, in the merged order (by
  // name): settled before any is moved out, since `newest` holds their
  // names. A slice's facts are sorted as a rule (its chunks hold ascending
  // nodes), so the slices' runs are merged; any that is not is sorted
  // first.
  std::vector<std::vector<NodeFacts*>> runs(slices.size());
  size_t taken = 0;
  for (size_t i = 0; i < slices.size(); ++i) {
    std::vector<NodeFacts>& nodes = slices[i]->nodes;
    std::vector<NodeFacts*>& run = runs[i];
    run.reserve(nodes.size());
    for (size_t k = 0; k < nodes.size(); ++k) {
      if (entries[i][k]->slice != i || entries[i][k]->at != k) continue;
      run.push_back(&nodes[k]);
    }
    SortByNode(&run);
    taken += run.size();
  }
  entries.clear();
  newest.clear();
  // Each name is in one run once here; the merge's tie-break only keeps
  // the order defined.
  merged.nodes.reserve(taken);
  ForEachByNode(runs,
                [&](NodeFacts* n) { merged.nodes.push_back(std::move(*n)); });
  for (FeatureSlice* s : slices) s->nodes.clear();
  if (recent_merge.joinable()) recent_merge.join();
  return merged;
}

}  // namespace fabricdiag::collector
