// Shared fixture of the link analyzer tests (link_errors, link_flap,
// link_degraded, retransmissions): a small, realistic fabric with seeded
// noise.
//
// - gpu-000..gpu-004, each with four 400 Gb/s RoCE NICs mlx5_0..mlx5_3
//   (netdevs eth0..eth3; link_rate 50e9 B/s, expected rate known) at ~80%
//   load (received_bits ~3.2e11/s), healthy pre-FEC BER ~1e-9, a handful of
//   retransmission-class events per second, and a 25 Gb/s management netdev
//   eno1.
// - leaf-0: swp1..swp16 cabled to gpu-000..gpu-003 (gpu-004 is not in the
//   topology), swp17..swp20 uncabled and down, uplinks swp49..swp52 at
//   800 Gb/s.
// - Jobs: moe-train-42 on gpu-000/gpu-001, dense-7 on gpu-002/gpu-003,
//   ghost-9 on hosts that never report.
//
// Tests edit `ports` (Port(node, device)) and call Run(analyzer).
#pragma once

#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "analysis/analysis_config.h"
#include "analysis/analyzer.h"
#include "analysis/fabric_view.h"
#include "analysis/finding.h"
#include "analysis/layout_model.h"
#include "analysis/layout_parse.h"
#include "gtest/gtest.h"
#include "proto/layout.pb.h"

namespace fabricdiag::analysis::link_testing {

inline constexpr double kNicRate = 50e9;          // 400 Gb/s in bytes/s
inline constexpr double kUplinkRate = 100e9;      // 800 Gb/s
inline constexpr double kMgmtRate = 3.125e9;      // 25 Gb/s
inline constexpr double kBitsPerSecond = 3.2e11;  // 80% of 400 Gb/s

// "gpu-000 mlx5_n <-> leaf-0 swp(4h+n+1)" for h = 0..3.
inline std::string FabricTopologyYaml() {
  std::string yaml =
      "switches:\n"
      "  - name: leaf-0\n"
      "    uplinks: [swp49, swp50, swp51, swp52]\n"
      "links:\n";
  for (int h = 0; h < 4; ++h) {
    for (int n = 0; n < 4; ++n) {
      absl::StrAppend(&yaml, "  - {host: gpu-00", h, ", nic: mlx5_", n,
                      ", switch: leaf-0, port: swp", 4 * h + n + 1, "}\n");
    }
  }
  return yaml;
}

inline std::string LayoutYaml(const std::string& job, const std::string& h0,
                              const std::string& h1) {
  return absl::StrCat("job: ", job,
                      "\n"
                      "gpus_per_node: 4\n"
                      "parallelism: {tp: 4, pp: 1, dp: 2}\n"
                      "hosts: [",
                      h0, ", ", h1,
                      "]\n"
                      "rails: [mlx5_0, mlx5_1, mlx5_2, mlx5_3]\n");
}

class LinkFabricTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto topo = ParseTopology(FabricTopologyYaml());
    ASSERT_TRUE(topo.ok()) << topo.status();
    topology_ = *topo;
    AddLayout(LayoutYaml("moe-train-42", "gpu-000", "gpu-001"));
    AddLayout(LayoutYaml("dense-7", "gpu-002", "gpu-003"));
    AddLayout(LayoutYaml("ghost-9", "gpu-100", "gpu-101"));
    ports = HealthyPorts(/*seed=*/1);
  }

  void AddLayout(const std::string& yaml) {
    auto layout = ParseLayout(yaml);
    ASSERT_TRUE(layout.ok()) << layout.status();
    auto model = LayoutModel::Build(*layout);
    ASSERT_TRUE(model.ok()) << model.status();
    models_.push_back(std::make_unique<LayoutModel>(*std::move(model)));
  }

  // The healthy fabric, noise drawn from `seed`.
  static std::vector<PortView> HealthyPorts(uint32_t seed) {
    std::mt19937 rng(seed);
    auto uniform = [&rng](double lo, double hi) {
      return std::uniform_real_distribution<double>(lo, hi)(rng);
    };
    // One stray error in a 5 s window now and then: 0.2/s, below 1/s.
    auto stray = [&]() { return uniform(0, 1) < 0.2 ? 0.2 : 0.0; };
    std::vector<PortView> out;
    for (int h = 0; h < 5; ++h) {
      const std::string node = absl::StrCat("gpu-00", h);
      for (int n = 0; n < 4; ++n) {
        PortView p;
        p.node = node;
        p.device = absl::StrCat("mlx5_", n);
        p.netdev = absl::StrCat("eth", n);
        PortSignals& s = p.s;
        s.link_rate = kNicRate;
        s.expected_rate = kNicRate;
        s.rx_bytes = 40e9 * uniform(0.9, 1.1);
        s.tx_bytes = 40e9 * uniform(0.9, 1.1);
        s.received_bits = kBitsPerSecond * uniform(0.95, 1.05);
        s.corrected_bits = s.received_bits * uniform(0.5e-9, 2e-9);
        s.pcs_symbol_errors = 0;
        s.symbol_errors = stray();
        s.rx_errors = stray();
        s.crc_errors = stray();
        s.link_downed = 0;
        s.link_error_recovery = 0;
        s.carrier_changes = 0;
        s.link_down_events = 0;
        s.out_of_sequence = uniform(0, 2);
        s.packet_seq_err = uniform(0, 1);
        s.local_ack_timeout_err = stray();
        s.rnr_nak_retry_err = 0;
        s.duplicate_request = uniform(0, 1);
        s.implied_nak_seq_err = 0;
        s.adaptive_retrans = uniform(0, 1);
        s.retries_exceeded = 0;
        out.push_back(p);
      }
      PortView mgmt;
      mgmt.node = node;
      mgmt.device = "eno1";
      mgmt.netdev = "eno1";
      mgmt.s.link_rate = kMgmtRate;
      mgmt.s.rx_bytes = 1e6 * uniform(0.5, 2);
      mgmt.s.tx_bytes = 1e6 * uniform(0.5, 2);
      mgmt.s.rx_errors = 0;
      mgmt.s.crc_errors = 0;
      mgmt.s.carrier_changes = 0;
      out.push_back(mgmt);
    }
    auto switch_port = [&](int n, double rate, bool up) {
      PortView p;
      p.node = "leaf-0";
      p.device = absl::StrCat("swp", n);
      p.netdev = p.device;
      p.is_switch_port = true;
      p.s.link_up = up;
      p.s.link_rate = up ? rate : 0;
      if (up) {
        p.s.rx_bytes = 0.8 * rate * uniform(0.9, 1.1);
        p.s.tx_bytes = 0.8 * rate * uniform(0.9, 1.1);
        p.s.received_bits = p.s.rx_bytes * 8;
        p.s.corrected_bits = p.s.received_bits * uniform(0.5e-9, 2e-9);
        p.s.pcs_symbol_errors = 0;
      }
      p.s.symbol_errors = 0;
      p.s.rx_errors = 0;
      p.s.crc_errors = 0;
      p.s.carrier_changes = 0;
      p.s.link_down_events = 0;
      out.push_back(p);
    };
    for (int n = 1; n <= 16; ++n) switch_port(n, kNicRate, true);
    for (int n = 17; n <= 20; ++n) switch_port(n, kNicRate, false);
    for (int n = 49; n <= 52; ++n) switch_port(n, kUplinkRate, true);
    return out;
  }

  // The port to edit; throws (a test failure) when the fixture has none.
  PortView& Port(const std::string& node, const std::string& device) {
    for (PortView& p : ports) {
      if (p.node == node && p.device == device) return p;
    }
    throw std::out_of_range(absl::StrCat("no port ", node, " ", device));
  }

  // Runs `analyzer` on the current ports.
  template <typename Analyzer>
  std::vector<Finding> Run(Analyzer analyzer) {
    view_ = FabricView();
    view_.window_seconds = window_seconds;
    for (const PortView& p : ports) view_.AddPort(p.node, p.device) = p;
    view_.Finish();
    AnalysisInput in;
    in.view = &view_;
    for (const auto& m : models_) in.layouts.push_back(m.get());
    in.topology = with_topology ? &topology_ : nullptr;
    in.config = &config;
    return analyzer(in);
  }

  std::vector<PortView> ports;
  AnalysisConfig config;
  double window_seconds = 5;
  bool with_topology = true;

 private:
  v1::Topology topology_;
  std::vector<std::unique_ptr<LayoutModel>> models_;
  FabricView view_;
};

// Kind, node and device of each finding, "kind node device", in order.
inline std::vector<std::string> Keys(const std::vector<Finding>& findings) {
  std::vector<std::string> out;
  for (const Finding& f : findings) {
    out.push_back(absl::StrCat(f.kind, " ", f.node, " ", f.device));
  }
  return out;
}

}  // namespace fabricdiag::analysis::link_testing
