#include "bench/feature_slices.h"

#include <string>
#include <utility>

namespace fabricdiag::bench {
namespace {

// Collector `c`'s share of `from`, and the names of its nodes when `nodes`
// is not null.
void DealPorts(const analysis::FabricView& from, int collectors, int c,
               analysis::FabricView* to, std::vector<std::string>* nodes) {
  to->window_seconds = from.window_seconds;
  int node = -1;
  const std::string* last = nullptr;
  for (const analysis::PortView& port : from.ports()) {
    const bool first = last == nullptr || port.node != *last;
    if (first) ++node;
    last = &port.node;
    if (node % collectors != c) continue;
    to->AddPort(port.node, port.device) = port;
    if (first && nodes != nullptr) nodes->push_back(port.node);
  }
  to->Finish();
}

}  // namespace

std::vector<collector::FeatureSlice> DealSlices(
    const analysis::FabricView& window, const analysis::FabricView& recent,
    int collectors, absl::Time now) {
  std::vector<collector::FeatureSlice> slices(collectors);
  for (int c = 0; c < collectors; ++c) {
    collector::FeatureSlice& slice = slices[c];
    std::vector<std::string> nodes;
    DealPorts(window, collectors, c, &slice.window, &nodes);
    slice.recent.emplace();
    DealPorts(recent, collectors, c, &*slice.recent, nullptr);
    for (std::string& node : nodes) {
      collector::NodeFacts f;
      f.liveness.node = std::move(node);
      f.liveness.last_report = now;
      f.liveness.interval = absl::Seconds(1);
      f.liveness.ever_reported = true;
      slice.nodes.push_back(std::move(f));
    }
  }
  return slices;
}

}  // namespace fabricdiag::bench
