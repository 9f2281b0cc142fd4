// The cluster backend of the node facts (cluster/jetstream_node_facts.h)
// against the store contract the embedded one passes, on a real nats-server
// on loopback; then what only a shared bucket does: a write through one
// collector seen by another, resent facts that write nothing, hostile
// values, a queue that overflows while NATS is away, a watcher that
// outlives its server, and the sizes and delays docs/cluster.md quotes.
#include "cluster/jetstream_node_facts.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "cluster/kv_payload.h"
#include "collector/declared/node_facts_cache.h"
#include "tests/cluster/single_nats_test.h"
#include "tests/collector/declared/node_facts_contract.h"
#include "tests/testing/eventually.h"
#include "tests/testing/nats_cluster.h"

namespace fabricdiag::cluster {
namespace {

using collector::NodeFactsMap;
using collector::NodeFactsStore;
using collector::testing::NodeFactsContractTest;

// A store with the connection it uses, for the contract's factory.
class OwningStore final : public NodeFactsStore {
 public:
  OwningStore(std::unique_ptr<NatsConnection> nats,
              std::unique_ptr<JetStreamNodeFacts> store)
      : nats_(std::move(nats)), store_(std::move(store)) {}
  absl::Status Put(const v1::NodeFacts& facts) override {
    return store_->Put(facts);
  }
  absl::Status Delete(absl::string_view node) override {
    return store_->Delete(node);
  }
  std::shared_ptr<const NodeFactsMap> Snapshot() const override {
    return store_->Snapshot();
  }
  uint64_t Generation() const override { return store_->Generation(); }

 private:
  std::unique_ptr<NatsConnection> nats_;
  std::unique_ptr<JetStreamNodeFacts> store_;  // destroyed first
};

// One server for every contract test, each on a bucket of its own: started
// by the first, stopped (its directory removed) once the tests have run.
class ContractServer : public ::testing::Environment {
 public:
  const testing::NatsCluster& Get() {
    if (server_ == nullptr) {
      server_ = std::make_unique<testing::NatsCluster>(1);
      const absl::Status started = server_->Start();
      EXPECT_TRUE(started.ok()) << started;
    }
    return *server_;
  }
  void TearDown() override { server_.reset(); }

 private:
  std::unique_ptr<testing::NatsCluster> server_;
};

ContractServer* const g_contract_server = static_cast<ContractServer*>(
    ::testing::AddGlobalTestEnvironment(new ContractServer));

std::unique_ptr<NodeFactsStore> NewJetStreamStore() {
  static std::atomic<int> buckets{0};
  NatsConnection::Options options;
  options.urls = {g_contract_server->Get().url(0)};
  auto nats = NatsConnection::Connect(options);
  if (!nats.ok()) {
    ADD_FAILURE() << nats.status();
    return nullptr;
  }
  JetStreamNodeFacts::Options facts_options;
  facts_options.replicas = 1;
  facts_options.bucket = absl::StrCat("contract_", buckets.fetch_add(1));
  auto store = JetStreamNodeFacts::Open(nats->get(), facts_options);
  if (!store.ok()) {
    ADD_FAILURE() << store.status();
    return nullptr;
  }
  return std::make_unique<OwningStore>(*std::move(nats), *std::move(store));
}

INSTANTIATE_TEST_SUITE_P(JetStream, NodeFactsContractTest,
                         ::testing::Values(&NewJetStreamStore),
                         collector::testing::StoreName);

// What an 8-NIC GPU host reports: a neighbor per NIC (a leaf with FQDN-ish
// names), a GPU-NIC pair per GPU, a netdev per RDMA device.
v1::NodeFacts HostFacts(const std::string& node, int leaf_port = 1) {
  v1::NodeFacts f;
  f.set_node(node);
  f.set_reported_unix_nanos(1'700'000'000'000'000'000);
  f.set_lldp_source("lldpd");
  f.set_gpus_read(true);
  for (int i = 0; i < 8; ++i) {
    const std::string netdev = absl::StrCat("ens", 100 + i, "np0");
    const std::string device = absl::StrCat("mlx5_", i);
    v1::LldpNeighbor* n = f.add_lldp_neighbors();
    n->set_local_port(netdev);
    n->set_system_name(absl::StrFormat("leaf-%02d.pod1.example.net", i));
    n->set_chassis_id(absl::StrFormat("b8:59:9f:1a:2b:%02x", i));
    n->set_chassis_id_type("mac");
    n->set_port_id(absl::StrCat("swp", leaf_port + i));
    n->set_port_id_type("ifname");
    n->set_port_description(absl::StrCat("to ", node, " ", netdev));
    n->set_management_address(absl::StrCat("10.0.0.", i + 1));
    v1::GpuNic* g = f.add_gpu_nics();
    g->set_gpu(static_cast<uint32_t>(i));
    g->set_gpu_pci(absl::StrFormat("0000:%02x:00.0", 0x1b + 0x10 * i));
    g->set_device(device);
    g->set_netdev(netdev);
    g->set_distance("pcie_switch");
    (*f.mutable_rdma_device_of_netdev())[netdev] = device;
  }
  return f;
}

std::string PortOf(const NodeFactsMap& all, const std::string& node) {
  auto it = all.find(node);
  if (it == all.end() || it->second->lldp_neighbors_size() == 0) return "";
  return it->second->lldp_neighbors(0).port_id();
}

std::string NodesOf(const NodeFactsStore& store) {
  std::vector<std::string> nodes;
  for (const auto& [node, facts] : *store.Snapshot()) nodes.push_back(node);
  std::sort(nodes.begin(), nodes.end());
  return absl::StrCat("[", absl::StrJoin(nodes, " "), "]");
}

bool Holds(const NodeFactsStore& store, const std::string& node,
           const std::string& port) {
  return PortOf(*store.Snapshot(), node) == port;
}

class JetStreamNodeFactsTest : public SingleNatsServerTest {
 protected:
  std::unique_ptr<JetStreamNodeFacts> Open(NatsConnection* nats,
                                           size_t queue_limit = 65536) {
    JetStreamNodeFacts::Options options;
    options.replicas = 1;
    options.bucket = TestName();
    options.queue_limit = queue_limit;
    auto store = JetStreamNodeFacts::Open(nats, options);
    EXPECT_TRUE(store.ok()) << store.status();
    return store.ok() ? *std::move(store) : nullptr;
  }

  // Writes `value` at `key` of this test's bucket, as something else than
  // a collector could.
  void PutRaw(NatsConnection* nats, const std::string& key,
              const std::string& value) {
    kvStore* kv = nullptr;
    ASSERT_EQ(js_KeyValue(&kv, nats->js(), TestName().c_str()), NATS_OK);
    uint64_t revision = 0;
    EXPECT_EQ(kvStore_Put(&revision, kv, key.c_str(), value.data(),
                          static_cast<int>(value.size())),
              NATS_OK);
    kvStore_Destroy(kv);
  }
};

TEST(NodeFactsKeyTest, DotsAreEncodedAndOnlyNodeKeysDecode) {
  EXPECT_EQ(NodeFactsKey("gpu-001"), "node.gpu-001");
  EXPECT_EQ(NodeFactsKey("gpu-1.rack2.example"),
            "node.gpu-1=2Erack2=2Eexample");
  EXPECT_EQ(NodeOfFactsKey("node.gpu-1=2Erack2=2Eexample"),
            "gpu-1.rack2.example");
  EXPECT_EQ(NodeOfFactsKey("node.gpu-001"), "gpu-001");
  EXPECT_EQ(NodeOfFactsKey("layout.train"), std::nullopt);
  EXPECT_EQ(NodeOfFactsKey("node."), std::nullopt);
  EXPECT_EQ(NodeOfFactsKey("node.-x"), std::nullopt);
}

TEST_F(JetStreamNodeFactsTest, AWriteThroughOneIsSeenByAnother) {
  auto nats_a = Connect();
  auto nats_c = Connect();
  ASSERT_NE(nats_a, nullptr);
  ASSERT_NE(nats_c, nullptr);
  auto a = Open(nats_a.get());
  auto c = Open(nats_c.get());
  ASSERT_NE(a, nullptr);
  ASSERT_NE(c, nullptr);
  const uint64_t before = c->Generation();
  ASSERT_TRUE(a->Put(HostFacts("gpu-1.rack2", 1)).ok());
  ASSERT_TRUE(
      testing::Eventually([&] { return Holds(*c, "gpu-1.rack2", "swp1"); }));
  EXPECT_GT(c->Generation(), before);
  EXPECT_EQ(c->Snapshot()->at("gpu-1.rack2")->gpu_nics_size(), 8);

  // The node's agent moves to C and reports an unread PCI tree: C merges
  // with what A wrote, and A sees C's write.
  v1::NodeFacts moved = HostFacts("gpu-1.rack2", 9);
  moved.set_gpus_read(false);
  moved.clear_gpu_nics();
  ASSERT_TRUE(c->Put(moved).ok());
  ASSERT_TRUE(
      testing::Eventually([&] { return Holds(*a, "gpu-1.rack2", "swp9"); }));
  EXPECT_EQ(a->Snapshot()->at("gpu-1.rack2")->gpu_nics_size(), 8);
  EXPECT_EQ(a->writes(), 1u);
  EXPECT_TRUE(testing::Eventually([&] { return c->writes() == 1; }));

  // A collector that starts later holds every node before its first Put.
  auto nats_b = Connect();
  ASSERT_NE(nats_b, nullptr);
  auto b = Open(nats_b.get());
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(PortOf(*b->Snapshot(), "gpu-1.rack2"), "swp9");
}

TEST_F(JetStreamNodeFactsTest, ADeleteThroughOneIsAppliedByEveryOther) {
  auto nats_a = Connect();
  auto nats_c = Connect();
  ASSERT_NE(nats_a, nullptr);
  ASSERT_NE(nats_c, nullptr);
  auto a = Open(nats_a.get());
  auto c = Open(nats_c.get());
  ASSERT_NE(a, nullptr);
  ASSERT_NE(c, nullptr);
  ASSERT_TRUE(a->Put(HostFacts("gpu-1.rack2", 1)).ok());
  ASSERT_TRUE(a->Put(HostFacts("gpu-002", 3)).ok());
  ASSERT_TRUE(
      testing::Eventually([&] { return Holds(*c, "gpu-002", "swp3"); }));
  ASSERT_TRUE(Holds(*c, "gpu-1.rack2", "swp1"));

  // Forgotten through C (the node's agent streamed to A).
  ASSERT_TRUE(c->Delete("gpu-1.rack2").ok());
  EXPECT_FALSE(c->Snapshot()->contains("gpu-1.rack2"));
  ASSERT_TRUE(testing::Eventually([&] {
    return !a->Snapshot()->contains("gpu-1.rack2");
  })) << NodesOf(*a);
  EXPECT_TRUE(Holds(*a, "gpu-002", "swp3"));

  // Its agent reports again through A, without its PCI tree: A writes it
  // (what A held was dropped) and C holds no GPU pair of before.
  v1::NodeFacts back = HostFacts("gpu-1.rack2", 9);
  back.set_gpus_read(false);
  back.clear_gpu_nics();
  ASSERT_TRUE(a->Put(back).ok());
  ASSERT_TRUE(
      testing::Eventually([&] { return Holds(*c, "gpu-1.rack2", "swp9"); }));
  EXPECT_EQ(c->Snapshot()->at("gpu-1.rack2")->gpu_nics_size(), 0);

  // Deleted and reported again before the writer sent the delete: the
  // delete still goes first, so no collector merges the new facts with
  // the old.
  ASSERT_TRUE(a->Delete("gpu-002").ok());
  v1::NodeFacts again = HostFacts("gpu-002", 4);
  again.set_gpus_read(false);
  again.clear_gpu_nics();
  ASSERT_TRUE(a->Put(again).ok());
  // A holds the node again only once its watcher brings the write back.
  ASSERT_TRUE(testing::Eventually([&] {
    return Holds(*c, "gpu-002", "swp4") && Holds(*a, "gpu-002", "swp4");
  })) << NodesOf(*a);
  EXPECT_EQ(c->Snapshot()->at("gpu-002")->gpu_nics_size(), 0);
  EXPECT_EQ(a->Snapshot()->at("gpu-002")->gpu_nics_size(), 0);

  // A collector that starts later replays the deletes too.
  auto nats_b = Connect();
  ASSERT_NE(nats_b, nullptr);
  auto b = Open(nats_b.get());
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->Snapshot()->at("gpu-1.rack2")->gpu_nics_size(), 0);
  EXPECT_EQ(b->Snapshot()->size(), 2u);
  EXPECT_EQ(a->stats().writes_failed + c->stats().writes_failed, 0u);
}

TEST_F(JetStreamNodeFactsTest, AKeyDeletedByHandDropsTheNode) {
  auto nats = Connect();
  ASSERT_NE(nats, nullptr);
  auto store = Open(nats.get());
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->Put(HostFacts("gpu-001", 1)).ok());
  ASSERT_TRUE(store->Put(HostFacts("gpu-002", 2)).ok());
  // Both written and acknowledged: a write whose acknowledgement timed out
  // (a loaded machine) is retried, and would bring its node back after the
  // hand delete.
  ASSERT_TRUE(testing::Eventually([&] { return store->writes() == 2; }));
  ASSERT_TRUE(
      testing::Eventually([&] { return Holds(*store, "gpu-002", "swp2"); }));
  kvStore* kv = nullptr;
  ASSERT_EQ(js_KeyValue(&kv, nats->js(), TestName().c_str()), NATS_OK);
  EXPECT_EQ(kvStore_Delete(kv, "node.gpu-001"), NATS_OK);
  EXPECT_EQ(kvStore_Purge(kv, "node.gpu-002", nullptr), NATS_OK);
  EXPECT_EQ(kvStore_Delete(kv, "not-a-node"), NATS_OK);
  kvStore_Destroy(kv);
  EXPECT_TRUE(testing::Eventually([&] { return store->Snapshot()->empty(); }))
      << NodesOf(*store);
  EXPECT_EQ(store->skipped(), 0u);
}

TEST_F(JetStreamNodeFactsTest, ResentFactsWriteNothing) {
  auto nats_a = Connect();
  ASSERT_NE(nats_a, nullptr);
  auto a = Open(nats_a.get());
  ASSERT_NE(a, nullptr);
  constexpr int kNodes = 200;
  for (int i = 0; i < kNodes; ++i) {
    ASSERT_TRUE(a->Put(HostFacts(absl::StrFormat("gpu-%03d", i))).ok());
  }
  ASSERT_TRUE(testing::Eventually([&] { return a->writes() == kNodes; }));

  // Every agent reconnects, to a collector that just started: each resends
  // its inventory (twice, as a flapping stream would), with a new time.
  auto nats_b = Connect();
  ASSERT_NE(nats_b, nullptr);
  auto b = Open(nats_b.get());
  ASSERT_NE(b, nullptr);
  const uint64_t generation = b->Generation();
  for (int round = 0; round < 2; ++round) {
    for (int i = 0; i < kNodes; ++i) {
      v1::NodeFacts f = HostFacts(absl::StrFormat("gpu-%03d", i));
      f.set_reported_unix_nanos(f.reported_unix_nanos() + round + 1);
      ASSERT_TRUE(b->Put(f).ok());
    }
  }
  // Writes are in order: once a later one is counted, the earlier ones
  // would be. The watcher can show a write before its publish is
  // acknowledged, and so before it is counted: both are awaited.
  ASSERT_TRUE(b->Put(HostFacts("gpu-new", 5)).ok());
  ASSERT_TRUE(testing::Eventually(
      [&] { return Holds(*b, "gpu-new", "swp5") && b->writes() >= 1; }));
  EXPECT_EQ(b->writes(), 1u);
  EXPECT_EQ(b->Generation(), generation + 1);
  EXPECT_EQ(b->stats().queue_dropped, 0u);
  EXPECT_EQ(b->stats().nodes, static_cast<size_t>(kNodes + 1));
}

TEST_F(JetStreamNodeFactsTest, HostileValuesAreSkippedAndCounted) {
  auto nats = Connect();
  ASSERT_NE(nats, nullptr);
  auto store = Open(nats.get());
  ASSERT_NE(store, nullptr);
  // Field 1 with a length far beyond the value.
  PutRaw(nats.get(), "node.gpu-001", "\x0a\xff\xff\xff\x0f not a protobuf");
  PutRaw(nats.get(), "node.gpu-002", HostFacts("gpu-009").SerializeAsString());
  PutRaw(nats.get(), "node.-bad", HostFacts("-bad").SerializeAsString());
  PutRaw(nats.get(), "other", HostFacts("gpu-003").SerializeAsString());
  PutRaw(nats.get(), "node.gpu-004", "\x1f\x8b not gzip at all");
  // A bomb: a tiny value that inflates beyond any node's facts.
  v1::NodeFacts bomb;
  bomb.set_node("gpu-005");
  bomb.set_lldp_source(std::string(40 << 20, 'x'));
  const std::string compressed = KvPayload(bomb);
  ASSERT_LT(compressed.size(), size_t{1} << 20);
  PutRaw(nats.get(), "node.gpu-005", compressed);
  PutRaw(nats.get(), "node.gpu-006",
         HostFacts("gpu-006", 7).SerializeAsString());
  ASSERT_TRUE(
      testing::Eventually([&] { return Holds(*store, "gpu-006", "swp7"); }));
  EXPECT_EQ(store->skipped(), 6u);
  EXPECT_EQ(store->Snapshot()->size(), 1u);

  // A collector that starts later skips them the same way.
  auto other_nats = Connect();
  ASSERT_NE(other_nats, nullptr);
  auto other = Open(other_nats.get());
  ASSERT_NE(other, nullptr);
  EXPECT_EQ(other->skipped(), 6u);
  EXPECT_EQ(other->Snapshot()->size(), 1u);

  std::string metrics;
  store->AppendMetrics(&metrics);
  EXPECT_NE(metrics.find("fabricdiag_node_facts_bucket_skipped_total 6\n"),
            std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("fabricdiag_node_facts_nodes 1\n"), std::string::npos);
}

#ifndef FABRICDIAG_SANITIZED  // real time: a server killed and restarted
TEST(JetStreamNodeFactsServerTest, QueuesWhileNatsIsAwayAndSurvivesItsKill) {
  testing::NatsCluster server(1);
  const absl::Status started = server.Start();
  ASSERT_TRUE(started.ok()) << started;
  NatsConnection::Options options;
  options.urls = {server.url(0)};
  auto nats_a = NatsConnection::Connect(options);
  auto nats_c = NatsConnection::Connect(options);
  ASSERT_TRUE(nats_a.ok()) << nats_a.status();
  ASSERT_TRUE(nats_c.ok()) << nats_c.status();
  JetStreamNodeFacts::Options facts_options;
  facts_options.replicas = 1;
  facts_options.queue_limit = 4;
  auto a = JetStreamNodeFacts::Open(nats_a->get(), facts_options);
  auto c = JetStreamNodeFacts::Open(nats_c->get(), facts_options);
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_TRUE((*a)->Put(HostFacts("gpu-000")).ok());
  ASSERT_TRUE(
      testing::Eventually([&] { return Holds(**c, "gpu-000", "swp1"); }));

  server.Kill(0);
  ASSERT_TRUE(testing::Eventually([&] { return !(*nats_a)->link_up(); }));
  // Put returns at once while nothing answers; the queue keeps the latest
  // of each node, up to its limit.
  const absl::Time start = absl::Now();
  for (int i = 1; i <= 10; ++i) {
    ASSERT_TRUE((*a)->Put(HostFacts(absl::StrFormat("gpu-%03d", i))).ok());
  }
  ASSERT_TRUE((*a)->Put(HostFacts("gpu-002", 3)).ok());  // replaces one
  EXPECT_LT(absl::Now() - start, absl::Milliseconds(100));
  // 4 queued, at most 1 taken by the writer: 5 dropped, 1 replaced.
  EXPECT_GE((*a)->stats().queue_dropped, 6u);

  ASSERT_TRUE(server.Restart(0).ok());
  // C's watcher died with the server: the queued facts written after the
  // restart reach it anyway.
  ASSERT_TRUE(testing::Eventually([&] { return Holds(**c, "gpu-002", "swp3"); },
                                  absl::Seconds(30)));
  // gpu-000 and the queued 4, written one after another: wait for them all
  // (the write taken when the link fell may be dropped on its retry: the
  // queue is full).
  EXPECT_TRUE(testing::Eventually([&] { return (*c)->Snapshot()->size() >= 5; },
                                  absl::Seconds(10)))
      << NodesOf(**c);
  EXPECT_TRUE(testing::Eventually([&] {
    return (*c)->Snapshot()->size() == (*a)->Snapshot()->size();
  })) << NodesOf(**a)
      << " against " << NodesOf(**c);
  ASSERT_TRUE((*a)->Put(HostFacts("gpu-100", 7)).ok());
  EXPECT_TRUE(testing::Eventually([&] { return Holds(**c, "gpu-100", "swp7"); },
                                  absl::Seconds(30)));
  (*a)->Stop();
  (*c)->Stop();
}
#endif  // FABRICDIAG_SANITIZED

// The numbers docs/cluster.md quotes: the bucket bytes of an 8-NIC host,
// and how long a Put on one collector takes to show on another collector
// connected to another server of a 3-server JetStream cluster.
TEST(JetStreamNodeFactsServerTest, ReplicatedAcrossThreeServers) {
  const std::string value = KvPayload(HostFacts("gpu-001.pod1.example.net"));
  std::printf("node facts of an 8-NIC host: %zu bytes per key\n", value.size());
  EXPECT_LT(value.size(), 2048u);

  testing::NatsCluster servers(3);
  const absl::Status started = servers.Start();
  ASSERT_TRUE(started.ok()) << started << "\n" << servers.Log(0);
  std::vector<std::unique_ptr<NatsConnection>> conns;
  std::vector<std::unique_ptr<JetStreamNodeFacts>> stores;
  for (int i = 0; i < 3; ++i) {
    NatsConnection::Options options;
    options.urls = {servers.url(i)};
    auto nats = NatsConnection::Connect(options);
    ASSERT_TRUE(nats.ok()) << nats.status();
    conns.push_back(*std::move(nats));
    JetStreamNodeFacts::Options facts_options;
    facts_options.replicas = 3;
    auto store = JetStreamNodeFacts::Open(conns.back().get(), facts_options);
    ASSERT_TRUE(store.ok()) << store.status();
    stores.push_back(*std::move(store));
  }
  std::vector<absl::Duration> delays;
  for (int i = 0; i < 20; ++i) {
    const std::string node = absl::StrFormat("gpu-%03d", i);
    const absl::Time put = absl::Now();
    ASSERT_TRUE(stores[0]->Put(HostFacts(node, i + 1)).ok());
    ASSERT_TRUE(testing::Eventually(
        [&] { return Holds(*stores[2], node, absl::StrCat("swp", i + 1)); },
        absl::Seconds(15), absl::Microseconds(200)));
    delays.push_back(absl::Now() - put);
  }
  std::sort(delays.begin(), delays.end());
  std::printf("Put on A -> Snapshot on C: median %s, max %s\n",
              absl::FormatDuration(delays[delays.size() / 2]).c_str(),
              absl::FormatDuration(delays.back()).c_str());
  EXPECT_LT(delays[delays.size() / 2], absl::Seconds(1));
  for (auto& store : stores) store->Stop();
}

}  // namespace
}  // namespace fabricdiag::cluster
