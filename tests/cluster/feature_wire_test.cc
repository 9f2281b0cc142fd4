// A collector's features through the wire form and back, and the merge of
// several collectors' slices.
#include "cluster/feature_wire.h"

#include <cmath>
#include <string>
#include <vector>

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
  gpu.boot_id = "b0f1";
  slice.nodes.push_back(gpu);
  NodeFacts quiet;  // reported once long ago, no ports now
  quiet.liveness.node = "gpu-009";
  quiet.liveness.last_report = absl::FromUnixSeconds(1600000000);
  quiet.liveness.ever_reported = true;
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
    AddChunkToSlice(parsed, &back);
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
  EXPECT_EQ(out.nodes[0].boot_id, "b0f1");
  EXPECT_EQ(out.nodes[1].liveness.node, "gpu-009");
  EXPECT_EQ(out.nodes[1].liveness.interval, absl::ZeroDuration());
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
  EXPECT_EQ(chunks[3].nodes(0).ports_size(), 8);
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

}  // namespace
}  // namespace fabricdiag::cluster
