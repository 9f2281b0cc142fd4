// The virtual agents look like real agents to the collector: their series
// are what the agent's own encoder describes for an mlx5 node (counter
// table names and meanings that the view builder maps onto analysis
// signals), and a short run against a real in-process collector is stored,
// acknowledged and analysed like real traffic. (The collector benchmarks
// are only as honest as this.)
#include "sim/virtual_agents.h"

#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/collector_list.h"
#include "collector/declared/node_facts_memory.h"
#include "collector/ingest/ingest_service.h"
#include "collector/ingest/node_facts_intake.h"
#include "collector/ingest/server.h"
#include "collector/runner/fabric_view_builder.h"
#include "collector/runner/signal_map.h"
#include "common/clock.h"
#include "counters/meanings.h"
#include "sim/virtual_node.h"
#include "tests/testing/eventually.h"

namespace fabricdiag::sim {
namespace {

using collector::ClassifySeries;
using collector::MetaOf;
using counters::Signal;
using counters::Source;

TEST(VirtualNodeTest, OneNicIsWhatAnAgentReportsForAnMlx5Port) {
  absl::StatusOr<VirtualNode> node = BuildVirtualNode(1);
  ASSERT_TRUE(node.ok()) << node.status();
  const v1::Schema& schema = node->schema.schema();
  ASSERT_EQ(node->series, static_cast<size_t>(schema.series_size()));
  // The counters of the table for mlx5 port 1 and its netdev, PFC on one
  // priority: about as many as a real ConnectX port shows.
  EXPECT_GE(node->series, 140u);
  EXPECT_LE(node->series, 200u);
  std::set<std::tuple<int, std::string, uint32_t, std::string>> keys;
  int gauges = 0;
  std::set<std::pair<Signal, Source>> signals;
  for (const v1::Series& s : schema.series()) {
    EXPECT_TRUE(
        keys.emplace(s.subsystem(), s.device(), s.port(), s.name()).second)
        << s.name();
    EXPECT_TRUE(s.device() == "mlx5_0" || s.device() == "eth0") << s.device();
    gauges += s.kind() == v1::KIND_GAUGE;
    const collector::SignalRef ref = ClassifySeries(MetaOf(s));
    signals.emplace(ref.signal, ref.source);
  }
  EXPECT_EQ(gauges, 6 + 2);  // 3 RDMA port, 3 netdev, 2 PCIe stall percents
  const v1::Report& report = node->report.report();
  EXPECT_EQ(report.raw_size(), schema.series_size());
  EXPECT_EQ(report.rate_size() + report.no_rate_size(), schema.series_size());
  // Traffic moves, errors and idle priorities do not: about a sixth.
  EXPECT_GE(node->moving.size(), 15u);
  EXPECT_LE(node->moving.size(), 40u);
  for (uint32_t i : node->moving)
    EXPECT_GT(report.rate(static_cast<int>(i)), 0);
  EXPECT_EQ(node->inventory.inventory().rdma_ports_size(), 1);
  // The analyzers get the signals they need from it.
  for (std::pair<Signal, Source> f : {
           std::pair{Signal::kRxBytes, Source::kRdma},
           {Signal::kTxBytes, Source::kRdma},
           {Signal::kRxBytes, Source::kPhy},
           {Signal::kRxPauseFraction, Source::kNone},
           {Signal::kTxPauseFraction, Source::kNone},
           {Signal::kCnpSent, Source::kNone},
           {Signal::kCnpHandled, Source::kNone},
           {Signal::kEcnMarked, Source::kNone},
           {Signal::kRxDiscards, Source::kNone},
           {Signal::kSymbolErrors, Source::kNone},
           {Signal::kCarrierChanges, Source::kNone},
           {Signal::kOutOfSequence, Source::kNone},
       }) {
    EXPECT_EQ(signals.count(f), 1u) << counters::SignalName(f.first);
  }
}

TEST(VirtualNodeTest, RejectsImpossibleNicCounts) {
  EXPECT_FALSE(BuildVirtualNode(0).ok());
  EXPECT_FALSE(BuildVirtualNode(65).ok());
}

TEST(VirtualNodeTest, ASwitchIsWhatAnAgentReportsForItsPorts) {
  absl::StatusOr<VirtualNode> node = BuildVirtualSwitch({"swp1", "swp49"});
  ASSERT_TRUE(node.ok()) << node.status();
  const v1::Schema& schema = node->schema.schema();
  ASSERT_EQ(node->series, static_cast<size_t>(schema.series_size()));
  ASSERT_EQ(node->roles.size(), node->series);
  // Per port the netdev's and `ethtool -S`'s counters, no RDMA device.
  EXPECT_GE(node->series, 2 * 80u);
  EXPECT_LE(node->series, 2 * 140u);
  const v1::Inventory& inventory = node->inventory.inventory();
  EXPECT_TRUE(inventory.rdma_devices().empty());
  EXPECT_TRUE(inventory.rdma_ports().empty());
  ASSERT_EQ(inventory.netdevs_size(), 2);
  EXPECT_EQ(inventory.netdevs(1).name(), "swp49");
  EXPECT_EQ(inventory.netdevs(1).rdma_device(), "");
  EXPECT_EQ(node->mtu, 9216u);
  std::set<std::pair<Signal, Source>> signals;
  for (int i = 0; i < schema.series_size(); ++i) {
    const v1::Series& s = schema.series(i);
    EXPECT_TRUE(s.device() == "swp1" || s.device() == "swp49") << s.device();
    EXPECT_EQ(node->roles[static_cast<size_t>(i)].nic,
              s.device() == "swp1" ? 0u : 1u)
        << s.name();
    const collector::SignalRef ref = ClassifySeries(MetaOf(s));
    signals.emplace(ref.signal, ref.source);
  }
  // What ecmp_imbalance and the switch side of pfc_storm read.
  for (Signal signal :
       {Signal::kTxBytes, Signal::kRxBytes, Signal::kRxPauseFraction,
        Signal::kTxPauseFraction, Signal::kCarrierChanges}) {
    EXPECT_TRUE(
        std::any_of(signals.begin(), signals.end(),
                    [signal](const auto& s) { return s.first == signal; }))
        << counters::SignalName(signal);
  }
}

TEST(VirtualNodeTest, RejectsImpossibleSwitchPorts) {
  EXPECT_FALSE(BuildVirtualSwitch({}).ok());
  EXPECT_FALSE(BuildVirtualSwitch({"swp1", "swp1"}).ok());
  EXPECT_FALSE(BuildVirtualSwitch({"swp1", ""}).ok());
  std::vector<std::string> many;
  for (size_t p = 0; p <= kMaxVirtualSwitchPorts; ++p) {
    many.push_back(absl::StrCat("swp", p + 1));
  }
  EXPECT_FALSE(BuildVirtualSwitch(many).ok());
  many.pop_back();
  absl::StatusOr<VirtualNode> largest = BuildVirtualSwitch(many);
  EXPECT_TRUE(largest.ok()) << largest.status();
}

TEST(VirtualAgentsTest, StoredAcknowledgedAndAnalysed) {
  SystemClock clock;
  collector::SeriesStore store(collector::SeriesStore::Options{}, clock);
  collector::IngestCounters counters;
  collector::IngestService service(&store, &counters);
  collector::CollectorServer::Options o;
  o.listen = "127.0.0.1:0";
  auto server = collector::CollectorServer::Start(o, {&service});
  ASSERT_TRUE(server.ok()) << server.status();

  VirtualAgentsOptions opts;
  opts.targets = {absl::StrCat("127.0.0.1:", (*server)->port())};
  opts.nodes = 20;
  opts.nics = 2;
  opts.interval = absl::Milliseconds(100);
  opts.duration = absl::Seconds(2);
  opts.warmup = absl::Milliseconds(500);
  absl::StatusOr<VirtualAgentsResult> r = RunVirtualAgents(opts, nullptr);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_GT(r->reports_sent, 200u);
  EXPECT_EQ(r->reports_acked + r->reports_dropped, r->reports_sent);
  EXPECT_EQ(r->streams_rejected, 0u);
  EXPECT_EQ(r->streams_failed, 0u);
  EXPECT_GT(r->latency_samples, 0u);
  EXPECT_GT(r->latency_p99_ms, 0);
  EXPECT_THAT(LatencySummary(*r), ::testing::HasSubstr("p99"));
  const uint64_t series = r->series_per_agent;
  EXPECT_EQ(series, BuildVirtualNode(2)->series);
  EXPECT_EQ(counters.values.load(), counters.reports.load() * series);

  const collector::StoreMemory m = store.Memory();
  EXPECT_EQ(m.nodes, 20u);
  EXPECT_EQ(m.series, 20u * series);
  EXPECT_EQ(m.layouts, 1u);  // identical agents share one layout

  // The view the analyzers see: every port of every node, with traffic.
  collector::FabricViewBuilder builder(&store);
  analysis::FabricView view = builder.Build(nullptr, 0.5, clock.Now());
  ASSERT_EQ(view.ports().size(), 40u);
  for (const analysis::PortView& p : view.ports()) {
    EXPECT_NEAR(p.s.tx_bytes, 1.5e10, 0.1e10) << p.node << " " << p.device;
    EXPECT_EQ(p.s.link_rate, 5e10);
    EXPECT_NEAR(p.s.rx_pause_fraction[3], 1e-3, 1e-4);
    EXPECT_TRUE(std::isnan(p.s.rx_pause_fraction[2]));  // no PFC there
  }
  (*server)->Shutdown(absl::ZeroDuration());
}

// Hands off every node of an odd number once the test sets the epoch.
class HandOffOddNodes final : public collector::IngestPlacement {
 public:
  uint64_t Epoch() override { return epoch.load(); }
  std::optional<collector::HandoffOrder> HandOff(
      absl::string_view node, const std::vector<std::string>& /*list*/,
      uint64_t /*streams*/) override {
    if ((node.back() - '0') % 2 == 0) return std::nullopt;
    return collector::HandoffOrder{"test placement", ""};
  }
  collector::CollectorWeights Weights(
      const std::vector<std::string>& /*collectors*/) override {
    return {};
  }
  void Advertise(const std::string& /*address*/) override {}
  std::atomic<uint64_t> epoch{0};
};

// Virtual agents follow a Handoff as the real agent does: the streams of
// the odd nodes move from the first collector to the second mid-run and
// replay what the first did not acknowledge, so every report of every
// node is held by one of the two, without a gap.
TEST(VirtualAgentsTest, FollowHandoffsAndLoseNothing) {
  SystemClock clock;
  collector::SeriesStore first_store(collector::SeriesStore::Options{}, clock);
  collector::SeriesStore second_store(collector::SeriesStore::Options{}, clock);
  collector::IngestCounters first_counters;
  collector::IngestCounters second_counters;
  HandOffOddNodes placement;
  collector::MemoryNodeFacts facts;
  collector::NoDeclaredSwitches no_switches;
  collector::IngestService first(&first_store, &first_counters, {}, placement,
                                 {facts, no_switches});
  collector::IngestService second(&second_store, &second_counters);
  collector::CollectorServer::Options o;
  o.listen = "127.0.0.1:0";
  auto first_server = collector::CollectorServer::Start(o, {&first});
  ASSERT_TRUE(first_server.ok()) << first_server.status();
  auto second_server = collector::CollectorServer::Start(o, {&second});
  ASSERT_TRUE(second_server.ok()) << second_server.status();

  VirtualAgentsOptions opts;
  opts.targets = {absl::StrCat("127.0.0.1:", (*first_server)->port()),
                  absl::StrCat("127.0.0.1:", (*second_server)->port())};
  opts.nodes = 20;
  opts.nics = 1;
  opts.interval = absl::Milliseconds(100);
  opts.duration = absl::Seconds(2);
  opts.warmup = absl::Milliseconds(300);
  std::thread flip([&] {
    absl::SleepFor(absl::Milliseconds(800));
    placement.epoch = 1;
  });
  absl::StatusOr<VirtualAgentsResult> r = RunVirtualAgents(opts, nullptr);
  flip.join();
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->reports_acked + r->reports_dropped, r->reports_sent);
  EXPECT_EQ(r->reports_dropped, 0u);
  EXPECT_EQ(r->streams_failed, 0u);

  // Any series of the node: each report holds them all.
  absl::StatusOr<VirtualNode> virtual_node = BuildVirtualNode(1);
  ASSERT_TRUE(virtual_node.ok()) << virtual_node.status();
  const v1::Series& first_series = virtual_node->schema.schema().series(0);
  const collector::SeriesKey key{first_series.subsystem(),
                                 first_series.device(), first_series.port(),
                                 first_series.name()};
  auto held = [&](collector::SeriesStore& store, const std::string& node) {
    std::set<uint64_t> seqs;
    auto w = store.Window(node, key, absl::InfinitePast());
    if (w.ok()) {
      for (const collector::RatePoint& p : *w) seqs.insert(p.seq);
    }
    return seqs;
  };
  uint64_t moved = 0;
  for (int i = 0; i < opts.nodes; ++i) {
    const std::string node = absl::StrFormat("vnode-%05d", i);
    const std::set<uint64_t> a = held(first_store, node);
    const std::set<uint64_t> b = held(second_store, node);
    std::set<uint64_t> all = a;
    all.insert(b.begin(), b.end());
    ASSERT_FALSE(all.empty()) << node;
    // 1..n, each once somewhere (a replayed report the first held is
    // counted by both: a set).
    EXPECT_EQ(*all.begin(), 1u) << node;
    EXPECT_EQ(*all.rbegin(), all.size()) << node;
    const bool started_first =
        client::RankCollectors(node, opts.targets)[0] == 0;
    if (i % 2 == 1 && started_first) {
      ++moved;
      EXPECT_FALSE(a.empty()) << node;  // before the flip
      EXPECT_FALSE(b.empty()) << node;  // after it
    } else {
      EXPECT_TRUE((started_first ? b : a).empty()) << node;
    }
  }
  EXPECT_GT(moved, 0u);
  EXPECT_EQ(r->handoffs, moved);
  EXPECT_EQ(first_counters.handoffs.load(), moved);
  (*first_server)->Shutdown(absl::ZeroDuration());
  (*second_server)->Shutdown(absl::ZeroDuration());
}

// Each agent's inventory carries its NICs' LLDP neighbors (the collector
// records them as the node's facts), and none with `lldp` off: the two
// sides of bench/connect_storm.py.
TEST(VirtualAgentsTest, InventoriesCarryNeighborsUnlessLldpIsOff) {
  SystemClock clock;
  collector::SeriesStore store(collector::SeriesStore::Options{}, clock);
  collector::IngestCounters counters;
  collector::KeepEveryAgent keep;
  collector::MemoryNodeFacts facts;
  collector::NoDeclaredSwitches no_switches;
  collector::IngestService service(&store, &counters, {}, keep,
                                   {facts, no_switches});
  collector::CollectorServer::Options o;
  o.listen = "127.0.0.1:0";
  auto server = collector::CollectorServer::Start(o, {&service});
  ASSERT_TRUE(server.ok()) << server.status();

  VirtualAgentsOptions opts;
  opts.targets = {absl::StrCat("127.0.0.1:", (*server)->port())};
  opts.nodes = 4;
  opts.nics = 2;
  opts.interval = absl::Milliseconds(100);
  opts.duration = absl::Milliseconds(500);
  opts.warmup = absl::Milliseconds(100);
  opts.node_prefix = "quiet-";
  opts.lldp = false;
  absl::StatusOr<VirtualAgentsResult> quiet = RunVirtualAgents(opts, nullptr);
  ASSERT_TRUE(quiet.ok()) << quiet.status();
  EXPECT_GT(quiet->reports_acked, 0u);
  opts.node_prefix = "lldp-";
  opts.lldp = true;
  absl::StatusOr<VirtualAgentsResult> lldp = RunVirtualAgents(opts, nullptr);
  ASSERT_TRUE(lldp.ok()) << lldp.status();

  auto neighbors = [&](const std::string& node) {
    std::shared_ptr<const collector::NodeFactsMap> all = facts.Snapshot();
    auto it = all->find(node);
    return it == all->end() ? -1 : it->second->lldp_neighbors_size();
  };
  // The facts are recorded in the order the inventories came in: once the
  // second run's are there, the first run's are too.
  ASSERT_TRUE(::fabricdiag::testing::Eventually(
      [&] { return neighbors("lldp-00003") == opts.nics; }));
  const std::shared_ptr<const v1::NodeFacts> held =
      facts.Snapshot()->at("lldp-00003");
  const v1::NodeFacts& three = *held;
  // Agent 3 is the last of leaf 0's four, with 2 NICs: swp7 and swp8.
  EXPECT_EQ(three.lldp_neighbors(0).system_name(), "lldp-leaf-00000");
  EXPECT_EQ(three.lldp_neighbors(1).port_id(), "swp8");
  for (int i = 0; i < opts.nodes; ++i) {
    EXPECT_EQ(neighbors(absl::StrFormat("lldp-%05d", i)), opts.nics) << i;
    EXPECT_LE(neighbors(absl::StrFormat("quiet-%05d", i)), 0) << i;
  }
  (*server)->Shutdown(absl::ZeroDuration());
}

// A collector dies mid-run: its virtual agents move down their ranking to
// the other at their next tick and replay what it did not acknowledge, so
// every report of every node is held by one of the two and acknowledged;
// the agents that started on the other never move.
TEST(VirtualAgentsTest, FailOverDownTheirRankingWhenACollectorDies) {
  SystemClock clock;
  collector::SeriesStore first_store(collector::SeriesStore::Options{}, clock);
  collector::SeriesStore second_store(collector::SeriesStore::Options{}, clock);
  collector::IngestCounters first_counters;
  collector::IngestCounters second_counters;
  collector::IngestService first(&first_store, &first_counters);
  collector::IngestService second(&second_store, &second_counters);
  collector::CollectorServer::Options o;
  o.listen = "127.0.0.1:0";
  auto first_server = collector::CollectorServer::Start(o, {&first});
  ASSERT_TRUE(first_server.ok()) << first_server.status();
  auto second_server = collector::CollectorServer::Start(o, {&second});
  ASSERT_TRUE(second_server.ok()) << second_server.status();

  VirtualAgentsOptions opts;
  opts.targets = {absl::StrCat("127.0.0.1:", (*first_server)->port()),
                  absl::StrCat("127.0.0.1:", (*second_server)->port())};
  opts.nodes = 20;
  opts.nics = 1;
  opts.interval = absl::Milliseconds(100);
  opts.duration = absl::Seconds(2);
  opts.warmup = absl::Milliseconds(300);
  std::thread kill([&] {
    absl::SleepFor(absl::Milliseconds(800));
    (*first_server)->Shutdown(absl::ZeroDuration());
  });
  absl::StatusOr<VirtualAgentsResult> r = RunVirtualAgents(opts, nullptr);
  kill.join();
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->reports_acked, r->reports_sent);
  EXPECT_EQ(r->reports_dropped, 0u);
  EXPECT_EQ(r->streams_failed, 0u);
  uint64_t started_first = 0;
  for (int i = 0; i < opts.nodes; ++i) {
    const std::string node = absl::StrFormat("vnode-%05d", i);
    if (client::RankCollectors(node, opts.targets)[0] == 0) ++started_first;
  }
  EXPECT_GT(started_first, 0u);
  EXPECT_EQ(r->failovers, started_first);
  EXPECT_EQ(second_counters.streams.load(), static_cast<uint64_t>(opts.nodes));
  // All ended: the agents cancel their streams as the run stops, and the
  // collector learns of each cancel a moment after the agent has (CI once
  // saw 15 of 20 still open when the run returned).
  EXPECT_TRUE(::fabricdiag::testing::Eventually([&] {
    return second_counters.open_streams.load() == 0;
  })) << second_counters.open_streams.load()
      << " streams still open";
  (*second_server)->Shutdown(absl::ZeroDuration());
}

// Nobody listening: every stream fails, nothing is acknowledged, and no
// latency is reported (rather than a reassuring 0 ms).
TEST(VirtualAgentsTest, DeadCollectorIsReportedNotMeasured) {
  // A port bound but not listening: connecting is refused, and no server
  // of a test running in parallel can take the port while we hold it (a
  // port merely "free a moment ago" once went to the other test's
  // collector, which then acknowledged these reports).
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  socklen_t len = sizeof(addr);
  ASSERT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);

  VirtualAgentsOptions opts;
  opts.targets = {absl::StrCat("127.0.0.1:", ntohs(addr.sin_port))};
  opts.nodes = 4;
  opts.nics = 1;
  opts.interval = absl::Milliseconds(100);
  opts.duration = absl::Seconds(1);
  opts.warmup = absl::Milliseconds(200);
  absl::StatusOr<VirtualAgentsResult> r = RunVirtualAgents(opts, nullptr);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->reports_acked, 0u);
  EXPECT_GT(r->streams_failed, 0u);
  EXPECT_EQ(r->latency_samples, 0u);
  EXPECT_THAT(LatencySummary(*r), ::testing::HasSubstr("latency not measured"));
  close(fd);
}

}  // namespace
}  // namespace fabricdiag::sim
