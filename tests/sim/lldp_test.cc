// The simulator's LLDP: the neighbors of hosts and leaves from the
// fabric's cabling, the lldpcli JSON files read back by the agent's real
// parser, the miscabling fault (its checks, and the files while it lasts
// and after), and the virtual agents' inventories.
#include "sim/lldp.h"

#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "agent/lldp_parse.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/scenario.h"
#include "sim/sim_app.h"
#include "sim/virtual_node.h"
#include "tests/sim/sim_test_util.h"

namespace fabricdiag::sim {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// "netdev>system_name:port_id(type)" per neighbor, as the agent parsed it.
std::vector<std::string> Parsed(const std::string& text) {
  absl::StatusOr<agent::LldpParsed> parsed = agent::ParseLldpcliJson(text);
  EXPECT_TRUE(parsed.ok()) << parsed.status() << "\n" << text;
  std::vector<std::string> out;
  if (!parsed.ok()) return out;
  EXPECT_EQ(parsed->issues.missing_field + parsed->issues.invalid_netdev +
                parsed->issues.truncated,
            0u);
  for (const agent::LldpNeighbor& n : parsed->neighbors) {
    out.push_back(n.netdev + ">" + n.system_name + ":" + n.port_id + "(" +
                  n.port_id_type + ")");
  }
  return out;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

Fault Miscabling(const std::string& node, const std::string& nic,
                 const std::string& sw, const std::string& port) {
  Fault f;
  f.kind = FaultKind::kMiscabling;
  f.node = node;
  f.nic = nic;
  f.switch_name = sw;
  f.port = port;
  f.start = 10;
  f.end = 20;
  return f;
}

TEST(SimLldpTest, HostsHearTheirLeafPortsAndLeavesHearHostsAndSpines) {
  const Fabric fabric = testing::BuildFabric();
  const Cabling cabling = CablingAt(fabric, {}, 0);
  const size_t gpu1 = *fabric.FindHost("gpu-001");
  // mlx5_0 is eth0 on leaf-0 swp2, mlx5_1 eth1 on leaf-1 swp2; the other
  // NICs have no link and hear nothing.
  EXPECT_THAT(
      Parsed(LldpcliJson(HostLldpNeighbors(fabric, cabling, gpu1))),
      ElementsAre("eth0>leaf-0:swp2(ifname)", "eth1>leaf-1:swp2(ifname)"));
  const size_t leaf1 = *fabric.FindSwitch("leaf-1");
  const std::vector<v1::LldpNeighbor> leaf =
      SwitchLldpNeighbors(fabric, cabling, leaf1);
  ASSERT_EQ(leaf.size(), 8u);
  EXPECT_EQ(leaf[1].local_port(), "swp2");
  EXPECT_EQ(leaf[1].system_name(), "gpu-001");
  EXPECT_EQ(leaf[1].port_id(), SimMac("gpu-001/eth1"));
  EXPECT_EQ(leaf[1].port_description(), "eth1");
  EXPECT_EQ(leaf[1].chassis_id(), SimMac("gpu-001"));
  // Uplinks: a distinct spine each, on the port of this leaf's index.
  EXPECT_EQ(leaf[4].local_port(), "swp49");
  EXPECT_EQ(leaf[4].system_name(), "spine-0");
  EXPECT_EQ(leaf[4].port_id(), "swp2");
  EXPECT_EQ(leaf[7].system_name(), "spine-3");
  EXPECT_THAT(
      Parsed(LldpcliJson(leaf)),
      ::testing::Contains("swp2>gpu-001:" + SimMac("gpu-001/eth1") + "(mac)"));
}

TEST(SimLldpTest, OneNeighborIsAnObjectAndNoneIsAnEmptyLldp) {
  const std::string one = LldpcliJson({LeafPortNeighbor("eth0", "l", "swp9")});
  EXPECT_THAT(one, HasSubstr("\"interface\": {"));
  EXPECT_THAT(Parsed(one), ElementsAre("eth0>l:swp9(ifname)"));
  const std::string none = LldpcliJson({});
  EXPECT_THAT(Parsed(none), IsEmpty());
  EXPECT_THAT(none, ::testing::Not(HasSubstr("interface")));
}

TEST(SimLldpTest, MacsAreStableLocallyAdministeredAndDistinct) {
  EXPECT_EQ(SimMac("leaf-0"), SimMac("leaf-0"));
  EXPECT_NE(SimMac("leaf-0"), SimMac("leaf-1"));
  EXPECT_THAT(SimMac("leaf-0"),
              ::testing::MatchesRegex("02(:[0-9a-f][0-9a-f]){5}"));
}

TEST(SimLldpTest, MiscablingSwapsTwoCablesOnlyWhileActive) {
  const Fabric fabric = testing::BuildFabric();
  // gpu-000 mlx5_0 (leaf-0 swp1) moves to leaf-1 swp3, where gpu-002
  // mlx5_1 was: that one ends in leaf-0 swp1.
  const std::vector<Fault> faults = {
      Miscabling("gpu-000", "mlx5_0", "leaf-1", "swp3")};
  const Cabling before = CablingAt(fabric, faults, 9.5);
  EXPECT_EQ(before, CablingAt(fabric, {}, 0));
  const Cabling during = CablingAt(fabric, faults, 10);
  const size_t moved = *fabric.FindNic("gpu-000", "mlx5_0");
  const size_t other = *fabric.FindNic("gpu-002", "mlx5_1");
  EXPECT_EQ(during.nic_port[moved], fabric.FindPort("leaf-1", "swp3"));
  EXPECT_EQ(during.nic_port[other], fabric.FindPort("leaf-0", "swp1"));
  EXPECT_EQ(during.port_nic[*fabric.FindPort("leaf-1", "swp3")], moved);
  EXPECT_EQ(CablingAt(fabric, faults, 20), before);
  EXPECT_THAT(
      Parsed(LldpcliJson(
          HostLldpNeighbors(fabric, during, *fabric.FindHost("gpu-000")))),
      ElementsAre("eth0>leaf-1:swp3(ifname)", "eth1>leaf-1:swp1(ifname)"));
  // Without a switch: another port of the NIC's own leaf.
  const Cabling same_leaf =
      CablingAt(fabric, {Miscabling("gpu-000", "mlx5_0", "", "swp4")}, 15);
  EXPECT_EQ(same_leaf.nic_port[moved], fabric.FindPort("leaf-0", "swp4"));
}

absl::Status Validate(const std::string& fault_yaml) {
  absl::StatusOr<Scenario> s = ParseScenario("faults: [" + fault_yaml + "]");
  if (!s.ok()) return s.status();
  return ValidateScenarioNames(*s, testing::BuildFabric());
}

TEST(SimLldpTest, MiscablingFaultsAreChecked) {
  EXPECT_TRUE(Validate("{kind: miscabling, node: gpu-000, nic: mlx5_0, "
                       "port: swp2, start: 1}")
                  .ok());
  EXPECT_TRUE(Validate("{kind: miscabling, node: gpu-000, nic: mlx5_0, "
                       "switch: leaf-1, port: swp2, start: 1}")
                  .ok());
  struct Case {
    const char* yaml;
    const char* message;
  } cases[] = {
      {"{kind: miscabling, node: gpu-000, nic: mlx5_0, start: 1}",
       "faults[0].port: missing (miscabling needs it)"},
      {"{kind: miscabling, node: gpu-000, nic: mlx5_0, port: swp2, "
       "priority: 3, start: 1}",
       "faults[0].priority: not used by miscabling"},
      {"{kind: miscabling, node: gpu-000, nic: mlx5_5, port: swp2, start: 1}",
       "faults[0].nic: gpu-000 mlx5_5 is not cabled"},
      {"{kind: miscabling, node: gpu-000, nic: mlx5_0, port: swp9, start: 1}",
       "faults[0].port: leaf-0 has no port \"swp9\""},
      {"{kind: miscabling, node: gpu-000, nic: mlx5_0, switch: spine-0, "
       "port: swp1, start: 1}",
       "faults[0].switch: unknown switch \"spine-0\""},
      {"{kind: miscabling, node: gpu-000, nic: mlx5_0, port: swp49, start: 1}",
       "faults[0].port: leaf-0 swp49 is an uplink"},
      {"{kind: miscabling, node: gpu-000, nic: mlx5_0, port: swp1, start: 1}",
       "faults[0].port: gpu-000 mlx5_0 is already cabled to leaf-0 swp1"},
  };
  for (const Case& c : cases) {
    const absl::Status st = Validate(c.yaml);
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << c.yaml;
    EXPECT_THAT(st.message(), HasSubstr(c.message)) << c.yaml;
  }
}

// The whole simulator: the files appear with the tree, change when the
// fault starts (host and both leaves), and come back when it ends; the
// counters do not notice.
TEST(SimLldpTest, SimulationWritesTheFilesAndFollowsTheFault) {
  testing::TempDir dir;
  SimConfig config;
  config.layout_files = {dir.Write("l.yaml", testing::kMoeLayout)};
  config.topology_file = dir.Write("t.yaml", testing::kTwoLeaves);
  config.scenario_file = dir.Write(
      "s.yaml",
      "faults: [{kind: miscabling, node: gpu-003, nic: mlx5_0, switch: "
      "leaf-1, port: swp1, start: 2, end: 4}]");
  config.out_dir = dir.path() + "/out";
  absl::StatusOr<std::unique_ptr<Simulation>> sim = Simulation::Create(config);
  ASSERT_TRUE(sim.ok()) << sim.status();
  const std::string host = config.out_dir + "/gpu-003/lldp.json";
  const std::string leaf0 = config.out_dir + "/leaf-0/lldp.json";
  const std::string leaf1 = config.out_dir + "/leaf-1/lldp.json";
  EXPECT_THAT(Parsed(ReadAll(host)), ElementsAre("eth0>leaf-0:swp4(ifname)",
                                                 "eth1>leaf-1:swp4(ifname)"));
  const std::string leaf0_healthy = ReadAll(leaf0);
  const std::string leaf1_healthy = ReadAll(leaf1);
  EXPECT_EQ(Parsed(leaf0_healthy).size(), 8u);  // 4 hosts, 4 spines

  std::ostringstream phases;
  for (int i = 0; i < 3; ++i) ASSERT_TRUE((*sim)->Tick(1.0, &phases).ok());
  EXPECT_THAT(phases.str(), HasSubstr("t=2s miscabling leaf-1 swp1 gpu-003 "
                                      "mlx5_0 starts"));
  EXPECT_THAT(Parsed(ReadAll(host)), ElementsAre("eth0>leaf-1:swp1(ifname)",
                                                 "eth1>leaf-1:swp4(ifname)"));
  EXPECT_THAT(
      Parsed(ReadAll(leaf1)),
      ::testing::Contains("swp1>gpu-003:" + SimMac("gpu-003/eth0") + "(mac)"));
  // gpu-000 mlx5_1 (eth1), which was in leaf-1 swp1, is now in leaf-0 swp4.
  EXPECT_THAT(
      Parsed(ReadAll(leaf0)),
      ::testing::Contains("swp4>gpu-000:" + SimMac("gpu-000/eth1") + "(mac)"));
  EXPECT_THAT(
      Parsed(ReadAll(config.out_dir + "/gpu-000/lldp.json")),
      ElementsAre("eth0>leaf-0:swp1(ifname)", "eth1>leaf-0:swp4(ifname)"));
  // Traffic goes on over the moved cable.
  const size_t nic = *(*sim)->fabric().FindNic("gpu-003", "mlx5_0");
  const uint64_t tx = (*sim)->nic_counters()[nic].value[kTxBytes];
  EXPECT_GT(tx, 0u);

  for (int i = 0; i < 2; ++i) ASSERT_TRUE((*sim)->Tick(1.0, &phases).ok());
  EXPECT_THAT(phases.str(), HasSubstr("mlx5_0 ends"));
  EXPECT_THAT(Parsed(ReadAll(host)), ElementsAre("eth0>leaf-0:swp4(ifname)",
                                                 "eth1>leaf-1:swp4(ifname)"));
  EXPECT_EQ(ReadAll(leaf0), leaf0_healthy);
  EXPECT_EQ(ReadAll(leaf1), leaf1_healthy);
}

TEST(SimLldpTest, VirtualAgentsHearTheirLeaf) {
  v1::Inventory inv;
  AddVirtualLldp(/*index=*/5, /*nics=*/2, /*hosts_per_leaf=*/4, "vnode-leaf-",
                 &inv);
  EXPECT_EQ(inv.lldp_source(), "file");
  ASSERT_EQ(inv.lldp_neighbors_size(), 2);
  // Node 5 is the second behind leaf 1: ports swp3 and swp4.
  EXPECT_EQ(inv.lldp_neighbors(0).local_port(), "eth0");
  EXPECT_EQ(inv.lldp_neighbors(0).system_name(), "vnode-leaf-00001");
  EXPECT_EQ(inv.lldp_neighbors(0).port_id(), "swp3");
  EXPECT_EQ(inv.lldp_neighbors(1).port_id(), "swp4");
  EXPECT_EQ(inv.lldp_neighbors(1).chassis_id(), SimMac("vnode-leaf-00001"));
  // The same neighbors a file of the simulator would give the agent.
  EXPECT_THAT(Parsed(LldpcliJson(
                  {inv.lldp_neighbors().begin(), inv.lldp_neighbors().end()})),
              ElementsAre("eth0>vnode-leaf-00001:swp3(ifname)",
                          "eth1>vnode-leaf-00001:swp4(ifname)"));
}

}  // namespace
}  // namespace fabricdiag::sim
