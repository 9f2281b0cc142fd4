// A scenario fabric (tests/testing/scenario_builder.h) dealt to the
// collectors of a cluster, as the FeatureSlices
// (collector/runner/feature_exchange.h) each would publish on the feature
// stream: every `collectors`-th node of the sorted views (hosts and leaves
// alike, as agents spread over the collectors by a hash of their name), its
// window and recent ports, and a liveness fact per node (reported at `now`,
// every second).
//
//   std::vector<collector::FeatureSlice> slices =
//       DealSlices(window, recent, 3, absl::Now());
//
// Pure; thread-safe.
#pragma once

#include <vector>

#include "absl/time/time.h"
#include "analysis/fabric_view.h"
#include "collector/runner/feature_exchange.h"

namespace fabricdiag::bench {

std::vector<collector::FeatureSlice> DealSlices(
    const analysis::FabricView& window, const analysis::FabricView& recent,
    int collectors, absl::Time now);

}  // namespace fabricdiag::bench
