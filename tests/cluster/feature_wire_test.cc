// A collector's features through the wire form and back, and the merge of
// several collectors' slices.
#include "cluster/feature_wire.h"

#include <cmath>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/numeric/bits.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cluster/node_slice.h"

namespace fabricdiag::cluster {
namespace {

using analysis::PortSignals;
using analysis::PortView;
using collector::FeatureSlice;
using collector::NodeFacts;
using ::testing::ElementsAre;
using ::testing::ElementsAreArray;

// Every scalar double of PortSignals, listed here independently of the
// code under test.
constexpr double PortSignals::*kScalars[] = {
    &PortSignals::rx_bytes,
    &PortSignals::tx_bytes,
    &PortSignals::link_rate,
    &PortSignals::expected_rate,
    &PortSignals::pause_storm_warnings,
    &PortSignals::pause_storm_errors,
    &PortSignals::cnp_sent,
    &PortSignals::cnp_handled,
    &PortSignals::ecn_marked,
    &PortSignals::rx_discards,
    &PortSignals::rx_out_of_buffer,
    &PortSignals::symbol_errors,
    &PortSignals::rx_errors,
    &PortSignals::crc_errors,
    &PortSignals::pcs_symbol_errors,
    &PortSignals::corrected_bits,
    &PortSignals::received_bits,
    &PortSignals::link_downed,
    &PortSignals::link_error_recovery,
    &PortSignals::carrier_changes,
    &PortSignals::link_down_events,
    &PortSignals::out_of_sequence,
    &PortSignals::packet_seq_err,
    &PortSignals::local_ack_timeout_err,
    &PortSignals::rnr_nak_retry_err,
    &PortSignals::retries_exceeded,
    &PortSignals::duplicate_request,
    &PortSignals::implied_nak_seq_err,
    &PortSignals::adaptive_retrans,
};
constexpr analysis::PerPriority PortSignals::*kArrays[] = {
    &PortSignals::rx_pause_fraction, &PortSignals::tx_pause_fraction,
    &PortSignals::rx_pause_frames, &PortSignals::tx_pause_frames};

// Equal, NaN (absent) equal to NaN only.
bool Same(double a, double b) { return std::isnan(a) ? std::isnan(b) : a == b; }

void ExpectSameSignals(const PortSignals& a, const PortSignals& b,
                       const std::string& where) {
  for (size_t i = 0; i < std::size(kScalars); ++i) {
    EXPECT_TRUE(Same(a.*kScalars[i], b.*kScalars[i]))
        << where << " scalar #" << i << ": " << a.*kScalars[i] << " vs "
        << b.*kScalars[i];
  }
  for (size_t i = 0; i < std::size(kArrays); ++i) {
    for (size_t p = 0; p < analysis::kPriorities; ++p) {
      EXPECT_TRUE(Same((a.*kArrays[i])[p], (b.*kArrays[i])[p]))
          << where << " array #" << i << " priority " << p;
    }
  }
  EXPECT_EQ(a.link_up, b.link_up) << where;
}

void ExpectSameEvidence(const analysis::SampleEvidence& a,
                        const analysis::SampleEvidence& b) {
  EXPECT_EQ(a.reports, b.reports);
  EXPECT_EQ(a.expected_reports, b.expected_reports);
  EXPECT_EQ(a.report_span_seconds, b.report_span_seconds);
  EXPECT_EQ(a.intervals, b.intervals);
  EXPECT_EQ(a.span_seconds, b.span_seconds);
  EXPECT_EQ(a.median_interval_seconds, b.median_interval_seconds);
  EXPECT_EQ(a.max_interval_seconds, b.max_interval_seconds);
}

// Every field set to a distinct value, but for `absent_every`-th ones left
// absent (NaN); 0 is a value, not absence.
PortSignals Filled(double base, size_t absent_every) {
  PortSignals s;
  double v = base;
  for (size_t i = 0; i < std::size(kScalars); ++i) {
    s.*kScalars[i] =
        absent_every != 0 && i % absent_every == 0 ? analysis::kAbsent : v;
    v += 1.25;
  }
  s.link_rate = 0;  // unknown, not absent: 0 is the field's "unknown"
  for (size_t i = 0; i < std::size(kArrays); ++i) {
    for (size_t p = 0; p < analysis::kPriorities; ++p) {
      (s.*kArrays[i])[p] = p == 3 ? analysis::kAbsent : (p == 5 ? 0 : v);
      v += 0.5;
    }
  }
  s.tx_pause_frames = analysis::AbsentPerPriority();  // wholly absent
  s.link_up = false;
  return s;
}

FeatureSlice TwoNodeSlice() {
  FeatureSlice slice;
  slice.window.window_seconds = 5;
  PortView& a = slice.window.AddPort("gpu-001", "mlx5_0");
  a.netdev = "eth0";
  a.s = Filled(1, 3);
  a.samples = {5, 5.2, 4, 4.1, 1.0, 1.6, 6};
  PortView& b = slice.window.AddPort("gpu-001", "mlx5_1");
  b.s = Filled(100, 0);
  PortView& sw = slice.window.AddPort("leaf-01", "swp3");
  sw.netdev = "swp3";
  sw.is_switch_port = true;
  sw.s.rx_bytes = 0;  // a measured 0 stays 0
  slice.window.Finish();
  slice.recent.emplace();
  slice.recent->window_seconds = 2;
  PortView& ra = slice.recent->AddPort("gpu-001", "mlx5_0");
  ra.s = Filled(7, 2);
  ra.samples = {2, 2.0, 2, 2.0, 1.0, 1.0, 2};
  slice.recent->Finish();
  NodeFacts gpu;
  gpu.liveness.node = "gpu-001";
  gpu.liveness.last_report =
      absl::FromUnixSeconds(1700000000) + absl::Nanoseconds(123);
  gpu.liveness.interval = absl::Milliseconds(1500);
  gpu.liveness.ever_reported = true;
  slice.nodes.push_back(gpu);
  NodeFacts quiet;  // reported once long ago, no ports now
  quiet.liveness.node = "gpu-009";
  quiet.liveness.last_report = absl::FromUnixSeconds(1600000000);
  quiet.liveness.ever_reported = true;
  // Its collector handed its agent to another one since.
  quiet.handed_off = absl::FromUnixSeconds(1600000001) + absl::Nanoseconds(7);
  slice.nodes.push_back(quiet);
  return slice;
}

FeatureSlice RoundTrip(const FeatureSlice& slice, size_t max_chunk_bytes,
                       size_t* chunk_count = nullptr) {
  std::vector<v1::FeatureChunk> chunks = SliceToChunks(
      slice, "col-a", absl::FromUnixSeconds(1700000001), max_chunk_bytes);
  if (chunk_count != nullptr) *chunk_count = chunks.size();
  FeatureSlice back;
  for (const v1::FeatureChunk& c : chunks) {
    // Through bytes, as on the wire.
    v1::FeatureChunk parsed;
    EXPECT_TRUE(parsed.ParseFromString(c.SerializeAsString()));
    EXPECT_EQ(parsed.collector_id(), "col-a");
    EXPECT_TRUE(AddChunkToSlice(parsed, &back));
  }
  FinishSlice(&back);
  return back;
}

TEST(FeatureWireTest, EveryFieldSurvivesAndAbsentStaysAbsent) {
  const FeatureSlice in = TwoNodeSlice();
  const FeatureSlice out = RoundTrip(in, kDefaultChunkBytes);
  EXPECT_EQ(out.window.window_seconds, 5);
  ASSERT_EQ(out.window.ports().size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    const PortView& a = in.window.ports()[i];
    const PortView& b = out.window.ports()[i];
    EXPECT_EQ(a.node, b.node);
    EXPECT_EQ(a.device, b.device);
    EXPECT_EQ(a.netdev, b.netdev);
    EXPECT_EQ(a.is_switch_port, b.is_switch_port);
    ExpectSameSignals(a.s, b.s, a.node + "/" + a.device);
    ExpectSameEvidence(a.samples, b.samples);
  }
  // The switch port's measured 0 is not mistaken for absence, nor its
  // absent signals for 0.
  const PortView* sw = out.window.Find("leaf-01", "swp3");
  ASSERT_NE(sw, nullptr);
  EXPECT_EQ(sw->s.rx_bytes, 0);
  EXPECT_TRUE(std::isnan(sw->s.tx_bytes));
  EXPECT_TRUE(sw->s.link_up);

  ASSERT_TRUE(out.recent.has_value());
  EXPECT_EQ(out.recent->window_seconds, 2);
  ASSERT_EQ(out.recent->ports().size(), 1u);
  ExpectSameSignals(in.recent->ports()[0].s, out.recent->ports()[0].s,
                    "recent");
  ExpectSameEvidence(in.recent->ports()[0].samples,
                     out.recent->ports()[0].samples);

  ASSERT_EQ(out.nodes.size(), 2u);
  EXPECT_EQ(out.nodes[0].liveness.node, "gpu-001");
  EXPECT_EQ(out.nodes[0].liveness.last_report,
            in.nodes[0].liveness.last_report);
  EXPECT_EQ(out.nodes[0].liveness.interval, absl::Milliseconds(1500));
  EXPECT_TRUE(out.nodes[0].liveness.ever_reported);
  EXPECT_EQ(out.nodes[0].handed_off, absl::InfinitePast());
  EXPECT_EQ(out.nodes[1].liveness.node, "gpu-009");
  EXPECT_EQ(out.nodes[1].liveness.interval, absl::ZeroDuration());
  EXPECT_EQ(out.nodes[1].handed_off, in.nodes[1].handed_off);
}

// A one-node chunk of TwoNodeSlice's gpu-001 (two ports, the first in the
// recent view too), as written now.
v1::FeatureChunk GpuChunk() {
  FeatureSlice in = TwoNodeSlice();
  std::vector<v1::FeatureChunk> chunks =
      SliceToChunks(in, "col-a", absl::FromUnixSeconds(1700000001));
  EXPECT_EQ(chunks.size(), 1u);
  v1::FeatureChunk c = chunks[0];
  c.mutable_nodes()->DeleteSubrange(1, c.nodes_size() - 1);  // gpu-001 only
  EXPECT_EQ(c.nodes(0).node(), "gpu-001");
  EXPECT_EQ(c.nodes(0).port_block().device_size(), 2);
  return c;
}

TEST(FeatureWireTest, TheRecentColumnsHoldOnlyThePortsInTheRecentView) {
  const v1::FeatureChunk chunk = GpuChunk();
  const v1::PortBlock& b = chunk.nodes(0).port_block();
  ASSERT_EQ(b.recent_present_size(), 2);
  EXPECT_NE(b.recent_present(0) >> 63, 0u);  // mlx5_0: in the view
  EXPECT_EQ(b.recent_present(1), 0u);        // mlx5_1: not
  EXPECT_EQ(b.recent_samples_size(), 7);
  EXPECT_EQ(b.window_samples_size(), 14);
}

// Every way a block's columns can disagree is refused, not read past.
TEST(FeatureWireTest, ADamagedBlockIsRefused) {
  using Damage = std::function<void(v1::PortBlock*)>;
  const std::vector<std::pair<std::string, Damage>> damages = {
      {"a netdev missing",
       [](v1::PortBlock* b) { b->mutable_netdev()->RemoveLast(); }},
      {"an is_switch_port missing",
       [](v1::PortBlock* b) { b->mutable_is_switch_port()->RemoveLast(); }},
      {"a window mask missing",
       [](v1::PortBlock* b) { b->mutable_window_present()->RemoveLast(); }},
      {"a window value missing",
       [](v1::PortBlock* b) { b->mutable_window_values()->RemoveLast(); }},
      {"a window value too many",
       [](v1::PortBlock* b) { b->add_window_values(1); }},
      {"a window sample missing",
       [](v1::PortBlock* b) { b->mutable_window_samples()->RemoveLast(); }},
      {"a mask claiming every value",
       [](v1::PortBlock* b) { b->set_window_present(0, ~uint64_t{0}); }},
      {"reports NaN",
       [](v1::PortBlock* b) { b->set_window_samples(0, analysis::kAbsent); }},
      {"reports negative",
       [](v1::PortBlock* b) { b->set_window_samples(0, -1); }},
      {"intervals beyond an int",
       [](v1::PortBlock* b) { b->set_window_samples(2, 1e300); }},
      {"expected reports not whole",
       [](v1::PortBlock* b) { b->set_window_samples(6, 2.5); }},
      {"a recent mask missing",
       [](v1::PortBlock* b) { b->mutable_recent_present()->RemoveLast(); }},
      {"a recent value missing",
       [](v1::PortBlock* b) { b->mutable_recent_values()->RemoveLast(); }},
      {"a recent sample missing",
       [](v1::PortBlock* b) { b->mutable_recent_samples()->RemoveLast(); }},
      {"a second port in the recent view without its samples",
       [](v1::PortBlock* b) { b->set_recent_present(1, uint64_t{1} << 63); }},
  };
  {
    FeatureSlice whole;
    whole.recent.emplace();
    EXPECT_TRUE(AddChunkToSlice(GpuChunk(), &whole));
  }
  for (const auto& [what, damage] : damages) {
    v1::FeatureChunk c = GpuChunk();
    damage(c.mutable_nodes(0)->mutable_port_block());
    v1::FeatureChunk parsed;  // through bytes, as on the wire
    ASSERT_TRUE(parsed.ParseFromString(c.SerializeAsString())) << what;
    FeatureSlice slice;
    slice.recent.emplace();
    EXPECT_FALSE(AddChunkToSlice(parsed, &slice)) << what;
  }
}

// A slot of a later build (bit 62: a value this build does not know) is
// skipped, and the values after it still land in their slots.
TEST(FeatureWireTest, AValueOfAnUnknownSlotIsSkipped) {
  v1::FeatureChunk c = GpuChunk();
  v1::PortBlock* b = c.mutable_nodes(0)->mutable_port_block();
  const FeatureSlice want = RoundTrip(TwoNodeSlice(), kDefaultChunkBytes);
  // The second port's values follow the first port's: the new value goes
  // after every value of the first port, which bit 62 then precedes.
  const int first_port_values = absl::popcount(
      b->window_present(0) & ~((uint64_t{1} << 61) | (uint64_t{1} << 63)));
  b->set_window_present(0, b->window_present(0) | (uint64_t{1} << 62));
  b->mutable_window_values()->Add(12345);  // room at the end
  for (int i = b->window_values_size() - 1; i > first_port_values; --i) {
    b->mutable_window_values()->SwapElements(i, i - 1);
  }
  FeatureSlice out;
  ASSERT_TRUE(AddChunkToSlice(c, &out));
  FinishSlice(&out);
  ASSERT_EQ(out.window.ports().size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    ExpectSameSignals(want.window.ports()[i].s, out.window.ports()[i].s,
                      out.window.ports()[i].device);
  }
}

// What a collector of an earlier build writes: a message per port.
TEST(FeatureWireTest, PortsAsMessagesOfAnEarlierBuildAreRead) {
  v1::FeatureChunk c;
  c.set_collector_id("col-old");
  c.set_chunks(1);
  c.set_window_seconds(5);
  c.set_recent_seconds(2);
  v1::NodeFeatures* n = c.add_nodes();
  n->set_node("gpu-001");
  n->set_has_liveness(true);
  n->set_last_report_unix_nanos(1700000000000000000);
  v1::PortFeatures* p = n->add_ports();
  p->set_device("mlx5_0");
  p->set_netdev("eth0");
  p->mutable_window()->set_rx_bytes(38e9);
  p->mutable_window()->set_link_rate(50e9);
  p->mutable_window()->set_link_down(true);
  for (int i = 0; i < 8; ++i) {
    p->mutable_window()->add_rx_pause_fraction(i == 3 ? 0.25 : 0);
  }
  p->mutable_window_samples()->set_reports(5);
  p->mutable_recent()->set_cnp_sent(7);
  p->mutable_recent_samples()->set_reports(2);
  v1::FeatureChunk parsed;
  ASSERT_TRUE(parsed.ParseFromString(c.SerializeAsString()));
  FeatureSlice out;
  ASSERT_TRUE(AddChunkToSlice(parsed, &out));
  FinishSlice(&out);
  ASSERT_EQ(out.window.ports().size(), 1u);
  const PortView& w = out.window.ports()[0];
  EXPECT_EQ(w.netdev, "eth0");
  EXPECT_EQ(w.s.rx_bytes, 38e9);
  EXPECT_TRUE(std::isnan(w.s.tx_bytes));
  EXPECT_EQ(w.s.link_rate, 50e9);
  EXPECT_FALSE(w.s.link_up);
  EXPECT_EQ(w.s.rx_pause_fraction[3], 0.25);
  EXPECT_TRUE(std::isnan(w.s.tx_pause_fraction[3]));
  EXPECT_EQ(w.samples.reports, 5);
  ASSERT_TRUE(out.recent.has_value());
  ASSERT_EQ(out.recent->ports().size(), 1u);
  EXPECT_EQ(out.recent->ports()[0].s.cnp_sent, 7);
  EXPECT_EQ(out.recent->ports()[0].samples.reports, 2);
  ASSERT_EQ(out.nodes.size(), 1u);
}

// v1::FeatureChunkFacts (proto/cluster_facts.proto) must keep
// FeatureChunk's field numbers: every field it has reads back what the full
// message wrote.
TEST(FeatureWireTest, TheFactsMessageReadsEveryFieldItHasOfTheFullOne) {
  v1::FeatureChunk full = GpuChunk();
  full.set_recent_seconds(2.5);
  full.set_chunk(3);
  full.set_chunks(4);
  full.mutable_nodes(0)->set_interval_nanos(1500000000);
  v1::NodeFeatures* old = full.add_nodes();  // ports as messages too
  old->set_node("gpu-002");
  old->set_has_liveness(true);
  old->set_handed_off_unix_nanos(1700000001000000007);
  old->add_ports()->set_device("mlx5_0");
  v1::FeatureChunkFacts facts;
  ASSERT_TRUE(facts.ParseFromString(full.SerializeAsString()));
  EXPECT_EQ(facts.collector_id(), "col-a");
  EXPECT_EQ(facts.published_unix_nanos(), full.published_unix_nanos());
  EXPECT_EQ(facts.chunk(), 3u);
  EXPECT_EQ(facts.chunks(), 4u);
  EXPECT_EQ(facts.window_seconds(), 5);
  EXPECT_EQ(facts.recent_seconds(), 2.5);
  ASSERT_EQ(facts.nodes_size(), 2);
  for (int i = 0; i < 2; ++i) {
    const v1::NodeFeatures& n = full.nodes(i);
    const v1::NodeFeaturesFacts& f = facts.nodes(i);
    EXPECT_EQ(f.node(), n.node());
    EXPECT_EQ(f.last_report_unix_nanos(), n.last_report_unix_nanos());
    EXPECT_EQ(f.interval_nanos(), n.interval_nanos());
    EXPECT_EQ(f.has_liveness(), n.has_liveness());
    EXPECT_EQ(f.handed_off_unix_nanos(), n.handed_off_unix_nanos());
  }
  EXPECT_EQ(facts.nodes(0).interval_nanos(), 1500000000);
  const std::vector<NodeFacts> a = NodesOfChunk(full);
  const std::vector<NodeFacts> b = NodesOfChunk(facts);
  ASSERT_EQ(a.size(), 2u);
  ASSERT_EQ(b.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(a[i].liveness.node, b[i].liveness.node);
    EXPECT_EQ(a[i].liveness.last_report, b[i].liveness.last_report);
    EXPECT_EQ(a[i].liveness.interval, b[i].liveness.interval);
    EXPECT_EQ(a[i].liveness.ever_reported, b[i].liveness.ever_reported);
    EXPECT_EQ(a[i].handed_off, b[i].handed_off);
  }
  EXPECT_EQ(b[0].handed_off, absl::InfinitePast());
  EXPECT_EQ(b[1].handed_off, absl::FromUnixNanos(1700000001000000007));
}

// Collectors before 2026-12 also sent each node's agent boot_id (field 4,
// now reserved): a chunk of theirs still reads, as the full message and as
// the facts alone, with every fact a node has now.
TEST(FeatureWireTest, AnEarlierCollectorsBootIdIsReadPast) {
  const absl::Time t = absl::FromUnixSeconds(1700000000);
  v1::NodeFeaturesFacts node;
  node.set_node("gpu-002");
  node.set_last_report_unix_nanos(absl::ToUnixNanos(t));
  node.set_interval_nanos(1500000000);
  node.set_has_liveness(true);
  const std::string boot_id = "0a6f1c2e-5c1e-4f00-9a3b-000000000002";
  std::string node_bytes = node.SerializeAsString();
  node_bytes += '\x22';  // field 4, length-delimited
  node_bytes += static_cast<char>(boot_id.size());
  node_bytes += boot_id;
  v1::FeatureChunkFacts header;
  header.set_collector_id("col-old");
  header.set_published_unix_nanos(absl::ToUnixNanos(t));
  header.set_chunks(1);
  std::string chunk_bytes = header.SerializeAsString();
  chunk_bytes += '\x3a';  // field 7 (`nodes`), length-delimited
  chunk_bytes += static_cast<char>(node_bytes.size());
  chunk_bytes += node_bytes;
  v1::FeatureChunk full;
  v1::FeatureChunkFacts facts;
  ASSERT_TRUE(full.ParseFromString(chunk_bytes));
  ASSERT_TRUE(facts.ParseFromString(chunk_bytes));
  for (const std::vector<NodeFacts>& nodes :
       {NodesOfChunk(full), NodesOfChunk(facts)}) {
    ASSERT_EQ(nodes.size(), 1u);
    EXPECT_EQ(nodes[0].liveness.node, "gpu-002");
    EXPECT_TRUE(nodes[0].liveness.ever_reported);
    EXPECT_EQ(nodes[0].liveness.last_report, t);
    EXPECT_EQ(nodes[0].liveness.interval, absl::Milliseconds(1500));
  }
}

TEST(FeatureWireTest, ChunksHoldWholeNodesAndReassemble) {
  FeatureSlice in;
  in.window.window_seconds = 5;
  for (int n = 0; n < 10; ++n) {
    for (int p = 0; p < 8; ++p) {
      in.window
          .AddPort("node-" + std::to_string(n), "mlx5_" + std::to_string(p))
          .s.rx_bytes = n * 8 + p;
    }
  }
  in.window.Finish();
  // A budget of 3 nodes' bytes: chunks of 3, 3, 3 and 1 node.
  std::vector<v1::FeatureChunk> one = SliceToChunks(in, "col-a", absl::Now());
  ASSERT_EQ(one.size(), 1u);
  const size_t budget = one[0].nodes(0).ByteSizeLong() * 3 + 18;
  std::vector<v1::FeatureChunk> chunks =
      SliceToChunks(in, "col-a", absl::Now(), budget);
  ASSERT_EQ(chunks.size(), 4u);
  for (size_t i = 0; i < chunks.size(); ++i) {
    EXPECT_EQ(chunks[i].chunk(), i);
    EXPECT_EQ(chunks[i].chunks(), 4u);
    EXPECT_LE(chunks[i].ByteSizeLong(), budget + 64);
  }
  EXPECT_EQ(chunks[3].nodes_size(), 1);
  EXPECT_EQ(chunks[3].nodes(0).port_block().device_size(), 8);
  const FeatureSlice out = RoundTrip(in, budget);
  ASSERT_EQ(out.window.ports().size(), 80u);
  EXPECT_EQ(out.window.Find("node-7", "mlx5_2")->s.rx_bytes, 58);
  EXPECT_FALSE(out.recent.has_value());
}

TEST(FeatureWireTest, AnEmptySliceIsOneEmptyChunk) {
  FeatureSlice in;
  in.window.Finish();
  size_t count = 0;
  const FeatureSlice out = RoundTrip(in, kDefaultChunkBytes, &count);
  EXPECT_EQ(count, 1u);
  EXPECT_TRUE(out.window.ports().empty());
  EXPECT_TRUE(out.nodes.empty());
}

// A slice's liveness alone: every node with facts, none of its ports, in
// chunks of whole nodes that read back as the full chunks' facts do.
TEST(FeatureWireTest, LivenessChunksCarryTheNodesFactsAlone) {
  FeatureSlice in;
  in.window.window_seconds = 5;
  const absl::Time t = absl::FromUnixSeconds(1700000000);
  for (int n = 9; n >= 0; --n) {  // listed out of order
    const std::string node = "node-" + std::to_string(n);
    in.window.AddPort(node, "mlx5_0").s.rx_bytes = n;
    if (n == 4) continue;  // ports without facts
    NodeFacts f;
    f.liveness.node = node;
    f.liveness.ever_reported = n != 7;
    if (f.liveness.ever_reported) {
      f.liveness.last_report = t + absl::Milliseconds(n);
    }
    f.liveness.interval = absl::Seconds(1);
    in.nodes.push_back(f);
  }
  in.window.Finish();
  const std::vector<v1::FeatureChunkFacts> whole =
      SliceToLivenessChunks(in, "col-a", t);
  ASSERT_EQ(whole.size(), 1u);
  EXPECT_EQ(whole[0].collector_id(), "col-a");
  EXPECT_EQ(whole[0].published_unix_nanos(), absl::ToUnixNanos(t));
  EXPECT_EQ(whole[0].chunks(), 1u);
  // What a full chunk of the same slice says of its nodes.
  std::vector<NodeFacts> expected;
  for (const v1::FeatureChunk& c : SliceToChunks(in, "col-a", t)) {
    for (NodeFacts& f : NodesOfChunk(c)) expected.push_back(std::move(f));
  }
  ASSERT_EQ(expected.size(), 9u);
  const size_t budget = whole[0].nodes(0).ByteSizeLong() * 4 + 24;
  const std::vector<v1::FeatureChunkFacts> chunks =
      SliceToLivenessChunks(in, "col-a", t, budget);
  ASSERT_EQ(chunks.size(), 3u);
  std::vector<NodeFacts> out;
  for (size_t i = 0; i < chunks.size(); ++i) {
    EXPECT_EQ(chunks[i].chunk(), i);
    EXPECT_EQ(chunks[i].chunks(), 3u);
    // Parsed as the full message, a liveness chunk has no port.
    v1::FeatureChunk full;
    ASSERT_TRUE(full.ParseFromString(chunks[i].SerializeAsString()));
    for (const v1::NodeFeatures& n : full.nodes()) {
      EXPECT_FALSE(n.has_port_block());
      EXPECT_EQ(n.ports_size(), 0);
    }
    for (NodeFacts& f : NodesOfChunk(chunks[i])) out.push_back(std::move(f));
  }
  ASSERT_EQ(out.size(), expected.size());
  for (size_t i = 0; i < out.size(); ++i) {
    SCOPED_TRACE(expected[i].liveness.node);
    EXPECT_EQ(out[i].liveness.node, expected[i].liveness.node);
    EXPECT_EQ(out[i].liveness.ever_reported,
              expected[i].liveness.ever_reported);
    EXPECT_EQ(out[i].liveness.last_report, expected[i].liveness.last_report);
    EXPECT_EQ(out[i].liveness.interval, expected[i].liveness.interval);
  }
  // A node is its name, last report and interval: under 30 bytes here.
  EXPECT_LT(whole[0].ByteSizeLong(), 9u * 30);
  FeatureSlice empty;
  empty.window.Finish();
  const std::vector<v1::FeatureChunkFacts> none =
      SliceToLivenessChunks(empty, "col-a", t);
  ASSERT_EQ(none.size(), 1u);
  EXPECT_EQ(none[0].nodes_size(), 0);
  EXPECT_EQ(none[0].chunks(), 1u);
}

using testing::NodeSlice;

std::vector<std::string> Nodes(const FeatureSlice& s) {
  std::vector<std::string> out;
  for (const NodeFacts& n : s.nodes) out.push_back(n.liveness.node);
  return out;
}

TEST(MergeFeatureSlicesTest, DisjointSlicesAreUnited) {
  const absl::Time t = absl::FromUnixSeconds(1700000000);
  FeatureSlice a = NodeSlice("gpu-001", t, 1);
  a.window.window_seconds = 5;
  FeatureSlice b = NodeSlice("gpu-002", t, 2);
  const FeatureSlice merged =
      collector::MergeFeatureSlices(std::vector<FeatureSlice*>{&a, &b});
  EXPECT_EQ(merged.window.window_seconds, 5);
  ASSERT_EQ(merged.window.ports().size(), 2u);
  EXPECT_EQ(merged.window.Find("gpu-002", "mlx5_0")->s.rx_bytes, 2);
  EXPECT_THAT(Nodes(merged), ElementsAre("gpu-001", "gpu-002"));
}

TEST(MergeFeatureSlicesTest, ANodeInTwoSlicesComesFromItsNewestReport) {
  // gpu-001's agent moved from collector A to B: A still lists it with its
  // last report there, B with the newer one; its ports come from B alone.
  const absl::Time t = absl::FromUnixSeconds(1700000000);
  for (const bool a_first : {true, false}) {
    FeatureSlice a = NodeSlice("gpu-001", t, 1);
    FeatureSlice b = NodeSlice("gpu-001", t + absl::Seconds(4), 2);
    const FeatureSlice merged = collector::MergeFeatureSlices(
        a_first ? std::vector<FeatureSlice*>{&a, &b}
                : std::vector<FeatureSlice*>{&b, &a});
    ASSERT_EQ(merged.window.ports().size(), 1u);
    EXPECT_EQ(merged.window.ports()[0].s.rx_bytes, 2);
    ASSERT_EQ(merged.nodes.size(), 1u);
    EXPECT_EQ(merged.nodes[0].liveness.last_report, t + absl::Seconds(4));
  }
}

// Ports of a node that no slice has liveness facts of come, in each view,
// from the first slice with ports of it there; a node with facts in one
// slice takes its ports from that slice alone, even where another slice
// has ports of it without facts.
TEST(MergeFeatureSlicesTest, PortsOfANodeWithoutFactsComeFromTheFirstSlice) {
  const absl::Time t = absl::FromUnixSeconds(1700000000);
  std::vector<FeatureSlice> slices(3);
  for (FeatureSlice& s : slices) s.recent.emplace();
  auto add = [&](int slice, const std::string& node, bool recent,
                 double rx_bytes) {
    slices[slice].window.AddPort(node, "mlx5_0").s.rx_bytes = rx_bytes;
    if (recent) {
      slices[slice].recent->AddPort(node, "mlx5_0").s.rx_bytes = rx_bytes;
    }
  };
  add(0, "gpu-009", /*recent=*/false, 10);  // no facts anywhere
  add(2, "gpu-009", /*recent=*/true, 12);
  add(1, "gpu-009", /*recent=*/true, 11);
  add(0, "gpu-004", /*recent=*/true, 40);  // facts in slice 1 only
  add(1, "gpu-004", /*recent=*/true, 41);
  NodeFacts facts;
  facts.liveness.node = "gpu-004";
  facts.liveness.last_report = t;
  facts.liveness.ever_reported = true;
  slices[1].nodes.push_back(facts);
  for (FeatureSlice& s : slices) {
    s.window.Finish();
    s.recent->Finish();
  }
  const FeatureSlice merged = collector::MergeFeatureSlices(
      std::vector<FeatureSlice*>{&slices[0], &slices[1], &slices[2]});
  ASSERT_EQ(merged.window.ports().size(), 2u);
  EXPECT_EQ(merged.window.Find("gpu-009", "mlx5_0")->s.rx_bytes, 10);
  EXPECT_EQ(merged.window.Find("gpu-004", "mlx5_0")->s.rx_bytes, 41);
  ASSERT_TRUE(merged.recent.has_value());
  ASSERT_EQ(merged.recent->ports().size(), 2u);
  EXPECT_EQ(merged.recent->Find("gpu-009", "mlx5_0")->s.rx_bytes, 11);
  EXPECT_EQ(merged.recent->Find("gpu-004", "mlx5_0")->s.rx_bytes, 41);
  EXPECT_THAT(Nodes(merged), ElementsAre("gpu-004"));
}

// Slices whose nodes interleave: the merged view is sorted and indexed as
// one Finish() of all the ports would have it.
TEST(MergeFeatureSlicesTest, InterleavedSlicesMergeInOrder) {
  const absl::Time t = absl::FromUnixSeconds(1700000000);
  std::vector<FeatureSlice> slices(3);
  analysis::FabricView all;
  for (int n = 0; n < 30; ++n) {
    const std::string node = absl::StrFormat("gpu-%03d", n);
    FeatureSlice& s = slices[(n * 7) % 3];
    NodeFacts facts;
    facts.liveness.node = node;
    facts.liveness.last_report = t;
    facts.liveness.ever_reported = true;
    s.nodes.push_back(facts);
    for (int p = 3; p >= 0; --p) {
      const std::string device = absl::StrCat("mlx5_", p);
      s.window.AddPort(node, device).s.rx_bytes = n * 10 + p;
      all.AddPort(node, device).s.rx_bytes = n * 10 + p;
    }
  }
  for (FeatureSlice& s : slices) s.window.Finish();
  all.Finish();
  const FeatureSlice merged = collector::MergeFeatureSlices(
      std::vector<FeatureSlice*>{&slices[0], &slices[1], &slices[2]});
  ASSERT_EQ(merged.window.ports().size(), all.ports().size());
  for (size_t i = 0; i < all.ports().size(); ++i) {
    EXPECT_EQ(merged.window.ports()[i].node, all.ports()[i].node) << i;
    EXPECT_EQ(merged.window.ports()[i].device, all.ports()[i].device) << i;
    EXPECT_EQ(merged.window.ports()[i].s.rx_bytes, all.ports()[i].s.rx_bytes);
  }
  EXPECT_EQ(merged.window.Find("gpu-017", "mlx5_2")->s.rx_bytes, 172);
  EXPECT_EQ(merged.window.PortsOf("gpu-029").size(), 4u);
  EXPECT_EQ(merged.nodes.size(), 30u);
  // The slices gave their ports away.
  for (const FeatureSlice& s : slices) EXPECT_TRUE(s.window.ports().empty());
}

// A merge of nodes alone (no port, as a follower merges): the facts come
// out sorted by name whatever order each slice holds them in, each node's
// from the slice with its newest report, whole (what else it holds with
// it: here a tracer in `collector`).
TEST(MergeFeatureSlicesTest, NodesAloneMergeSortedFromTheirNewestReport) {
  const absl::Time t = absl::FromUnixSeconds(1700000000);
  auto facts = [&](int n, int seconds) {
    NodeFacts f;
    f.liveness.node = absl::StrFormat("gpu-%03d", n);
    f.liveness.last_report = t + absl::Seconds(seconds);
    f.liveness.ever_reported = true;
    f.collector =
        absl::StrFormat("facts-of-gpu-%03d-at-%d-seconds-past", n, seconds);
    return f;
  };
  std::vector<FeatureSlice> slices(3);
  // Slices 0 and 1 sorted and interleaved; slice 2 in reverse order.
  for (int n = 0; n < 40; ++n) slices[n % 2].nodes.push_back(facts(n, 1));
  for (int n = 39; n >= 30; --n) slices[2].nodes.push_back(facts(n, 5));
  // gpu-003 moved from slice 1 to slice 0 (newer there); gpu-030 to
  // gpu-039 are in slice 0 or 1 at 1 s too.
  slices[1].nodes[1].liveness.last_report = t;
  slices[0].nodes.insert(slices[0].nodes.begin() + 2, facts(3, 2));
  for (const std::vector<int>& order :
       std::vector<std::vector<int>>{{0, 1, 2}, {2, 1, 0}}) {
    std::vector<FeatureSlice> copy = slices;
    std::vector<FeatureSlice*> in;
    in.reserve(order.size());
    for (int i : order) in.push_back(&copy[i]);
    const FeatureSlice merged = collector::MergeFeatureSlices(in);
    std::vector<std::string> expected;
    expected.reserve(40);
    for (int n = 0; n < 40; ++n) {
      expected.push_back(absl::StrFormat("gpu-%03d", n));
    }
    EXPECT_THAT(Nodes(merged), ElementsAreArray(expected));
    for (const NodeFacts& n : merged.nodes) {
      SCOPED_TRACE(n.liveness.node);
      const int number = std::stoi(n.liveness.node.substr(4));
      const int seconds = number >= 30 ? 5 : number == 3 ? 2 : 1;
      EXPECT_EQ(n.liveness.last_report, t + absl::Seconds(seconds));
      EXPECT_EQ(n.collector, facts(number, seconds).collector);
    }
    for (const FeatureSlice& s : copy) EXPECT_TRUE(s.nodes.empty());
  }
}

// A slice that gives a node twice (a broken or hostile peer): the node is
// listed once, with its newest facts, whichever slice and place they are
// in.
TEST(MergeFeatureSlicesTest, ANodeTwiceInOneSliceIsListedOnce) {
  const absl::Time t = absl::FromUnixSeconds(1700000000);
  auto facts = [&](const std::string& node, int seconds) {
    NodeFacts f;
    f.liveness.node = node;
    f.liveness.last_report = t + absl::Seconds(seconds);
    f.liveness.ever_reported = true;
    f.collector = absl::StrCat(node, "-at-", seconds);  // a tracer
    return f;
  };
  // gpu-1 twice in slice 0, its second facts the newest; gpu-2 twice in
  // slice 1, its first the newest; gpu-3 twice in slice 1 and once,
  // newest, in slice 0.
  std::vector<FeatureSlice> slices(2);
  slices[0].nodes = {facts("gpu-1", 1), facts("gpu-1", 4), facts("gpu-3", 9)};
  slices[1].nodes = {facts("gpu-2", 6), facts("gpu-2", 2), facts("gpu-3", 3),
                     facts("gpu-3", 5)};
  for (const std::vector<int>& order :
       std::vector<std::vector<int>>{{0, 1}, {1, 0}}) {
    std::vector<FeatureSlice> copy = slices;
    std::vector<FeatureSlice*> in;
    in.reserve(order.size());
    for (int i : order) in.push_back(&copy[i]);
    const FeatureSlice merged = collector::MergeFeatureSlices(in);
    EXPECT_THAT(Nodes(merged), ElementsAre("gpu-1", "gpu-2", "gpu-3"));
    std::vector<std::string> taken;
    taken.reserve(merged.nodes.size());
    for (const NodeFacts& n : merged.nodes) taken.push_back(n.collector);
    EXPECT_THAT(taken, ElementsAre("gpu-1-at-4", "gpu-2-at-6", "gpu-3-at-9"));
  }
}

// Facts of a node equally new in several places: the first slice's, and
// within a slice the first given, as the slices are passed (a merge of
// nodes alone finds them by merging sorted runs, not through a map: the
// same choice).
TEST(MergeFeatureSlicesTest, AnEquallyNewNodeComesFromTheFirstSliceGivingIt) {
  const absl::Time t = absl::FromUnixSeconds(1700000000);
  auto facts = [&](const std::string& node, const std::string& tracer) {
    NodeFacts f;
    f.liveness.node = node;
    f.liveness.last_report = t;
    f.liveness.ever_reported = true;
    f.collector = tracer;
    return f;
  };
  // Slice 1 out of order (sorted before the merge): its two gpu-2 facts
  // keep their order.
  std::vector<FeatureSlice> slices(2);
  slices[0].nodes = {facts("gpu-1", "a1"), facts("gpu-3", "a3")};
  slices[1].nodes = {facts("gpu-3", "b3"), facts("gpu-2", "b2-first"),
                     facts("gpu-1", "b1"), facts("gpu-2", "b2-second")};
  // The tracers the merge keeps, the slices passed in `order`.
  auto kept = [&slices](const std::vector<int>& order) {
    std::vector<FeatureSlice> copy = slices;
    std::vector<FeatureSlice*> in;
    in.reserve(order.size());
    for (int i : order) in.push_back(&copy[i]);
    const FeatureSlice merged = collector::MergeFeatureSlices(in);
    std::vector<std::string> out;
    out.reserve(merged.nodes.size());
    for (const NodeFacts& n : merged.nodes) {
      out.push_back(n.collector);
    }
    return out;
  };
  EXPECT_THAT(kept({0, 1}), ElementsAre("a1", "b2-first", "a3"));
  EXPECT_THAT(kept({1, 0}), ElementsAre("b1", "b2-first", "b3"));
}

}  // namespace
}  // namespace fabricdiag::cluster
