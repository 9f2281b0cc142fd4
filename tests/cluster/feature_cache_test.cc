// The other collectors' chunks as the analysis leader keeps and merges them
// (no NATS): decoded when received, merged into what decoding every chunk
// in the pass gave, and the same when a chunk is merged twice.
#include "cluster/feature_cache.h"

#include <cstdint>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "analysis/agent_down.h"
#include "cluster/feature_wire.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/cluster_facts.pb.h"
#include "tests/cluster/node_slice.h"

namespace fabricdiag::cluster {
namespace {

using collector::FeatureSlice;
using collector::NodeFacts;
constexpr collector::MergeScope kFabric = collector::MergeScope::kFabric;
using ::testing::ElementsAre;

const absl::Time kT0 = absl::FromUnixSeconds(1700000000);

// A collector's slice over a random subset of 60 nodes (so collectors
// share some), 1-4 ports each, random signals (some absent), a recent view
// when `recent`, liveness reported at random times near kT0.
FeatureSlice RandomSlice(std::mt19937& rng, bool recent) {
  FeatureSlice s;
  s.window.window_seconds = 5;
  if (recent) {
    s.recent.emplace();
    s.recent->window_seconds = 2;
  }
  std::uniform_int_distribution<int> coin(0, 3);
  std::uniform_real_distribution<double> rate(0, 1e9);
  for (int n = 0; n < 60; ++n) {
    if (coin(rng) != 0) continue;
    const std::string node = absl::StrFormat("node-%03d", n);
    const int ports = 1 + coin(rng);
    for (int p = ports - 1; p >= 0; --p) {  // added out of order
      for (analysis::FabricView* view :
           {&s.window, s.recent ? &*s.recent : nullptr}) {
        if (view == nullptr) continue;
        analysis::PortView& port =
            view->AddPort(node, absl::StrCat("mlx5_", p));
        port.netdev = absl::StrCat("eth", p);
        port.s.rx_bytes = rate(rng);
        port.s.tx_bytes = coin(rng) == 0 ? analysis::kAbsent : rate(rng);
        port.s.rx_pause_fraction[3] = rate(rng) / 1e9;
        port.samples.reports = coin(rng);
      }
    }
    if (coin(rng) != 0) {  // now and then, ports without liveness
      NodeFacts f;
      f.liveness.node = node;
      f.liveness.ever_reported = true;
      f.liveness.last_report = kT0 + absl::Seconds(coin(rng));
      f.liveness.interval = absl::Milliseconds(1000 + coin(rng));
      s.nodes.push_back(f);
    }
  }
  s.window.Finish();
  if (s.recent) s.recent->Finish();
  return s;
}

std::vector<v1::FeatureChunk> Chunks(const FeatureSlice& s,
                                     const std::string& id) {
  // Small chunks: several per collector.
  return SliceToChunks(s, id, kT0, 1500);
}

// What JetStreamFeatures::Merged did before the cache decoded on receipt:
// every chunk of every collector decoded in the pass, then merged.
FeatureSlice Reference(
    FeatureSlice local,
    const std::map<std::string, std::vector<v1::FeatureChunk>>& remote) {
  for (NodeFacts& n : local.nodes) n.collector = "col-0";
  std::map<std::string, FeatureSlice> slices;
  std::vector<FeatureSlice*> all = {&local};
  for (const auto& [id, chunks] : remote) {
    FeatureSlice& s = slices[id];
    for (const v1::FeatureChunk& c : chunks) {
      EXPECT_TRUE(AddChunkToSlice(c, &s));
    }
    FinishSlice(&s);
    for (NodeFacts& n : s.nodes) n.collector = id;
    all.push_back(&s);
  }
  return collector::MergeFeatureSlices(all);
}

// Every port field the wire carries, in order, with the node facts.
void ExpectSameSlice(const FeatureSlice& a, const FeatureSlice& b) {
  ASSERT_EQ(a.window.ports().size(), b.window.ports().size());
  for (size_t i = 0; i < a.window.ports().size(); ++i) {
    EXPECT_EQ(a.window.ports()[i].node, b.window.ports()[i].node) << i;
    EXPECT_EQ(a.window.ports()[i].device, b.window.ports()[i].device) << i;
  }
  ASSERT_EQ(a.recent.has_value(), b.recent.has_value());
  if (a.recent) {
    ASSERT_EQ(a.recent->ports().size(), b.recent->ports().size());
    EXPECT_EQ(a.recent->window_seconds, b.recent->window_seconds);
  }
  EXPECT_EQ(a.window.window_seconds, b.window.window_seconds);
  const size_t whole = std::numeric_limits<size_t>::max();
  const std::vector<v1::FeatureChunk> wa = SliceToChunks(a, "x", kT0, whole);
  const std::vector<v1::FeatureChunk> wb = SliceToChunks(b, "x", kT0, whole);
  ASSERT_EQ(wa.size(), 1u);
  ASSERT_EQ(wb.size(), 1u);
  EXPECT_EQ(wa[0].SerializeAsString(), wb[0].SerializeAsString());
  ASSERT_EQ(a.nodes.size(), b.nodes.size());
  for (size_t i = 0; i < a.nodes.size(); ++i) {
    EXPECT_EQ(a.nodes[i].liveness.node, b.nodes[i].liveness.node) << i;
    EXPECT_EQ(a.nodes[i].liveness.last_report, b.nodes[i].liveness.last_report);
    EXPECT_EQ(a.nodes[i].collector, b.nodes[i].collector) << i;
    EXPECT_EQ(a.nodes[i].liveness.interval, b.nodes[i].liveness.interval) << i;
  }
}

TEST(FeatureCacheTest, MergesWhatDecodingInThePassGave) {
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    SCOPED_TRACE(seed);
    std::mt19937 rng(seed);
    const FeatureSlice local = RandomSlice(rng, true);
    std::map<std::string, std::vector<v1::FeatureChunk>> remote;
    FeatureCache cache("col-0");
    size_t chunks = 0;
    for (int k = 1; k <= 3; ++k) {
      const std::string id = absl::StrCat("col-", k);
      // One collector without a recent view: the merged recent view has
      // the others' ports.
      remote[id] = Chunks(RandomSlice(rng, k != 2), id);
      for (const v1::FeatureChunk& c : remote[id]) {
        cache.Received(c.SerializeAsString(), kT0);
        ++chunks;
      }
    }
    ASSERT_GT(chunks, 6u);
    const FeatureSlice expected = Reference(local, remote);
    ASSERT_FALSE(expected.window.ports().empty());
    ExpectSameSlice(cache.Merged(local, kT0, kFabric), expected);
    EXPECT_EQ(cache.stats().merge_decoded_chunks, 0u);
    EXPECT_EQ(cache.stats().merged_members, 3u);
    // No newer chunk since: the pass decodes them again, to the same.
    ExpectSameSlice(cache.Merged(local, kT0, kFabric), expected);
    EXPECT_EQ(cache.stats().merge_decoded_chunks, chunks);
  }
}

// A collector that does not analyse merges the other collectors' nodes
// only; their chunks stay for a later merge of the fabric, which is the
// same whether they were decoded on receipt or not.
TEST(FeatureCacheTest, ANodesOnlyMergeLeavesThePortsForALaterOne) {
  for (const bool on_receipt : {true, false}) {
    for (uint32_t seed = 1; seed <= 10; ++seed) {
      SCOPED_TRACE(absl::StrCat("seed ", seed, on_receipt ? "" : ", later"));
      std::mt19937 rng(seed);
      const FeatureSlice local = RandomSlice(rng, true);
      std::map<std::string, std::vector<v1::FeatureChunk>> remote;
      FeatureCache cache("col-0");
      cache.DecodeOnReceipt(on_receipt);
      size_t chunks = 0;
      for (int k = 1; k <= 3; ++k) {
        const std::string id = absl::StrCat("col-", k);
        remote[id] = Chunks(RandomSlice(rng, true), id);
        for (const v1::FeatureChunk& c : remote[id]) {
          cache.Received(c.SerializeAsString(), kT0);
          ++chunks;
        }
      }
      const FeatureSlice expected = Reference(local, remote);
      const FeatureSlice nodes =
          cache.Merged(local, kT0, collector::MergeScope::kNodes);
      // The fabric's nodes, each from the collector it reported to last.
      ASSERT_EQ(nodes.nodes.size(), expected.nodes.size());
      for (size_t i = 0; i < nodes.nodes.size(); ++i) {
        EXPECT_EQ(nodes.nodes[i].liveness.node,
                  expected.nodes[i].liveness.node);
        EXPECT_EQ(nodes.nodes[i].collector, expected.nodes[i].collector);
        EXPECT_EQ(nodes.nodes[i].liveness.last_report,
                  expected.nodes[i].liveness.last_report);
      }
      // No port at all, not even its own.
      ASSERT_FALSE(local.window.ports().empty());
      EXPECT_TRUE(nodes.window.ports().empty());
      EXPECT_FALSE(nodes.recent.has_value());
      EXPECT_EQ(cache.stats().merged_members, 3u);
      EXPECT_EQ(cache.stats().merged_remote_ports, 0u);
      EXPECT_EQ(cache.stats().merge_decoded_chunks, 0u);
      ExpectSameSlice(cache.Merged(local, kT0, kFabric), expected);
      EXPECT_EQ(cache.stats().merge_decoded_chunks, on_receipt ? 0u : chunks);
    }
  }
}

// A recent window named only from a later chunk on: the earlier chunks'
// recent ports are left out, as when the pass decoded them in turn.
TEST(FeatureCacheTest, ARecentViewStartsAtTheChunkThatNamesIt) {
  std::mt19937 rng(7);
  std::vector<v1::FeatureChunk> chunks =
      Chunks(RandomSlice(rng, true), "col-1");
  ASSERT_GE(chunks.size(), 3u);
  chunks[0].set_recent_seconds(0);
  chunks[2].set_recent_seconds(0);
  FeatureCache cache("col-0");
  for (const v1::FeatureChunk& c : chunks) {
    cache.Received(c.SerializeAsString(), kT0);
  }
  FeatureSlice local;
  local.recent.emplace();
  const FeatureSlice expected = Reference(local, {{"col-1", chunks}});
  const FeatureSlice merged = cache.Merged(local, kT0, kFabric);
  ExpectSameSlice(merged, expected);
  ASSERT_TRUE(merged.recent.has_value());
  EXPECT_LT(merged.recent->ports().size(), merged.window.ports().size());
}

FeatureSlice OneNode(const std::string& node, absl::Time report) {
  return testing::NodeSlice(node, report, 1);
}

std::vector<std::string> Nodes(const FeatureSlice& s) {
  std::vector<std::string> out;
  for (const NodeFacts& n : s.nodes) out.push_back(n.liveness.node);
  return out;
}

TEST(FeatureCacheTest, StaleLateOwnAndBrokenChunksAreLeftOut) {
  FeatureCache cache("col-0");
  const auto send = [&](const FeatureSlice& s, const std::string& id,
                        absl::Time published, absl::Time received) {
    for (const v1::FeatureChunk& c : SliceToChunks(s, id, published)) {
      cache.Received(c.SerializeAsString(), received);
    }
  };
  send(OneNode("b-1", kT0), "col-b", kT0, kT0);
  // A copy published earlier arrives late: the newer one stays.
  send(OneNode("b-old", kT0), "col-b", kT0 - absl::Seconds(1), kT0);
  send(OneNode("own", kT0), "col-0", kT0, kT0);  // this collector's own
  send(OneNode("c-1", kT0), "col-c", kT0, kT0 - absl::Seconds(10));
  cache.Received("not a chunk", kT0);
  v1::FeatureChunk beyond;  // chunk index past its count
  beyond.set_collector_id("col-d");
  beyond.set_chunk(2);
  beyond.set_chunks(2);
  cache.Received(beyond.SerializeAsString(), kT0);
  const FeatureSlice merged =
      cache.Merged(OneNode("a-1", kT0), kT0 - absl::Seconds(5), kFabric);
  EXPECT_THAT(Nodes(merged), ElementsAre("a-1", "b-1"));
  EXPECT_EQ(merged.window.ports().size(), 2u);
  EXPECT_EQ(cache.stats().received_chunks, 6u);
  EXPECT_EQ(cache.stats().undecodable_chunks, 2u);
  EXPECT_EQ(cache.stats().merged_members, 1u);
  EXPECT_EQ(cache.stats().merged_remote_ports, 1u);
  EXPECT_EQ(cache.LastReceived(FeatureCache::Feed::kFeatures).size(),
            2u);  // col-b, col-c
}

// A collector that does not analyse reads a chunk's header and its nodes'
// facts without decoding the ports. A chunk whose ports are damaged past
// that still gives its nodes' liveness; a later merge of the fabric leaves
// its ports out and counts it undecodable, once however often it merges.
TEST(FeatureCacheTest, DamagedPortsFoundAtMergeKeepTheNodesFacts) {
  FeatureCache cache("col-0");
  cache.DecodeOnReceipt(false);
  // col-b's one node, with a port whose bytes are not a PortFeatures (a
  // tag that never ends), spliced in as field 5 of the node (`ports`).
  v1::NodeFeaturesFacts node;
  node.set_node("b-1");
  node.set_last_report_unix_nanos(absl::ToUnixNanos(kT0));
  node.set_interval_nanos(absl::ToInt64Nanoseconds(absl::Seconds(1)));
  node.set_has_liveness(true);
  const std::string garbage(11, '\xff');
  std::string node_bytes = node.SerializeAsString();
  node_bytes += '\x2a';  // field 5, length-delimited
  node_bytes += static_cast<char>(garbage.size());
  node_bytes += garbage;
  v1::FeatureChunkFacts header;
  header.set_collector_id("col-b");
  header.set_published_unix_nanos(absl::ToUnixNanos(kT0));
  header.set_chunk(0);
  header.set_chunks(1);
  header.set_window_seconds(5);
  std::string chunk = header.SerializeAsString();
  chunk += '\x3a';  // field 7 (nodes), length-delimited
  chunk += static_cast<char>(node_bytes.size());
  chunk += node_bytes;
  ASSERT_FALSE(v1::FeatureChunk().ParseFromString(chunk));
  cache.Received(chunk, kT0);
  EXPECT_EQ(cache.stats().undecodable_chunks, 0u);

  const FeatureSlice nodes =
      cache.Merged(OneNode("a-1", kT0), kT0 - absl::Seconds(5),
                   collector::MergeScope::kNodes);
  EXPECT_THAT(Nodes(nodes), ElementsAre("a-1", "b-1"));
  for (int merge = 0; merge < 3; ++merge) {
    const FeatureSlice fabric =
        cache.Merged(OneNode("a-1", kT0), kT0 - absl::Seconds(5), kFabric);
    EXPECT_THAT(Nodes(fabric), ElementsAre("a-1", "b-1"));
    EXPECT_EQ(fabric.window.ports().size(), 1u);  // a-1's own
    EXPECT_EQ(cache.stats().undecodable_chunks, 1u) << "merge " << merge;
    EXPECT_EQ(cache.stats().merge_decoded_chunks, 0u);
  }
  // A newer version of the chunk is judged afresh.
  const std::string nodes_field = chunk.substr(header.ByteSizeLong());
  header.set_published_unix_nanos(absl::ToUnixNanos(kT0 + absl::Seconds(1)));
  cache.Received(header.SerializeAsString() + nodes_field,
                 kT0 + absl::Seconds(1));
  cache.Merged(OneNode("a-1", kT0), kT0 - absl::Seconds(5), kFabric);
  EXPECT_EQ(cache.stats().undecodable_chunks, 2u);
}

// A block whose columns disagree, found as the chunk arrives: counted
// undecodable once, however often it is merged; its node's facts count.
TEST(FeatureCacheTest, ABlockDamagedOnReceiptKeepsTheNodesFacts) {
  FeatureCache cache("col-0");
  std::vector<v1::FeatureChunk> chunks =
      SliceToChunks(OneNode("b-1", kT0), "col-b", kT0);
  ASSERT_EQ(chunks.size(), 1u);
  v1::PortBlock* block = chunks[0].mutable_nodes(0)->mutable_port_block();
  ASSERT_GT(block->window_values_size(), 0);
  block->mutable_window_values()->RemoveLast();
  cache.Received(chunks[0].SerializeAsString(), kT0);
  EXPECT_EQ(cache.stats().undecodable_chunks, 1u);
  for (int merge = 0; merge < 2; ++merge) {
    const FeatureSlice fabric =
        cache.Merged(OneNode("a-1", kT0), kT0 - absl::Seconds(5), kFabric);
    EXPECT_THAT(Nodes(fabric), ElementsAre("a-1", "b-1"));
    EXPECT_EQ(fabric.window.ports().size(), 1u);  // a-1's own
  }
  EXPECT_EQ(cache.stats().undecodable_chunks, 1u);
  EXPECT_EQ(cache.stats().merge_decoded_chunks, 0u);
}

// A collector that now publishes fewer chunks: its leftover higher indexes
// are not merged.
TEST(FeatureCacheTest, ChunksBeyondTheNewestCountAreLeftOver) {
  FeatureCache cache("col-0");
  FeatureSlice two = OneNode("b-1", kT0);
  two.window.AddPort("b-2", "mlx5_0");
  two.window.Finish();
  std::vector<v1::FeatureChunk> old = SliceToChunks(two, "col-b", kT0, 1);
  ASSERT_EQ(old.size(), 2u);
  for (const v1::FeatureChunk& c : old) {
    cache.Received(c.SerializeAsString(), kT0);
  }
  for (const v1::FeatureChunk& c :
       SliceToChunks(OneNode("b-1", kT0), "col-b", kT0 + absl::Seconds(1))) {
    cache.Received(c.SerializeAsString(), kT0);
  }
  const FeatureSlice merged = cache.Merged(FeatureSlice(), kT0, kFabric);
  EXPECT_EQ(merged.window.ports().size(), 1u);
  EXPECT_EQ(merged.window.PortsOf("b-2").size(), 0u);
}

// A collector that leaves the merge keeps its nodes' liveness, after the
// merged nodes.
TEST(FeatureCacheTest, ALeftCollectorsNodesKeepTheirLiveness) {
  FeatureCache cache("col-0");
  for (const v1::FeatureChunk& c :
       SliceToChunks(OneNode("b-1", kT0), "col-b", kT0)) {
    cache.Received(c.SerializeAsString(), kT0);
  }
  EXPECT_THAT(Nodes(cache.Merged(OneNode("c-1", kT0), kT0, kFabric)),
              ElementsAre("b-1", "c-1"));
  const FeatureSlice later =
      cache.Merged(OneNode("c-1", kT0), kT0 + absl::Seconds(1), kFabric);
  EXPECT_THAT(Nodes(later), ElementsAre("c-1", "b-1"));
  EXPECT_EQ(later.nodes[1].collector, "col-b");
  EXPECT_EQ(later.window.ports().size(), 1u);
}

// Another collector's node is judged as of that collector's publication.
// When its features stop arriving, its nodes are unobserved while it is
// live and for the grace after it was last live (their liveness as last
// merged, so agent_down does not open); later, or for a collector never
// seen live, they are judged now, as before.
TEST(FeatureCacheTest, AStaleCollectorsNodesAreUnobservedWhileItIsLive) {
  FeatureCache cache("col-0");
  const absl::Time published = kT0 + absl::Milliseconds(300);
  for (const char* id : {"col-b", "col-c"}) {
    for (const v1::FeatureChunk& c :
         SliceToChunks(OneNode(absl::StrCat(id, "-1"), kT0), id, published)) {
      cache.Received(c.SerializeAsString(), kT0 + absl::Milliseconds(400));
    }
  }
  FeatureCache::Presence presence;
  presence.now = kT0 + absl::Seconds(1);
  presence.live = {"col-0", "col-b", "col-c"};
  presence.left_grace = absl::Seconds(40);
  FeatureSlice fresh =
      cache.Merged(OneNode("a-1", kT0), kT0, kFabric, presence);
  ASSERT_THAT(Nodes(fresh), ElementsAre("a-1", "col-b-1", "col-c-1"));
  EXPECT_TRUE(fresh.complete) << "every live collector's features are in";
  EXPECT_EQ(fresh.nodes[0].liveness.observed_until, absl::InfiniteFuture());
  EXPECT_EQ(fresh.nodes[1].liveness.observed_until, published);
  EXPECT_FALSE(fresh.nodes[1].unobserved);
  EXPECT_THAT(cache.stats().unobserved_nodes,
              ElementsAre(std::pair<const std::string, uint64_t>("col-b", 0),
                          std::pair<const std::string, uint64_t>("col-c", 0)));

  // 10 s later nothing arrived: col-b is live, col-c left 9 s ago.
  presence.now = kT0 + absl::Seconds(10);
  presence.live = {"col-0", "col-b"};
  FeatureSlice stale =
      cache.Merged(OneNode("a-1", presence.now),
                   presence.now - absl::Seconds(3), kFabric, presence);
  ASSERT_THAT(Nodes(stale), ElementsAre("a-1", "col-b-1", "col-c-1"));
  EXPECT_FALSE(stale.complete) << "col-b runs and its features are missing";
  for (size_t i : {1, 2}) {
    EXPECT_TRUE(stale.nodes[i].unobserved) << i;
    EXPECT_EQ(stale.nodes[i].liveness.observed_until, published) << i;
    EXPECT_TRUE(analysis::IsAgentUp(stale.nodes[i].liveness, presence.now));
  }
  EXPECT_THAT(cache.stats().unobserved_nodes,
              ElementsAre(std::pair<const std::string, uint64_t>("col-b", 1),
                          std::pair<const std::string, uint64_t>("col-c", 1)));

  // col-c was last live 41 s ago: its node is judged now (down).
  presence.now = kT0 + absl::Seconds(42);
  stale = cache.Merged(OneNode("a-1", presence.now),
                       presence.now - absl::Seconds(3), kFabric, presence);
  ASSERT_THAT(Nodes(stale), ElementsAre("a-1", "col-b-1", "col-c-1"));
  EXPECT_TRUE(stale.nodes[1].unobserved);
  EXPECT_FALSE(stale.nodes[2].unobserved);
  EXPECT_EQ(stale.nodes[2].liveness.observed_until, absl::InfiniteFuture());
  EXPECT_FALSE(analysis::IsAgentUp(stale.nodes[2].liveness, presence.now));
  EXPECT_THAT(cache.stats().unobserved_nodes,
              ElementsAre(std::pair<const std::string, uint64_t>("col-b", 1)));
}

// An agent moves from col-b to col-c (a hand-back, a failover), then col-c's
// features stop arriving for a while (JetStream elections): col-b still
// lists the node with its last report from before the move. That is older
// news than col-c's, not the agent's silence: the node is unobserved as
// col-c had it, never down, and col-c's news counts again when it arrives.
TEST(FeatureCacheTest, AMovedNodeIsNotJudgedByTheCollectorItLeft) {
  FeatureCache cache("col-0");
  const auto send = [&](const std::string& id, absl::Time last_report,
                        absl::Time published) {
    FeatureSlice s = OneNode("n-1", last_report);
    s.nodes[0].liveness.interval = absl::Milliseconds(500);
    for (const v1::FeatureChunk& c : SliceToChunks(s, id, published)) {
      cache.Received(c.SerializeAsString(), published);
    }
  };
  FeatureCache::Presence presence;
  presence.live = {"col-0", "col-b", "col-c"};
  presence.left_grace = absl::Seconds(40);
  const auto merge = [&](absl::Time now) {
    presence.now = now;
    return cache.Merged(OneNode("a-1", now), now - absl::Seconds(2), kFabric,
                        presence);
  };
  send("col-b", kT0, kT0);
  ASSERT_THAT(Nodes(merge(kT0)), ElementsAre("a-1", "n-1"));
  // The move, at kT0 + 1 s: col-c has it.
  send("col-c", kT0 + absl::Seconds(2), kT0 + absl::Seconds(2));
  send("col-b", kT0 + absl::Seconds(1), kT0 + absl::Seconds(2));
  FeatureSlice moved = merge(kT0 + absl::Seconds(2));
  ASSERT_THAT(Nodes(moved), ElementsAre("a-1", "n-1"));
  EXPECT_EQ(moved.nodes[1].collector, "col-c");

  // col-c's features stop (its last chunk counts for 2 s); col-b keeps
  // publishing its old news.
  for (int s = 5; s <= 10; ++s) {
    const absl::Time now = kT0 + absl::Seconds(s);
    send("col-b", kT0 + absl::Seconds(1), now);
    FeatureSlice stale = merge(now);
    ASSERT_THAT(Nodes(stale), ElementsAre("a-1", "n-1")) << s;
    EXPECT_EQ(stale.nodes[1].collector, "col-c") << s;
    EXPECT_TRUE(stale.nodes[1].unobserved) << s;
    EXPECT_EQ(stale.nodes[1].liveness.last_report, kT0 + absl::Seconds(2));
    EXPECT_TRUE(analysis::IsAgentUp(stale.nodes[1].liveness, now)) << s;
  }
  EXPECT_EQ(cache.stats().unobserved_nodes.at("col-c"), 1u);

  // col-c's features again: its news counts.
  send("col-c", kT0 + absl::Seconds(11), kT0 + absl::Seconds(11));
  FeatureSlice back = merge(kT0 + absl::Seconds(11));
  EXPECT_EQ(back.nodes[1].collector, "col-c");
  EXPECT_FALSE(back.nodes[1].unobserved);
  EXPECT_EQ(back.nodes[1].liveness.last_report, kT0 + absl::Seconds(11));

  // col-c is gone for good (not live for longer than the grace) and only
  // col-b's old news arrives: the node is judged now, from the newest
  // report anyone had of it.
  presence.live = {"col-0", "col-b"};
  merge(kT0 + absl::Seconds(12));
  const absl::Time late = kT0 + absl::Seconds(60);
  send("col-b", kT0 + absl::Seconds(1), late);
  FeatureSlice gone = merge(late);
  EXPECT_FALSE(gone.nodes[1].unobserved);
  EXPECT_EQ(gone.nodes[1].liveness.last_report, kT0 + absl::Seconds(11));
  EXPECT_FALSE(analysis::IsAgentUp(gone.nodes[1].liveness, late));
}

// A collector whose features arrive but no longer list a node it gave
// before (it restarted, and the agent did not report since) does not hold
// the node: the node is judged now, by the newest report anyone had of it,
// not held unobserved as long as that collector runs.
TEST(FeatureCacheTest, ANodeItsCollectorNoLongerListsIsJudgedNow) {
  FeatureCache cache("col-0");
  const auto send = [&](const std::string& id, const FeatureSlice& s,
                        absl::Time published) {
    for (const v1::FeatureChunk& c : SliceToChunks(s, id, published)) {
      cache.Received(c.SerializeAsString(), published);
    }
  };
  FeatureCache::Presence presence;
  presence.live = {"col-0", "col-c"};
  const auto merge = [&](absl::Time now) {
    presence.now = now;
    return cache.Merged(OneNode("a-1", now), now - absl::Seconds(2), kFabric,
                        presence);
  };
  FeatureSlice held = OneNode("n-1", kT0 + absl::Seconds(1));
  held.nodes[0].liveness.interval = absl::Milliseconds(500);
  send("col-c", held, kT0 + absl::Seconds(1));
  EXPECT_EQ(merge(kT0 + absl::Seconds(1)).nodes[1].collector, "col-c");
  // col-c restarted: its slice has another node only.
  const absl::Time now = kT0 + absl::Seconds(8);
  send("col-c", OneNode("c-1", now), now);
  const FeatureSlice after = merge(now);
  ASSERT_THAT(Nodes(after), ElementsAre("a-1", "c-1", "n-1"));
  EXPECT_FALSE(after.nodes[2].unobserved);
  EXPECT_EQ(after.nodes[2].liveness.last_report, kT0 + absl::Seconds(1));
  EXPECT_FALSE(analysis::IsAgentUp(after.nodes[2].liveness, now));
}

// The same when the collector the agent left is the one merging: its own
// series' last report of the node is older than the other collector's.
TEST(FeatureCacheTest, AMovedNodeIsNotJudgedByThisCollectorsOwnOldNews) {
  FeatureCache cache("col-0");
  FeatureCache::Presence presence;
  presence.live = {"col-0", "col-c"};
  const auto local = [](absl::Time last_report) {
    FeatureSlice s = OneNode("n-1", last_report);
    s.nodes[0].liveness.interval = absl::Milliseconds(500);
    return s;
  };
  presence.now = kT0;
  cache.Merged(local(kT0), kT0, kFabric, presence);
  for (const v1::FeatureChunk& c : SliceToChunks(
           local(kT0 + absl::Seconds(2)), "col-c", kT0 + absl::Seconds(2))) {
    cache.Received(c.SerializeAsString(), kT0 + absl::Seconds(2));
  }
  presence.now = kT0 + absl::Seconds(2);
  EXPECT_EQ(cache.Merged(local(kT0 + absl::Seconds(1)), kT0, kFabric, presence)
                .nodes[0]
                .collector,
            "col-c");
  presence.now = kT0 + absl::Seconds(9);
  const FeatureSlice stale =
      cache.Merged(local(kT0 + absl::Seconds(1)),
                   presence.now - absl::Seconds(2), kFabric, presence);
  ASSERT_THAT(Nodes(stale), ElementsAre("n-1"));
  EXPECT_EQ(stale.nodes[0].collector, "col-c");
  EXPECT_TRUE(stale.nodes[0].unobserved);
  EXPECT_TRUE(analysis::IsAgentUp(stale.nodes[0].liveness, presence.now));
}

// Without membership (a cache never told who is live), a stale collector's
// nodes are judged now, as they always were.
TEST(FeatureCacheTest, WithoutMembersAStaleCollectorsNodesAreJudgedNow) {
  FeatureCache cache("col-0");
  for (const v1::FeatureChunk& c :
       SliceToChunks(OneNode("b-1", kT0), "col-b", kT0)) {
    cache.Received(c.SerializeAsString(), kT0);
  }
  cache.Merged(OneNode("a-1", kT0), kT0, kFabric);
  const FeatureSlice later =
      cache.Merged(OneNode("a-1", kT0), kT0 + absl::Seconds(1),
                   collector::MergeScope::kNodes);
  ASSERT_THAT(Nodes(later), ElementsAre("a-1", "b-1"));
  EXPECT_FALSE(later.nodes[1].unobserved);
  EXPECT_EQ(later.nodes[1].liveness.observed_until, absl::InfiniteFuture());
  EXPECT_TRUE(cache.stats().unobserved_nodes.empty());
}

void SendLiveness(FeatureCache& cache, const FeatureSlice& slice,
                  const std::string& id, absl::Time published,
                  absl::Time received) {
  for (const v1::FeatureChunkFacts& c :
       SliceToLivenessChunks(slice, id, published)) {
    cache.ReceivedLiveness(c.SerializeAsString(), received);
  }
}

void SendFeatures(FeatureCache& cache, const FeatureSlice& slice,
                  const std::string& id, absl::Time published,
                  absl::Time received) {
  for (const v1::FeatureChunk& c : SliceToChunks(slice, id, published)) {
    cache.Received(c.SerializeAsString(), received);
  }
}

// An agent that went silent where it streamed after the last news of a
// live collector whose features are missing may be streaming there now (a
// hand-back to a collector whose features stall while the returning NATS
// server's elections run): it is unobserved, as of its last report, never
// down, while that collector's features are missing and for at most the
// grace; one that fell silent before that news is judged now, and so is
// every node once that collector's features arrive.
TEST(FeatureCacheTest, ANodeSilentSinceAMissingCollectorsLastNewsIsUnobserved) {
  FeatureCache cache("col-0");
  FeatureCache::Presence presence;
  presence.live = {"col-0", "col-c"};
  presence.left_grace = absl::Seconds(40);
  // This collector's nodes: m-1 last reported at kT0, g-1 at kT0 + 5 s,
  // n-1 at `n1`.
  const auto local = [](absl::Time n1) {
    FeatureSlice s;
    for (const auto& [node, at] :
         std::vector<std::pair<std::string, absl::Time>>{
             {"g-1", kT0 + absl::Seconds(5)}, {"m-1", kT0}, {"n-1", n1}}) {
      NodeFacts f = OneNode(node, at).nodes[0];
      f.liveness.interval = absl::Milliseconds(500);
      s.nodes.push_back(f);
    }
    return s;
  };
  const auto merge = [&](absl::Time now, absl::Time n1) {
    presence.now = now;
    return cache.Merged(local(n1), now - absl::Seconds(2), kFabric, presence);
  };
  const auto of = [](const FeatureSlice& s, const std::string& node) {
    for (const NodeFacts& f : s.nodes) {
      if (f.liveness.node == node) return f;
    }
    ADD_FAILURE() << node << " is not in the merge";
    return NodeFacts{};
  };
  // col-c's last news, at kT0 + 1 s, before it took n-1 back.
  SendFeatures(cache, OneNode("c-1", kT0 + absl::Seconds(1)), "col-c",
               kT0 + absl::Seconds(1), kT0 + absl::Seconds(1));
  ASSERT_TRUE(merge(kT0 + absl::Seconds(1), kT0 + absl::Seconds(1)).complete);

  // n-1 reports here until kT0 + 10 s, then goes back to col-c, whose
  // features stay missing.
  const absl::Time left = kT0 + absl::Seconds(10);
  FeatureSlice reporting = merge(left, left);
  ASSERT_THAT(Nodes(reporting), ElementsAre("g-1", "m-1", "n-1", "c-1"))
      << "c-1 kept as last merged, after the merge's own";
  EXPECT_FALSE(reporting.complete);
  EXPECT_FALSE(of(reporting, "n-1").unobserved) << "it reports here";
  EXPECT_FALSE(
      of(merge(left + absl::Milliseconds(800), left), "n-1").unobserved)
      << "not silent for two of its intervals yet";
  for (int s : {2, 6, 20, 34}) {
    const absl::Time now = left + absl::Seconds(s);
    const FeatureSlice stale = merge(now, left);
    for (const char* node : {"n-1", "g-1"}) {
      const NodeFacts f = of(stale, node);
      EXPECT_TRUE(f.unobserved) << node << " " << s;
      EXPECT_EQ(f.collector, "col-c") << node << " " << s;
      EXPECT_EQ(f.liveness.observed_until, f.liveness.last_report) << node;
      EXPECT_TRUE(analysis::IsAgentUp(f.liveness, now)) << node << " " << s;
    }
    // Silent since before col-c's last news: not there, judged now.
    EXPECT_FALSE(of(stale, "m-1").unobserved) << s;
    EXPECT_EQ(of(stale, "m-1").collector, "col-0") << s;
    EXPECT_FALSE(analysis::IsAgentUp(of(stale, "m-1").liveness, now)) << s;
    // c-1 (col-c's own), n-1 and g-1.
    EXPECT_EQ(cache.stats().unobserved_nodes.at("col-c"), 3u) << s;
  }
  // g-1, silent for more than the grace (41 s), is judged now.
  const absl::Time late = left + absl::Seconds(36);
  const FeatureSlice past = merge(late, left);
  EXPECT_FALSE(of(past, "g-1").unobserved);
  EXPECT_FALSE(analysis::IsAgentUp(of(past, "g-1").liveness, late));
  EXPECT_TRUE(of(past, "n-1").unobserved);

  // col-c's features arrive again, without n-1 (the agent did not reach
  // it): n-1 is judged now.
  const absl::Time back = left + absl::Seconds(37);
  SendFeatures(cache, OneNode("c-1", back), "col-c", back, back);
  const FeatureSlice without = merge(back, left);
  EXPECT_TRUE(without.complete);
  EXPECT_FALSE(of(without, "n-1").unobserved);
  EXPECT_FALSE(analysis::IsAgentUp(of(without, "n-1").liveness, back));
  // ...or with it: col-c's news of it counts.
  FeatureSlice with = OneNode("c-1", back + absl::Seconds(1));
  with.nodes.push_back(OneNode("n-1", back + absl::Seconds(1)).nodes[0]);
  SendFeatures(cache, with, "col-c", back + absl::Seconds(1),
               back + absl::Seconds(1));
  const FeatureSlice taken = merge(back + absl::Seconds(1), left);
  EXPECT_EQ(of(taken, "n-1").collector, "col-c");
  EXPECT_FALSE(of(taken, "n-1").unobserved);
  EXPECT_TRUE(
      analysis::IsAgentUp(of(taken, "n-1").liveness, back + absl::Seconds(1)));
}

// An agent its collector handed to another one (a hand-back, a cut-off
// collector's hand-over) waits out a pause before it connects there, and
// its new collector publishes its arrival a pass later, while the features
// of every collector arrive. The collector it left says when it handed the
// agent off: the node is unobserved meanwhile, as that collector's, never
// down, for at most the grace after the hand-off; its first report
// elsewhere counts. A node silent without a hand-off, one that reported
// after it, and a hand-off stamped far from now are judged as usual.
TEST(FeatureCacheTest, ANodeHandedOffIsUnobservedUntilItReportsElsewhere) {
  FeatureCache cache("col-0");
  FeatureCache::Presence presence;
  presence.live = {"col-0", "col-a", "col-c"};
  presence.left_grace = absl::Seconds(40);
  const absl::Time handed_off = kT0 + absl::Milliseconds(100);
  const auto node = [](const std::string& name, absl::Time report,
                       absl::Time handed) {
    NodeFacts f = OneNode(name, report).nodes[0];
    f.liveness.interval = absl::Milliseconds(500);
    f.handed_off = handed;
    return f;
  };
  // n-1 reaches col-a at 9 s; m-1 never does.
  const absl::Time arrived = kT0 + absl::Seconds(9);
  // The slices of col-c and col-a as published at `now` (through the
  // wire), merged with this collector's.
  const auto merge = [&](absl::Time now) {
    FeatureSlice c;
    c.nodes = {
        node("f-1", kT0, kT0 + absl::Hours(1)),    // a hand-off from afar
        node("m-1", kT0, handed_off),              // handed off
        node("n-1", kT0, handed_off),              // handed off
        node("r-1", kT0 + absl::Seconds(1), kT0),  // reported after it
        node("s-1", kT0, absl::InfinitePast()),    // silent
    };
    SendFeatures(cache, c, "col-c", now, now);
    FeatureSlice a = OneNode("a-1", now);
    if (now >= arrived)
      a.nodes.push_back(node("n-1", now, absl::InfinitePast()));
    SendFeatures(cache, a, "col-a", now, now);
    FeatureSlice local = OneNode("o-1", now);
    local.nodes.push_back(node("h-1", kT0, handed_off));  // handed off here
    presence.now = now;
    return cache.Merged(std::move(local), now - absl::Seconds(2), kFabric,
                        presence);
  };
  const auto of = [](const FeatureSlice& s, const std::string& name) {
    for (const NodeFacts& f : s.nodes) {
      if (f.liveness.node == name) return f;
    }
    ADD_FAILURE() << name << " is not in the merge";
    return NodeFacts{};
  };
  for (int s : {1, 8, 20, 40}) {
    const absl::Time now = kT0 + absl::Seconds(s);
    const FeatureSlice merged = merge(now);
    EXPECT_TRUE(merged.complete) << s;
    std::vector<std::pair<std::string, std::string>> moving = {
        {"h-1", "col-0"}, {"m-1", "col-c"}};
    if (now < arrived) moving.emplace_back("n-1", "col-c");
    for (const auto& [name, collector] : moving) {
      const NodeFacts f = of(merged, name);
      EXPECT_TRUE(f.unobserved) << name << " " << s;
      EXPECT_EQ(f.collector, collector) << name << " " << s;
      EXPECT_EQ(f.handed_off, handed_off) << name << " " << s;
      EXPECT_EQ(f.liveness.observed_until, kT0) << name << " " << s;
      EXPECT_TRUE(analysis::IsAgentUp(f.liveness, now)) << name << " " << s;
    }
    EXPECT_EQ(cache.stats().moving_nodes, moving.size()) << s;
    EXPECT_EQ(cache.stats().unobserved_nodes.at("col-c"), 0u) << s;
    EXPECT_EQ(cache.stats().unobserved_nodes.at("col-a"), 0u) << s;
    if (now >= arrived) {
      // Its first report through col-a counts.
      const NodeFacts n = of(merged, "n-1");
      EXPECT_EQ(n.collector, "col-a") << s;
      EXPECT_FALSE(n.unobserved) << s;
      EXPECT_EQ(n.handed_off, absl::InfinitePast()) << s;
      EXPECT_TRUE(analysis::IsAgentUp(n.liveness, now)) << s;
    }
    if (s < 8) continue;
    for (const char* name : {"f-1", "r-1", "s-1"}) {
      EXPECT_FALSE(of(merged, name).unobserved) << name << " " << s;
      EXPECT_FALSE(analysis::IsAgentUp(of(merged, name).liveness, now))
          << name << " " << s;
    }
  }
  // More than the grace after the hand-off, an agent that reported nowhere
  // is judged as silent.
  const absl::Time late = handed_off + absl::Seconds(41);
  const FeatureSlice past = merge(late);
  for (const char* name : {"h-1", "m-1"}) {
    EXPECT_FALSE(of(past, name).unobserved) << name;
    EXPECT_FALSE(analysis::IsAgentUp(of(past, name).liveness, late)) << name;
  }
  EXPECT_EQ(cache.stats().moving_nodes, 0u);
}

// A live collector this one never heard from (either just started) may
// hold agents already: a node that went silent here meanwhile is
// unobserved, as that collector's, for at most the grace.
TEST(FeatureCacheTest,
     ANodeSilentWhileALiveCollectorWasNeverHeardIsUnobserved) {
  FeatureCache cache("col-0");
  FeatureCache::Presence presence;
  presence.live = {"col-0", "col-d"};
  presence.left_grace = absl::Seconds(40);
  FeatureSlice local = OneNode("n-1", kT0);
  local.nodes[0].liveness.interval = absl::Milliseconds(500);
  presence.now = kT0 + absl::Seconds(6);
  const FeatureSlice soon = cache.Merged(local, kT0, kFabric, presence);
  ASSERT_THAT(Nodes(soon), ElementsAre("n-1"));
  EXPECT_FALSE(soon.complete);
  EXPECT_TRUE(soon.nodes[0].unobserved);
  EXPECT_EQ(soon.nodes[0].collector, "col-d");
  EXPECT_TRUE(analysis::IsAgentUp(soon.nodes[0].liveness, presence.now));
  presence.now = kT0 + absl::Seconds(41);
  const FeatureSlice late = cache.Merged(local, kT0, kFabric, presence);
  EXPECT_FALSE(late.nodes[0].unobserved);
  EXPECT_EQ(late.nodes[0].collector, "col-0");
  EXPECT_FALSE(analysis::IsAgentUp(late.nodes[0].liveness, presence.now));
}

// A merge of nodes takes a collector's nodes from its liveness where it
// arrived (newer than its feature chunks here), from its feature chunks
// where it did not (a collector of an earlier build); a merge of the
// fabric from the feature chunks alone.
TEST(FeatureCacheTest, ANodesMergeTakesLivenessWhereItArrived) {
  FeatureCache cache("col-0");
  const absl::Time later = kT0 + absl::Seconds(2);
  SendFeatures(cache, OneNode("b-1", kT0), "col-b", kT0, kT0);
  SendLiveness(cache, OneNode("b-1", later), "col-b", later, later);
  // The same chunk index again, its node moved on: replaces it.
  SendLiveness(cache, OneNode("b-2", later), "col-b", later, later);
  SendFeatures(cache, OneNode("c-1", kT0), "col-c", kT0, kT0);
  const FeatureSlice nodes =
      cache.Merged(OneNode("a-1", kT0), kT0, collector::MergeScope::kNodes);
  EXPECT_THAT(Nodes(nodes), ElementsAre("a-1", "b-2", "c-1"));
  EXPECT_EQ(nodes.nodes[1].collector, "col-b");
  EXPECT_EQ(nodes.nodes[1].liveness.last_report, later);
  EXPECT_EQ(nodes.nodes[1].liveness.observed_until, later);
  EXPECT_EQ(nodes.nodes[2].collector, "col-c");
  EXPECT_EQ(cache.stats().merged_members, 2u);
  // The fabric: col-b's feature chunk (b-1 and its port), not its
  // liveness; b-2 is remembered from the merge of nodes.
  const FeatureSlice fabric = cache.Merged(OneNode("a-1", kT0), kT0, kFabric);
  EXPECT_THAT(Nodes(fabric), ElementsAre("a-1", "b-1", "c-1", "b-2"));
  EXPECT_EQ(fabric.window.ports().size(), 3u);
  EXPECT_EQ(cache.stats().merged_remote_ports, 2u);
  EXPECT_EQ(cache.stats().received_chunks, 2u);
  EXPECT_EQ(cache.stats().received_liveness_chunks, 2u);
  EXPECT_GT(cache.stats().received_liveness_bytes, 0u);
  EXPECT_GT(cache.stats().received_bytes,
            cache.stats().received_liveness_bytes);
}

// Stale liveness does not count; a collector's own is not kept; one that
// is not a liveness chunk is counted undecodable.
TEST(FeatureCacheTest, StaleOwnAndBrokenLivenessIsLeftOut) {
  FeatureCache cache("col-0");
  SendLiveness(cache, OneNode("b-1", kT0), "col-b", kT0, kT0);
  SendLiveness(cache, OneNode("a-9", kT0), "col-0", kT0, kT0);
  cache.ReceivedLiveness("\xff\xff not a chunk", kT0);
  v1::FeatureChunkFacts no_count;
  no_count.set_collector_id("col-c");
  cache.ReceivedLiveness(no_count.SerializeAsString(), kT0);
  EXPECT_EQ(cache.stats().undecodable_chunks, 2u);
  EXPECT_THAT(Nodes(cache.Merged(OneNode("a-1", kT0), kT0,
                                 collector::MergeScope::kNodes)),
              ElementsAre("a-1", "b-1"));
  // Past the cutoff: gone from the merge (kept as a left collector's).
  const FeatureSlice later =
      cache.Merged(OneNode("a-1", kT0), kT0 + absl::Seconds(1),
                   collector::MergeScope::kNodes);
  EXPECT_EQ(cache.stats().merged_members, 0u);
  EXPECT_THAT(Nodes(later), ElementsAre("a-1", "b-1"));
  EXPECT_EQ(later.nodes[1].liveness.observed_until, absl::InfiniteFuture());
}

// Which live collectors' liveness is missing, when each feed was last
// heard of, and that dropping the feature chunks leaves the liveness.
TEST(FeatureCacheTest, LivenessIsTrackedApartFromTheFeatures) {
  FeatureCache cache("col-0");
  const absl::Time later = kT0 + absl::Seconds(3);
  SendFeatures(cache, OneNode("b-1", kT0), "col-b", kT0, kT0);
  SendFeatures(cache, OneNode("c-1", kT0), "col-c", kT0, kT0);
  SendLiveness(cache, OneNode("b-1", later), "col-b", later, later);
  EXPECT_THAT(cache.WithoutLiveness(kT0, {"col-0", "col-b", "col-c", "col-d"}),
              ElementsAre("col-c", "col-d"));
  EXPECT_THAT(cache.WithoutLiveness(later + absl::Seconds(1), {"col-b"}),
              ElementsAre("col-b"));
  EXPECT_EQ(
      cache.LastReceived(FeatureCache::Feed::kFeatures),
      (std::map<std::string, absl::Time>{{"col-b", kT0}, {"col-c", kT0}}));
  EXPECT_EQ(cache.LastReceived(FeatureCache::Feed::kLiveness),
            (std::map<std::string, absl::Time>{{"col-b", later}}));
  cache.DropFeatures();
  EXPECT_TRUE(cache.LastReceived(FeatureCache::Feed::kFeatures).empty());
  const FeatureSlice fabric = cache.Merged(OneNode("a-1", kT0), kT0, kFabric);
  EXPECT_EQ(fabric.window.ports().size(), 1u);
  EXPECT_EQ(cache.stats().merged_members, 0u);
  // col-c's node came from its feature chunks alone, now dropped.
  EXPECT_THAT(Nodes(cache.Merged(OneNode("a-1", kT0), kT0,
                                 collector::MergeScope::kNodes)),
              ElementsAre("a-1", "b-1"));
  EXPECT_EQ(cache.stats().merged_members, 1u);
}

// Nodes come and go in every merge, each collector's a random subset of
// its own: a merge lists the nodes it was given, by name, then every node
// an earlier merge gave and this one did not, by name, with its liveness
// as last merged; each node once.
TEST(FeatureCacheTest, EveryNodeEverMergedIsListedOnceInOrder) {
  FeatureCache cache("col-0");
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> coin(0, 2);
  std::map<std::string, absl::Time> last_merged;
  for (int round = 0; round < 40; ++round) {
    const absl::Time now = kT0 + absl::Seconds(round);
    std::map<std::string, absl::Time> given;
    FeatureSlice local;
    std::map<std::string, FeatureSlice> remote;
    for (const char* id : {"col-0", "col-b", "col-c"}) {
      FeatureSlice& slice = id == std::string("col-0") ? local : remote[id];
      slice.window.window_seconds = 5;
      for (int n = 0; n < 30; ++n) {
        if (coin(rng) == 0) continue;
        NodeFacts f;
        f.liveness.node = absl::StrFormat("%s-n%02d", id, n);
        f.liveness.ever_reported = true;
        f.liveness.last_report = now - absl::Milliseconds(coin(rng) * 100);
        given[f.liveness.node] = f.liveness.last_report;
        slice.nodes.push_back(f);
      }
      slice.window.Finish();
    }
    for (const auto& [id, slice] : remote) {
      SendLiveness(cache, slice, id, now, now);
    }
    const FeatureSlice merged =
        cache.Merged(std::move(local), now - absl::Milliseconds(500),
                     collector::MergeScope::kNodes);
    std::vector<std::string> expected;
    expected.reserve(given.size() + last_merged.size());
    for (const auto& [node, at] : given) expected.push_back(node);
    for (const auto& [node, at] : last_merged) {
      if (given.count(node) == 0) expected.push_back(node);
    }
    ASSERT_EQ(Nodes(merged), expected) << "round " << round;
    for (const NodeFacts& n : merged.nodes) {
      auto it = given.find(n.liveness.node);
      const absl::Time want =
          it != given.end() ? it->second : last_merged.at(n.liveness.node);
      EXPECT_EQ(n.liveness.last_report, want)
          << n.liveness.node << " in round " << round;
    }
    for (const auto& [node, at] : given) last_merged[node] = at;
  }
}

// A node given twice, by two collectors (its agent moved) or twice by one
// (a broken or hostile peer), is listed once, as its newest report has it,
// in this merge and the next.
TEST(FeatureCacheTest, ANodeGivenTwiceIsListedOnce) {
  FeatureCache cache("col-0");
  const absl::Time t1 = kT0 + absl::Seconds(1);
  for (int round = 0; round < 2; ++round) {
    const absl::Time now = kT0 + absl::Seconds(2 + round);
    FeatureSlice twice = OneNode("n-1", kT0);
    twice.nodes.push_back(twice.nodes.front());
    twice.nodes.back().liveness.last_report = t1;
    SendLiveness(cache, twice, "col-b", now, now);
    SendLiveness(cache, OneNode("n-1", kT0), "col-c", now, now);
    const FeatureSlice merged =
        cache.Merged(OneNode("n-0", now), now, collector::MergeScope::kNodes);
    EXPECT_THAT(Nodes(merged), ElementsAre("n-0", "n-1")) << "round " << round;
    ASSERT_EQ(merged.nodes.size(), 2u);
    EXPECT_EQ(merged.nodes[1].liveness.last_report, t1) << "round " << round;
    EXPECT_EQ(merged.nodes[1].collector, "col-b") << "round " << round;
  }
}

// What a catch-up with the stream asks before it reads a subject: whether
// the subscription brought that chunk since the catch-up began.
TEST(FeatureCacheTest, KnowsWhichFeatureChunksArrivedSince) {
  FeatureCache cache("col-0");
  const absl::Time later = kT0 + absl::Seconds(3);
  SendFeatures(cache, OneNode("b-1", kT0), "col-b", kT0, kT0);
  SendLiveness(cache, OneNode("c-1", later), "col-c", later, later);
  EXPECT_TRUE(cache.HasFeatureChunk("col-b", 0, kT0));
  EXPECT_FALSE(cache.HasFeatureChunk("col-b", 0, later));  // older
  EXPECT_FALSE(cache.HasFeatureChunk("col-b", 1, kT0));    // no such chunk
  EXPECT_FALSE(cache.HasFeatureChunk("col-c", 0, kT0));    // liveness alone
  SendFeatures(cache, OneNode("b-1", later), "col-b", later, later);
  EXPECT_TRUE(cache.HasFeatureChunk("col-b", 0, later));
  cache.DropFeatures();
  EXPECT_FALSE(cache.HasFeatureChunk("col-b", 0, kT0));
}

}  // namespace
}  // namespace fabricdiag::cluster
