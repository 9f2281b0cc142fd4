#include "collector/topology/topology_adopt.h"

#include <memory>
#include <string>

#include "collector/declared/file_declared_state.h"
#include "collector/state/state_store.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/fixed_topology.h"
#include "tests/testing/temp_dir.h"

namespace fabricdiag::collector {
namespace {

// leaf-1 (tier 1) with gpu-1's NIC on `port`.
v1::Topology Discovered(const std::string& port) {
  v1::Topology t;
  v1::Switch* leaf = t.add_switches();
  leaf->set_name("leaf-1");
  leaf->set_tier(1);
  v1::Link* link = t.add_links();
  link->set_host("gpu-1");
  link->set_nic("mlx5_0");
  link->set_switch_("leaf-1");
  link->set_port(port);
  return t;
}

std::shared_ptr<const TopologyViews> ViewsOf(const v1::Topology& discovered) {
  auto views = std::make_shared<TopologyViews>();
  views->discovered = std::make_shared<const v1::Topology>(discovered);
  views->effective = views->discovered;
  views->effective_index =
      std::make_shared<const analysis::TopologyIndex>(views->effective.get());
  return views;
}

class TopologyAdoptTest : public ::testing::Test {
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
};

// A dry run writes nothing and names the version; the write over it
// declares the discovered cabling without its tiers.
TEST_F(TopologyAdoptTest, DryRunThenWriteOverTheVersionRead) {
  testing::FixedTopology source(ViewsOf(Discovered("swp7")));
  absl::StatusOr<AdoptResult> seen = AdoptDiscovered(
      source, registry_.get(), 0, /*dry_run=*/true, absl::InfiniteFuture());
  ASSERT_TRUE(seen.ok()) << seen.status();
  EXPECT_EQ(seen->declared_version, 0u);
  EXPECT_EQ(registry_->Snapshot()->topology, nullptr);

  absl::StatusOr<AdoptResult> adopted =
      AdoptDiscovered(source, registry_.get(), seen->declared_version,
                      /*dry_run=*/false, absl::InfiniteFuture());
  ASSERT_TRUE(adopted.ok()) << adopted.status();
  EXPECT_EQ(adopted->declared_version, registry_->Snapshot()->topology_version);
  std::shared_ptr<const v1::Topology> declared = *registry_->GetTopology();
  EXPECT_EQ(declared->links(0).port(), "swp7");
  EXPECT_EQ(declared->switches(0).tier(), 0u);
  EXPECT_EQ(adopted->written.SerializeAsString(),
            declared->SerializeAsString());
}

// Someone applied a topology after the caller read version 0: Aborted, and
// the one applied stays.
TEST_F(TopologyAdoptTest, AWriteInBetweenIsAborted) {
  testing::FixedTopology source(ViewsOf(Discovered("swp7")));
  v1::Topology other = Discovered("swp1");
  other.mutable_switches(0)->clear_tier();
  ASSERT_TRUE(registry_->ApplyTopology(other).ok());
  absl::StatusOr<AdoptResult> adopted = AdoptDiscovered(
      source, registry_.get(), 0, /*dry_run=*/false, absl::InfiniteFuture());
  EXPECT_EQ(adopted.status().code(), absl::StatusCode::kAborted);
  EXPECT_EQ((*registry_->GetTopology())->links(0).port(), "swp1");
}

// Nothing discovered yet: adopting would erase the declaration.
TEST_F(TopologyAdoptTest, NothingDiscoveredIsRefused) {
  testing::FixedTopology empty;
  absl::StatusOr<AdoptResult> adopted = AdoptDiscovered(
      empty, registry_.get(), 0, /*dry_run=*/false, absl::InfiniteFuture());
  EXPECT_EQ(adopted.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(registry_->Snapshot()->topology, nullptr);
}

// The preview answers with the declared topology and version the views
// were drawn with, not the registry's newer ones: one drawing, both sides.
TEST(AdoptPreviewTest, BothSidesComeFromOneDrawing) {
  auto views = std::make_shared<TopologyViews>(*ViewsOf(Discovered("swp7")));
  views->declared = std::make_shared<const v1::Topology>(Discovered("swp1"));
  views->declared_version = 4;
  const AdoptResult preview = AdoptPreview(*views);
  ASSERT_NE(preview.declared, nullptr);
  EXPECT_EQ(preview.declared->links(0).port(), "swp1");
  EXPECT_EQ(preview.declared_version, 4u);
  EXPECT_EQ(preview.written.links(0).port(), "swp7");
  EXPECT_EQ(preview.written.switches(0).tier(), 0u);
}

// Nothing discovered and nothing declared: an empty answer, not an error
// (a diff then lists every declared link as missing).
TEST(AdoptPreviewTest, AnswersWhenNothingIsDiscovered) {
  auto views = std::make_shared<TopologyViews>(*ViewsOf(v1::Topology()));
  const AdoptResult preview = AdoptPreview(*views);
  EXPECT_EQ(preview.declared, nullptr);
  EXPECT_EQ(preview.declared_version, 0u);
  EXPECT_EQ(preview.written.links_size(), 0);
}

TEST(TopologyOfViewTest, DeclaredIsNotFoundWhenNoneWasApplied) {
  std::shared_ptr<const TopologyViews> views = ViewsOf(Discovered("swp7"));
  EXPECT_EQ(TopologyOfView(*views, TopologyKind::kDeclared).status().code(),
            absl::StatusCode::kNotFound);
  absl::StatusOr<std::shared_ptr<const v1::Topology>> discovered =
      TopologyOfView(*views, TopologyKind::kDiscovered);
  ASSERT_TRUE(discovered.ok());
  EXPECT_EQ((*discovered)->links(0).port(), "swp7");
}

}  // namespace
}  // namespace fabricdiag::collector
