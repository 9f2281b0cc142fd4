#include "collector/runner/fabric_view_builder.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "analysis/signal_slots.h"
#include "collector/runner/signal_map.h"
#include "collector/store/series_store.h"
#include "common/clock.h"
#include "counters/meanings.h"
#include "counters/wire.h"

namespace fabricdiag::collector {
namespace {

// What an agent's Hello does to a node's series; the stream then ends, so
// that the next Hello (an agent restart) is not a second live agent.
uint64_t Hello(NodeSeries& node, absl::string_view boot) {
  absl::StatusOr<uint64_t> held =
      node.BeginStream(boot, 1000, 1, "ipv4:127.0.0.1:1", absl::Now());
  node.EndStream(1);
  EXPECT_TRUE(held.ok()) << held.status();
  return held.ok() ? *held : 0;
}

using analysis::Has;
using analysis::SlotOf;
using counters::Signal;
using counters::Source;

struct SeriesSpec {
  v1::Subsystem subsystem;
  const char* device;
  uint32_t port;
  const char* name;
  v1::Meaning meaning = v1::MEANING_NONE;
  v1::Direction direction = v1::DIRECTION_NONE;
  int priority = -1;
  v1::Kind kind = v1::KIND_COUNTER;
};

v1::Schema MakeSchema(const std::vector<SeriesSpec>& specs) {
  v1::Schema schema;
  schema.set_schema_id(1);
  for (const SeriesSpec& s : specs) {
    v1::Series* out = schema.add_series();
    out->set_subsystem(s.subsystem);
    out->set_device(s.device);
    out->set_port(s.port);
    out->set_name(s.name);
    out->set_kind(s.kind);
    out->set_meaning(s.meaning);
    out->set_direction(s.direction);
    out->set_priority(s.priority);
  }
  return schema;
}

// A GPU node: mlx5_0 (RoCE, eth0) and a management NIC eno1 without RDMA.
v1::Inventory GpuInventory(int state_id = 4, const char* operstate = "up") {
  v1::Inventory inv;
  v1::RdmaDevice* d = inv.add_rdma_devices();
  d->set_name("mlx5_0");
  d->add_netdevs("eth0");
  v1::RdmaPort* p = inv.add_rdma_ports();
  p->set_device("mlx5_0");
  p->set_port(1);
  p->set_state_id(state_id);
  p->set_rate_bytes_per_second(50e9);
  p->add_netdevs("eth0");
  v1::Netdev* n = inv.add_netdevs();
  n->set_name("eth0");
  n->set_operstate(operstate);
  n->set_rdma_device("mlx5_0");
  n->set_rdma_port(1);
  n->set_speed_bytes_per_second(50e9);
  n = inv.add_netdevs();
  n->set_name("eno1");
  n->set_operstate("up");
  n->set_speed_bytes_per_second(3.125e9);
  return inv;
}

const std::vector<SeriesSpec>& GpuSeries() {
  static const auto* const kSeries = new std::vector<SeriesSpec>{
      {v1::SUBSYSTEM_RDMA_PORT_COUNTERS, "mlx5_0", 1, "port_rcv_data"},
      {v1::SUBSYSTEM_RDMA_PORT_HW_COUNTERS, "mlx5_0", 1, "np_cnp_sent"},
      {v1::SUBSYSTEM_ETHTOOL, "eth0", 0, "tx_bytes_phy", v1::MEANING_PHY_BYTES,
       v1::DIRECTION_TX},
      {v1::SUBSYSTEM_ETHTOOL, "eth0", 0, "tx_prio3_pause_duration",
       v1::MEANING_PFC_PAUSE_DURATION, v1::DIRECTION_TX, 3},
      {v1::SUBSYSTEM_ETHTOOL, "eth0", 0, "rx_prio3_ecn_mark",
       v1::MEANING_ECN_MARKED, v1::DIRECTION_RX, 3},
      {v1::SUBSYSTEM_ETHTOOL, "eth0", 0, "rx_prio4_ecn_mark",
       v1::MEANING_ECN_MARKED, v1::DIRECTION_RX, 4},
      {v1::SUBSYSTEM_NETDEV_STATISTICS, "eth0", 0, "rx_bytes"},
      {v1::SUBSYSTEM_NETDEV_STATISTICS, "eno1", 0, "rx_bytes"},
      {v1::SUBSYSTEM_NETDEV_ATTRIBUTE, "eno1", 0, "carrier_changes"},
      // Not an analysis signal / not in the inventory: ignored.
      {v1::SUBSYSTEM_NETDEV_STATISTICS, "eth0", 0, "multicast"},
      {v1::SUBSYSTEM_RDMA_PORT_COUNTERS, "mlx5_9", 1, "port_rcv_data"},
      {v1::SUBSYSTEM_NETDEV_ATTRIBUTE, "eno1", 0, "speed_bytes_per_second",
       v1::MEANING_NONE, v1::DIRECTION_NONE, -1, v1::KIND_GAUGE},
  };
  return *kSeries;
}

class FabricViewBuilderTest : public ::testing::Test {
 protected:
  FabricViewBuilderTest() : store_(SeriesStore::Options{}, clock_) {}

  // Streams `reports` reports of `node`, 1 s apart; series i has rate
  // rate(i, seq).
  template <typename RateFn>
  void Feed(const std::string& node, const v1::Inventory& inv,
            const std::vector<SeriesSpec>& specs, int reports, RateFn rate) {
    FeedAll({{node, inv}}, specs, reports, rate);
  }
  // The same of several nodes at once: each report of every node at the
  // same instant.
  template <typename RateFn>
  void FeedAll(const std::vector<std::pair<std::string, v1::Inventory>>& nodes,
               const std::vector<SeriesSpec>& specs, int reports, RateFn rate) {
    std::vector<std::shared_ptr<NodeSeries>> opened;
    std::vector<uint32_t> slots;
    for (const auto& [name, inv] : nodes) {
      opened.push_back(store_.OpenNode(name));
      Hello(*opened.back(), "boot-1");
      opened.back()->SetInventory(inv);
      slots = *opened.back()->MapSchema(MakeSchema(specs));
    }
    for (int seq = 1; seq <= reports; ++seq) {
      clock_.Advance(absl::Seconds(1));
      std::vector<double> rates;
      for (size_t i = 0; i < specs.size(); ++i) rates.push_back(rate(i, seq));
      ReportView view;
      view.seq = static_cast<uint64_t>(seq);
      view.wall_time_unix_nanos = absl::ToUnixNanos(clock_.Now());
      view.rates = rates;
      for (const std::shared_ptr<NodeSeries>& n : opened) {
        uint64_t held;
        n->Ingest("boot-1", view, slots, clock_.Now(), &held);
      }
    }
  }

  // Report `seq` of `node` now, from "boot-1".
  void IngestNow(NodeSeries& node, const std::vector<uint32_t>& slots, int seq,
                 const std::vector<double>& rates) {
    ReportView view;
    view.seq = static_cast<uint64_t>(seq);
    view.wall_time_unix_nanos = absl::ToUnixNanos(clock_.Now());
    view.rates = rates;
    uint64_t held;
    node.Ingest("boot-1", view, slots, clock_.Now(), &held);
  }

  FakeClock clock_;
  SeriesStore store_;
};

TEST_F(FabricViewBuilderTest, FoldsEveryCounterOfAPortIntoItsSignals) {
  // Every series reports 100 x (index + 1), except port_rcv_data which
  // ramps so the window mean is visible: seq 1..10 -> 1e9 * seq.
  Feed("gpu-0", GpuInventory(), GpuSeries(), 10, [](size_t i, int seq) {
    if (i == 0) return 1e9 * seq;
    if (i == 3) return 0.25;  // pause seconds per second
    return 100.0 * static_cast<double>(i + 1);
  });
  FabricViewBuilder builder(&store_);
  analysis::FabricView view = builder.Build(nullptr, 5, clock_.Now());
  ASSERT_EQ(view.ports().size(), 2u);  // mlx5_0 (with eth0) and eno1

  const analysis::PortView* nic = view.Find("gpu-0", "mlx5_0");
  ASSERT_NE(nic, nullptr);
  EXPECT_EQ(nic->netdev, "eth0");
  EXPECT_EQ(view.Find("gpu-0", "eth0"), nic);
  EXPECT_FALSE(nic->is_switch_port);
  // Mean of seq 6..10 = 8e9; RDMA counters win over netdev statistics.
  // The store keeps rates as float: 7 significant digits.
  EXPECT_NEAR(nic->s.rx_bytes, 8e9, 8e9 * 1e-7);
  EXPECT_DOUBLE_EQ(nic->s.tx_bytes, 300);  // tx_bytes_phy
  EXPECT_DOUBLE_EQ(nic->s.cnp_sent, 200);
  EXPECT_DOUBLE_EQ(nic->s.tx_pause_fraction[3], 0.25);
  EXPECT_FALSE(Has(nic->s.tx_pause_fraction[4]));
  EXPECT_FALSE(Has(nic->s.rx_pause_fraction[3]));
  EXPECT_DOUBLE_EQ(nic->s.ecn_marked, 500 + 600);  // summed priorities
  EXPECT_DOUBLE_EQ(nic->s.link_rate, 50e9);
  EXPECT_TRUE(nic->s.link_up);
  EXPECT_FALSE(Has(nic->s.symbol_errors));  // absent, not 0

  const analysis::PortView* mgmt = view.Find("gpu-0", "eno1");
  ASSERT_NE(mgmt, nullptr);
  EXPECT_DOUBLE_EQ(mgmt->s.rx_bytes, 800);
  EXPECT_DOUBLE_EQ(mgmt->s.carrier_changes, 900);
  EXPECT_DOUBLE_EQ(mgmt->s.link_rate, 3.125e9);
}

TEST_F(FabricViewBuilderTest, NoRateSamplesAreIgnoredNotAveragedAsZero) {
  Feed("gpu-0", GpuInventory(), GpuSeries(), 6, [](size_t i, int seq) {
    if (i == 0 && seq % 2 == 0) return std::nan("");
    return i == 0 ? 10.0 : 1.0;
  });
  FabricViewBuilder builder(&store_);
  analysis::FabricView view = builder.Build(nullptr, 5, clock_.Now());
  EXPECT_DOUBLE_EQ(view.Find("gpu-0", "mlx5_0")->s.rx_bytes, 10);
}

TEST_F(FabricViewBuilderTest, SaysHowTheWindowsSamplesLieInTime) {
  // RDMA receive and physical-port transmit bytes (the port's traffic
  // sources) did not advance at seq 7 and 8; seq 9 catches up.
  Feed("gpu-0", GpuInventory(), GpuSeries(), 10, [](size_t i, int seq) {
    const bool traffic = i == 0 || i == 2;
    if (traffic && (seq == 7 || seq == 8)) return 0.0;
    if (traffic && seq == 9) return 3e9;
    return 1e9;
  });
  FabricViewBuilder builder(&store_);
  analysis::FabricView view = builder.Build(nullptr, 5, clock_.Now());
  const analysis::SampleEvidence& e = view.Find("gpu-0", "mlx5_0")->samples;
  EXPECT_EQ(e.reports, 5);           // seq 6..10
  EXPECT_EQ(e.expected_reports, 5);  // 5 s at 1 s
  EXPECT_EQ(e.intervals, 3);
  EXPECT_DOUBLE_EQ(e.span_seconds, 5);
  EXPECT_DOUBLE_EQ(e.report_span_seconds, 5);
  EXPECT_DOUBLE_EQ(e.max_interval_seconds, 3);  // seq 6 -> 9
  EXPECT_DOUBLE_EQ(e.median_interval_seconds, 1);
  // The newest second alone: seq 10 moved.
  view = builder.Build(nullptr, 1, clock_.Now());
  EXPECT_EQ(view.Find("gpu-0", "mlx5_0")->samples.intervals, 1);
  EXPECT_EQ(view.Find("gpu-0", "mlx5_0")->samples.expected_reports, 1);
  EXPECT_DOUBLE_EQ(view.Find("gpu-0", "mlx5_0")->samples.span_seconds, 1);
}

TEST_F(FabricViewBuilderTest, ANewNodesSamplesCoverLittleOfTheWindow) {
  Feed("gpu-0", GpuInventory(), GpuSeries(), 2,
       [](size_t, int) { return 1e9; });
  FabricViewBuilder builder(&store_);
  analysis::FabricView view = builder.Build(nullptr, 5, clock_.Now());
  const analysis::SampleEvidence& e = view.Find("gpu-0", "mlx5_0")->samples;
  // Seq 1 only starts the first interval.
  EXPECT_EQ(e.reports, 1);
  EXPECT_EQ(e.expected_reports, 5);
  EXPECT_DOUBLE_EQ(e.span_seconds, 1);
}

TEST_F(FabricViewBuilderTest, DownPortsAndStaleNodes) {
  Feed("gpu-0", GpuInventory(/*state_id=*/1), GpuSeries(), 3,
       [](size_t, int) { return 1.0; });
  Feed("gpu-1", GpuInventory(4, "down"), GpuSeries(), 3,
       [](size_t, int) { return 1.0; });
  FabricViewBuilder builder(&store_);
  analysis::FabricView view = builder.Build(nullptr, 5, clock_.Now());
  EXPECT_FALSE(view.Find("gpu-0", "mlx5_0")->s.link_up);
  EXPECT_FALSE(view.Find("gpu-1", "mlx5_0")->s.link_up);
  // gpu-0 last reported 3 s before gpu-1 finished; 10 s later both are
  // stale and left out.
  view = builder.Build(nullptr, 5, clock_.Now() + absl::Seconds(10));
  EXPECT_TRUE(view.ports().empty());
}

// agent_down needs every node, the stale ones too, from the same walk as the
// views: each is told once, by name, with the state its ports were read at.
TEST_F(FabricViewBuilderTest, EveryNodeIsToldInNameOrderStaleOnesToo) {
  Feed("gpu-9", GpuInventory(), GpuSeries(), 3,
       [](size_t, int) { return 1.0; });
  const absl::Time gpu9_last = clock_.Now();
  clock_.Advance(absl::Seconds(20));
  Feed("gpu-1", GpuInventory(), GpuSeries(), 3,
       [](size_t, int) { return 1.0; });
  store_.OpenNode("gpu-5");  // never reported
  FabricViewBuilder builder(&store_);
  std::vector<std::pair<std::string, absl::Time>> told;
  const double windows[] = {3, 1};
  std::vector<analysis::FabricView> views = builder.Build(
      nullptr, windows, clock_.Now(),
      [&told](const NodeSeries& node, const NodeSeries::ViewState& state) {
        told.emplace_back(node.name(), state.last_report);
      });
  ASSERT_EQ(views.size(), 2u);
  // Only gpu-1 reports; gpu-9 is stale, gpu-5 never reported.
  ASSERT_EQ(views[0].ports().size(), 2u);
  EXPECT_EQ(views[0].ports()[0].node, "gpu-1");
  ASSERT_EQ(told.size(), 3u);
  EXPECT_EQ(told[0], std::make_pair(std::string("gpu-1"), clock_.Now()));
  EXPECT_EQ(told[1],
            std::make_pair(std::string("gpu-5"), absl::InfinitePast()));
  EXPECT_EQ(told[2], std::make_pair(std::string("gpu-9"), gpu9_last));
}

// Nodes that report the same series share how their series map to ports,
// but only while their ports are the same: a port down, another rate or
// other names are a node's own, and a node whose inventory changes leaves
// the others as they were.
TEST_F(FabricViewBuilderTest, NodesOfTheSameSeriesKeepTheirOwnPorts) {
  const auto one = [](size_t, int) { return 1.0; };
  v1::Inventory slower = GpuInventory();
  slower.mutable_rdma_ports(0)->set_rate_bytes_per_second(25e9);
  v1::Inventory renamed = GpuInventory();
  renamed.mutable_netdevs(1)->set_name("eno2");
  FeedAll({{"gpu-0", GpuInventory()},
           {"gpu-1", GpuInventory(4, "down")},
           {"gpu-2", GpuInventory(/*state_id=*/1)},
           {"gpu-3", slower},
           {"gpu-4", renamed},
           {"gpu-5", GpuInventory()}},
          GpuSeries(), 3, one);
  FabricViewBuilder builder(&store_);
  analysis::FabricView view = builder.Build(nullptr, 5, clock_.Now());
  ASSERT_EQ(view.ports().size(), 12u);
  EXPECT_TRUE(view.Find("gpu-0", "mlx5_0")->s.link_up);
  EXPECT_FALSE(view.Find("gpu-1", "mlx5_0")->s.link_up);
  EXPECT_FALSE(view.Find("gpu-2", "mlx5_0")->s.link_up);
  EXPECT_EQ(view.Find("gpu-3", "mlx5_0")->s.link_rate, 25e9);
  EXPECT_EQ(view.Find("gpu-0", "mlx5_0")->s.link_rate, 50e9);
  EXPECT_NE(view.Find("gpu-4", "eno2"), nullptr);
  EXPECT_EQ(view.Find("gpu-4", "eno1"), nullptr);
  EXPECT_TRUE(view.Find("gpu-5", "mlx5_0")->s.link_up);

  // gpu-0's port goes down; gpu-5, mapped alike before, stays up.
  store_.FindNode("gpu-0")->SetInventory(GpuInventory(4, "down"));
  view = builder.Build(nullptr, 5, clock_.Now());
  EXPECT_FALSE(view.Find("gpu-0", "mlx5_0")->s.link_up);
  EXPECT_TRUE(view.Find("gpu-5", "mlx5_0")->s.link_up);
  EXPECT_FALSE(view.Find("gpu-1", "mlx5_0")->s.link_up);
}

// Reports that arrive late and then at once (the scenario suite's
// LateReports): until they come, the node's window is the last one it
// had, not zeros; once its last report is over 3 intervals old the node is
// left out; the burst brings its newest samples back, each at the time it
// was read.
TEST_F(FabricViewBuilderTest, LateReportsKeepTheLastWindowUntilTheyArrive) {
  // port_rcv_data x 4 (the first series) at seq x 1e9 B/s.
  auto rate = [](size_t i, int seq) { return i == 0 ? 1e9 * seq : 1.0; };
  Feed("gpu-0", GpuInventory(), GpuSeries(), 6, rate);
  FabricViewBuilder builder(&store_);
  const analysis::FabricView before = builder.Build(nullptr, 3, clock_.Now());
  const analysis::PortView* nic = before.Find("gpu-0", "mlx5_0");
  ASSERT_NE(nic, nullptr);
  EXPECT_NEAR(nic->s.rx_bytes, 5e9, 5e9 * 1e-6);  // seq 4..6
  EXPECT_EQ(nic->samples.reports, 3);
  const absl::Time last_arrival = clock_.Now();
  // Seq 7 and 8 are read but not delivered: the same window.
  for (int late = 1; late <= 2; ++late) {
    const analysis::FabricView view = builder.Build(
        nullptr, 3, last_arrival + absl::Seconds(late) + absl::Seconds(0.1));
    const analysis::PortView* held = view.Find("gpu-0", "mlx5_0");
    ASSERT_NE(held, nullptr) << late;
    EXPECT_DOUBLE_EQ(held->s.rx_bytes, nic->s.rx_bytes) << late;
    EXPECT_EQ(held->samples.reports, 3) << late;
    EXPECT_DOUBLE_EQ(held->samples.span_seconds, nic->samples.span_seconds);
  }
  // A third interval without a report: left out.
  EXPECT_EQ(builder.Build(nullptr, 3, last_arrival + absl::Seconds(3.1))
                .Find("gpu-0", "mlx5_0"),
            nullptr);
  // Seq 7..9 arrive together, with the times they were read.
  std::shared_ptr<NodeSeries> n = store_.FindNode("gpu-0");
  ASSERT_NE(n, nullptr);
  const std::vector<uint32_t> slots = *n->MapSchema(MakeSchema(GpuSeries()));
  const absl::Time burst = last_arrival + absl::Seconds(3.2);
  for (int seq = 7; seq <= 9; ++seq) {
    ReportView report;
    report.seq = static_cast<uint64_t>(seq);
    report.wall_time_unix_nanos =
        absl::ToUnixNanos(last_arrival + absl::Seconds(seq - 6));
    std::vector<double> rates;
    for (size_t i = 0; i < GpuSeries().size(); ++i) {
      rates.push_back(rate(i, seq));
    }
    report.rates = rates;
    uint64_t held;
    n->Ingest("boot-1", report, slots, burst, &held);
  }
  const analysis::FabricView after =
      builder.Build(nullptr, 3, burst + absl::Seconds(0.1));
  const analysis::PortView* fresh = after.Find("gpu-0", "mlx5_0");
  ASSERT_NE(fresh, nullptr);
  EXPECT_NEAR(fresh->s.rx_bytes, 8e9, 8e9 * 1e-6);  // seq 7..9
  EXPECT_EQ(fresh->samples.reports, 3);
  EXPECT_DOUBLE_EQ(fresh->samples.span_seconds, 3);
  EXPECT_DOUBLE_EQ(fresh->samples.max_interval_seconds, 1);
}

TEST_F(FabricViewBuilderTest, SwitchNodesOfTheTopologyHaveSwitchPorts) {
  v1::Inventory inv;
  for (const char* name : {"swp1", "swp49"}) {
    v1::Netdev* n = inv.add_netdevs();
    n->set_name(name);
    n->set_operstate("up");
    n->set_speed_bytes_per_second(50e9);
  }
  Feed("leaf-0", inv,
       {{v1::SUBSYSTEM_NETDEV_STATISTICS, "swp49", 0, "tx_bytes"},
        {v1::SUBSYSTEM_ETHTOOL, "swp1", 0, "rx_prio3_pause",
         v1::MEANING_PFC_PAUSE_FRAMES, v1::DIRECTION_RX, 3}},
       5, [](size_t i, int) { return i == 0 ? 30e9 : 1000.0; });
  v1::Topology topology;
  topology.add_switches()->set_name("leaf-0");
  FabricViewBuilder builder(&store_);
  analysis::FabricView view = builder.Build(&topology, 5, clock_.Now());
  ASSERT_EQ(view.ports().size(), 2u);
  const analysis::PortView* up = view.Find("leaf-0", "swp49");
  ASSERT_NE(up, nullptr);
  EXPECT_TRUE(up->is_switch_port);
  EXPECT_NEAR(up->s.tx_bytes, 30e9, 30e9 * 1e-7);
  EXPECT_DOUBLE_EQ(view.Find("leaf-0", "swp1")->s.rx_pause_frames[3], 1000);
}

TEST_F(FabricViewBuilderTest, PicksUpANewSchemaAndInventory) {
  Feed("gpu-0", GpuInventory(), GpuSeries(), 3,
       [](size_t, int) { return 1.0; });
  FabricViewBuilder builder(&store_);
  EXPECT_EQ(builder.Build(nullptr, 5, clock_.Now()).ports().size(), 2u);
  // A second NIC appears (hot-plug): new inventory, new schema.
  v1::Inventory inv = GpuInventory();
  v1::RdmaPort* p = inv.add_rdma_ports();
  p->set_device("mlx5_1");
  p->set_port(1);
  p->set_state_id(4);
  std::shared_ptr<NodeSeries> n = store_.FindNode("gpu-0");
  n->SetInventory(inv);
  std::vector<uint32_t> slots = *n->MapSchema(MakeSchema(
      {{v1::SUBSYSTEM_RDMA_PORT_COUNTERS, "mlx5_1", 1, "symbol_error"}}));
  clock_.Advance(absl::Seconds(1));
  const std::vector<double> rates = {3};
  ReportView view;
  view.seq = 4;
  view.wall_time_unix_nanos = absl::ToUnixNanos(clock_.Now());
  view.rates = rates;
  uint64_t held;
  n->Ingest("boot-1", view, slots, clock_.Now(), &held);
  analysis::FabricView v = builder.Build(nullptr, 5, clock_.Now());
  ASSERT_EQ(v.ports().size(), 3u);
  EXPECT_DOUBLE_EQ(v.Find("gpu-0", "mlx5_1")->s.symbol_errors, 3);
}

// Both bitwise the same or both absent.
bool Same(double a, double b) { return (!Has(a) && !Has(b)) || a == b; }

// Every field the builder writes, the same in both views, port for port,
// and found by name in both.
void ExpectSameViews(const analysis::FabricView& got,
                     const analysis::FabricView& want) {
  EXPECT_EQ(got.window_seconds, want.window_seconds);
  ASSERT_EQ(got.ports().size(), want.ports().size());
  for (size_t p = 0; p < want.ports().size(); ++p) {
    const analysis::PortView& a = got.ports()[p];
    const analysis::PortView& b = want.ports()[p];
    SCOPED_TRACE(b.node + " " + b.device);
    EXPECT_EQ(a.node, b.node);
    EXPECT_EQ(a.device, b.device);
    EXPECT_EQ(a.netdev, b.netdev);
    EXPECT_EQ(a.is_switch_port, b.is_switch_port);
    EXPECT_TRUE(Same(a.s.rx_bytes, b.s.rx_bytes));
    EXPECT_TRUE(Same(a.s.tx_bytes, b.s.tx_bytes));
    EXPECT_TRUE(Same(a.s.tx_pause_fraction[3], b.s.tx_pause_fraction[3]));
    EXPECT_TRUE(Same(a.s.symbol_errors, b.s.symbol_errors));
    EXPECT_TRUE(Same(a.s.cnp_sent, b.s.cnp_sent));
    EXPECT_TRUE(Same(a.s.ecn_marked, b.s.ecn_marked));
    EXPECT_TRUE(Same(a.s.carrier_changes, b.s.carrier_changes));
    EXPECT_EQ(a.s.link_rate, b.s.link_rate);
    EXPECT_EQ(a.s.link_up, b.s.link_up);
    EXPECT_EQ(a.samples.reports, b.samples.reports);
    EXPECT_EQ(a.samples.intervals, b.samples.intervals);
    EXPECT_EQ(a.samples.expected_reports, b.samples.expected_reports);
    EXPECT_EQ(a.samples.span_seconds, b.samples.span_seconds);
    EXPECT_EQ(a.samples.max_interval_seconds, b.samples.max_interval_seconds);
    const analysis::PortView* found = got.Find(b.node, b.netdev);
    ASSERT_NE(found, nullptr);
    EXPECT_EQ(found->device, b.device);
  }
}

// A pass builds its window and newest-samples views in one walk; each is
// what building its window alone gives, for nodes with gaps and no-rate
// samples, a switch, and a stale node.
TEST_F(FabricViewBuilderTest, ViewsBuiltTogetherEqualViewsBuiltAlone) {
  Feed("stale-0", GpuInventory(), GpuSeries(), 2,
       [](size_t, int) { return 1.0; });
  clock_.Advance(absl::Seconds(10));
  // Three nodes reporting side by side, each second.
  std::vector<std::shared_ptr<NodeSeries>> nodes;
  std::vector<std::vector<uint32_t>> slots;
  for (int n = 0; n < 3; ++n) {
    nodes.push_back(store_.OpenNode("gpu-" + std::to_string(n)));
    Hello(*nodes.back(), "boot-1");
    nodes.back()->SetInventory(GpuInventory());
    slots.push_back(*nodes.back()->MapSchema(MakeSchema(GpuSeries())));
  }
  for (int seq = 1; seq <= 9; ++seq) {
    clock_.Advance(absl::Seconds(1));
    for (int n = 0; n < 3; ++n) {
      if (n == 1 && seq == 7) continue;  // a missed report
      std::vector<double> rates;
      for (size_t i = 0; i < GpuSeries().size(); ++i) {
        if ((seq + static_cast<int>(i) + n) % 4 == 0) {
          rates.push_back(std::nan(""));
        } else if (seq == 6 && i < 3) {
          rates.push_back(0);  // traffic paused
        } else {
          rates.push_back(1e6 * static_cast<double>((i + 1) * (seq + n)));
        }
      }
      IngestNow(*nodes[n], slots[n], seq, rates);
    }
  }
  v1::Topology topology;
  topology.add_switches()->set_name("gpu-2");
  const std::vector<double> windows = {5, 1, 3};
  FabricViewBuilder together(&store_);
  const std::vector<analysis::FabricView> views =
      together.Build(&topology, windows, clock_.Now());
  ASSERT_EQ(views.size(), windows.size());
  for (size_t w = 0; w < windows.size(); ++w) {
    FabricViewBuilder alone(&store_);
    const analysis::FabricView want =
        alone.Build(&topology, windows[w], clock_.Now());
    SCOPED_TRACE("window " + std::to_string(windows[w]));
    ASSERT_EQ(views[w].ports().size(), 6u);  // 2 per fresh node, none stale
    ExpectSameViews(views[w], want);
  }
  EXPECT_TRUE(views[0].Find("gpu-2", "mlx5_0")->is_switch_port);
  // The windows differ: the newest sample alone is not the 5 s mean.
  EXPECT_NE(views[0].Find("gpu-0", "mlx5_0")->s.rx_bytes,
            views[1].Find("gpu-0", "mlx5_0")->s.rx_bytes);
}

// A view given back is written over by the next build: the same ports as
// a fresh builder's, in its own storage, as nodes come, go and change.
TEST_F(FabricViewBuilderTest, ARecycledViewIsWrittenOverAsAFreshOneIsBuilt) {
  std::vector<std::shared_ptr<NodeSeries>> nodes;
  std::vector<std::vector<uint32_t>> slots;
  const auto open = [&](const std::string& name, const v1::Inventory& inv) {
    nodes.push_back(store_.OpenNode(name));
    Hello(*nodes.back(), "boot-1");
    nodes.back()->SetInventory(inv);
    slots.push_back(*nodes.back()->MapSchema(MakeSchema(GpuSeries())));
  };
  for (int n = 0; n < 3; ++n) open("gpu-" + std::to_string(n), GpuInventory());
  // Each report of every node still in `live`, rates by node and seq.
  int seq = 0;
  const auto report = [&](const std::vector<size_t>& live) {
    ++seq;
    clock_.Advance(absl::Seconds(1));
    for (size_t n : live) {
      std::vector<double> rates;
      for (size_t i = 0; i < GpuSeries().size(); ++i) {
        rates.push_back(1e6 * static_cast<double>((i + 1) * (seq + 3 * n)));
      }
      IngestNow(*nodes[n], slots[n], seq, rates);
    }
  };
  v1::Topology topology;
  topology.add_switches()->set_name("gpu-2");
  const std::vector<double> windows = {3, 1};
  FabricViewBuilder builder(&store_);
  // Builds with `builder`, recycling the last build's views first, and
  // checks them against a fresh builder's.
  std::vector<analysis::FabricView> views;
  const auto build = [&] {
    for (size_t w = 0; w < views.size(); ++w) {
      builder.Recycle(w, std::move(views[w]));
    }
    views = builder.Build(&topology, windows, clock_.Now());
    FabricViewBuilder fresh(&store_);
    const std::vector<analysis::FabricView> want =
        fresh.Build(&topology, windows, clock_.Now());
    for (size_t w = 0; w < windows.size(); ++w) {
      SCOPED_TRACE("window " + std::to_string(windows[w]));
      ExpectSameViews(views[w], want[w]);
    }
  };
  for (int i = 0; i < 4; ++i) report({0, 1, 2});
  build();
  ASSERT_EQ(views[0].ports().size(), 6u);
  const analysis::PortView* const storage = views[0].ports().data();
  // The same nodes, new rates: written over in place.
  report({0, 1, 2});
  build();
  EXPECT_EQ(views[0].ports().data(), storage);
  // Its first series' mean over seqs 3 to 5 (1e6 x (seq + 3)), not 2 to 4.
  EXPECT_EQ(views[0].Find("gpu-1", "mlx5_0")->s.rx_bytes, 1e6 * (4 + 3));
  // gpu-1 goes silent until it is stale, a new node comes.
  for (int i = 0; i < 4; ++i) report({0, 2});
  build();
  EXPECT_EQ(views[0].ports().size(), 4u);
  open("gpu-10", GpuInventory());
  report({0, 2, 3});
  build();
  EXPECT_EQ(views[0].ports().size(), 6u);
  EXPECT_NE(views[0].Find("gpu-10", "eth0"), nullptr);
  // A view of another window length is not used.
  builder.Recycle(0, std::move(views[1]));
  views.clear();
  build();
  EXPECT_EQ(views[0].window_seconds, 3);
  // Nor one of far more ports than the build's (a cluster's whole fabric,
  // merged by its leader): it is freed, not kept for six ports. (Its 656
  // kB of ports are mapped apart from the heap the new view comes from.)
  // Twice the ports it builds is still kept. Returns whether the build
  // wrote over the storage of a 3 s view of `ports` other ports.
  const auto kept = [&](int ports) {
    analysis::FabricView given;
    given.window_seconds = 3;
    for (int p = 0; p < ports; ++p) {
      given.AddPort("far-" + std::to_string(p), "mlx5_0");
    }
    given.Finish();
    const analysis::PortView* const given_storage = given.ports().data();
    views.clear();
    builder.Recycle(0, std::move(given));
    build();
    EXPECT_EQ(views[0].ports().size(), 6u);
    return views[0].ports().data() == given_storage;
  };
  EXPECT_FALSE(kept(1000));
  EXPECT_TRUE(kept(12));
}

TEST(SignalMapTest, ClassifiesDriverSpellingsOntoOneSignal) {
  auto classify = [](v1::Subsystem sub, const char* name) {
    SeriesMeta m;
    m.key = {sub, "x", 1, name};
    m.kind = v1::KIND_COUNTER;
    return ClassifySeries(m).signal;
  };
  EXPECT_EQ(classify(v1::SUBSYSTEM_RDMA_PORT_HW_COUNTERS, "np_cnp_sent"),
            Signal::kCnpSent);
  EXPECT_EQ(classify(v1::SUBSYSTEM_RDMA_DEVICE_HW_COUNTERS, "cnpSent"),
            Signal::kCnpSent);
  EXPECT_EQ(classify(v1::SUBSYSTEM_RDMA_PORT_HW_COUNTERS, "rp_cnp_handled"),
            Signal::kCnpHandled);
  EXPECT_EQ(classify(v1::SUBSYSTEM_RDMA_PORT_COUNTERS, "symbol_error"),
            Signal::kSymbolErrors);
  EXPECT_EQ(classify(v1::SUBSYSTEM_RDMA_PORT_COUNTERS, "made_up"),
            Signal::kNone);
  SeriesMeta gauge;
  gauge.key = {v1::SUBSYSTEM_RDMA_PORT_COUNTERS, "x", 1, "port_rcv_data"};
  gauge.kind = v1::KIND_GAUGE;
  EXPECT_EQ(ClassifySeries(gauge).signal, Signal::kNone);
  // Per-priority ethtool meanings need a valid priority.
  SeriesMeta pause;
  pause.key = {v1::SUBSYSTEM_ETHTOOL, "eth0", 0, "rx_prio9_pause_duration"};
  pause.kind = v1::KIND_COUNTER;
  pause.meaning = v1::MEANING_PFC_PAUSE_DURATION;
  pause.direction = v1::DIRECTION_RX;
  pause.priority = 9;
  EXPECT_EQ(ClassifySeries(pause).signal, Signal::kNone);
  pause.priority = 3;
  EXPECT_EQ(ClassifySeries(pause).signal, Signal::kRxPauseFraction);
}

TEST(SignalMapTest, SameEventsCountedTwiceTakeTheLarger) {
  PortAccumulator acc;
  acc.Add({Signal::kSymbolErrors}, 5);
  acc.Add({Signal::kSymbolErrors}, 7);
  acc.Add({Signal::kRxBytes, -1, Source::kNetdev}, 100);
  acc.Add({Signal::kRxBytes, -1, Source::kPhy}, 900);
  acc.Add({Signal::kRxDiscards, 3}, 2);
  acc.Add({Signal::kRxDiscards, 4}, 3);
  acc.Add({Signal::kRxDiscards}, 4);
  acc.Add({Signal::kCnpSent}, std::nan(""));
  analysis::PortSignals s = acc.Finish();
  EXPECT_EQ(s.symbol_errors, 7);
  EXPECT_EQ(s.rx_bytes, 900);  // phy beats netdev statistics
  EXPECT_EQ(s.rx_discards, 5);
  EXPECT_FALSE(Has(s.cnp_sent));
  EXPECT_FALSE(Has(s.tx_bytes));
}

TEST(SignalMapTest, TrafficTakesTheBestSourceNotTheLargest) {
  PortAccumulator acc;
  acc.Add({Signal::kTxBytes, -1, Source::kPhy}, 900);
  acc.Add({Signal::kTxBytes, -1, Source::kRdma}, 800);
  acc.Add({Signal::kTxBytes, -1, Source::kNetdev}, 10);
  acc.Add({Signal::kRxPauseFraction, 3}, 0.25);
  acc.Add({Signal::kEcnMarked, 1}, 7);  // per priority: summed
  acc.Add({Signal::kEcnMarked, 2}, 8);
  acc.Add({Signal::kEcnMarked}, 10);  // a total: the larger
  analysis::PortSignals s = acc.Finish();
  EXPECT_EQ(s.tx_bytes, 800);
  EXPECT_FALSE(Has(s.rx_bytes));
  EXPECT_EQ(s.rx_pause_fraction[3], 0.25);
  EXPECT_FALSE(Has(s.rx_pause_fraction[2]));
  EXPECT_EQ(s.ecn_marked, 15);
}

// The view builder folds each node's ports in place with one accumulator
// and the folds taken ahead: each port as a fresh accumulator's Finish()
// gives it, nothing carried from the port before.
TEST(SignalMapTest, FoldsInPlaceAsAFreshAccumulatorFinishes) {
  const std::vector<std::vector<std::pair<SignalRef, double>>> ports = {
      {{{Signal::kTxBytes, -1, Source::kPhy}, 900},
       {{Signal::kTxBytes, -1, Source::kRdma}, 800},
       {{Signal::kRxBytes, -1, Source::kNetdev}, 5},
       {{Signal::kEcnMarked, 1}, 7},
       {{Signal::kEcnMarked, 2}, 8},
       {{Signal::kRxPauseFraction, 3}, 0.25},
       {{Signal::kSymbolErrors}, 3},
       {{Signal::kSymbolErrors}, 9},
       {{Signal::kCnpSent}, std::nan("")},
       {{}, 11}},
      // No traffic and no per-priority sum: none of the port before's.
      {{{Signal::kRxDiscards}, 4}, {{Signal::kTxPauseFrames, 7}, 2}},
      {{{Signal::kRxDiscards, 0}, 1},
       {{Signal::kRxDiscards}, 0.5},
       {{Signal::kRxBytes, -1, Source::kRdma}, 70}},
  };
  PortAccumulator in_place;
  for (size_t p = 0; p < ports.size(); ++p) {
    SCOPED_TRACE(p);
    PortAccumulator fresh;
    analysis::PortSignals folded;
    in_place.Reset();
    for (const auto& [ref, value] : ports[p]) {
      fresh.Add(ref, value);
      in_place.Add(PortAccumulator::FoldOf(ref), value, &folded);
    }
    in_place.FinishInto(&folded);
    const analysis::PortSignals want = fresh.Finish();
    for (int slot = 0; slot < counters::kSignalSlots; ++slot) {
      const double got = SlotOf(folded, slot);
      if (std::isnan(SlotOf(want, slot))) {
        EXPECT_TRUE(std::isnan(got)) << "slot " << slot;
      } else {
        EXPECT_EQ(got, SlotOf(want, slot)) << "slot " << slot;
      }
    }
  }
}

TEST(SignalMapTest, SlotOffsetsAreTheSlots) {
  analysis::PortSignals s;
  for (int slot = 0; slot < counters::kSignalSlots; ++slot) {
    analysis::AtSlotOffset(s, analysis::SlotOffset(slot)) = slot + 1000;
  }
  for (int slot = 0; slot < counters::kSignalSlots; ++slot) {
    EXPECT_EQ(SlotOf(s, slot), slot + 1000) << "slot " << slot;
  }
}

// Every meaning the table gives a signal reaches it through
// ClassifySeries, with the direction and priority it needs.
TEST(SignalMapTest, EveryMeaningWithASignalFeedsIt) {
  for (const counters::MeaningSpec& spec : counters::Meanings()) {
    if (spec.signal == Signal::kNone) continue;
    SCOPED_TRACE(spec.name);
    SeriesMeta m;
    m.key = {v1::SUBSYSTEM_ETHTOOL, "eth0", 0, "whatever"};
    m.kind = v1::KIND_COUNTER;
    m.meaning = counters::ToWire(spec.meaning);
    m.direction = v1::DIRECTION_TX;
    m.priority = 5;
    const SignalRef ref = ClassifySeries(m);
    EXPECT_EQ(ref.signal,
              spec.tx_signal != Signal::kNone ? spec.tx_signal : spec.signal);
    EXPECT_EQ(ref.source, spec.source);
    // The value lands in the signal's field of PortSignals.
    PortAccumulator acc;
    acc.Add(ref, 42);
    const analysis::PortSignals s = acc.Finish();
    int slot = static_cast<int>(ref.signal);
    if (counters::IsPerPriority(ref.signal)) slot += 5;
    EXPECT_EQ(SlotOf(s, slot), 42);
  }
}

// The slots are PortSignals' fields, each once.
TEST(SignalMapTest, SlotsAreDistinctFields) {
  analysis::PortSignals s;
  for (int slot = 0; slot < counters::kSignalSlots; ++slot) {
    SlotOf(s, slot) = slot + 1000;
  }
  EXPECT_EQ(s.rx_bytes, 1000);
  EXPECT_EQ(s.cnp_sent, 1004);
  EXPECT_EQ(s.adaptive_retrans, 1026);
  EXPECT_EQ(s.link_rate, 1027);
  EXPECT_EQ(s.expected_rate, 1028);
  EXPECT_EQ(s.rx_pause_fraction[0], 1029);
  EXPECT_EQ(s.tx_pause_frames[7], 1060);
  EXPECT_TRUE(s.link_up);
}

}  // namespace
}  // namespace fabricdiag::collector
