// A collector's page sources (collector/web/web_routes.h) over a large
// simulated fabric, for the page's benchmark (bench/web_bench.cc) and the page
// served at scale to a browser (bench/web_page_fixture.cc,
// tests/system/page_scale_test.py).
//
// The fabric is the testing library's scenario cluster
// (tests/testing/scenario_builder.h): `nodes` GPU nodes x 8 NICs,
// `nodes_per_leaf` per leaf with 4 ECMP uplinks each, `jobs` jobs covering
// every node, faults injected (a hot expert on the second node's mlx5_0, a
// congested NIC, link errors, a PFC storm, one skewed leaf). The findings
// are what the real rate analyzers raise on it, opened in a real findings
// store; the jobs and the topology are applied to a real layout registry.
//
//   absl::StatusOr<std::unique_ptr<WebFabric>> f =
//       WebFabric::Build({.nodes = 8512}, dir);
//   std::vector<HttpRoute> routes = WebRoutes((*f)->Sources());
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "analysis/fabric_view.h"
#include "collector/declared/file_declared_state.h"
#include "collector/declared/layout_registry.h"
#include "collector/findings/findings_store.h"
#include "collector/state/state_store.h"
#include "collector/web/web_routes.h"
#include "common/clock.h"
#include "tests/testing/fixed_topology.h"
#include "tests/testing/scenario_builder.h"

namespace fabricdiag::bench {

struct WebFabricSpec {
  int nodes = 8512;  // a multiple of 8
  int nodes_per_leaf = 32;
  int jobs = 2;
  // More congested NICs, spread over the fabric: a bad day's findings.
  int extra_faults = 0;
};

class WebFabric {
 public:
  // `state_dir`: an empty directory for the state store.
  static absl::StatusOr<std::unique_ptr<WebFabric>> Build(
      const WebFabricSpec& spec, const std::string& state_dir);

  collector::WebSources Sources() const;
  const analysis::scenario::Cluster& cluster() const { return *cluster_; }
  std::shared_ptr<const analysis::FabricView> view() const;
  // Replaces the view with a fresh window (what the next analysis pass
  // publishes).
  void NextView(uint32_t seed);
  const collector::FindingsStore& findings() const { return *findings_; }
  // The hot expert's NIC.
  const std::string& hot_node() const { return hot_node_; }
  const std::string& hot_device() const { return hot_device_; }

 private:
  WebFabric() = default;
  SystemClock clock_;
  std::unique_ptr<analysis::scenario::Cluster> cluster_;
  std::vector<analysis::scenario::Fault> faults_;
  mutable std::mutex mu_;
  std::shared_ptr<const analysis::FabricView> view_;  // guarded by mu_
  std::unique_ptr<collector::StateStore> state_;
  std::unique_ptr<collector::FindingsStore> findings_;
  std::unique_ptr<collector::FileDeclaredState> declared_;
  std::unique_ptr<collector::LayoutRegistry> registry_;
  std::unique_ptr<testing::FixedTopology> topology_;
  std::string hot_node_;
  std::string hot_device_;
};

}  // namespace fabricdiag::bench
