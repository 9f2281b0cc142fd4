// THE test of the simulator: the trees it writes are read back with the
// agent's own sources, exactly as `fabricdiag-agent --sysfs_root=OUT/N/sys
// --ethtool_dir=OUT/N/ethtool` reads them.
#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "agent/device_links.h"
#include "agent/ethtool_source.h"
#include "agent/netdev_source.h"
#include "agent/rdma_sysfs_source.h"
#include "agent/sample.h"
#include "agent/sysfs_reader.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/scenario_agents.h"
#include "sim/sim_app.h"
#include "tests/sim/sim_test_util.h"

namespace fabricdiag::sim {
namespace {

using agent::Direction;
using agent::EthtoolSource;
using agent::EthtoolTextDir;
using agent::Meaning;
using agent::NetdevSource;
using agent::RdmaSysfsSource;
using agent::Sample;
using agent::Snapshot;
using agent::Subsystem;
using agent::SysfsReader;
using ::testing::ElementsAre;

// One agent on one simulated node: its sources wired as the agent wires
// them.
class AgentOnNode {
 public:
  AgentOnNode(const TreeWriter& writer, const std::string& node)
      : reader_(writer.SysfsRoot(node), NoCache()),
        rdma_(&reader_),
        netdev_(*NetdevSource::Create(&reader_)),
        ethtool_(EthtoolTextDir{writer.EthtoolDir(node)}, {}) {}

  Snapshot Collect() {
    Snapshot snap;
    for (agent::Source* s : {static_cast<agent::Source*>(&rdma_),
                             static_cast<agent::Source*>(netdev_.get())}) {
      Check(s->name(), s->Collect(&snap));
    }
    agent::LinkNetdevsToRdma(&snap);
    Check(ethtool_.name(), ethtool_.Collect(snap.netdevs, &snap));
    return snap;
  }

 private:
  static void Check(absl::string_view source, const agent::SourceStatus& st) {
    EXPECT_TRUE(st.ok) << source << ": " << st.last_error;
    EXPECT_EQ(st.errors, 0) << source << ": " << st.last_error;
  }
  static SysfsReader::Options NoCache() {
    SysfsReader::Options o;
    o.cache_policy = agent::FdCachePolicy::kNever;
    return o;
  }
  SysfsReader reader_;
  RdmaSysfsSource rdma_;
  std::unique_ptr<NetdevSource> netdev_;
  EthtoolSource ethtool_;
};

const Sample* Find(const Snapshot& snap, Subsystem subsystem,
                   const std::string& device, const std::string& name) {
  for (const Sample& s : snap.samples) {
    if (s.desc->subsystem == subsystem && s.desc->device == device &&
        s.desc->name == name) {
      return &s;
    }
  }
  return nullptr;
}

class AgentReadbackTest : public ::testing::Test {
 protected:
  // Two hosts on one leaf keep the tree small: the disk may be shared and
  // busy.
  static constexpr char kOneLeaf[] = R"(
switches:
  - {name: leaf-0, uplinks: [swp49, swp50]}
links:
  - {host: gpu-000, nic: mlx5_2, switch: leaf-0, port: swp1}
  - {host: gpu-001, nic: mlx5_2, switch: leaf-0, port: swp2}
)";

  std::unique_ptr<Simulation> Start(const std::string& scenario,
                                    const char* topology = kOneLeaf) {
    SimConfig& config = config_;
    config.layout_files = {dir_.Write("layout.yaml", R"(
job: small
gpus_per_node: 8
parallelism: {tp: 8, pp: 1, dp: 2}
hosts: [gpu-000, gpu-001]
rails: [mlx5_0, mlx5_1, mlx5_2, mlx5_3, mlx5_4, mlx5_5, mlx5_6, mlx5_7]
)")};
    config.topology_file = dir_.Write("topology.yaml", topology);
    config.scenario_file = dir_.Write("scenario.yaml", scenario);
    config.out_dir = dir_.path() + "/out";
    auto sim = Simulation::Create(config);
    EXPECT_TRUE(sim.ok()) << sim.status();
    return sim.ok() ? *std::move(sim) : nullptr;
  }

  // Node `node`'s report of `traffic` against `snap`, what the agent read
  // from the tree at the same time: every series the agent reads holds the
  // same raw value, every counter's rate is its increase since `before`
  // (the raw values of the last call; updated).
  static void ExpectReportReadsAsTree(const ScenarioTraffic& traffic,
                                      size_t node, const Snapshot& snap,
                                      int tick, std::vector<uint64_t>* before) {
    const v1::Schema& schema = traffic.Schema(node).schema();
    v1::Report report;
    traffic.FillReport(node, &report);
    ASSERT_EQ(report.raw_size(), schema.series_size());
    int compared = 0;
    int rate = 0;
    for (int i = 0; i < schema.series_size(); ++i) {
      const v1::Series& series = schema.series(i);
      const bool counter = series.kind() == v1::KIND_COUNTER;
      const Sample* read =
          Find(snap, static_cast<Subsystem>(series.subsystem()),
               series.device(), series.name());
      if (read != nullptr) {
        EXPECT_EQ(report.raw(i), read->raw)
            << "tick " << tick << " " << series.device() << " "
            << series.name();
        ++compared;
      }
      if (!counter) continue;
      if (!before->empty()) {
        // Unwrapped in four ticks: the rate is the increase, in base units.
        const double moved = static_cast<double>(report.raw(i) - (*before)[i]) *
                             (series.scale() > 0 ? series.scale() : 1);
        EXPECT_NEAR(report.rate(rate), moved, 1e-6 * std::max(1.0, moved))
            << "tick " << tick << " " << series.device() << " "
            << series.name();
      }
      ++rate;
    }
    before->assign(report.raw().begin(), report.raw().end());
    // Every series the report carries is one the agent reads, but for the
    // gauges it derives from files the tree names differently.
    EXPECT_GE(compared, schema.series_size() * 95 / 100) << "tick " << tick;
  }

  testing::TempDir dir_;
  SimConfig config_;  // of the last Start()
};

// The virtual agents' scenario traffic (sim/scenario_agents.h) on the same
// inputs and seed as a tree: every series of a host's report holds what the
// agent reads from the tree, tick after tick, faults included, and its
// rates are what moved.
TEST_F(AgentReadbackTest, ScenarioAgentsSendWhatTheAgentReadsFromTheTree) {
  auto sim = Start(
      "faults: [{kind: pfc_storm, node: gpu-001, nic: mlx5_2, start: 0},"
      " {kind: link_errors, node: gpu-001, nic: mlx5_4, start: 1},"
      " {kind: half_speed, node: gpu-001, nic: mlx5_5, start: 1},"
      " {kind: link_flap, node: gpu-001, nic: mlx5_6, start: 0, period: 2}]");
  ASSERT_NE(sim, nullptr);
  absl::StatusOr<SimInputs> inputs = LoadSimInputs(config_);
  ASSERT_TRUE(inputs.ok()) << inputs.status();
  absl::StatusOr<std::unique_ptr<ScenarioTraffic>> traffic =
      ScenarioTraffic::Create(std::move(inputs->fabric),
                              std::move(inputs->scenario), config_.seed);
  ASSERT_TRUE(traffic.ok()) << traffic.status();
  size_t host = 0;
  while ((*traffic)->NodeName(host) != "gpu-001") ++host;

  AgentOnNode agent(sim->writer(), "gpu-001");
  uint64_t inventories = 0;
  std::vector<uint64_t> before;
  for (int tick = 0; tick < 4; ++tick) {
    ASSERT_TRUE(sim->Tick(1.0, nullptr).ok());
    (*traffic)->Advance(1.0);
    ExpectReportReadsAsTree(**traffic, host, agent.Collect(), tick, &before);
    uint64_t version = 0;
    const std::shared_ptr<const v1::AgentMessage> inventory =
        (*traffic)->Inventory(host, &version);
    inventories = version;
    for (const v1::RdmaPort& port : inventory->inventory().rdma_ports()) {
      if (port.device() == "mlx5_5" && tick >= 1) {
        EXPECT_DOUBLE_EQ(port.rate_bytes_per_second(), 25e9);
      }
      if (port.device() == "mlx5_6") {
        // Down in the first half of each 2 s period: ticks 0 and 2.
        EXPECT_EQ(port.state(), tick % 2 == 0 ? "DOWN" : "ACTIVE")
            << "tick " << tick;
      }
    }
  }
  // The flapping link and the slow one changed the inventory each tick.
  EXPECT_EQ(inventories, 5u);
}

// The rate of series `name` of `device` in a report of `schema`; -1 when
// the schema has no such counter.
double RateOf(const v1::Schema& schema, const v1::Report& report,
              const std::string& device, const std::string& name) {
  int rate = 0;
  for (const v1::Series& series : schema.series()) {
    if (series.kind() != v1::KIND_COUNTER) continue;
    if (series.device() == device && series.name() == name) {
      return report.rate(rate);
    }
    ++rate;
  }
  return -1;
}

// The same for a switch's agent: its ports' netdev and `ethtool -S`
// counters, and an Inventory that follows the links of the hosts behind it.
TEST_F(AgentReadbackTest,
       ScenarioSwitchAgentsSendWhatTheAgentReadsFromTheTree) {
  auto sim = Start(
      "faults: [{kind: pfc_storm, node: gpu-001, nic: mlx5_2, start: 0},"
      " {kind: link_flap, node: gpu-000, nic: mlx5_2, start: 0, period: 2},"
      " {kind: ecmp_polarization, switch: leaf-0, start: 0}]",
      // A second leaf: some of leaf-0's traffic leaves over its uplinks.
      R"(
switches:
  - {name: leaf-0, uplinks: [swp49, swp50]}
  - {name: leaf-1, uplinks: [swp49, swp50]}
links:
  - {host: gpu-000, nic: mlx5_2, switch: leaf-0, port: swp1}
  - {host: gpu-001, nic: mlx5_2, switch: leaf-0, port: swp2}
  - {host: gpu-000, nic: mlx5_3, switch: leaf-1, port: swp1}
  - {host: gpu-001, nic: mlx5_3, switch: leaf-1, port: swp2}
)");
  ASSERT_NE(sim, nullptr);
  absl::StatusOr<SimInputs> inputs = LoadSimInputs(config_);
  ASSERT_TRUE(inputs.ok()) << inputs.status();
  ScenarioAgents which;
  which.hosts = 3;
  which.switches = true;
  absl::StatusOr<std::unique_ptr<ScenarioTraffic>> traffic =
      ScenarioTraffic::Create(std::move(inputs->fabric),
                              std::move(inputs->scenario), config_.seed, which);
  EXPECT_EQ(traffic.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(traffic.status().message(),
              ::testing::HasSubstr("3 host agents, but the simulated fabric "
                                   "has 2 hosts"));
  inputs = LoadSimInputs(config_);
  ASSERT_TRUE(inputs.ok()) << inputs.status();
  which.hosts = 1;
  traffic =
      ScenarioTraffic::Create(std::move(inputs->fabric),
                              std::move(inputs->scenario), config_.seed, which);
  ASSERT_TRUE(traffic.ok()) << traffic.status();
  ASSERT_EQ((*traffic)->num_nodes(), 3u);
  EXPECT_EQ((*traffic)->num_hosts(), 1u);
  EXPECT_EQ((*traffic)->NodeName(0), "gpu-000");
  ASSERT_EQ((*traffic)->NodeName(1), "leaf-0");
  EXPECT_EQ((*traffic)->NodeName(2), "leaf-1");
  const v1::Schema& schema = (*traffic)->Schema(1).schema();
  uint64_t version = 0;
  const v1::Inventory& at_start =
      (*traffic)->Inventory(1, &version)->inventory();
  EXPECT_TRUE(at_start.rdma_ports().empty());
  std::vector<std::string> ports;
  for (const v1::Netdev& n : at_start.netdevs()) ports.push_back(n.name());
  EXPECT_THAT(ports, ElementsAre("swp1", "swp2", "swp49", "swp50"));
  std::vector<std::string> heard;
  for (const v1::LldpNeighbor& n : at_start.lldp_neighbors()) {
    heard.push_back(n.local_port() + " " + n.system_name());
  }
  EXPECT_THAT(heard, ::testing::IsSupersetOf({"swp1 gpu-000", "swp2 gpu-001"}));

  AgentOnNode leaf(sim->writer(), "leaf-0");
  std::vector<uint64_t> before;
  for (int tick = 0; tick < 4; ++tick) {
    ASSERT_TRUE(sim->Tick(1.0, nullptr).ok());
    (*traffic)->Advance(1.0);
    ExpectReportReadsAsTree(**traffic, 1, leaf.Collect(), tick, &before);
    const v1::Inventory& inventory =
        (*traffic)->Inventory(1, &version)->inventory();
    for (const v1::Netdev& n : inventory.netdevs()) {
      if (n.name() == "swp1") {
        // Down with its host's NIC in the first half of each period.
        EXPECT_EQ(n.operstate(), tick % 2 == 0 ? "down" : "up")
            << "tick " << tick;
      }
    }
    if (tick == 0) continue;
    v1::Report report;
    (*traffic)->FillReport(1, &report);
    // The port facing the storm receives its pause; the flows pile onto
    // one of the two uplinks.
    EXPECT_GT(RateOf(schema, report, "swp2", "rx_prio3_pause_duration"), 0.9)
        << "tick " << tick;
    const double up1 = RateOf(schema, report, "swp49", "tx_bytes");
    const double up2 = RateOf(schema, report, "swp50", "tx_bytes");
    ASSERT_GT(std::min(up1, up2), 0) << "tick " << tick;
    EXPECT_GT(std::max(up1, up2) / std::min(up1, up2), 1.5) << "tick " << tick;
  }
  // The flapping port changed the switch's inventory each tick.
  EXPECT_EQ(version, 5u);
}

TEST_F(AgentReadbackTest, AgentSeesDevicesCountersAndPfc) {
  auto sim = Start(
      "faults: [{kind: pfc_storm, node: gpu-001, nic: mlx5_2, start: 0}]");
  ASSERT_NE(sim, nullptr);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(sim->Tick(1.0, nullptr).ok());

  AgentOnNode host(sim->writer(), "gpu-001");
  Snapshot snap = host.Collect();

  std::vector<std::string> devices;
  for (const auto& d : snap.rdma_devices) devices.push_back(d.name);
  EXPECT_THAT(devices, ElementsAre("mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3",
                                   "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_7"));
  // The RoCE port and its netdev, both ways.
  const agent::RdmaPortInfo* port = nullptr;
  for (const auto& p : snap.rdma_ports) {
    if (p.device == "mlx5_2") port = &p;
  }
  ASSERT_NE(port, nullptr);
  EXPECT_EQ(port->port, 1u);
  EXPECT_EQ(port->link_layer, "Ethernet");
  EXPECT_EQ(port->state_id, 4);
  EXPECT_EQ(port->phys_state, "LinkUp");
  EXPECT_THAT(port->netdevs, ElementsAre("eth2"));
  ASSERT_TRUE(port->rate_bytes_per_second.has_value());
  EXPECT_DOUBLE_EQ(*port->rate_bytes_per_second, 50e9);
  const agent::NetdevInfo* eth2 = nullptr;
  for (const auto& n : snap.netdevs) {
    if (n.name == "eth2") eth2 = &n;
  }
  ASSERT_NE(eth2, nullptr);
  EXPECT_EQ(eth2->rdma_device, "mlx5_2");
  EXPECT_EQ(eth2->rdma_port, 1u);
  EXPECT_EQ(eth2->operstate, "up");

  // port_rcv_data: 4-octet words, scaled x4 into bytes by the agent.
  const size_t nic = *sim->fabric().FindNic("gpu-001", "mlx5_3");
  const PortCounters& c = sim->nic_counters()[nic];
  const Sample* rcv =
      Find(snap, Subsystem::kRdmaPortCounters, "mlx5_3", "port_rcv_data");
  ASSERT_NE(rcv, nullptr);
  EXPECT_EQ(rcv->raw, c.value[kRxBytes] / 4);
  EXPECT_EQ(rcv->desc->scale, 4.0);
  EXPECT_DOUBLE_EQ(rcv->BaseValue(),
                   static_cast<double>(c.value[kRxBytes] / 4 * 4));
  EXPECT_GT(rcv->BaseValue(), 3 * 1e9);  // 3 s at ~10 GB/s
  const Sample* cnp =
      Find(snap, Subsystem::kRdmaPortHwCounters, "mlx5_3", "np_cnp_sent");
  ASSERT_NE(cnp, nullptr);
  EXPECT_EQ(cnp->raw, c.value[kNpCnpSent]);
  const Sample* oos =
      Find(snap, Subsystem::kRdmaPortHwCounters, "mlx5_3", "out_of_sequence");
  ASSERT_NE(oos, nullptr);
  EXPECT_EQ(oos->desc->width_bits, 32u);
  EXPECT_EQ(Find(snap, Subsystem::kRdmaPortHwCounters, "mlx5_3", "lifespan"),
            nullptr);
  const Sample* speed =
      Find(snap, Subsystem::kNetdevAttribute, "eth3", "speed_bytes_per_second");
  ASSERT_NE(speed, nullptr);
  EXPECT_EQ(speed->raw, 50'000'000'000u);

  // ethtool: the storm NIC's tx pause on priority 3, with its meaning.
  const Sample* pause =
      Find(snap, Subsystem::kEthtool, "eth2", "tx_prio3_pause_duration");
  ASSERT_NE(pause, nullptr);
  EXPECT_EQ(pause->desc->meaning, Meaning::kPfcPauseDuration);
  EXPECT_EQ(pause->desc->direction, Direction::kTx);
  EXPECT_EQ(pause->desc->priority, 3);
  EXPECT_GE(pause->BaseValue(), 0.9 * 3);  // seconds paused of 3
  EXPECT_LE(pause->BaseValue(), 3.0);
  const Sample* frames =
      Find(snap, Subsystem::kEthtool, "eth2", "rx_prio5_pause");
  ASSERT_NE(frames, nullptr);
  EXPECT_EQ(frames->desc->meaning, Meaning::kPfcPauseFrames);
  EXPECT_EQ(frames->desc->direction, Direction::kRx);
  EXPECT_EQ(frames->desc->priority, 5);
  const Sample* phy = Find(snap, Subsystem::kEthtool, "eth3", "rx_bytes_phy");
  ASSERT_NE(phy, nullptr);
  EXPECT_EQ(phy->desc->meaning, Meaning::kPhyBytes);
  EXPECT_EQ(phy->raw, c.value[kRxBytes]);
  const Sample* storm =
      Find(snap, Subsystem::kEthtool, "eth2", "tx_pause_storm_warning_events");
  ASSERT_NE(storm, nullptr);
  EXPECT_EQ(storm->desc->meaning, Meaning::kPauseStormWarning);
  EXPECT_GE(storm->raw, 1u);

  // The switch: its port facing the stuck NIC receives that pause.
  AgentOnNode leaf(sim->writer(), "leaf-0");
  Snapshot sw = leaf.Collect();
  EXPECT_TRUE(sw.rdma_devices.empty());
  std::vector<std::string> ports;
  for (const auto& n : sw.netdevs) ports.push_back(n.name);
  EXPECT_THAT(ports, ElementsAre("swp1", "swp2", "swp49", "swp50"));
  const Sample* rx_pause =
      Find(sw, Subsystem::kEthtool, "swp2", "rx_prio3_pause_duration");
  ASSERT_NE(rx_pause, nullptr);
  EXPECT_EQ(rx_pause->desc->direction, Direction::kRx);
  EXPECT_GE(rx_pause->BaseValue(), 0.9 * 3);
  const Sample* rx_bytes =
      Find(sw, Subsystem::kNetdevStatistics, "swp1", "rx_bytes");
  ASSERT_NE(rx_bytes, nullptr);
  // Port RX = the host NIC's TX.
  const size_t nic0 = *sim->fabric().FindNic("gpu-000", "mlx5_2");
  EXPECT_EQ(rx_bytes->raw, sim->nic_counters()[nic0].value[kTxBytes]);
}

TEST_F(AgentReadbackTest, FlapAndVanishedNicAsTheAgentSeesThem) {
  auto sim = Start(R"(faults:
  - {kind: link_flap, node: gpu-000, nic: mlx5_2, start: 0, end: 4, period: 4}
  - {kind: nic_gone, node: gpu-000, nic: mlx5_5, start: 1, end: 2})");
  ASSERT_NE(sim, nullptr);
  AgentOnNode host(sim->writer(), "gpu-000");
  ASSERT_TRUE(sim->Tick(1.0, nullptr).ok());  // t=0: down, mlx5_5 present

  Snapshot down = host.Collect();
  const agent::RdmaPortInfo* port = nullptr;
  for (const auto& p : down.rdma_ports) {
    if (p.device == "mlx5_2") port = &p;
  }
  ASSERT_NE(port, nullptr);
  EXPECT_EQ(port->state_id, 1);
  for (const auto& n : down.netdevs) {
    if (n.name == "eth2") {
      EXPECT_EQ(n.operstate, "down");
    }
  }
  // speed reads -1 while the link is down: absent, not 0.
  EXPECT_EQ(
      Find(down, Subsystem::kNetdevAttribute, "eth2", "speed_bytes_per_second"),
      nullptr);
  const Sample* changes =
      Find(down, Subsystem::kNetdevAttribute, "eth2", "carrier_changes");
  ASSERT_NE(changes, nullptr);
  EXPECT_EQ(changes->raw, 1u);

  ASSERT_TRUE(sim->Tick(1.0, nullptr).ok());  // t=1: mlx5_5 gone
  Snapshot gone = host.Collect();
  for (const auto& d : gone.rdma_devices) EXPECT_NE(d.name, "mlx5_5");
  for (const auto& n : gone.netdevs) EXPECT_NE(n.name, "eth5");
  EXPECT_EQ(Find(gone, Subsystem::kEthtool, "eth5", "rx_bytes_phy"), nullptr);

  ASSERT_TRUE(sim->Tick(1.0, nullptr).ok());  // t=2: up again, mlx5_5 back
  ASSERT_TRUE(sim->Tick(1.0, nullptr).ok());  // t=3
  Snapshot back = host.Collect();
  const Sample* downed =
      Find(back, Subsystem::kRdmaPortCounters, "mlx5_2", "link_downed");
  ASSERT_NE(downed, nullptr);
  EXPECT_EQ(downed->raw, 1u);
  const Sample* events =
      Find(back, Subsystem::kEthtool, "eth2", "link_down_events_phy");
  ASSERT_NE(events, nullptr);
  EXPECT_EQ(events->desc->meaning, Meaning::kLinkDownEvents);
  EXPECT_EQ(events->raw, 1u);
  changes = Find(back, Subsystem::kNetdevAttribute, "eth2", "carrier_changes");
  ASSERT_NE(changes, nullptr);
  EXPECT_EQ(changes->raw, 2u);
  // Recreated from zero: two ticks of traffic, not four.
  const Sample* rcv =
      Find(back, Subsystem::kRdmaPortCounters, "mlx5_5", "port_rcv_data");
  ASSERT_NE(rcv, nullptr);
  const Sample* other =
      Find(back, Subsystem::kRdmaPortCounters, "mlx5_6", "port_rcv_data");
  ASSERT_NE(other, nullptr);
  EXPECT_LT(rcv->raw, other->raw * 3 / 4);
  EXPECT_GT(rcv->raw, 0u);
}

TEST_F(AgentReadbackTest, NoTemporaryFilesInTheTree) {
  auto sim = Start("");
  ASSERT_NE(sim, nullptr);
  ASSERT_TRUE(sim->Tick(1.0, nullptr).ok());
  for (const auto& e : std::filesystem::recursive_directory_iterator(
           dir_.path() + "/out/gpu-000")) {
    const std::string name = e.path().filename().string();
    EXPECT_NE(name[0], '.') << e.path();
  }
  // Unchanged files are not rewritten: a second tick writes less.
  const uint64_t first = sim->writer().files_written();
  ASSERT_TRUE(sim->Tick(1.0, nullptr).ok());
  EXPECT_LT(sim->writer().files_written() - first, first / 2);
}

TEST(SimulationTest, PrintsPhaseChanges) {
  testing::TempDir dir;
  SimConfig config;
  config.layout_files = {dir.Write("l.yaml", testing::kMoeLayout)};
  config.scenario_file = dir.Write(
      "s.yaml",
      "faults: [{kind: hot_expert, node: gpu-003, nic: mlx5_2, start: 2, "
      "end: 4}]");
  config.out_dir = dir.path() + "/out";
  config.ticks = 6;
  FakeClock clock;
  struct NeverWaits : Waiter {
    bool WaitUntil(int64_t) override { return false; }
  } waiter;
  std::ostringstream out, err;
  EXPECT_EQ(RunSim(config, clock, &waiter, out, err), 0) << err.str();
  EXPECT_EQ(out.str(),
            "t=2s hot_expert gpu-003 mlx5_2 starts\n"
            "t=4s hot_expert gpu-003 mlx5_2 ends\n");
}

// Ticks in real time until the duration. Agents read on the wall clock's
// grid of their interval: the simulator writes half an interval away from
// it, so that no read races a write, whenever it started and however late
// a tick ran.
TEST(SimulationTest, RealTimeLoopTicksBetweenTheAgentsReadsUntilDuration) {
  testing::TempDir dir;
  SimConfig config;
  config.layout_files = {dir.Write("l.yaml", testing::kMoeLayout)};
  config.out_dir = dir.path() + "/out";
  config.duration = absl::Seconds(3);
  FakeClock clock;
  clock.Advance(absl::Milliseconds(130));  // started off the grid
  // Each wait moves the clock to its deadline plus 200 ms of lateness.
  struct LateWaiter : Waiter {
    FakeClock* clock;
    std::vector<int64_t> phases_ms;  // of each deadline, on the wall clock
    bool WaitUntil(int64_t deadline) override {
      clock->Advance(absl::Nanoseconds(deadline - clock->MonotonicNanos()));
      phases_ms.push_back(absl::ToUnixMillis(clock->Now()) % 1000);
      clock->Advance(absl::Milliseconds(200));
      return false;
    }
  } waiter;
  waiter.clock = &clock;
  std::ostringstream out, err;
  EXPECT_EQ(RunSim(config, clock, &waiter, out, err), 0) << err.str();
  // At 0.5, 1.5, 2.5 and 3.5 s of the wall clock's seconds (each run 200
  // ms late); the last one is cut at the duration.
  EXPECT_THAT(waiter.phases_ms, ::testing::ElementsAre(500, 500, 500, 500));
  // Where its clock started, on the wall clock (FakeClock starts at unix
  // 1795000000).
  EXPECT_THAT(err.str(),
              ::testing::HasSubstr("fabricdiag-sim: t=0 at 2026-11-18T"
                                   "11:06:40.130Z (unix 1795000000.130)\n"));
}

TEST(SimulationTest, SignalStopsTheLoop) {
  testing::TempDir dir;
  SimConfig config;
  config.layout_files = {dir.Write("l.yaml", testing::kMoeLayout)};
  config.out_dir = dir.path() + "/out";
  FakeClock clock;
  struct StopAtOnce : Waiter {
    bool WaitUntil(int64_t) override { return true; }
  } waiter;
  std::ostringstream out, err;
  EXPECT_EQ(RunSim(config, clock, &waiter, out, err), 0);
}

}  // namespace
}  // namespace fabricdiag::sim
