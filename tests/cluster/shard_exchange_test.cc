// Analysis shards' features between collectors, against a real
// nats-server: an owner receives every collector's ports of the shards it
// owns and nothing else, the newest publication wins, a silent collector
// drops out, and what is not a chunk of an owned shard is refused.
#include "cluster/shard_exchange.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "analysis/shard_map.h"
#include "cluster/shard_wire.h"
#include "tests/cluster/single_nats_test.h"
#include "tests/testing/eventually.h"

namespace fabricdiag::cluster {
namespace {

using analysis::ShardKind;
using analysis::ShardPorts;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::SizeIs;

constexpr absl::Duration kBound = absl::Seconds(10);

// `nodes` nodes prefix-NNN of 8 NICs each, both views; every NIC transmits
// `tx` bytes/s.
collector::FeatureSlice Slice(const std::string& prefix, int nodes, double tx) {
  collector::FeatureSlice s;
  s.window.window_seconds = 3;
  s.recent.emplace();
  s.recent->window_seconds = 1;
  for (int n = 0; n < nodes; ++n) {
    for (int p = 0; p < 8; ++p) {
      for (analysis::FabricView* view : {&s.window, &*s.recent}) {
        analysis::PortView& port = view->AddPort(
            absl::StrFormat("%s-%03d", prefix, n), absl::StrCat("mlx5_", p));
        port.netdev = absl::StrCat("eth", p);
        port.s.tx_bytes = tx;
        port.s.rx_bytes = tx / 2;
        port.s.link_rate = 50e9;
        port.s.symbol_errors = 7;  // no job shard's signal
      }
    }
  }
  s.window.Finish();
  s.recent->Finish();
  return s;
}

// Shard "jobs.1" holds the first half of `slice`'s ports, "jobs.2" the
// rest.
std::vector<ShardPorts> TwoShards(const collector::FeatureSlice& slice) {
  std::vector<ShardPorts> out(2);
  out[0].shard = "jobs.1";
  out[1].shard = "jobs.2";
  const uint32_t n = static_cast<uint32_t>(slice.window.ports().size());
  for (uint32_t i = 0; i < n; ++i) out[i < n / 2 ? 0 : 1].ports.push_back(i);
  return out;
}

class ShardExchangeTest : public SingleNatsServerTest {
 protected:
  struct Collector {
    std::unique_ptr<NatsConnection> nats;
    std::unique_ptr<ShardExchange> shards;
  };

  static Collector Join(const std::string& id,
                        absl::Duration freshness = absl::Seconds(5),
                        size_t max_chunk_bytes = kDefaultChunkBytes) {
    Collector c;
    c.nats = Connect();
    if (c.nats == nullptr) return c;
    ShardExchange::Options options;
    options.subject = absl::StrCat("shard.", TestName());
    options.freshness = freshness;
    options.max_chunk_bytes = max_chunk_bytes;
    auto shards = ShardExchange::Open(c.nats.get(), id, options);
    EXPECT_TRUE(shards.ok()) << shards.status();
    if (shards.ok()) c.shards = *std::move(shards);
    return c;
  }
};

TEST_F(ShardExchangeTest, AnOwnerReceivesEveryCollectorsPortsOfItsShards) {
  Collector a = Join("col-a");
  Collector b = Join("col-b");
  Collector owner = Join("col-c");
  ASSERT_NE(owner.shards, nullptr);
  ASSERT_NE(a.shards, nullptr);
  ASSERT_NE(b.shards, nullptr);
  ASSERT_TRUE(owner.shards->Own({"jobs.1"}).ok());
  // col-b owns jobs.2: it sends only jobs.1.
  ASSERT_TRUE(b.shards->Own({"jobs.2"}).ok());
  const collector::FeatureSlice from_a = Slice("a", 4, 10e9);
  const collector::FeatureSlice from_b = Slice("b", 2, 20e9);
  ShardExchange::ShardInput in;
  ASSERT_TRUE(testing::Eventually(
      [&] {
        const absl::Time now = absl::Now();
        EXPECT_TRUE(a.shards->Publish(from_a, TwoShards(from_a), now).ok());
        EXPECT_TRUE(b.shards->Publish(from_b, TwoShards(from_b), now).ok());
        in = owner.shards->Received("jobs.1", absl::Now());
        return in.collectors.size() == 2;
      },
      kBound, absl::Milliseconds(100)));
  EXPECT_THAT(in.collectors, ElementsAre("col-a", "col-b"));
  // Half of each: a-000, a-001 and b-000.
  ASSERT_THAT(in.window.ports(), SizeIs(16 + 8));
  ASSERT_THAT(in.recent.ports(), SizeIs(16 + 8));
  EXPECT_EQ(in.window.window_seconds, 3);
  EXPECT_EQ(in.recent.window_seconds, 1);
  const analysis::PortView* p = in.window.Find("b-000", "eth3");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->device, "mlx5_3");
  EXPECT_EQ(p->s.tx_bytes, 20e9);
  EXPECT_EQ(p->s.link_rate, 50e9);
  EXPECT_TRUE(std::isnan(p->s.symbol_errors));            // not sent
  EXPECT_EQ(in.window.Find("a-002", "mlx5_0"), nullptr);  // jobs.2's
  // Not owned here: nothing, though col-a sends it.
  EXPECT_THAT(owner.shards->Received("jobs.2", absl::Now()).collectors,
              IsEmpty());
  EXPECT_GT(a.shards->stats().last_published_bytes, 0u);
  EXPECT_EQ(a.shards->stats().publish_errors, 0u);
  // col-b kept its own shard: one shard's chunks a pass.
  EXPECT_LT(b.shards->stats().published_chunks,
            a.shards->stats().published_chunks);
  EXPECT_GT(owner.shards->stats().received_chunks, 0u);
}

TEST_F(ShardExchangeTest, TheNewestPublicationWinsAndASilentCollectorLeaves) {
  Collector a = Join("col-a");
  Collector owner = Join("col-c", absl::Milliseconds(600));
  ASSERT_NE(owner.shards, nullptr);
  ASSERT_NE(a.shards, nullptr);
  ASSERT_TRUE(owner.shards->Own({"jobs.1", "jobs.2"}).ok());
  for (double tx : {10e9, 16e9}) {  // floats on the wire: exact ones
    const collector::FeatureSlice slice = Slice("a", 4, tx);
    ASSERT_TRUE(testing::Eventually(
        [&] {
          EXPECT_TRUE(
              a.shards->Publish(slice, TwoShards(slice), absl::Now()).ok());
          const ShardExchange::ShardInput in =
              owner.shards->Received("jobs.2", absl::Now());
          const analysis::PortView* p = in.window.Find("a-003", "mlx5_7");
          return p != nullptr && p->s.tx_bytes == tx;
        },
        kBound, absl::Milliseconds(100)))
        << tx;
  }
  // Silent for longer than the freshness: gone from the input.
  ASSERT_TRUE(testing::Eventually(
      [&] {
        return owner.shards->Received("jobs.2", absl::Now())
            .window.ports()
            .empty();
      },
      kBound, absl::Milliseconds(100)));
  // A shard given up is forgotten; taken again, it fills from the next
  // publication.
  ASSERT_TRUE(owner.shards->Own({"jobs.1"}).ok());
  EXPECT_TRUE(
      owner.shards->Received("jobs.2", absl::Now()).window.ports().empty());
  ASSERT_TRUE(owner.shards->Own({"jobs.1", "jobs.2"}).ok());
  const collector::FeatureSlice slice = Slice("a", 4, 5e9);
  EXPECT_TRUE(testing::Eventually(
      [&] {
        EXPECT_TRUE(
            a.shards->Publish(slice, TwoShards(slice), absl::Now()).ok());
        return owner.shards->Received("jobs.2", absl::Now())
                   .window.ports()
                   .size() == 16;
      },
      kBound, absl::Milliseconds(100)));
}

TEST_F(ShardExchangeTest, AShardOfManyChunksArrivesWhole) {
  // 2 KB chunks: two or three nodes of 8 NICs each.
  Collector a = Join("col-a", absl::Seconds(5), 2 << 10);
  Collector owner = Join("col-c");
  ASSERT_NE(owner.shards, nullptr);
  ASSERT_NE(a.shards, nullptr);
  ASSERT_TRUE(owner.shards->Own({"jobs.1", "jobs.2"}).ok());
  const collector::FeatureSlice slice = Slice("a", 40, 10e9);
  ASSERT_TRUE(testing::Eventually(
      [&] {
        EXPECT_TRUE(
            a.shards->Publish(slice, TwoShards(slice), absl::Now()).ok());
        return owner.shards->Received("jobs.1", absl::Now())
                   .window.ports()
                   .size() == 160;
      },
      kBound, absl::Milliseconds(100)));
  EXPECT_GE(a.shards->stats().published_chunks, 10u);
}

TEST_F(ShardExchangeTest, WhatIsNotAChunkOfAnOwnedShardIsRefused) {
  Collector owner = Join("col-c");
  Collector a = Join("col-a");
  ASSERT_NE(owner.shards, nullptr);
  ASSERT_NE(a.shards, nullptr);
  ASSERT_TRUE(owner.shards->Own({"jobs.1"}).ok());
  const std::string subject = absl::StrCat("shard.", TestName(), ".jobs.1.x.0");
  const collector::FeatureSlice slice = Slice("a", 2, 10e9);
  std::vector<std::string> hostile;
  // More made-up collectors than the 256 a shard keeps: the ones heard
  // from longest ago make room, and the real one still gets in.
  for (int k = 0; k < 300; ++k) {
    v1::ShardChunk c;
    c.set_collector_id(absl::StrCat("fake-", k));
    c.set_shard("jobs.1");
    c.set_chunk(0);
    c.set_chunks(2);  // never complete
    c.set_published_unix_nanos(1);
    hostile.push_back(c.SerializeAsString());
  }
  hostile.push_back("not a protobuf \xff\xff\xff");
  hostile.push_back("");
  for (const v1::ShardChunk& good :
       ShardToChunks(slice, {0, 1, 2}, ShardKind::kJobs,
                     {"jobs.1", "col-x", absl::Now()})) {
    v1::ShardChunk c = good;
    c.set_collector_id("col-c");  // this collector's own
    hostile.push_back(c.SerializeAsString());
    c = good;
    c.set_shard("jobs.9");  // a shard not owned here
    hostile.push_back(c.SerializeAsString());
    c = good;
    c.set_chunk(5);  // past its count
    hostile.push_back(c.SerializeAsString());
    c = good;
    c.set_chunks(1'000'000);  // more chunks than any shard
    hostile.push_back(c.SerializeAsString());
    c = good;
    c.mutable_ports()->add_window_values(1);  // damaged: refused at decoding
    hostile.push_back(c.SerializeAsString());
  }
  for (const std::string& data : hostile) {
    ASSERT_EQ(
        natsConnection_Publish(owner.nats->nc(), subject.c_str(), data.data(),
                               static_cast<int>(data.size())),
        NATS_OK);
  }
  // The good collector still gets through, beside the damaged one.
  ShardExchange::ShardInput in;
  ASSERT_TRUE(testing::Eventually(
      [&] {
        EXPECT_TRUE(
            a.shards->Publish(slice, TwoShards(slice), absl::Now()).ok());
        in = owner.shards->Received("jobs.1", absl::Now());
        return owner.shards->stats().refused_chunks >= 7 &&
               !in.collectors.empty();
      },
      kBound, absl::Milliseconds(100)))
      << owner.shards->stats().refused_chunks;
  EXPECT_THAT(in.collectors, ElementsAre("col-a"));
  EXPECT_THAT(in.window.ports(), SizeIs(8));
}

}  // namespace
}  // namespace fabricdiag::cluster
