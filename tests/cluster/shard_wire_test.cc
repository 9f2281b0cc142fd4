#include "cluster/shard_wire.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <iostream>
#include <limits>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "analysis/analysis_config.h"
#include "analysis/ecmp_imbalance.h"
#include "analysis/hot_expert_incast.h"
#include "analysis/pfc_storm.h"
#include "analysis/shard_map.h"
#include "analysis/signal_slots.h"
#include "analysis/straggler_nic.h"
#include "counters/meanings.h"
#include "tests/testing/corrupted_bytes.h"
#include "tests/testing/scenario_builder.h"

namespace fabricdiag::cluster {
namespace {

using analysis::FabricView;
using analysis::Finding;
using analysis::PortView;
using analysis::ShardKind;
using analysis::scenario::Cluster;
using analysis::scenario::Fault;
using analysis::scenario::FaultKind;
using analysis::scenario::TrafficOptions;
using ::testing::SizeIs;

const absl::Time kNow = absl::FromUnixSeconds(1'800'000'000);

Cluster MustBuild(int nodes) {
  absl::StatusOr<Cluster> c =
      Cluster::Build(analysis::scenario::TwoJobCluster(nodes));
  EXPECT_TRUE(c.ok()) << c.status();
  return *std::move(c);
}

// A collector's slice of `cluster` with `faults`: the window view, and the
// newest samples as the recent view, both with sample evidence (two nodes'
// counters read stale now and then).
collector::FeatureSlice SliceOf(const Cluster& cluster,
                                const std::vector<Fault>& faults) {
  TrafficOptions traffic;
  traffic.stale_nodes = {"gpu-003", "gpu-010"};
  collector::FeatureSlice slice;
  slice.window = cluster.View(faults, traffic, 1);
  TrafficOptions newest = traffic;
  newest.newest_only = true;
  slice.recent = cluster.View(faults, newest, 1);
  slice.recent->window_seconds = 1;
  return slice;
}

// The indexes of `view`'s ports that a shard of `kind` holds: a job
// shard's host NICs, a switch shard's every port.
std::vector<uint32_t> PortsFor(const FabricView& view, ShardKind kind) {
  std::vector<uint32_t> out;
  for (uint32_t i = 0; i < view.ports().size(); ++i) {
    if (kind == ShardKind::kSwitches || !view.ports()[i].is_switch_port) {
      out.push_back(i);
    }
  }
  return out;
}

struct Decoded {
  FabricView window;
  FabricView recent;
};

Decoded Decode(const std::vector<v1::ShardChunk>& chunks) {
  Decoded d;
  for (const v1::ShardChunk& c : chunks) {
    EXPECT_TRUE(AddShardChunk(c, &d.window, &d.recent)) << c.chunk();
  }
  d.window.Finish();
  d.recent.Finish();
  return d;
}

std::vector<v1::ShardChunk> Encode(const collector::FeatureSlice& slice,
                                   const std::vector<uint32_t>& ports,
                                   ShardKind kind,
                                   size_t max_bytes = kDefaultChunkBytes) {
  return ShardToChunks(slice, ports, kind,
                       {"jobs.7", "col-a", kNow, max_bytes});
}

bool Kept(ShardKind kind, int slot) {
  const absl::Span<const int> slots = analysis::ShardSlots(kind);
  return std::find(slots.begin(), slots.end(), slot) != slots.end();
}

bool IsRate(int slot) {
  return slot == static_cast<int>(counters::Signal::kLinkRate) ||
         slot == static_cast<int>(counters::Signal::kExpectedRate);
}

// `got` is `want` as the wire carries it for `kind`.
void ExpectCarried(const PortView& want, const PortView& got, ShardKind kind) {
  SCOPED_TRACE(want.node + " " + want.device);
  EXPECT_EQ(got.netdev, want.netdev);
  EXPECT_EQ(got.is_switch_port, want.is_switch_port);
  EXPECT_EQ(got.s.link_up, want.s.link_up);
  for (int slot = 0; slot < counters::kSignalSlots; ++slot) {
    SCOPED_TRACE(slot);
    const double w = analysis::SlotOf(want.s, slot);
    const double g = analysis::SlotOf(got.s, slot);
    if (!Kept(kind, slot) || (IsRate(slot) && w == 0)) {
      EXPECT_TRUE(IsRate(slot) ? g == 0 : std::isnan(g)) << g;
    } else if (std::isnan(w)) {
      EXPECT_TRUE(std::isnan(g)) << g;
    } else if (IsRate(slot)) {
      EXPECT_EQ(g, std::round(w));
    } else {
      EXPECT_EQ(g, static_cast<double>(static_cast<float>(w)));
    }
  }
  EXPECT_EQ(got.samples.reports, want.samples.reports);
  EXPECT_EQ(got.samples.intervals, want.samples.intervals);
  EXPECT_EQ(got.samples.expected_reports, want.samples.expected_reports);
  EXPECT_FLOAT_EQ(got.samples.span_seconds, want.samples.span_seconds);
  EXPECT_FLOAT_EQ(got.samples.report_span_seconds,
                  want.samples.report_span_seconds);
  EXPECT_FLOAT_EQ(got.samples.median_interval_seconds,
                  want.samples.median_interval_seconds);
  EXPECT_FLOAT_EQ(got.samples.max_interval_seconds,
                  want.samples.max_interval_seconds);
}

TEST(ShardWireTest, EveryPortComesBackWithWhatItsShardReads) {
  const Cluster cluster = MustBuild(16);
  const collector::FeatureSlice slice =
      SliceOf(cluster, {{FaultKind::kLinkFlap, "gpu-012", "mlx5_1"},
                        {FaultKind::kPfcStorm, "gpu-009", "mlx5_5"}});
  for (ShardKind kind : {ShardKind::kJobs, ShardKind::kSwitches}) {
    const std::vector<uint32_t> ports = PortsFor(slice.window, kind);
    const std::vector<v1::ShardChunk> chunks = Encode(slice, ports, kind);
    ASSERT_THAT(chunks, SizeIs(1));
    EXPECT_EQ(chunks[0].shard(), "jobs.7");
    EXPECT_EQ(chunks[0].collector_id(), "col-a");
    EXPECT_EQ(chunks[0].published_unix_nanos(), absl::ToUnixNanos(kNow));
    const Decoded d = Decode(chunks);
    ASSERT_THAT(d.window.ports(), SizeIs(ports.size()));
    EXPECT_EQ(d.window.window_seconds, slice.window.window_seconds);
    EXPECT_EQ(d.recent.window_seconds, 1);
    size_t recent = 0;
    for (uint32_t i : ports) {
      const PortView& want = slice.window.ports()[i];
      const PortView* got = d.window.Find(want.node, want.device);
      ASSERT_NE(got, nullptr) << want.node << " " << want.device;
      ExpectCarried(want, *got, kind);
      const PortView* want_recent = slice.recent->Find(want.node, want.device);
      const PortView* got_recent = d.recent.Find(want.node, want.device);
      ASSERT_EQ(got_recent != nullptr, want_recent != nullptr);
      if (want_recent != nullptr) {
        ExpectCarried(*want_recent, *got_recent, kind);
        ++recent;
      }
    }
    EXPECT_EQ(d.recent.ports().size(), recent);
    EXPECT_GT(recent, 0u);
  }
}

// What the analyzers of each kind make of the decoded views: the same
// findings as of the whole ports (a float's 7 digits move the evidence in
// the 7th digit at most).
void ExpectSameFindings(const std::vector<Finding>& got,
                        const std::vector<Finding>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    const Finding& g = got[i];
    const Finding& w = want[i];
    SCOPED_TRACE(w.kind + " " + w.node + " " + w.device);
    EXPECT_EQ(
        std::tie(g.kind, g.severity, g.job, g.node, g.device, g.group, g.nodes),
        std::tie(w.kind, w.severity, w.job, w.node, w.device, w.group,
                 w.nodes));
    ASSERT_EQ(g.evidence.size(), w.evidence.size());
    for (const auto& [key, value] : w.evidence) {
      ASSERT_EQ(g.evidence.count(key), 1u) << key;
      EXPECT_NEAR(g.evidence.at(key), value, 1e-5 * std::abs(value)) << key;
    }
  }
}

TEST(ShardWireTest, TheAnalyzersFindOnTheWireWhatTheyFindOnTheWholeView) {
  const Cluster cluster = MustBuild(16);
  const analysis::AnalysisConfig config;
  const analysis::StragglerBaselines baselines = cluster.Watched({}, 7, config);
  const std::vector<Fault> faults = {
      {FaultKind::kHotExpert, "gpu-001", "mlx5_2"},
      {FaultKind::kPfcStorm, "gpu-009", "mlx5_5"},
      {FaultKind::kEcmpImbalance, "leaf-1", ""},
      {FaultKind::kStragglerNic, "gpu-006", "mlx5_0"}};
  collector::FeatureSlice slice;
  slice.window = cluster.View(faults, {}, 2);
  const auto jobs = [&](const FabricView& v) {
    const analysis::AnalysisInput in = cluster.Input(&v, &config, &baselines);
    std::vector<Finding> out = analysis::HotExpertIncastFindings(in);
    for (Finding& f : analysis::StragglerNicFindings(in)) {
      out.push_back(std::move(f));
    }
    return out;
  };
  const auto switches = [&](const FabricView& v) {
    const analysis::AnalysisInput in = cluster.Input(&v, &config, &baselines);
    std::vector<Finding> out = analysis::EcmpImbalanceFindings(in);
    for (Finding& f : analysis::PfcStormFindings(in)) {
      out.push_back(std::move(f));
    }
    return out;
  };
  const Decoded job_wire = Decode(Encode(
      slice, PortsFor(slice.window, ShardKind::kJobs), ShardKind::kJobs));
  const std::vector<Finding> want_jobs = jobs(slice.window);
  EXPECT_THAT(want_jobs, SizeIs(2));
  ExpectSameFindings(jobs(job_wire.window), want_jobs);
  const Decoded switch_wire =
      Decode(Encode(slice, PortsFor(slice.window, ShardKind::kSwitches),
                    ShardKind::kSwitches));
  const std::vector<Finding> want_switches = switches(slice.window);
  EXPECT_GE(want_switches.size(), 2u);
  ExpectSameFindings(switches(switch_wire.window), want_switches);
}

TEST(ShardWireTest, AJobShardsNicIsAbout100BytesWithBothViews) {
  const Cluster cluster = MustBuild(64);
  const collector::FeatureSlice slice = SliceOf(cluster, {});
  const std::vector<uint32_t> ports = PortsFor(slice.window, ShardKind::kJobs);
  ASSERT_THAT(ports, SizeIs(64 * 8));
  const std::vector<v1::ShardChunk> chunks =
      Encode(slice, ports, ShardKind::kJobs);
  ASSERT_THAT(chunks, SizeIs(1));
  const double per_nic =
      static_cast<double>(chunks[0].ByteSizeLong()) / ports.size();
  std::cout << "job shard: " << per_nic << " bytes per NIC, both views\n";
  EXPECT_LT(per_nic, 120);
  EXPECT_GT(per_nic, 60);  // every kept signal is there
}

TEST(ShardWireTest, ChunksHoldWholeNodesAndReassemble) {
  const Cluster cluster = MustBuild(64);
  const collector::FeatureSlice slice = SliceOf(cluster, {});
  const std::vector<uint32_t> ports =
      PortsFor(slice.window, ShardKind::kSwitches);
  const std::vector<v1::ShardChunk> one =
      Encode(slice, ports, ShardKind::kSwitches);
  ASSERT_THAT(one, SizeIs(1));
  constexpr size_t kBudget = 8 << 10;
  const std::vector<v1::ShardChunk> cut =
      Encode(slice, ports, ShardKind::kSwitches, kBudget);
  ASSERT_GT(cut.size(), 4u);
  std::vector<std::string> nodes;
  for (size_t i = 0; i < cut.size(); ++i) {
    EXPECT_EQ(cut[i].chunk(), i);
    EXPECT_EQ(cut[i].chunks(), cut.size());
    // The node that reached the budget ends the chunk: a leaf of 36 ports
    // is the largest here, ~6 KB.
    EXPECT_LT(cut[i].ByteSizeLong(), kBudget + (6 << 10)) << i;
    for (const std::string& n : cut[i].ports().node()) nodes.push_back(n);
  }
  // No node in two chunks.
  EXPECT_TRUE(std::is_sorted(nodes.begin(), nodes.end()));
  EXPECT_EQ(std::adjacent_find(nodes.begin(), nodes.end()), nodes.end());

  const Decoded whole = Decode(one);
  const Decoded parts = Decode(cut);
  ASSERT_EQ(parts.window.ports().size(), whole.window.ports().size());
  ASSERT_EQ(parts.recent.ports().size(), whole.recent.ports().size());
  for (size_t i = 0; i < whole.window.ports().size(); ++i) {
    const PortView& w = whole.window.ports()[i];
    const PortView& p = parts.window.ports()[i];
    EXPECT_EQ(std::tie(p.node, p.device, p.netdev),
              std::tie(w.node, w.device, w.netdev));
    EXPECT_EQ(p.s.tx_bytes, w.s.tx_bytes);
  }
}

// A chunk parsed on its own arena is the chunk sent, byte for byte, and
// lives on its pointer alone (the message bytes gone); what is not a
// ShardChunk is null.
TEST(ShardWireTest, AParsedChunkIsTheOneSentAndOutlivesItsBytes) {
  const Cluster cluster = MustBuild(64);
  const collector::FeatureSlice slice = SliceOf(cluster, {});
  const std::vector<uint32_t> ports =
      PortsFor(slice.window, ShardKind::kSwitches);
  const std::vector<v1::ShardChunk> sent =
      Encode(slice, ports, ShardKind::kSwitches, 8 << 10);
  ASSERT_GT(sent.size(), 4u);
  std::vector<std::shared_ptr<const v1::ShardChunk>> got;
  for (const v1::ShardChunk& c : sent) {
    auto bytes = std::make_unique<std::string>(c.SerializeAsString());
    got.push_back(ParseShardChunk(*bytes));
    ASSERT_NE(got.back(), nullptr);
    ASSERT_NE(got.back()->GetArena(), nullptr) << "on its own arena";
    bytes.reset();
  }
  for (size_t i = 0; i < sent.size(); ++i) {
    EXPECT_EQ(got[i]->SerializeAsString(), sent[i].SerializeAsString()) << i;
  }
  std::vector<const v1::ShardChunk*> chunks;
  chunks.reserve(got.size());
  for (const auto& c : got) chunks.push_back(c.get());
  FabricView w, r;
  std::vector<size_t> damaged;
  AssembleShardViews(chunks, nullptr, {}, &w, &r, &damaged);
  EXPECT_THAT(damaged, ::testing::IsEmpty());
  EXPECT_EQ(w.ports().size(), Decode(sent).window.ports().size());

  EXPECT_EQ(ParseShardChunk("\xff\xff\xff"), nullptr);
  const std::string cut = sent[0].SerializeAsString().substr(0, 100);
  EXPECT_EQ(ParseShardChunk(cut), nullptr);
  // Empty bytes are an empty message, as protobuf reads them.
  ASSERT_NE(ParseShardChunk(""), nullptr);
  EXPECT_EQ(ParseShardChunk("")->chunks(), 0u);
}

// Every chunk of each shard written in one sweep is, byte for byte, the
// chunk of that shard written alone: however the sweep interleaves the
// shards (a job's NIC is also in its switch's shard), cuts chunks and
// reuses the last sweep's messages.
TEST(ShardWireTest, OneSweepWritesEachShardAsAlone) {
  const Cluster cluster = MustBuild(32);
  const analysis::TopologyIndex topology(&cluster.topology());
  std::vector<const analysis::LayoutModel*> layouts;
  for (const analysis::LayoutModel& m : cluster.jobs()) layouts.push_back(&m);
  ShardChunkWriter writer;
  const auto expect_alone = [&](const collector::FeatureSlice& slice,
                                std::vector<analysis::ShardPorts> shards,
                                size_t max_bytes, size_t* cut) {
    // Ports past the view are left out, as alone.
    shards.push_back(
        {"switches.past",
         ShardKind::kSwitches,
         {0, 1, static_cast<uint32_t>(slice.window.ports().size()), 1u << 30}});
    std::vector<const analysis::ShardPorts*> of;
    of.reserve(shards.size());
    for (const analysis::ShardPorts& s : shards) of.push_back(&s);
    const std::vector<absl::Span<const absl::string_view>> swept =
        writer.WriteShards(slice, of, {"col-a", kNow, max_bytes});
    ASSERT_THAT(swept, SizeIs(shards.size()));
    for (size_t k = 0; k < shards.size(); ++k) {
      SCOPED_TRACE(shards[k].shard);
      const std::vector<v1::ShardChunk> alone =
          ShardToChunks(slice, shards[k].ports, shards[k].kind,
                        {shards[k].shard, "col-a", kNow, max_bytes});
      ASSERT_EQ(swept[k].size(), alone.size());
      if (alone.size() > 1) ++*cut;
      for (size_t c = 0; c < alone.size(); ++c) {
        // Not EXPECT_EQ: a failure would print kilobytes of bytes.
        EXPECT_TRUE(swept[k][c] == alone[c].SerializeAsString()) << c;
      }
    }
  };
  const collector::FeatureSlice busy =
      SliceOf(cluster, {{FaultKind::kHotExpert, "gpu-004", "mlx5_2"}});
  const std::vector<analysis::ShardPorts> shards =
      analysis::AssignShards(busy.window, layouts, topology, {4, 4});
  ASSERT_GT(shards.size(), 4u);
  size_t cut = 0;
  expect_alone(busy, shards, 4 << 10, &cut);
  EXPECT_GT(cut, 2u);  // shards cut into chunks mid-sweep
  // Fewer shards, whole chunks, a slice without its recent view: the
  // messages of the sweep before are written over.
  collector::FeatureSlice quiet = SliceOf(cluster, {});
  quiet.recent.reset();
  expect_alone(quiet, {shards.begin() + 1, shards.begin() + 3},
               kDefaultChunkBytes, &cut);
  expect_alone(busy, shards, 2 << 10, &cut);
}

// A write over the last one writes into its buffers (a collector writes
// its shards' chunks every pass).
TEST(ShardWireTest, AWriteOverTheLastReusesItsBuffers) {
  const Cluster cluster = MustBuild(8);
  const collector::FeatureSlice slice = SliceOf(cluster, {});
  std::vector<uint32_t> all(slice.window.ports().size());
  for (uint32_t i = 0; i < all.size(); ++i) all[i] = i;
  ShardChunkWriter writer;
  const ShardChunkHeader header{"switches.1", "col-a", kNow,
                                kDefaultChunkBytes};
  const absl::Span<const absl::string_view> first =
      writer.Write(slice, all, ShardKind::kSwitches, header);
  ASSERT_THAT(first, SizeIs(1));
  const char* at = first[0].data();
  const std::string bytes(first[0]);
  const absl::Span<const absl::string_view> again =
      writer.Write(slice, all, ShardKind::kSwitches, header);
  ASSERT_THAT(again, SizeIs(1));
  EXPECT_EQ(again[0].data(), at);
  EXPECT_EQ(again[0], bytes);
}

// What the writer writes is what protobuf makes of the message it
// parses to, byte for byte: every field in its number's order, packed
// columns, no field at its default (a time before 1970, a chunk count
// past one byte, views of no seconds, ports in the recent view or not).
TEST(ShardWireTest, TheWriterWritesWhatProtobufWould) {
  const Cluster cluster = MustBuild(128);
  collector::FeatureSlice slice =
      SliceOf(cluster, {{FaultKind::kHotExpert, "gpu-004", "mlx5_2"}});
  std::vector<uint32_t> all(slice.window.ports().size());
  for (uint32_t i = 0; i < all.size(); ++i) all[i] = i;
  ShardChunkWriter writer;
  const auto same = [&](const collector::FeatureSlice& s,
                        const ShardChunkHeader& header, ShardKind kind,
                        size_t* written) {
    size_t& chunks = *written;
    chunks = 0;
    for (absl::string_view data : writer.Write(s, all, kind, header)) {
      v1::ShardChunk parsed;
      ASSERT_TRUE(
          parsed.ParseFromArray(data.data(), static_cast<int>(data.size())));
      EXPECT_TRUE(parsed.SerializeAsString() == data) << "chunk " << chunks;
      EXPECT_EQ(parsed.chunk(), chunks);
      ++chunks;
    }
    EXPECT_GT(chunks, 0u);
  };
  size_t chunks = 0;
  same(slice, {"jobs.3", "col-a", kNow, kDefaultChunkBytes}, ShardKind::kJobs,
       &chunks);
  EXPECT_EQ(chunks, 1u);
  // Chunks of one node each: from the 129th on, chunk numbers take two
  // bytes.
  same(slice, {"switches.0", "col-b", absl::FromUnixSeconds(-5), 1},
       ShardKind::kSwitches, &chunks);
  EXPECT_GT(chunks, 128u);
  same(slice, {"", "", absl::UnixEpoch(), 300}, ShardKind::kJobs, &chunks);
  slice.window.window_seconds = 0;
  slice.recent->window_seconds = -0.0;
  same(slice, {"jobs.3", "col-a", kNow, kDefaultChunkBytes}, ShardKind::kJobs,
       &chunks);
  slice.recent.reset();
  same(slice, {"jobs.3", "col-a", kNow, 2 << 10}, ShardKind::kSwitches,
       &chunks);
  EXPECT_GT(chunks, 1u);
}

TEST(ShardWireTest, OddPortsAndValuesComeBackAsTheyWere) {
  collector::FeatureSlice slice;
  slice.window.window_seconds = 3;
  PortView& down = slice.window.AddPort("gpu-1", "mlx5_0");
  down.netdev = "ens1f0np0";
  down.s.link_up = false;
  down.s.rx_bytes = 1e300;    // past a float: infinite
  down.s.tx_bytes = -5;       // a counter reset's mean: kept as it is
  down.s.link_rate = 50e9;    // not a float: sent as an integer
  down.s.expected_rate = -1;  // no link's: unknown
  PortView& plain = slice.window.AddPort("gpu-1", "eth0");
  plain.netdev = "eth0";
  plain.s.cnp_sent = std::numeric_limits<double>::infinity();
  PortView& unknown = slice.window.AddPort("gpu-2", "mlx5_1");  // netdev ""
  unknown.s.tx_pause_fraction[3] = 0.25;
  unknown.s.rx_pause_fraction[3] = 0.5;  // not a job shard's
  slice.window.Finish();
  // No recent view at all.
  std::vector<v1::ShardChunk> chunks =
      Encode(slice, {0, 1, 2, 7, 99}, ShardKind::kJobs);
  ASSERT_THAT(chunks, SizeIs(1));
  EXPECT_EQ(chunks[0].ports().recent_present_size(), 0);
  const Decoded d = Decode(chunks);
  ASSERT_THAT(d.window.ports(), SizeIs(3));
  EXPECT_TRUE(d.recent.ports().empty());
  const PortView* a = d.window.Find("gpu-1", "mlx5_0");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->netdev, "ens1f0np0");
  EXPECT_FALSE(a->s.link_up);
  EXPECT_EQ(a->s.rx_bytes, std::numeric_limits<double>::infinity());
  EXPECT_EQ(a->s.tx_bytes, -5);
  EXPECT_EQ(a->s.link_rate, 50e9);
  EXPECT_EQ(a->s.expected_rate, 0);
  EXPECT_EQ(a->samples.reports, 0);
  const PortView* b = d.window.Find("gpu-1", "eth0");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->netdev, "eth0");
  EXPECT_TRUE(b->s.link_up);
  EXPECT_EQ(b->s.cnp_sent, std::numeric_limits<double>::infinity());
  const PortView* c = d.window.Find("gpu-2", "mlx5_1");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->netdev, "");
  EXPECT_EQ(c->s.tx_pause_fraction[3], 0.25);
  EXPECT_TRUE(std::isnan(c->s.rx_pause_fraction[3]));

  // Nothing to send: one empty chunk, read as nothing.
  chunks = Encode(slice, {}, ShardKind::kJobs);
  ASSERT_THAT(chunks, SizeIs(1));
  EXPECT_EQ(chunks[0].chunks(), 1u);
  EXPECT_TRUE(Decode(chunks).window.ports().empty());
}

// `got` is `want` whole: a collector's own port, not cut down.
void ExpectWhole(const PortView& want, const PortView& got) {
  SCOPED_TRACE(want.node + " " + want.device);
  EXPECT_EQ(std::tie(got.node, got.device, got.netdev, got.is_switch_port),
            std::tie(want.node, want.device, want.netdev, want.is_switch_port));
  for (int slot = 0; slot < counters::kSignalSlots; ++slot) {
    const double w = analysis::SlotOf(want.s, slot);
    const double g = analysis::SlotOf(got.s, slot);
    EXPECT_TRUE(std::isnan(w) ? std::isnan(g) : g == w) << slot;
  }
  EXPECT_EQ(got.samples.reports, want.samples.reports);
}

int NodeNumber(const std::string& node) {
  return std::stoi(node.substr(node.rfind('-') + 1));
}

// Three collectors' ports of a switch shard (nodes dealt by number), the
// first's own: the assembled views hold every port once, the others' as
// the wire carries them, the own ones whole, in (node, device) order.
TEST(ShardWireTest, AssembledViewsHoldEveryCollectorsPortsOnce) {
  const Cluster cluster = MustBuild(64);
  const collector::FeatureSlice slice =
      SliceOf(cluster, {{FaultKind::kPfcStorm, "gpu-009", "mlx5_5"}});
  const std::vector<uint32_t> ports =
      PortsFor(slice.window, ShardKind::kSwitches);
  std::vector<uint32_t> of[3];
  for (uint32_t i : ports) {
    of[NodeNumber(slice.window.ports()[i].node) % 3].push_back(i);
  }
  std::vector<v1::ShardChunk> sent;
  for (int k : {1, 2}) {
    for (v1::ShardChunk& c : Encode(slice, of[k], ShardKind::kSwitches,
                                    /*max_bytes=*/8 << 10)) {
      sent.push_back(std::move(c));
    }
  }
  ASSERT_GT(sent.size(), 4u);
  std::vector<const v1::ShardChunk*> chunks;
  chunks.reserve(sent.size());
  for (const v1::ShardChunk& c : sent) chunks.push_back(&c);
  // Arrival order is not the nodes' order.
  std::reverse(chunks.begin(), chunks.end());

  const auto expect_all = [&](const FabricView& window,
                              const FabricView& recent) {
    ASSERT_THAT(window.ports(), SizeIs(ports.size()));
    EXPECT_TRUE(std::is_sorted(window.ports().begin(), window.ports().end(),
                               [](const PortView& a, const PortView& b) {
                                 return std::tie(a.node, a.device) <
                                        std::tie(b.node, b.device);
                               }));
    size_t in_recent = 0;
    for (uint32_t i : ports) {
      const PortView& want = slice.window.ports()[i];
      const bool own = NodeNumber(want.node) % 3 == 0;
      const PortView* got = window.Find(want.node, want.device);
      ASSERT_NE(got, nullptr) << want.node << " " << want.device;
      const PortView* want_recent = slice.recent->Find(want.node, want.device);
      const PortView* got_recent = recent.Find(want.node, want.device);
      ASSERT_EQ(got_recent != nullptr, want_recent != nullptr);
      if (own) {
        ExpectWhole(want, *got);
        if (want_recent != nullptr) ExpectWhole(*want_recent, *got_recent);
      } else {
        ExpectCarried(want, *got, ShardKind::kSwitches);
        if (want_recent != nullptr) {
          ExpectCarried(*want_recent, *got_recent, ShardKind::kSwitches);
        }
      }
      if (want_recent != nullptr) ++in_recent;
    }
    EXPECT_THAT(recent.ports(), SizeIs(in_recent));
    EXPECT_EQ(window.window_seconds, slice.window.window_seconds);
    EXPECT_EQ(recent.window_seconds, 1);
  };
  FabricView window, recent;
  std::vector<size_t> damaged;
  AssembleShardViews(chunks, &slice, of[0], &window, &recent, &damaged);
  EXPECT_TRUE(damaged.empty());
  expect_all(window, recent);

  // The views again (the next pass), over their storage: its own ports
  // alone, then everyone's; a damaged chunk is left out whole.
  AssembleShardViews({}, &slice, of[0], &window, &recent, &damaged);
  EXPECT_THAT(window.ports(), SizeIs(of[0].size()));
  EXPECT_EQ(window.Find(slice.window.ports()[of[1][0]].node,
                        slice.window.ports()[of[1][0]].device),
            nullptr);
  v1::ShardChunk bad = *chunks[0];
  bad.mutable_ports()->mutable_window_values()->RemoveLast();
  chunks.push_back(&bad);
  AssembleShardViews(chunks, &slice, of[0], &window, &recent, &damaged);
  EXPECT_THAT(damaged, ::testing::ElementsAre(chunks.size() - 1));
  expect_all(window, recent);

  // A node two sources hold (one changing collectors): both's ports, by
  // device.
  const std::string& moved = slice.window.ports()[of[1][0]].node;
  std::vector<uint32_t> own_and_moved = of[0];
  for (uint32_t i : of[1]) {
    if (slice.window.ports()[i].node == moved) own_and_moved.push_back(i);
  }
  std::sort(own_and_moved.begin(), own_and_moved.end());
  chunks.pop_back();
  damaged.clear();
  AssembleShardViews(chunks, &slice, own_and_moved, &window, &recent, &damaged);
  const absl::Span<const PortView> twice = window.PortsOf(moved);
  ASSERT_THAT(twice, SizeIs(2 * slice.window.PortsOf(moved).size()));
  for (size_t i = 0; i + 1 < twice.size(); i += 2) {
    EXPECT_EQ(twice[i].device, twice[i + 1].device);
  }
  EXPECT_THAT(window.ports(), SizeIs(ports.size() + twice.size() / 2));
}

TEST(ShardWireTest, DamagedBlocksAreRefused) {
  const Cluster cluster = MustBuild(8);
  const collector::FeatureSlice slice = SliceOf(cluster, {});
  const std::vector<v1::ShardChunk> chunks =
      Encode(slice, PortsFor(slice.window, ShardKind::kJobs), ShardKind::kJobs);
  ASSERT_THAT(chunks, SizeIs(1));
  const v1::ShardChunk& good = chunks[0];
  {
    FabricView w, r;
    ASSERT_TRUE(AddShardChunk(good, &w, &r));
  }
  using Damage = std::function<void(v1::ShardPortBlock*)>;
  const std::vector<std::pair<std::string, Damage>> damages = {
      {"slots out of order",
       [](v1::ShardPortBlock* b) { b->mutable_slots()->SwapElements(0, 1); }},
      {"a slot past the signals",
       [](v1::ShardPortBlock* b) { b->set_slots(b->slots_size() - 1, 61); }},
      {"more slots than a word holds",
       [](v1::ShardPortBlock* b) {
         b->clear_slots();
         for (uint32_t s = 0; s < 61; ++s) b->add_slots(s);
       }},
      {"fewer slots than the values name",
       [](v1::ShardPortBlock* b) { b->mutable_slots()->Truncate(4); }},
      {"a rate short",
       [](v1::ShardPortBlock* b) { b->mutable_window_rates()->RemoveLast(); }},
      {"a node without its count",
       [](v1::ShardPortBlock* b) { b->mutable_node_ports()->RemoveLast(); }},
      {"counts that miss a port",
       [](v1::ShardPortBlock* b) {
         b->set_node_ports(0, b->node_ports(0) - 1);
       }},
      {"a count of 2^32 - 1",
       [](v1::ShardPortBlock* b) { b->set_node_ports(0, UINT32_MAX); }},
      {"a device short",
       [](v1::ShardPortBlock* b) { b->mutable_device()->RemoveLast(); }},
      {"a value short",
       [](v1::ShardPortBlock* b) { b->mutable_window_values()->RemoveLast(); }},
      {"a value too many",
       [](v1::ShardPortBlock* b) { b->add_window_values(1); }},
      {"a recent value short",
       [](v1::ShardPortBlock* b) { b->mutable_recent_values()->RemoveLast(); }},
      {"sample counts short",
       [](v1::ShardPortBlock* b) {
         b->mutable_window_sample_counts()->RemoveLast();
       }},
      {"a count past an int",
       [](v1::ShardPortBlock* b) {
         b->set_window_sample_counts(0, UINT32_MAX);
       }},
      {"a port not in the window",
       [](v1::ShardPortBlock* b) { b->set_window_present(0, 0); }},
      {"a recent column short",
       [](v1::ShardPortBlock* b) {
         b->mutable_recent_present()->RemoveLast();
       }},
  };
  for (const auto& [name, damage] : damages) {
    v1::ShardChunk bad = good;
    damage(bad.mutable_ports());
    FabricView w, r;
    EXPECT_FALSE(AddShardChunk(bad, &w, &r)) << name;
    w.Finish();
    r.Finish();
    EXPECT_TRUE(w.ports().empty() && r.ports().empty()) << name;
    // Assembled with a good chunk: left out whole, the good one read.
    const v1::ShardChunk* both[] = {&good, &bad};
    std::vector<size_t> damaged;
    AssembleShardViews(both, nullptr, {}, &w, &r, &damaged);
    EXPECT_THAT(damaged, ::testing::ElementsAre(1)) << name;
    EXPECT_THAT(w.ports(), SizeIs(good.ports().device_size())) << name;
  }

  // Bytes flipped at random: refused or read, never a crash.
  const int parsed = testing::ForEachCorruptedParse<v1::ShardChunk>(
      good.SerializeAsString(), 2000, [](const v1::ShardChunk& c) {
        FabricView w, r;
        (void)AddShardChunk(c, &w, &r);
        w.Finish();
        r.Finish();
        const v1::ShardChunk* one[] = {&c};
        AssembleShardViews(one, nullptr, {}, &w, &r);
      });
  EXPECT_GT(parsed, 100);
}

}  // namespace
}  // namespace fabricdiag::cluster
