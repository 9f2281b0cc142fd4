// A realistic, healthy test fabric for the pfc_storm, congestion and
// ecmp_imbalance tests: 8 hosts gpu-000..gpu-007 with 8 x 400 Gb/s NICs
// mlx5_0..7, rail-optimized onto two leaves (mlx5_0..3 on leaf-0, mlx5_4..7
// on leaf-1; host h NIC k on swp(4h + k%4 + 1)), each leaf with host ports
// swp1..32 and ECMP uplinks swp49..52, and one job moe-train-42 using every
// GPU. Counters carry seeded noise at healthy RoCE levels (pause well under
// 0.5% of the time on the lossless priority 3, a few thousand CNP/s).
//
//   TestFabric fabric(/*seed=*/1);
//   fabric.Port("gpu-003", "mlx5_2").s.tx_pause_fraction[3] = 0.94;
//   FabricView view = fabric.View();
//   std::vector<Finding> found = PfcStormFindings(fabric.Input(view));
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <random>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "analysis/analysis_config.h"
#include "analysis/analyzer.h"
#include "analysis/fabric_view.h"
#include "analysis/layout_model.h"
#include "analysis/layout_parse.h"

namespace fabricdiag::analysis::testing {

inline constexpr double kNicRate = 50e9;  // 400 Gb/s in bytes/s
inline constexpr int kHosts = 8;
inline constexpr int kNicsPerHost = 8;
inline constexpr int kRocePriority = 3;

inline std::string Host(int h) { return absl::StrCat("gpu-00", h); }
inline std::string Nic(int k) { return absl::StrCat("mlx5_", k); }
inline std::string Leaf(int k) { return k < 4 ? "leaf-0" : "leaf-1"; }
inline std::string LeafPort(int h, int k) {
  return absl::StrCat("swp", 4 * h + k % 4 + 1);
}
inline std::string Uplink(int u) { return absl::StrCat("swp", 49 + u); }

inline std::string TopologyYaml() {
  std::string yaml = "switches:\n";
  for (const char* leaf : {"leaf-0", "leaf-1"}) {
    absl::StrAppend(&yaml, "  - name: ", leaf,
                    "\n    uplinks: [swp49, swp50, swp51, swp52]\n");
  }
  absl::StrAppend(&yaml, "links:\n");
  for (int h = 0; h < kHosts; ++h) {
    for (int k = 0; k < kNicsPerHost; ++k) {
      absl::StrAppend(&yaml, "  - {host: ", Host(h), ", nic: ", Nic(k),
                      ", switch: ", Leaf(k), ", port: ", LeafPort(h, k), "}\n");
    }
  }
  return yaml;
}

inline constexpr char kLayoutYaml[] = R"(
job: moe-train-42
gpus_per_node: 8
parallelism: {tp: 8, pp: 1, dp: 8, ep: 4}
hosts: [gpu-000, gpu-001, gpu-002, gpu-003, gpu-004, gpu-005, gpu-006, gpu-007]
rails: [mlx5_0, mlx5_1, mlx5_2, mlx5_3, mlx5_4, mlx5_5, mlx5_6, mlx5_7]
)";

class TestFabric {
 public:
  explicit TestFabric(uint32_t seed) : rng_(seed) {
    auto topology = ParseTopology(TopologyYaml());
    EXPECT_TRUE(topology.ok()) << topology.status();
    if (topology.ok()) topology_ = *topology;
    auto layout = ParseLayout(kLayoutYaml);
    EXPECT_TRUE(layout.ok()) << layout.status();
    if (layout.ok()) {
      auto model = LayoutModel::Build(*layout);
      EXPECT_TRUE(model.ok()) << model.status();
      if (model.ok()) model_.emplace(*std::move(model));
    }
    for (int h = 0; h < kHosts; ++h) {
      for (int k = 0; k < kNicsPerHost; ++k) {
        PortView& p = Add(Host(h), Nic(k), false);
        p.netdev = absl::StrCat("eth", k);
        p.s.cnp_sent = Uniform(500, 3000);
        p.s.ecn_marked = p.s.cnp_sent * Uniform(1.1, 1.5);
        p.s.cnp_handled = Uniform(500, 3000);
      }
    }
    for (const char* leaf : {"leaf-0", "leaf-1"}) {
      for (int i = 1; i <= 32; ++i) Add(leaf, absl::StrCat("swp", i), true);
      for (int u = 0; u < 4; ++u) {
        PortView& p = Add(leaf, Uplink(u), true);
        p.s.tx_bytes = 25e9 * Uniform(0.95, 1.05);
      }
    }
  }

  // The port to change before View(); it must exist.
  PortView& Port(const std::string& node, const std::string& device) {
    return ports_.at({node, device});
  }
  // Adds a port with healthy traffic and pause, or returns the existing one.
  PortView& Add(const std::string& node, const std::string& device,
                bool switch_port) {
    auto [it, inserted] = ports_.try_emplace({node, device});
    PortView& p = it->second;
    if (!inserted) return p;
    p.node = node;
    p.device = device;
    p.netdev = switch_port ? device : "";
    p.is_switch_port = switch_port;
    p.s.link_rate = kNicRate;
    p.s.expected_rate = kNicRate;
    p.s.rx_bytes = 20e9 * Uniform(0.9, 1.1);
    p.s.tx_bytes = 20e9 * Uniform(0.9, 1.1);
    // Mellanox exposes per-priority pause lines only where PFC is enabled
    // (docs/counters.md): priority 3 here, the others stay absent.
    p.s.tx_pause_fraction[kRocePriority] = Uniform(0, 0.004);
    p.s.rx_pause_fraction[kRocePriority] = Uniform(0, 0.004);
    p.s.tx_pause_frames[kRocePriority] = Uniform(0, 40);
    p.s.rx_pause_frames[kRocePriority] = Uniform(0, 40);
    if (switch_port) {
      p.s.ecn_marked = Uniform(100, 2000);
    } else {
      p.s.pause_storm_warnings = 0;
      p.s.pause_storm_errors = 0;
    }
    return p;
  }
  void Remove(const std::string& node, const std::string& device) {
    ports_.erase({node, device});
  }
  template <typename Fn>
  void ForEachPort(Fn fn) {
    for (auto& entry : ports_) fn(entry.second);
  }

  FabricView View(double window_seconds = 5) const {
    FabricView view;
    view.window_seconds = window_seconds;
    for (const auto& entry : ports_) {
      const PortView& p = entry.second;
      PortView& q = view.AddPort(p.node, p.device);
      q = p;
    }
    view.Finish();
    return view;
  }

  AnalysisInput Input(const FabricView& view) const {
    AnalysisInput in;
    in.view = &view;
    if (model_) in.layouts.push_back(&*model_);
    in.topology = &topology_;
    in.config = &config_;
    return in;
  }

  double Uniform(double lo, double hi) {
    return std::uniform_real_distribution<double>(lo, hi)(rng_);
  }

  v1::Topology& topology() { return topology_; }
  AnalysisConfig& config() { return config_; }

 private:
  std::mt19937 rng_;
  std::map<std::pair<std::string, std::string>, PortView> ports_;
  v1::Topology topology_;
  std::optional<LayoutModel> model_;
  AnalysisConfig config_;
};

}  // namespace fabricdiag::analysis::testing
