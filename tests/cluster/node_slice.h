// A collector's slice of one node for the cluster tests: its liveness
// (reported at `last_report`) and one port, mlx5_0, receiving `rx` bytes/s.
#pragma once

#include <string>

#include "absl/time/time.h"
#include "collector/runner/feature_exchange.h"

namespace fabricdiag::cluster::testing {

inline collector::FeatureSlice NodeSlice(const std::string& node,
                                         absl::Time last_report, double rx) {
  collector::FeatureSlice s;
  s.window.AddPort(node, "mlx5_0").s.rx_bytes = rx;
  s.window.Finish();
  collector::NodeFacts f;
  f.liveness.node = node;
  f.liveness.last_report = last_report;
  f.liveness.ever_reported = true;
  s.nodes.push_back(f);
  return s;
}

}  // namespace fabricdiag::cluster::testing
