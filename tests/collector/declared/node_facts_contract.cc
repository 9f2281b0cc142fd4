#include "tests/collector/declared/node_facts_contract.h"

#include <gmock/gmock.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "collector/declared/node_facts_cache.h"

namespace fabricdiag::collector::testing {
namespace {

v1::NodeFacts Facts(const std::string& node, const std::string& leaf_port) {
  v1::NodeFacts f;
  f.set_node(node);
  f.set_reported_unix_nanos(1);
  f.set_lldp_source("lldpd");
  v1::LldpNeighbor* n = f.add_lldp_neighbors();
  n->set_local_port("eth0");
  n->set_system_name("leaf-0");
  n->set_chassis_id("12:27:29:d0:18:68");
  n->set_port_id(leaf_port);
  f.set_gpus_read(true);
  v1::GpuNic* g = f.add_gpu_nics();
  g->set_gpu(0);
  g->set_device("mlx5_0");
  g->set_netdev("eth0");
  (*f.mutable_rdma_device_of_netdev())["eth0"] = "mlx5_0";
  return f;
}

// Waits (at most 20 s) until `node`'s facts satisfy `pred`; the snapshot
// then, or the last one seen.
template <typename Pred>
std::shared_ptr<const NodeFactsMap> WaitFor(const NodeFactsStore& store,
                                            const std::string& node,
                                            Pred pred) {
  const absl::Time deadline = absl::Now() + absl::Seconds(20);
  std::shared_ptr<const NodeFactsMap> snap = store.Snapshot();
  while (absl::Now() < deadline) {
    snap = store.Snapshot();
    auto it = snap->find(node);
    if (it != snap->end() && pred(*it->second)) return snap;
    absl::SleepFor(absl::Milliseconds(10));
  }
  return snap;
}

std::string PortOf(const NodeFactsMap& all, const std::string& node) {
  auto it = all.find(node);
  if (it == all.end() || it->second->lldp_neighbors_size() == 0) return "";
  return it->second->lldp_neighbors(0).port_id();
}

bool Port(const v1::NodeFacts& f, const std::string& port) {
  return f.lldp_neighbors_size() > 0 && f.lldp_neighbors(0).port_id() == port;
}

}  // namespace

std::string StoreName(
    const ::testing::TestParamInfo<NodeFactsStoreFactory>& /*info*/) {
  return "Store";
}

void NodeFactsContractTest::SetUp() {
  store_ = GetParam()();
  if (store_ == nullptr) GTEST_SKIP() << "backend not available here";
}

TEST_P(NodeFactsContractTest, HoldsWhatWasPutAndMovesTheGeneration) {
  ASSERT_NE(store_->Snapshot(), nullptr);
  EXPECT_TRUE(store_->Snapshot()->empty());
  const uint64_t start = store_->Generation();
  ASSERT_TRUE(store_->Put(Facts("gpu-001", "swp1")).ok());
  std::shared_ptr<const NodeFactsMap> snap =
      WaitFor(*store_, "gpu-001",
              [](const v1::NodeFacts& f) { return Port(f, "swp1"); });
  ASSERT_EQ(PortOf(*snap, "gpu-001"), "swp1");
  const v1::NodeFacts& f = *snap->at("gpu-001");
  EXPECT_EQ(f.gpu_nics_size(), 1);
  EXPECT_EQ(f.rdma_device_of_netdev().at("eth0"), "mlx5_0");
  EXPECT_GT(store_->Generation(), start);

  // A held snapshot is a copy: a later change does not show in it.
  ASSERT_TRUE(store_->Put(Facts("gpu-001", "swp2")).ok());
  WaitFor(*store_, "gpu-001",
          [](const v1::NodeFacts& g) { return Port(g, "swp2"); });
  EXPECT_EQ(PortOf(*snap, "gpu-001"), "swp1");
  EXPECT_EQ(PortOf(*store_->Snapshot(), "gpu-001"), "swp2");
}

TEST_P(NodeFactsContractTest, EqualFactsChangeNothing) {
  ASSERT_TRUE(store_->Put(Facts("gpu-001", "swp1")).ok());
  WaitFor(*store_, "gpu-001",
          [](const v1::NodeFacts& f) { return Port(f, "swp1"); });
  const uint64_t before = store_->Generation();
  v1::NodeFacts again = Facts("gpu-001", "swp1");
  again.set_reported_unix_nanos(2);  // a new stream resends its inventory
  ASSERT_TRUE(store_->Put(again).ok());
  // Writes are in order: once a later one shows, the earlier one would have.
  ASSERT_TRUE(store_->Put(Facts("gpu-002", "swp3")).ok());
  WaitFor(*store_, "gpu-002",
          [](const v1::NodeFacts& f) { return Port(f, "swp3"); });
  EXPECT_EQ(PortOf(*store_->Snapshot(), "gpu-002"), "swp3");
  EXPECT_EQ(store_->Generation(), before + 1);
}

TEST_P(NodeFactsContractTest, UnreadLldpAndGpusKeepWhatWasHeld) {
  ASSERT_TRUE(store_->Put(Facts("gpu-001", "swp1")).ok());
  v1::NodeFacts unread = Facts("gpu-001", "swp9");
  unread.clear_lldp_source();
  unread.clear_lldp_neighbors();
  unread.set_gpus_read(false);
  unread.clear_gpu_nics();
  (*unread.mutable_rdma_device_of_netdev())["eth1"] = "mlx5_1";
  ASSERT_TRUE(store_->Put(unread).ok());
  std::shared_ptr<const NodeFactsMap> snap =
      WaitFor(*store_, "gpu-001", [](const v1::NodeFacts& f) {
        return f.rdma_device_of_netdev().contains("eth1");
      });
  const v1::NodeFacts& f = *snap->at("gpu-001");
  EXPECT_TRUE(f.rdma_device_of_netdev().contains("eth1"));
  EXPECT_EQ(f.lldp_source(), "lldpd");
  EXPECT_EQ(PortOf(*snap, "gpu-001"), "swp1");
  EXPECT_EQ(f.gpu_nics_size(), 1);

  // A read that found nothing is news: the neighbors go.
  v1::NodeFacts none = Facts("gpu-001", "swp1");
  none.clear_lldp_neighbors();
  ASSERT_TRUE(store_->Put(none).ok());
  snap = WaitFor(*store_, "gpu-001", [](const v1::NodeFacts& g) {
    return g.lldp_neighbors_size() == 0;
  });
  EXPECT_EQ(snap->at("gpu-001")->lldp_neighbors_size(), 0);
}

TEST_P(NodeFactsContractTest, BadNodeNamesAreRefused) {
  for (const std::string& bad :
       {std::string(""), std::string("-x"), std::string("a/b"),
        std::string("node\n"), std::string(300, 'a')}) {
    v1::NodeFacts f = Facts("x", "swp1");
    f.set_node(bad);
    absl::Status s = store_->Put(f);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << bad;
  }
  ASSERT_TRUE(store_->Put(Facts("gpu-001", "swp1")).ok());
  std::shared_ptr<const NodeFactsMap> snap =
      WaitFor(*store_, "gpu-001",
              [](const v1::NodeFacts& f) { return Port(f, "swp1"); });
  EXPECT_EQ(snap->size(), 1u);
}

TEST_P(NodeFactsContractTest, DeleteDropsTheNodeAndAPutAfterStartsAfresh) {
  ASSERT_TRUE(store_->Put(Facts("gpu-001", "swp1")).ok());
  ASSERT_TRUE(store_->Put(Facts("gpu-002", "swp3")).ok());
  WaitFor(*store_, "gpu-002",
          [](const v1::NodeFacts& f) { return Port(f, "swp3"); });
  ASSERT_EQ(PortOf(*store_->Snapshot(), "gpu-001"), "swp1");
  const uint64_t before = store_->Generation();

  ASSERT_TRUE(store_->Delete("gpu-001").ok());
  // Gone from this store's snapshot at once; the other node stays.
  std::shared_ptr<const NodeFactsMap> snap = store_->Snapshot();
  EXPECT_FALSE(snap->contains("gpu-001"));
  EXPECT_EQ(PortOf(*snap, "gpu-002"), "swp3");
  EXPECT_GT(store_->Generation(), before);
  // Deleting what is not held is no error.
  EXPECT_TRUE(store_->Delete("gpu-001").ok());
  EXPECT_TRUE(store_->Delete("gpu-404").ok());

  // The node reports again without reading its LLDP or PCI tree: nothing
  // of what was dropped comes back with it.
  v1::NodeFacts unread = Facts("gpu-001", "swp9");
  unread.clear_lldp_source();
  unread.clear_lldp_neighbors();
  unread.set_gpus_read(false);
  unread.clear_gpu_nics();
  ASSERT_TRUE(store_->Put(unread).ok());
  snap = WaitFor(*store_, "gpu-001", [](const v1::NodeFacts&) { return true; });
  ASSERT_TRUE(snap->contains("gpu-001"));
  EXPECT_EQ(snap->at("gpu-001")->lldp_neighbors_size(), 0);
  EXPECT_EQ(snap->at("gpu-001")->gpu_nics_size(), 0);
  EXPECT_EQ(snap->at("gpu-001")->rdma_device_of_netdev().at("eth0"), "mlx5_0");
  // Held so from then on, not only until the delete is applied (in a
  // cluster the watcher brings it back later): a last write shows when
  // the earlier ones did.
  ASSERT_TRUE(store_->Put(Facts("gpu-003", "swp5")).ok());
  snap = WaitFor(*store_, "gpu-003",
                 [](const v1::NodeFacts& f) { return Port(f, "swp5"); });
  ASSERT_TRUE(snap->contains("gpu-001"));
  EXPECT_EQ(snap->at("gpu-001")->lldp_neighbors_size(), 0);
  EXPECT_EQ(snap->size(), 3u);
}

TEST_P(NodeFactsContractTest, DeleteOfABadNodeNameIsRefused) {
  ASSERT_TRUE(store_->Put(Facts("gpu-001", "swp1")).ok());
  WaitFor(*store_, "gpu-001",
          [](const v1::NodeFacts& f) { return Port(f, "swp1"); });
  for (const std::string& bad :
       {std::string(""), std::string("-x"), std::string("a/b")}) {
    EXPECT_EQ(store_->Delete(bad).code(), absl::StatusCode::kInvalidArgument)
        << bad;
  }
  EXPECT_EQ(PortOf(*store_->Snapshot(), "gpu-001"), "swp1");
}

TEST_P(NodeFactsContractTest, HugeNeighborListsAreCappedAndTextsCut) {
  v1::NodeFacts f = Facts("leaf-9", "swp1");
  f.clear_lldp_neighbors();
  for (size_t i = 0; i < kMaxFactsNeighbors + 500; ++i) {
    v1::LldpNeighbor* n = f.add_lldp_neighbors();
    n->set_local_port(absl::StrCat("swp", i));
    n->set_system_name(std::string(10000, 'n'));
    n->set_port_id("Ethernet0");
  }
  f.add_lldp_neighbors()->set_local_port("../etc");  // never a netdev
  (*f.mutable_rdma_device_of_netdev())["bad name"] = "mlx5_0";
  ASSERT_TRUE(store_->Put(f).ok());
  std::shared_ptr<const NodeFactsMap> snap =
      WaitFor(*store_, "leaf-9", [](const v1::NodeFacts&) { return true; });
  ASSERT_EQ(snap->count("leaf-9"), 1u);
  const v1::NodeFacts& held = *snap->at("leaf-9");
  EXPECT_EQ(static_cast<size_t>(held.lldp_neighbors_size()),
            kMaxFactsNeighbors);
  EXPECT_EQ(held.lldp_neighbors(0).system_name().size(), kMaxFactsTextBytes);
  for (const v1::LldpNeighbor& n : held.lldp_neighbors()) {
    EXPECT_NE(n.local_port(), "../etc");
  }
  EXPECT_FALSE(held.rdma_device_of_netdev().contains("bad name"));
}

}  // namespace fabricdiag::collector::testing
