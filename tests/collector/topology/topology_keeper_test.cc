#include "collector/topology/topology_keeper.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/notification.h"
#include "collector/declared/file_declared_state.h"
#include "collector/state/state_store.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/fake_node_facts.h"
#include "tests/testing/promtool.h"
#include "tests/testing/temp_dir.h"

namespace fabricdiag::collector {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

using FakeFacts = ::fabricdiag::testing::FakeNodeFacts;

// One host link per node (its name -> leaf-1 port "p-<node>"), the nodes in
// the order given, the effective topology the declared one plus those; it
// records what it was given and can be held mid-build.
class FakeBuilder final : public TopologyBuilder {
 public:
  BuiltTopology Build(const std::vector<const v1::NodeFacts*>& facts,
                      const v1::Topology* declared) const override {
    if (hold != nullptr) {
      building.Notify();
      hold->WaitForNotification();
    }
    // A drawing that takes `takes` on the keeper's clock.
    if (clock != nullptr) clock->Advance(takes);
    ++builds;
    BuiltTopology out;
    if (declared != nullptr) out.effective = *declared;
    for (const v1::NodeFacts* f : facts) {
      v1::Link* link = out.discovered.add_links();
      link->set_host(f->node());
      link->set_nic("mlx5_0");
      link->set_switch_("leaf-1");
      link->set_port("p-" + f->node());
      *out.effective.add_links() = *link;
    }
    if (!facts.empty()) out.discovered.add_switches()->set_name("leaf-1");
    if (facts.size() > 1) out.problems.push_back("two nodes");
    return out;
  }
  mutable std::atomic<int> builds{0};
  absl::Notification* hold = nullptr;
  mutable absl::Notification building;
  FakeClock* clock = nullptr;
  absl::Duration takes;
};

v1::NodeFacts Facts(const std::string& node) {
  v1::NodeFacts f;
  f.set_node(node);
  return f;
}

v1::Topology Declared(const std::string& port) {
  v1::Topology t;
  t.add_switches()->set_name("leaf-9");
  v1::Link* link = t.add_links();
  link->set_host("gpu-9");
  link->set_nic("mlx5_0");
  link->set_switch_("leaf-9");
  link->set_port(port);
  return t;
}

std::vector<std::string> Hosts(const v1::Topology& t) {
  std::vector<std::string> hosts;
  for (const v1::Link& l : t.links()) hosts.push_back(l.host());
  return hosts;
}

class TopologyKeeperTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<StateStore>> store =
        StateStore::Open(tmp_.path() + "/state", &clock_);
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
    declared_ = std::make_unique<FileDeclaredState>(store_.get());
    registry_ = std::make_unique<LayoutRegistry>(declared_.get(), &clock_);
    ASSERT_TRUE(registry_->Load().ok());
  }

  testing::TempDir tmp_;
  FakeClock clock_;
  std::unique_ptr<StateStore> store_;
  std::unique_ptr<FileDeclaredState> declared_;
  std::unique_ptr<LayoutRegistry> registry_;
  FakeFacts facts_;
  FakeBuilder builder_;
};

// The views are drawn again only when the facts' generation moved or the
// declared topology changed, and each time from every node's facts in the
// order of their names (every collector of a cluster draws the same).
TEST_F(TopologyKeeperTest, RedrawsOnlyWhenFactsOrTheDeclarationMove) {
  TopologyKeeper keeper(&facts_, registry_.get(), &builder_, &clock_);
  EXPECT_TRUE(keeper.Current()->discovered->links().empty());
  EXPECT_EQ(keeper.Current()->declared, nullptr);

  ASSERT_TRUE(facts_.Put(Facts("gpu-2")).ok());
  ASSERT_TRUE(facts_.Put(Facts("gpu-1")).ok());
  const int before = builder_.builds.load();
  EXPECT_TRUE(keeper.Refresh());
  EXPECT_FALSE(keeper.Refresh());
  EXPECT_EQ(builder_.builds.load(), before + 1);
  std::shared_ptr<const TopologyViews> views = keeper.Current();
  EXPECT_THAT(Hosts(*views->discovered), ElementsAre("gpu-1", "gpu-2"));
  EXPECT_EQ(views->facts_generation, 2u);
  EXPECT_THAT(views->problems, ElementsAre("two nodes"));

  ASSERT_TRUE(registry_->ApplyTopology(Declared("swp1")).ok());
  EXPECT_TRUE(keeper.Refresh());
  views = keeper.Current();
  ASSERT_NE(views->declared, nullptr);
  EXPECT_EQ(views->declared_version, registry_->Snapshot()->topology_version);
  EXPECT_THAT(Hosts(*views->effective), ElementsAre("gpu-9", "gpu-1", "gpu-2"));
  // The index is the effective topology's: the declared link is in it.
  EXPECT_NE(views->effective_index->SwitchPortOf("gpu-9", "mlx5_0"), nullptr);
  EXPECT_FALSE(keeper.Refresh());

  ASSERT_TRUE(facts_.Put(Facts("gpu-3")).ok());
  EXPECT_TRUE(keeper.Refresh());
  EXPECT_THAT(Hosts(*keeper.Current()->discovered),
              ElementsAre("gpu-1", "gpu-2", "gpu-3"));
}

// What the declared and the discovered cabling say of each other is
// compared once per drawing, for every pass to read (cabling_mismatch);
// nothing to compare while nothing is declared.
TEST_F(TopologyKeeperTest, ComparesTheCablingOncePerDrawing) {
  TopologyKeeper keeper(&facts_, registry_.get(), &builder_, &clock_);
  ASSERT_TRUE(facts_.Put(Facts("gpu-9")).ok());
  EXPECT_TRUE(keeper.Refresh());
  EXPECT_EQ(keeper.Current()->cabling, nullptr);

  // Declared on leaf-9 swp1; LLDP hears leaf-1 p-gpu-9.
  ASSERT_TRUE(registry_->ApplyTopology(Declared("swp1")).ok());
  EXPECT_TRUE(keeper.Refresh());
  std::shared_ptr<const TopologyViews> views = keeper.Current();
  ASSERT_NE(views->cabling, nullptr);
  ASSERT_EQ(views->cabling->host_links.size(), 1u);
  const analysis::Finding& f = views->cabling->host_links[0];
  EXPECT_EQ(f.node, "gpu-9");
  EXPECT_EQ(f.device, "mlx5_0");
  EXPECT_EQ(f.evidence_text.at("declared_switch"), "leaf-9");
  EXPECT_EQ(f.evidence_text.at("observed_switch"), "leaf-1");
  EXPECT_EQ(f.evidence_text.at("observed_port"), "p-gpu-9");
  EXPECT_TRUE(views->cabling->switch_links.empty());
}

// A drawing in progress (a large fabric takes a second) never holds a
// reader up: it gets the previous views until the new ones are swapped in.
TEST_F(TopologyKeeperTest, ReadersGetThePreviousViewsWhileADrawingRuns) {
  TopologyKeeper keeper(&facts_, registry_.get(), &builder_, &clock_);
  ASSERT_TRUE(facts_.Put(Facts("gpu-1")).ok());
  ASSERT_TRUE(keeper.Refresh());
  absl::Notification hold;
  builder_.hold = &hold;
  ASSERT_TRUE(facts_.Put(Facts("gpu-2")).ok());
  std::thread drawing([&keeper] { keeper.Refresh(); });
  builder_.building.WaitForNotification();
  EXPECT_THAT(Hosts(*keeper.Current()->discovered), ElementsAre("gpu-1"));
  hold.Notify();
  drawing.join();
  EXPECT_THAT(Hosts(*keeper.Current()->discovered),
              ElementsAre("gpu-1", "gpu-2"));
}

// Started, the keeper picks up new facts by itself.
TEST_F(TopologyKeeperTest, StartedItFollowsTheFacts) {
  TopologyKeeper keeper(&facts_, registry_.get(), &builder_, &clock_);
  keeper.Start(absl::Milliseconds(5));
  ASSERT_TRUE(facts_.Put(Facts("gpu-1")).ok());
  for (int i = 0; i < 2000 && keeper.Current()->facts_generation == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_THAT(Hosts(*keeper.Current()->discovered), ElementsAre("gpu-1"));
  keeper.Stop();
  keeper.Stop();  // twice is fine
}

// While facts keep moving, a drawing that takes 100 ms is followed by 300
// ms without one (kDrawingPace), not by another at the next poll; the last
// facts are drawn all the same.
TEST_F(TopologyKeeperTest, DrawingsArePacedByWhatTheyTake) {
  builder_.clock = &clock_;
  builder_.takes = absl::Milliseconds(100);
  TopologyKeeper keeper(&facts_, registry_.get(), &builder_, &clock_);
  const int before = builder_.builds.load();
  keeper.Start(absl::Milliseconds(5));
  const auto start = std::chrono::steady_clock::now();
  int n = 0;
  while (std::chrono::steady_clock::now() - start < std::chrono::seconds(1)) {
    ASSERT_TRUE(facts_.Put(Facts("gpu-" + std::to_string(n++))).ok());
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  // At most one drawing per 300 ms after the first: 5 in a second (the
  // polls alone would have drawn ~150 times).
  const int drawn = builder_.builds.load() - before;
  EXPECT_LE(drawn, 8) << n << " facts put";
  EXPECT_GE(drawn, 2);
  const std::string last = "gpu-" + std::to_string(n - 1);
  for (int i = 0; i < 400; ++i) {
    const std::vector<std::string> hosts = Hosts(*keeper.Current()->discovered);
    if (std::find(hosts.begin(), hosts.end(), last) != hosts.end()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_THAT(Hosts(*keeper.Current()->discovered), ::testing::Contains(last));

  // A declared topology is drawn at the next poll, not after the pace: a
  // drawing of 10 s would hold facts back for 30 s.
  builder_.takes = absl::Seconds(10);
  ASSERT_TRUE(facts_.Put(Facts("gpu-late")).ok());
  for (int i = 0; i < 400; ++i) {
    const std::vector<std::string> hosts = Hosts(*keeper.Current()->discovered);
    if (std::find(hosts.begin(), hosts.end(), "gpu-late") != hosts.end()) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_THAT(Hosts(*keeper.Current()->discovered),
              ::testing::Contains("gpu-late"));
  ASSERT_TRUE(registry_->ApplyTopology(Declared("swp1")).ok());
  const uint64_t version = registry_->Snapshot()->topology_version;
  for (int i = 0; i < 400 && keeper.Current()->declared_version != version;
       ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ(keeper.Current()->declared_version, version);
  keeper.Stop();
}

TEST_F(TopologyKeeperTest, MetricsCountTheDiscoveredFabric) {
  TopologyKeeper keeper(&facts_, registry_.get(), &builder_, &clock_);
  ASSERT_TRUE(facts_.Put(Facts("gpu-1")).ok());
  ASSERT_TRUE(facts_.Put(Facts("gpu-2")).ok());
  ASSERT_TRUE(keeper.Refresh());
  std::string out;
  keeper.AppendMetrics(&out);
  EXPECT_THAT(
      out,
      HasSubstr("fabricdiag_topology_discovered_links{kind=\"host\"} 2\n"));
  EXPECT_THAT(
      out,
      HasSubstr("fabricdiag_topology_discovered_links{kind=\"switch\"} 0\n"));
  EXPECT_THAT(out, HasSubstr("fabricdiag_topology_discovered_switches 1\n"));
  EXPECT_THAT(out, HasSubstr("fabricdiag_topology_problems 1\n"));
  EXPECT_THAT(out, HasSubstr("fabricdiag_topology_rebuilds_total 1\n"));
  EXPECT_THAT(out,
              HasSubstr("# TYPE fabricdiag_topology_rebuild_seconds gauge\n"));
  if (testing::PromtoolInstalled()) {
    std::string lint;
    EXPECT_TRUE(testing::PromtoolAccepts(out, &lint)) << lint;
  }
}

}  // namespace
}  // namespace fabricdiag::collector
