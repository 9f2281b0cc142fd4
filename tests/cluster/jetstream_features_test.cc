// The cluster backend of the feature exchange against a real nats-server:
// collectors see each other's nodes, a collector that stops publishing
// leaves the merge, a collector that starts reads what the stream holds.
#include "cluster/jetstream_features.h"

#include <atomic>
#include <cstdint>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "analysis/agent_down.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cluster/single_nats_test.h"
#include "tests/testing/eventually.h"
#include "tests/testing/stall_proxy.h"

namespace fabricdiag::cluster {
namespace {

using collector::FeatureSlice;
using collector::NodeFacts;
constexpr collector::MergeScope kFabric = collector::MergeScope::kFabric;

// A collector's slice: `nodes` nodes named prefix-NNN, 8 ports each, every
// signal present, reported at `now`.
FeatureSlice Slice(const std::string& prefix, int nodes, absl::Time now) {
  FeatureSlice s;
  s.window.window_seconds = 5;
  s.recent.emplace();
  s.recent->window_seconds = 2;
  for (int n = 0; n < nodes; ++n) {
    const std::string node = absl::StrFormat("%s-%03d", prefix, n);
    for (int p = 0; p < 8; ++p) {
      for (analysis::FabricView* view : {&s.window, &*s.recent}) {
        analysis::PortView& port =
            view->AddPort(node, absl::StrCat("mlx5_", p));
        port.netdev = absl::StrCat("eth", p);
        analysis::PortSignals& sig = port.s;
        double v = n * 100.0 + p;
        for (double* d : {&sig.rx_bytes,
                          &sig.tx_bytes,
                          &sig.pause_storm_warnings,
                          &sig.pause_storm_errors,
                          &sig.cnp_sent,
                          &sig.cnp_handled,
                          &sig.ecn_marked,
                          &sig.rx_discards,
                          &sig.rx_out_of_buffer,
                          &sig.symbol_errors,
                          &sig.rx_errors,
                          &sig.crc_errors,
                          &sig.pcs_symbol_errors,
                          &sig.corrected_bits,
                          &sig.received_bits,
                          &sig.link_downed,
                          &sig.link_error_recovery,
                          &sig.carrier_changes,
                          &sig.link_down_events,
                          &sig.out_of_sequence,
                          &sig.packet_seq_err,
                          &sig.local_ack_timeout_err,
                          &sig.rnr_nak_retry_err,
                          &sig.retries_exceeded,
                          &sig.duplicate_request,
                          &sig.implied_nak_seq_err,
                          &sig.adaptive_retrans}) {
          *d = v;
          v += 1.5;
        }
        sig.link_rate = sig.expected_rate = 50e9;
        for (analysis::PerPriority* a :
             {&sig.rx_pause_fraction, &sig.tx_pause_fraction,
              &sig.rx_pause_frames, &sig.tx_pause_frames}) {
          a->fill(0.01 * p);
        }
        port.samples = {5, 5.0, 5, 5.0, 1.0, 1.0};
      }
    }
    NodeFacts f;
    f.liveness.node = node;
    f.liveness.last_report = now;
    f.liveness.interval = absl::Seconds(1);
    f.liveness.ever_reported = true;
    s.nodes.push_back(f);
  }
  s.window.Finish();
  s.recent->Finish();
  return s;
}

std::vector<std::string> Nodes(const FeatureSlice& s) {
  std::vector<std::string> out;
  for (const NodeFacts& n : s.nodes) out.push_back(n.liveness.node);
  return out;
}

class JetStreamFeaturesTest : public SingleNatsServerTest {
 protected:
  struct Collector {
    std::unique_ptr<NatsConnection> nats;
    std::unique_ptr<JetStreamFeatures> features;
  };

  // One replica; the test's own stream and subjects.
  static JetStreamFeatures::Options TestOptions() {
    JetStreamFeatures::Options options;
    options.replicas = 1;
    options.stream = TestName();
    options.subject = absl::StrCat("features.", TestName());
    options.liveness_subject = absl::StrCat("liveness.", TestName());
    return options;
  }

  // A collector on its own connection; the test's own stream and subjects.
  static Collector Join(
      const std::string& id, absl::Duration freshness = absl::Seconds(5),
      std::function<std::vector<std::string>()> live_members = nullptr,
      absl::Duration features_linger = absl::Seconds(30),
      const std::string& liveness_subject = "") {
    Collector c;
    c.nats = Connect();
    if (c.nats == nullptr) return c;
    JetStreamFeatures::Options options = TestOptions();
    options.freshness = freshness;
    if (!liveness_subject.empty()) options.liveness_subject = liveness_subject;
    options.features_linger = features_linger;
    options.live_members = std::move(live_members);
    auto features = JetStreamFeatures::Open(c.nats.get(), id, options);
    EXPECT_TRUE(features.ok()) << features.status();
    if (features.ok()) c.features = *std::move(features);
    return c;
  }

  // `slice` published by `f` and acknowledged: the first error of sending
  // it or of its acknowledgements (a publish before it collected first).
  static absl::Status PublishAcknowledged(JetStreamFeatures* f,
                                          const FeatureSlice& slice) {
    f->WaitForAcknowledgements().IgnoreError();
    const absl::Status sent = f->Publish(slice, absl::Now());
    const absl::Status acknowledged = f->WaitForAcknowledgements();
    return sent.ok() ? acknowledged : sent;
  }

  // `a`'s merge in `scope`, with one node of its own (gpu-a-000).
  static FeatureSlice MergeOnA(JetStreamFeatures* a,
                               collector::MergeScope scope) {
    return a->Merged(Slice("gpu-a", 1, absl::Now()), absl::Now(), scope);
  }

  // Publishes b's 100 nodes (gpu-b-*) until `a`, merging nodes only,
  // lists them beside its own; false when it never did.
  // (B's feature chunks are then in the stream: a publish does not wait for
  // its acknowledgements, and A lists B's nodes from the liveness.)
  static bool ALists100NodesOfB(JetStreamFeatures* a, JetStreamFeatures* b) {
    const bool listed = testing::Eventually(
        [&] {
          EXPECT_TRUE(
              b->Publish(Slice("gpu-b", 100, absl::Now()), absl::Now()).ok());
          return MergeOnA(a, collector::MergeScope::kNodes).nodes.size() == 101;
        },
        absl::Seconds(20), absl::Milliseconds(100));
    const absl::Status stored = b->WaitForAcknowledgements();
    EXPECT_TRUE(stored.ok()) << stored;
    return listed && stored.ok();
  }

  // Merges the fabric on `a` until it holds `ports` ports (*fabric: the
  // last merge); false when it never did within `timeout`.
  static bool AMergesPorts(JetStreamFeatures* a, size_t ports,
                           FeatureSlice* fabric, absl::Duration timeout) {
    return testing::Eventually(
        [&] {
          *fabric = MergeOnA(a, kFabric);
          return fabric->window.ports().size() == ports;
        },
        timeout, absl::Milliseconds(20));
  }
};

TEST_F(JetStreamFeaturesTest, EachCollectorMergesTheOthersNodes) {
  Collector col_a = Join("col-a");
  Collector col_b = Join("col-b");
  ASSERT_TRUE(col_a.features != nullptr && col_b.features != nullptr);
  JetStreamFeatures* a = col_a.features.get();
  JetStreamFeatures* b = col_b.features.get();
  FeatureSlice merged_a;
  FeatureSlice merged_b;
  ASSERT_TRUE(testing::Eventually(
      [&] {
        const absl::Time now = absl::Now();
        EXPECT_TRUE(a->Publish(Slice("gpu-a", 2, now), now).ok());
        EXPECT_TRUE(b->Publish(Slice("gpu-b", 3, now), now).ok());
        merged_a = a->Merged(Slice("gpu-a", 2, now), now, kFabric);
        merged_b = b->Merged(Slice("gpu-b", 3, now), now, kFabric);
        return merged_a.window.ports().size() == 40 &&
               merged_b.window.ports().size() == 40;
      },
      absl::Seconds(20), absl::Milliseconds(100)));
  const std::vector<std::string> all = {"gpu-a-000", "gpu-a-001", "gpu-b-000",
                                        "gpu-b-001", "gpu-b-002"};
  EXPECT_EQ(Nodes(merged_a), all);
  EXPECT_EQ(Nodes(merged_b), all);
  // Each received its own chunks back, and dropped them unread: what it
  // received and kept is the other's alone.
  ASSERT_TRUE(testing::Eventually([&] {
    return a->stats().own_chunks_skipped > 0 &&
           b->stats().own_chunks_skipped > 0;
  }));
  EXPECT_EQ(a->stats().undecodable_chunks, 0u);
  EXPECT_TRUE(b->WaitForAcknowledgements().ok());  // counts its last publish
  EXPECT_LE(a->stats().received_chunks,
            b->stats().published_chunks + a->stats().catch_up_subjects);
  // Each node names the collector its agent streams to.
  for (const FeatureSlice* merged : {&merged_a, &merged_b}) {
    for (const collector::NodeFacts& n : merged->nodes) {
      EXPECT_EQ(n.collector,
                absl::StartsWith(n.liveness.node, "gpu-a") ? "col-a" : "col-b")
          << n.liveness.node;
    }
  }
  ASSERT_TRUE(merged_a.recent.has_value());
  EXPECT_EQ(merged_a.recent->ports().size(), 40u);
  // B's numbers, as B published them.
  const analysis::PortView* p = merged_a.window.Find("gpu-b-002", "eth5");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->s.rx_bytes, 205);
  EXPECT_EQ(p->s.rx_pause_fraction[7], 0.05);
  EXPECT_EQ(a->stats().merged_members, 1u);
  EXPECT_EQ(a->stats().merged_remote_ports, 24u);
}

TEST_F(JetStreamFeaturesTest, ACollectorThatStopsPublishingLeavesTheMerge) {
  Collector col_a = Join("col-a", absl::Seconds(1));
  Collector col_b = Join("col-b", absl::Seconds(1));
  ASSERT_TRUE(col_a.features != nullptr && col_b.features != nullptr);
  JetStreamFeatures* a = col_a.features.get();
  JetStreamFeatures* b = col_b.features.get();
  auto ports_of_b = [&] {
    const FeatureSlice merged =
        a->Merged(Slice("gpu-a", 1, absl::Now()), absl::Now(), kFabric);
    return merged.window.PortsOf("gpu-b-000").size();
  };
  ASSERT_TRUE(testing::Eventually(
      [&] {
        EXPECT_TRUE(
            b->Publish(Slice("gpu-b", 1, absl::Now()), absl::Now()).ok());
        return ports_of_b() == 8;
      },
      absl::Seconds(20), absl::Milliseconds(100)));
  const absl::Time stopped = absl::Now();
  // B publishes no more: its ports leave the merge after the freshness
  // limit, not before.
  ASSERT_TRUE(testing::Eventually([&] { return ports_of_b() == 0; },
                                  absl::Seconds(10), absl::Milliseconds(50)));
  EXPECT_GE(absl::Now() - stopped, absl::Milliseconds(900));
  // Its node's liveness is kept, as last reported, for agent_down.
  const FeatureSlice merged =
      a->Merged(Slice("gpu-a", 1, absl::Now()), absl::Now(), kFabric);
  EXPECT_EQ(Nodes(merged),
            (std::vector<std::string>{"gpu-a-000", "gpu-b-000"}));
  EXPECT_LE(merged.nodes[1].liveness.last_report, stopped);
  EXPECT_EQ(a->stats().merged_members, 0u);
}

// Publishes that fail while the connection stays up (here the stream is
// gone; in a partition's minority the server has no JetStream quorum) are
// timed from the first failure, and the time ends at the next success: a
// collector connected to NATS may still be cut off from its cluster.
TEST_F(JetStreamFeaturesTest, PublishesFailingWhileConnectedAreTimed) {
  Collector col_a = Join("col-a");
  Collector col_c = Join("col-c");
  ASSERT_TRUE(col_a.features != nullptr && col_c.features != nullptr);
  JetStreamFeatures* a = col_a.features.get();
  ASSERT_TRUE(PublishAcknowledged(a, Slice("gpu-a", 1, absl::Now())).ok());
  EXPECT_EQ(a->publish_failing_for(), absl::ZeroDuration());

  jsErrCode code = static_cast<jsErrCode>(0);
  ASSERT_EQ(
      js_DeleteStream(col_a.nats->js(), TestName().c_str(), nullptr, &code),
      NATS_OK)
      << code;
  EXPECT_FALSE(PublishAcknowledged(a, Slice("gpu-a", 1, absl::Now())).ok());
  absl::SleepFor(absl::Milliseconds(300));
  EXPECT_FALSE(PublishAcknowledged(a, Slice("gpu-a", 1, absl::Now())).ok());
  EXPECT_TRUE(col_a.nats->link_up());
  EXPECT_EQ(col_a.nats->link_down_for(), absl::ZeroDuration());
  EXPECT_GE(a->publish_failing_for(), absl::Milliseconds(300))
      << "timed from the first failure, not the latest";
  // Its liveness still reaches the others.
  EXPECT_TRUE(testing::Eventually(
      [&] {
        EXPECT_FALSE(
            PublishAcknowledged(a, Slice("gpu-a", 2, absl::Now())).ok());
        return col_c.features
                   ->Merged(Slice("gpu-c", 1, absl::Now()), absl::Now(),
                            collector::MergeScope::kNodes)
                   .nodes.size() == 3;
      },
      absl::Seconds(10), absl::Milliseconds(50)));
  EXPECT_EQ(a->stats().liveness_publish_errors, 0u);

  // The stream is back (another collector opens it): the next publish
  // succeeds and the failures are over.
  Collector col_b = Join("col-b");
  ASSERT_TRUE(col_b.features != nullptr);
  ASSERT_TRUE(PublishAcknowledged(a, Slice("gpu-a", 1, absl::Now())).ok());
  EXPECT_EQ(a->publish_failing_for(), absl::ZeroDuration());
}

// A collector that stops publishing while it is a live member: its node is
// unobserved, judged as of its last slice (agent_down does not open), and
// counted per collector; it stays so once the collector left the members,
// for the reconnect grace.
TEST_F(JetStreamFeaturesTest, ALiveCollectorThatStopsPublishingIsUnobserved) {
  std::atomic<bool> b_live{true};
  Collector col_a =
      Join("col-a", absl::Seconds(1), [&b_live]() -> std::vector<std::string> {
        if (b_live.load()) return {"col-a", "col-b"};
        return {"col-a"};
      });
  Collector col_b = Join("col-b", absl::Seconds(1));
  ASSERT_TRUE(col_a.features != nullptr && col_b.features != nullptr);
  JetStreamFeatures* a = col_a.features.get();
  JetStreamFeatures* b = col_b.features.get();
  auto merge = [&] {
    return a->Merged(Slice("gpu-a", 1, absl::Now()), absl::Now(),
                     collector::MergeScope::kNodes);
  };
  ASSERT_TRUE(testing::Eventually(
      [&] {
        EXPECT_TRUE(
            b->Publish(Slice("gpu-b", 1, absl::Now()), absl::Now()).ok());
        return merge().nodes.size() == 2;
      },
      absl::Seconds(20), absl::Milliseconds(100)));
  EXPECT_EQ(a->stats().unobserved_nodes,
            (std::map<std::string, uint64_t>{{"col-b", 0}}));
  const absl::Time stopped = absl::Now();
  FeatureSlice merged;
  ASSERT_TRUE(testing::Eventually(
      [&] {
        merged = merge();
        return merged.nodes.size() == 2 && merged.nodes[1].unobserved;
      },
      absl::Seconds(10), absl::Milliseconds(50)));
  EXPECT_EQ(merged.nodes[1].liveness.node, "gpu-b-000");
  EXPECT_LE(merged.nodes[1].liveness.observed_until, stopped);
  EXPECT_TRUE(analysis::IsAgentUp(merged.nodes[1].liveness,
                                  absl::Now() + absl::Hours(1)));
  EXPECT_EQ(a->stats().unobserved_nodes,
            (std::map<std::string, uint64_t>{{"col-b", 1}}));
  b_live.store(false);
  merged = merge();
  EXPECT_TRUE(merged.nodes[1].unobserved);
  EXPECT_FALSE(merged.nodes[0].unobserved);
  EXPECT_EQ(a->stats().unobserved_nodes,
            (std::map<std::string, uint64_t>{{"col-b", 1}}));
}

TEST_F(JetStreamFeaturesTest, ACollectorThatStartsReadsTheStream) {
  Collector col_a = Join("col-a");
  ASSERT_NE(col_a.features, nullptr);
  JetStreamFeatures* a = col_a.features.get();
  ASSERT_TRUE(a->Publish(Slice("gpu-a", 3, absl::Now()), absl::Now()).ok());
  // C starts after A's only publish: what it merges comes from the
  // stream's last message per subject, read beside its first merge.
  Collector col_c = Join("col-c");
  ASSERT_NE(col_c.features, nullptr);
  FeatureSlice merged;
  EXPECT_TRUE(testing::Eventually(
      [&] {
        merged = col_c.features->Merged(Slice("gpu-c", 1, absl::Now()),
                                        absl::Now(), kFabric);
        return merged.window.ports().size() == 32u;
      },
      absl::Seconds(10), absl::Milliseconds(20)));
  EXPECT_EQ(merged.nodes.size(), 4u);
  EXPECT_EQ(col_c.features->stats().catch_up_subjects, 1u);
}

// A publish returns without waiting for its acknowledgements. A slice
// whose acknowledgements do not come (the server paused while the
// connection still looks up) fails the request timeout after it was sent,
// naming how many chunks were left; once the server answers again the next
// publish succeeds, and the late acknowledgements of the failed one
// disturb nothing.
TEST_F(JetStreamFeaturesTest, UnacknowledgedChunksFailWithinTheTimeout) {
  Collector col_a = Join("col-a");
  ASSERT_NE(col_a.features, nullptr);
  JetStreamFeatures* a = col_a.features.get();
  const FeatureSlice slice = Slice("gpu", 300, absl::Now());  // 6 chunks
  ASSERT_TRUE(PublishAcknowledged(a, slice).ok());
  const uint64_t chunks = a->stats().published_chunks;
  ASSERT_GE(chunks, 3u);
  nats_->Pause(0);
  const absl::Time start = absl::Now();
  // The pass does not wait for the acknowledgements: the previous publish
  // went well, and this one's are collected later.
  EXPECT_TRUE(a->Publish(slice, absl::Now()).ok());
  EXPECT_LT(absl::Now() - start, absl::Milliseconds(500));
  const absl::Status paused = a->WaitForAcknowledgements();
  const absl::Duration took = absl::Now() - start;
  nats_->Resume(0);
  EXPECT_EQ(paused.code(), absl::StatusCode::kDeadlineExceeded) << paused;
  EXPECT_THAT(std::string(paused.message()),
              ::testing::HasSubstr(
                  absl::StrCat(" of ", chunks, " chunks not acknowledged")));
  EXPECT_GE(took, col_a.nats->request_timeout());
  EXPECT_LT(took, col_a.nats->request_timeout() + absl::Seconds(2));
  EXPECT_EQ(a->stats().publish_errors, 1u);
  EXPECT_GT(a->publish_failing_for(), absl::ZeroDuration());
  ASSERT_TRUE(
      testing::Eventually([&] { return PublishAcknowledged(a, slice).ok(); },
                          absl::Seconds(15), absl::Milliseconds(200)));
  EXPECT_EQ(a->publish_failing_for(), absl::ZeroDuration());
  absl::SleepFor(absl::Milliseconds(200));
  EXPECT_TRUE(PublishAcknowledged(a, slice).ok());
}

// A collector that does not analyse receives the others' liveness alone:
// their nodes, none of their feature chunks. Once it merges the fabric it
// reads the stream's latest chunks at once and receives them from then
// on; a while after its last merge of the fabric it stops, freeing them.
TEST_F(JetStreamFeaturesTest, AFollowerReceivesTheOthersLivenessAlone) {
  Collector col_a = Join("col-a", absl::Seconds(5), nullptr,
                         /*features_linger=*/absl::Milliseconds(500));
  Collector col_b = Join("col-b");
  ASSERT_TRUE(col_a.features != nullptr && col_b.features != nullptr);
  JetStreamFeatures* a = col_a.features.get();
  JetStreamFeatures* b = col_b.features.get();
  auto merge = [a](collector::MergeScope scope) { return MergeOnA(a, scope); };
  ASSERT_TRUE(ALists100NodesOfB(a, b));
  JetStreamFeatures::Stats stats = a->stats();
  EXPECT_FALSE(stats.receiving_features);
  EXPECT_EQ(stats.received_bytes, 0u);
  EXPECT_GT(stats.received_liveness_bytes, 0u);
  // ~80 bytes a node against the 800 ports' ~10 KB a node.
  const uint64_t liveness = b->stats().last_published_liveness_bytes;
  const uint64_t features = b->stats().last_published_bytes;
  EXPECT_LT(liveness * 50, features) << liveness << " vs " << features;
  EXPECT_EQ(a->LastReceived().count("col-b"), 1u);

  // The first merge of the fabric starts reading the stream's last chunk
  // of each subject, without waiting for it: col-b's nodes are there
  // (from its liveness), its ports within a moment, and chunks arrive from
  // then on.
  FeatureSlice fabric = merge(kFabric);
  EXPECT_EQ(fabric.nodes.size(), 101u);
  EXPECT_TRUE(a->stats().receiving_features);
  ASSERT_TRUE(AMergesPorts(a, 808, &fabric, absl::Seconds(10)));
  EXPECT_EQ(fabric.nodes.size(), 101u);
  EXPECT_GT(a->stats().catch_up_subjects, 0u);
  EXPECT_GT(a->stats().catch_up_took, absl::ZeroDuration());
  const uint64_t caught_up = a->stats().received_bytes;
  EXPECT_GT(caught_up, 0u);
  ASSERT_TRUE(b->Publish(Slice("gpu-b", 100, absl::Now()), absl::Now()).ok());
  ASSERT_TRUE(
      testing::Eventually([&] { return a->stats().received_bytes > caught_up; },
                          absl::Seconds(10), absl::Milliseconds(20)));

  // Past the linger after the last merge of the fabric: liveness alone.
  absl::SleepFor(absl::Milliseconds(600));
  EXPECT_EQ(merge(collector::MergeScope::kNodes).nodes.size(), 101u);
  EXPECT_FALSE(a->stats().receiving_features);
  const uint64_t stopped = a->stats().received_bytes;
  const uint64_t heard = a->stats().received_liveness_bytes;
  ASSERT_TRUE(b->Publish(Slice("gpu-b", 100, absl::Now()), absl::Now()).ok());
  ASSERT_TRUE(testing::Eventually(
      [&] { return a->stats().received_liveness_bytes > heard; },
      absl::Seconds(10), absl::Milliseconds(20)));
  EXPECT_EQ(a->stats().received_bytes, stopped);
  fabric = merge(collector::MergeScope::kNodes);
  EXPECT_TRUE(fabric.window.ports().empty());  // not even its own
  EXPECT_EQ(fabric.nodes.size(), 101u);
}

// Taking over the analysis does not wait for the stream: the first merge
// of the fabric returns at once even with the server stopped, and the
// catch-up brings the other collector's ports once it answers.
TEST_F(JetStreamFeaturesTest, AMergeOfTheFabricDoesNotWaitForTheCatchUp) {
  Collector col_a = Join("col-a");
  Collector col_b = Join("col-b");
  ASSERT_TRUE(col_a.features != nullptr && col_b.features != nullptr);
  JetStreamFeatures* a = col_a.features.get();
  JetStreamFeatures* b = col_b.features.get();
  auto merge = [a](collector::MergeScope scope) { return MergeOnA(a, scope); };
  ASSERT_TRUE(ALists100NodesOfB(a, b));

  nats_->Pause(0);
  const absl::Time start = absl::Now();
  FeatureSlice fabric = merge(kFabric);
  const absl::Duration took = absl::Now() - start;
  EXPECT_LT(took, absl::Milliseconds(500));
  EXPECT_EQ(fabric.window.ports().size(), 8u);  // its own
  EXPECT_EQ(fabric.nodes.size(), 101u);
  EXPECT_EQ(a->stats().catch_up_took, absl::ZeroDuration());  // running
  absl::SleepFor(absl::Milliseconds(500));
  nats_->Resume(0);
  ASSERT_TRUE(AMergesPorts(a, 808, &fabric, absl::Seconds(15)));
  EXPECT_GT(a->stats().catch_up_subjects, 0u);
  EXPECT_GE(a->stats().catch_up_took, absl::Milliseconds(500));
}

// A collector that stops while its server answers nothing ends its two
// subscriptions (the liveness and the feature chunks) with one wait for
// libnats' reader, not one each.
TEST_F(JetStreamFeaturesTest, AStoppingCollectorWaitsForAStalledServerOnce) {
  absl::StatusOr<std::unique_ptr<testing::StallProxy>> proxy =
      testing::StallProxy::Start(nats_->port(0));
  ASSERT_TRUE(proxy.ok()) << proxy.status();
  NatsConnection::Options connect;
  connect.urls = {absl::StrCat("nats://127.0.0.1:", (*proxy)->port())};
  absl::StatusOr<std::unique_ptr<NatsConnection>> nats =
      NatsConnection::Connect(connect);
  ASSERT_TRUE(nats.ok()) << nats.status();
  absl::StatusOr<std::unique_ptr<JetStreamFeatures>> features =
      JetStreamFeatures::Open(nats->get(), "col-a", TestOptions());
  ASSERT_TRUE(features.ok()) << features.status();
  // A merge of the fabric subscribes to the feature chunks too; the catch-up
  // of the (empty) stream ends before the server stalls.
  MergeOnA(features->get(), kFabric);
  ASSERT_TRUE(testing::Eventually(
      [&] { return (*features)->stats().catch_up_took > absl::ZeroDuration(); },
      absl::Seconds(10), absl::Milliseconds(10)));
  ASSERT_TRUE((*features)->stats().receiving_features);

  (*proxy)->HoldRequestsFrom("UNSUB ");
  const absl::Time start = absl::Now();
  features->reset();
  const absl::Duration took = absl::Now() - start;
  EXPECT_TRUE((*proxy)->holding());
  EXPECT_GE(took, kReaderPassedWait) << "no wait for the reader";
  EXPECT_LT(took, 2 * kReaderPassedWait) << "a wait for each subscription";
  (*proxy)->Release();
}

// A live collector whose liveness does not reach this one (a build before
// liveness, a NATS user not allowed its subject): its nodes are read from
// its feature chunks.
TEST_F(JetStreamFeaturesTest, ALiveCollectorWithoutLivenessIsReadFromChunks) {
  Collector col_a =
      Join("col-a", absl::Seconds(1), []() -> std::vector<std::string> {
        return {"col-a", "col-b"};
      });
  Collector col_b = Join("col-b", absl::Seconds(1), nullptr, absl::Seconds(30),
                         absl::StrCat("elsewhere.", TestName()));
  ASSERT_TRUE(col_a.features != nullptr && col_b.features != nullptr);
  JetStreamFeatures* a = col_a.features.get();
  JetStreamFeatures* b = col_b.features.get();
  ASSERT_TRUE(testing::Eventually(
      [&] {
        EXPECT_TRUE(
            b->Publish(Slice("gpu-b", 3, absl::Now()), absl::Now()).ok());
        return a->Merged(Slice("gpu-a", 1, absl::Now()), absl::Now(),
                         collector::MergeScope::kNodes)
                   .nodes.size() == 4;
      },
      absl::Seconds(20), absl::Milliseconds(100)));
  EXPECT_TRUE(a->stats().receiving_features);
  EXPECT_EQ(a->stats().received_liveness_bytes, 0u);
  EXPECT_EQ(a->stats().unobserved_nodes,
            (std::map<std::string, uint64_t>{{"col-b", 0}}));
}

// 1,000 nodes x 8 ports (every signal present): published in chunks under
// NATS's 1 MiB max_payload and merged whole by another collector. Prints
// what docs/cluster.md quotes.
TEST_F(JetStreamFeaturesTest, AThousandNodesGoInChunks) {
  Collector col_a = Join("col-a");
  Collector col_b = Join("col-b");
  ASSERT_TRUE(col_a.features != nullptr && col_b.features != nullptr);
  JetStreamFeatures* a = col_a.features.get();
  JetStreamFeatures* b = col_b.features.get();
  const FeatureSlice big = Slice("gpu", 1000, absl::Now());
  const absl::Time publish_start = absl::Now();
  const absl::Status published = PublishAcknowledged(a, big);
  ASSERT_TRUE(published.ok()) << published;
  const absl::Duration publish = absl::Now() - publish_start;
  const uint64_t bytes = a->stats().last_published_bytes;
  // Under the 1 MiB max_payload, not far under the 512 KiB budget.
  EXPECT_GE(a->stats().published_chunks, bytes / (512 << 10));
  EXPECT_LE(a->stats().published_chunks, bytes / (400 << 10) + 1);
  absl::Duration merge;
  ASSERT_TRUE(testing::Eventually(
      [&] {
        const absl::Time start = absl::Now();
        const FeatureSlice merged =
            b->Merged(Slice("other", 1, absl::Now()), absl::Now(), kFabric);
        merge = absl::Now() - start;
        return merged.window.ports().size() == 8008;
      },
      absl::Seconds(20), absl::Milliseconds(100)));
  std::cout << "features of 8000 ports: " << bytes << " bytes (" << bytes / 8000
            << " per port, window and recent), published in "
            << absl::FormatDuration(publish) << ", merged in "
            << absl::FormatDuration(merge) << ", "
            << a->stats().published_chunks << " chunks\n";
  EXPECT_LT(bytes / 8000, 1500u);
}

}  // namespace
}  // namespace fabricdiag::cluster
