// The analysis runner fed by the topology keeper: with no topology file at
// all, the topology LLDP draws gives the analyzers a switch's ECMP uplinks.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "collector/declared/file_declared_state.h"
#include "collector/findings/findings_store.h"
#include "collector/runner/analysis_runner.h"
#include "collector/state/baselines_store.h"
#include "collector/state/state_store.h"
#include "collector/topology/lldp_topology_builder.h"
#include "collector/topology/topology_keeper.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/fake_node_facts.h"
#include "tests/testing/fixed_topology.h"
#include "tests/testing/lldp_fabric.h"
#include "tests/testing/temp_dir.h"

namespace fabricdiag::collector {
namespace {

using ::testing::IsEmpty;
using ::testing::SizeIs;

// What the switch's agent reports: leaf-0's four ports towards the spines,
// the first carrying most of the traffic (polarized ECMP hashing), and its
// two host ports. The ports are the fabric: this exchange replaces the
// series store's (empty) slice with them.
class LeafReports final : public FeatureExchange {
 public:
  std::string Describe() const override { return "leaf-0's reports"; }
  absl::Status Publish(const FeatureSlice&, absl::Time) override {
    return absl::OkStatus();
  }
  FeatureSlice Merged(FeatureSlice local, absl::Time, MergeScope) override {
    analysis::FabricView view;
    view.window_seconds = local.window.window_seconds;
    const double tx[] = {38e9, 4e9, 8e9, 10e9};
    for (int u = 0; u < 4; ++u) {
      Port(&view, "leaf-0", "swp" + std::to_string(33 + u), true).s.tx_bytes =
          tx[u];
    }
    Port(&view, "leaf-0", "swp1", true);
    Port(&view, "leaf-0", "swp2", true);
    view.Finish();
    local.window = std::move(view);
    local.recent.reset();
    return local;
  }

 private:
  static analysis::PortView& Port(analysis::FabricView* view,
                                  const std::string& node,
                                  const std::string& netdev, bool is_switch) {
    analysis::PortView& p = view->AddPort(node, netdev);
    p.netdev = netdev;
    p.is_switch_port = is_switch;
    p.s.link_rate = 50e9;
    p.s.expected_rate = 50e9;
    p.s.rx_bytes = 10e9;
    p.s.tx_bytes = 10e9;
    return p;
  }
};

class LldpTopologyRunnerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<StateStore>> state =
        StateStore::Open(tmp_.path() + "/state", &clock_);
    ASSERT_TRUE(state.ok()) << state.status();
    state_ = *std::move(state);
    declared_ = std::make_unique<FileDeclaredState>(state_.get());
    registry_ = std::make_unique<LayoutRegistry>(declared_.get(), &clock_);
    ASSERT_TRUE(registry_->Load().ok());
    findings_ =
        std::make_unique<FindingsStore>(state_.get(), FindingsStoreOptions{});
    ASSERT_TRUE(findings_->Load().ok());
    // What lldpd on the hosts and on leaf-0 hears: two hosts below, four
    // spines above.
    testing::LldpFabric fabric;
    fabric.CableHost("gpu-000", "eth0", "mlx5_0", "leaf-0", "swp1");
    fabric.CableHost("gpu-001", "eth0", "mlx5_0", "leaf-0", "swp2");
    for (int u = 0; u < 4; ++u) {
      fabric.CableSwitches("leaf-0", "swp" + std::to_string(33 + u),
                           "spine-" + std::to_string(u), "swp1");
    }
    for (const v1::NodeFacts* f : fabric.Facts()) {
      ASSERT_TRUE(facts_.Put(*f).ok());
    }
  }

  // The kinds and nodes of the active findings after `passes` passes over
  // the topologies of `topology`.
  std::vector<v1::Finding> Passes(const TopologySource& topology, int passes) {
    AnalysisStats stats;
    AnalysisRunner runner(&series_, registry_.get(), findings_.get(), &stats,
                          clock_, {reports_, role_, baselines_, topology}, {});
    for (int i = 0; i < passes; ++i) {
      runner.RunOnce();
      clock_.Advance(absl::Seconds(1));
    }
    return findings_->Active();
  }

  testing::TempDir tmp_;
  FakeClock clock_;
  std::unique_ptr<StateStore> state_;
  std::unique_ptr<FileDeclaredState> declared_;
  std::unique_ptr<LayoutRegistry> registry_;
  std::unique_ptr<FindingsStore> findings_;
  SeriesStore series_{SeriesStore::Options{}, clock_};
  testing::FakeNodeFacts facts_;
  LeafReports reports_;
  AlwaysLeading role_;
  NoBaselinesStore baselines_;
};

TEST_F(LldpTopologyRunnerTest, EcmpImbalanceFromLldpAloneWithoutATopologyFile) {
  LldpTopologyBuilder builder;
  TopologyKeeper keeper(&facts_, registry_.get(), &builder, &clock_);
  ASSERT_TRUE(keeper.Refresh());
  ASSERT_EQ(keeper.Current()->declared, nullptr);
  std::vector<v1::Finding> active = Passes(keeper, 5);
  ASSERT_THAT(active, SizeIs(1));
  EXPECT_EQ(active[0].kind(), "ecmp_imbalance");
  EXPECT_EQ(active[0].node(), "leaf-0");
  EXPECT_EQ(active[0].device(), "uplinks");
  EXPECT_EQ(active[0].evidence_text().at("hot_uplinks"), "swp33");
}

// The same reports without the discovered topology: no switch has uplinks,
// so nothing is judged (what the keeper adds above).
TEST_F(LldpTopologyRunnerTest, WithoutTheDiscoveredTopologyNothingIsJudged) {
  testing::FixedTopology nothing;
  EXPECT_THAT(Passes(nothing, 5), IsEmpty());
}

}  // namespace
}  // namespace fabricdiag::collector
