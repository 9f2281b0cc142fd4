// The NIC filling of layouts from the agents' GPU-NIC pairings
// (layout_nics.h) and its cache for the analysis passes (filled_layouts.h).
#include "collector/declared/filled_layouts.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "collector/declared/layout_nics.h"
#include "collector/declared/node_facts_memory.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace fabricdiag::collector {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

// 16 ranks on 2 hosts of 8 GPUs, tp=8 dp=2, neither rails nor NICs.
v1::Layout Declared(const std::string& job = "train") {
  v1::Layout layout;
  layout.set_job(job);
  layout.set_gpus_per_node(8);
  layout.mutable_parallelism()->set_tp(8);
  layout.mutable_parallelism()->set_pp(1);
  layout.mutable_parallelism()->set_dp(2);
  layout.add_hosts("gpu-000");
  layout.add_hosts("gpu-001");
  return layout;
}

// `node` read its GPUs and paired GPU i with mlx5_<i> for i < `paired`
// (the rest with no NIC near), at PCIe switch distance.
v1::NodeFacts Paired(const std::string& node, int gpus, int paired) {
  v1::NodeFacts f;
  f.set_node(node);
  f.set_gpus_read(true);
  for (int i = 0; i < gpus; ++i) {
    v1::GpuNic* p = f.add_gpu_nics();
    p->set_gpu(static_cast<uint32_t>(i));
    p->set_gpu_pci(absl::StrFormat("0000:%02x:00.0", 0x10 + i));
    if (i < paired) {
      p->set_device(absl::StrCat("mlx5_", i));
      p->set_netdev(absl::StrCat("eth", i));
      p->set_distance("pcie_switch");
    } else {
      p->set_distance("none");
    }
  }
  return f;
}

analysis::LayoutModel Model(const v1::Layout& layout) {
  absl::StatusOr<analysis::LayoutModel> m =
      analysis::LayoutModel::Build(layout);
  EXPECT_TRUE(m.ok()) << m.status();
  return *std::move(m);
}

NodeFactsMap Facts(std::vector<v1::NodeFacts> nodes) {
  NodeFactsMap map;
  for (v1::NodeFacts& n : nodes) {
    std::string name = n.node();
    map[std::move(name)] = std::make_shared<const v1::NodeFacts>(std::move(n));
  }
  return map;
}

std::vector<std::string> Sources(const std::vector<RankNic>& nics) {
  std::vector<std::string> out;
  for (const RankNic& n : nics) out.emplace_back(NicSourceName(n.source));
  return out;
}

TEST(ResolveRankNicsTest, PairedGpusFillRanksWithoutNic) {
  const std::vector<RankNic> nics = ResolveRankNics(
      Model(Declared()),
      Facts({Paired("gpu-000", 8, 8), Paired("gpu-001", 8, 8)}));
  ASSERT_EQ(nics.size(), 16u);
  EXPECT_EQ(nics[0].nic, "mlx5_0");
  EXPECT_EQ(nics[0].source, NicSource::kAgent);
  EXPECT_EQ(nics[0].distance, "pcie_switch");
  // Rank 13 is host 1's local GPU 5.
  EXPECT_EQ(nics[13].nic, "mlx5_5");
  const NicSourceCounts counts = CountNicSources(nics);
  EXPECT_EQ(counts.agent, 16u);
  EXPECT_EQ(counts.unknown, 0u);
}

TEST(ResolveRankNicsTest, PartialPairingLeavesTheRestUnknown) {
  // gpu-000 pairs GPUs 0-5 only (6 and 7 have no NIC near: device ""),
  // gpu-001 has not reported, and a host without GPUs pairs nothing.
  const std::vector<RankNic> nics =
      ResolveRankNics(Model(Declared()), Facts({Paired("gpu-000", 8, 6)}));
  const NicSourceCounts counts = CountNicSources(nics);
  EXPECT_EQ(counts.agent, 6u);
  EXPECT_EQ(counts.unknown, 10u);
  const std::vector<std::string> sources = Sources(nics);
  EXPECT_THAT(std::vector<std::string>(sources.begin(), sources.begin() + 9),
              ElementsAre("agent", "agent", "agent", "agent", "agent", "agent",
                          "unknown", "unknown", "unknown"));
  EXPECT_EQ(nics[6].nic, "");
  EXPECT_EQ(nics[6].source, NicSource::kUnknown);
  EXPECT_EQ(nics[6].distance, "");
  EXPECT_EQ(nics[8].source, NicSource::kUnknown);
}

TEST(ResolveRankNicsTest, HostWithoutGpusOrNotReadingThemFillsNothing) {
  v1::NodeFacts no_gpus = Paired("gpu-000", 0, 0);  // read, none found
  v1::NodeFacts not_read = Paired("gpu-001", 8, 8);
  not_read.set_gpus_read(false);  // an agent that does not pair GPUs
  const std::vector<RankNic> nics =
      ResolveRankNics(Model(Declared()), Facts({no_gpus, not_read}));
  EXPECT_EQ(CountNicSources(nics).unknown, 16u);
}

TEST(ResolveRankNicsTest, BadDeviceNamesAndGpuIndicesAreIgnored) {
  v1::NodeFacts f = Paired("gpu-000", 8, 8);
  f.mutable_gpu_nics(0)->set_device("mlx5 0; rm");  // not a device name
  f.mutable_gpu_nics(1)->set_gpu(9);                // beyond gpus_per_node
  const std::vector<RankNic> nics =
      ResolveRankNics(Model(Declared()), Facts({f}));
  EXPECT_EQ(nics[0].source, NicSource::kUnknown);
  EXPECT_EQ(nics[1].source, NicSource::kUnknown);
  EXPECT_EQ(nics[2].nic, "mlx5_2");
}

TEST(ResolveRankNicsTest, RailsAndRankNicsWin) {
  v1::Layout rails = Declared();
  for (int i = 0; i < 8; ++i) rails.add_rails(absl::StrCat("rdma", i));
  const NodeFactsMap facts =
      Facts({Paired("gpu-000", 8, 8), Paired("gpu-001", 8, 8)});
  std::vector<RankNic> nics = ResolveRankNics(Model(rails), facts);
  EXPECT_EQ(nics[3].nic, "rdma3");
  EXPECT_EQ(CountNicSources(nics).rails, 16u);

  // Explicit ranks: rank 0 names its NIC, the others none.
  v1::Layout ranks = Declared();
  ranks.clear_hosts();
  for (uint32_t r = 0; r < 16; ++r) {
    v1::RankPlacement* p = ranks.add_ranks();
    p->set_rank(r);
    p->set_host(r < 8 ? "gpu-000" : "gpu-001");
    p->set_gpu(7 - r % 8);  // reversed: the fill follows the GPU, not r
    if (r == 0) p->set_nic("ib7");
  }
  nics = ResolveRankNics(Model(ranks), facts);
  EXPECT_EQ(nics[0].nic, "ib7");
  EXPECT_EQ(nics[0].source, NicSource::kRank);
  EXPECT_EQ(nics[1].nic, "mlx5_6");
  EXPECT_EQ(nics[1].source, NicSource::kAgent);
  EXPECT_EQ(nics[15].nic, "mlx5_0");
}

TEST(FilledModelTest, SameGroupsAndHostsWithTheNicsFilled) {
  const analysis::LayoutModel declared = Model(Declared());
  const std::vector<RankNic> nics = ResolveRankNics(
      declared, Facts({Paired("gpu-000", 8, 8), Paired("gpu-001", 8, 4)}));
  absl::StatusOr<std::optional<analysis::LayoutModel>> filled =
      FilledModel(declared, nics);
  ASSERT_TRUE(filled.ok()) << filled.status();
  ASSERT_TRUE(filled->has_value());
  const analysis::LayoutModel& m = **filled;
  ASSERT_EQ(m.WorldSize(), declared.WorldSize());
  for (uint32_t r = 0; r < m.WorldSize(); ++r) {
    EXPECT_EQ(m.HostName(r), declared.HostName(r));
    EXPECT_EQ(m.Rank(r).gpu, declared.Rank(r).gpu);
    EXPECT_EQ(m.Rank(r).domain, declared.Rank(r).domain);
    EXPECT_EQ(m.GroupOf(analysis::Dim::kTp, r),
              declared.GroupOf(analysis::Dim::kTp, r));
  }
  EXPECT_EQ(m.NicName(9), "mlx5_1");
  EXPECT_EQ(m.NicName(14), "");  // gpu-001's GPU 6 has no NIC near
  EXPECT_THAT(m.RanksOnNic("gpu-001", "mlx5_3"), ElementsAre(11u));
  // The declared model is untouched.
  EXPECT_EQ(declared.NicName(9), "");
}

TEST(FilledModelTest, NothingFilledIsNullopt) {
  const analysis::LayoutModel declared = Model(Declared());
  absl::StatusOr<std::optional<analysis::LayoutModel>> filled =
      FilledModel(declared, ResolveRankNics(declared, NodeFactsMap()));
  ASSERT_TRUE(filled.ok());
  EXPECT_FALSE(filled->has_value());
}

TEST(ResolvedLayoutTest, ListsEveryRankWithItsSource) {
  v1::Layout declared = Declared();
  const analysis::LayoutModel model = Model(declared);
  const v1::Layout shown =
      ResolvedLayout(declared, model,
                     ResolveRankNics(model, Facts({Paired("gpu-000", 8, 8)})));
  ASSERT_EQ(shown.ranks_size(), 16);
  EXPECT_EQ(shown.hosts_size(), 2);
  EXPECT_EQ(shown.ranks(2).host(), "gpu-000");
  EXPECT_EQ(shown.ranks(2).nic(), "mlx5_2");
  EXPECT_EQ(shown.ranks(2).nic_source(), "agent");
  EXPECT_EQ(shown.ranks(2).nic_distance(), "pcie_switch");
  EXPECT_EQ(shown.ranks(10).host(), "gpu-001");
  EXPECT_EQ(shown.ranks(10).gpu(), 2u);
  EXPECT_EQ(shown.ranks(10).nic(), "");
  EXPECT_EQ(shown.ranks(10).nic_source(), "unknown");
}

// A registry stand-in: the test swaps the snapshot it serves.
class FakeLayouts final : public LayoutSnapshots {
 public:
  std::shared_ptr<const RegistrySnapshot> Snapshot() const override {
    return snapshot;
  }
  void Set(const std::vector<v1::Layout>& layouts) {
    auto next = std::make_shared<RegistrySnapshot>();
    for (const v1::Layout& l : layouts) {
      next->layouts[l.job()] = std::make_shared<const LayoutEntry>(
          LayoutEntry{l, Model(l), absl::UnixEpoch(), {}, 0});
    }
    snapshot = std::move(next);
  }
  std::shared_ptr<const RegistrySnapshot> snapshot =
      std::make_shared<RegistrySnapshot>();
};

class FilledLayoutsTest : public ::testing::Test {
 protected:
  const analysis::LayoutModel& Analysed(const std::string& job) {
    snapshot_ = filled_.Snapshot();
    return snapshot_->layouts.at(job)->model;
  }
  FakeLayouts declared_;
  MemoryNodeFacts facts_;
  FilledLayouts filled_{&declared_, &facts_};
  std::shared_ptr<const RegistrySnapshot> snapshot_;
};

TEST_F(FilledLayoutsTest, PairingArrivingAfterTheLayoutFillsIt) {
  declared_.Set({Declared()});
  EXPECT_EQ(Analysed("train").NicName(3), "");
  ASSERT_TRUE(facts_.Put(Paired("gpu-000", 8, 8)).ok());
  EXPECT_EQ(Analysed("train").NicName(3), "mlx5_3");
  EXPECT_EQ(Analysed("train").NicName(11), "");  // gpu-001: not yet
  ASSERT_TRUE(facts_.Put(Paired("gpu-001", 8, 8)).ok());
  EXPECT_EQ(Analysed("train").NicName(11), "mlx5_3");
  // What was declared is not touched.
  EXPECT_EQ(declared_.snapshot->layouts.at("train")->model.NicName(11), "");
  EXPECT_THAT(declared_.snapshot->layouts.at("train")->applied_layout.ranks(),
              IsEmpty());
  EXPECT_THAT(Analysed("train").layout().rails(), IsEmpty());
}

TEST_F(FilledLayoutsTest, CachedWhileNothingMoves) {
  declared_.Set({Declared("a"), Declared("b")});
  ASSERT_TRUE(facts_.Put(Paired("gpu-000", 8, 8)).ok());
  std::shared_ptr<const RegistrySnapshot> first = filled_.Snapshot();
  EXPECT_EQ(filled_.builds(), 2u);
  EXPECT_EQ(filled_.Snapshot(), first);  // same versions: same snapshot
  EXPECT_EQ(filled_.builds(), 2u);

  // Layouts applied again (new entries): filled again.
  declared_.Set({Declared("a"), Declared("b")});
  std::shared_ptr<const LayoutEntry> a = first->layouts.at("a");
  std::shared_ptr<const RegistrySnapshot> second = filled_.Snapshot();
  EXPECT_NE(second, first);
  EXPECT_EQ(filled_.builds(), 4u);

  // Facts that change nothing the layouts use: nothing built again.
  ASSERT_TRUE(facts_.Put(Paired("gpu-009", 8, 8)).ok());
  std::shared_ptr<const RegistrySnapshot> third = filled_.Snapshot();
  EXPECT_EQ(filled_.builds(), 4u);
  EXPECT_EQ(third->layouts.at("a"), second->layouts.at("a"));

  // A pairing that changes: built again.
  ASSERT_TRUE(facts_.Put(Paired("gpu-000", 8, 4)).ok());
  EXPECT_EQ(Analysed("a").NicName(5), "");
  EXPECT_EQ(filled_.builds(), 6u);
  EXPECT_NE(a, snapshot_->layouts.at("a"));
}

TEST_F(FilledLayoutsTest, LayoutsWithNothingToFillAreTheDeclaredEntries) {
  v1::Layout rails = Declared("rails");
  for (int i = 0; i < 8; ++i) rails.add_rails(absl::StrCat("rdma", i));
  declared_.Set({rails, Declared("bare")});
  ASSERT_TRUE(facts_.Put(Paired("gpu-000", 8, 8)).ok());
  std::shared_ptr<const RegistrySnapshot> snap = filled_.Snapshot();
  EXPECT_EQ(snap->layouts.at("rails"), declared_.snapshot->layouts.at("rails"));
  EXPECT_EQ(snap->layouts.at("rails")->model.NicName(0), "rdma0");
  EXPECT_NE(snap->layouts.at("bare"), declared_.snapshot->layouts.at("bare"));
  EXPECT_EQ(filled_.builds(), 1u);
  // A layout deleted is gone from the filled snapshot too.
  declared_.Set({rails});
  EXPECT_EQ(filled_.Snapshot()->layouts.count("bare"), 0u);
}

}  // namespace
}  // namespace fabricdiag::collector
