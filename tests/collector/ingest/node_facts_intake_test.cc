#include "collector/ingest/node_facts_intake.h"

#include <gtest/gtest.h>

#include "collector/declared/file_declared_state.h"
#include "collector/declared/layout_registry.h"
#include "collector/state/state_store.h"
#include "common/clock.h"
#include "tests/testing/temp_dir.h"

namespace fabricdiag::collector {
namespace {

TEST(FactsOfInventoryTest, NeighborsOnlyWithASourceAndPairsOnlyWhenRead) {
  v1::Inventory inv;
  v1::LldpNeighbor* n = inv.add_lldp_neighbors();
  n->set_local_port("eth0");
  n->set_port_id("swp1");
  inv.add_gpu_nics()->set_device("mlx5_0");
  v1::NodeFacts f =
      FactsOfInventory("gpu-1", true, inv, absl::FromUnixNanos(42));
  EXPECT_EQ(f.node(), "gpu-1");
  EXPECT_TRUE(f.is_switch());
  EXPECT_EQ(f.reported_unix_nanos(), 42);
  EXPECT_EQ(f.lldp_neighbors_size(), 0);  // no lldp_source: not a read
  EXPECT_EQ(f.gpu_nics_size(), 0);        // gpus_read false
  inv.set_lldp_source("file");
  inv.set_gpus_read(true);
  f = FactsOfInventory("gpu-1", false, inv, absl::FromUnixNanos(42));
  EXPECT_EQ(f.lldp_source(), "file");
  EXPECT_EQ(f.lldp_neighbors_size(), 1);
  EXPECT_EQ(f.gpu_nics_size(), 1);
}

TEST(FactsOfInventoryTest, AnAgentWithNetdevsAndNoRdmaDeviceIsASwitch) {
  v1::Inventory inv;
  inv.add_netdevs()->set_name("swp1");
  inv.add_netdevs()->set_name("swp2");
  EXPECT_TRUE(FactsOfInventory("leaf-0", false, inv, absl::Time()).is_switch());
  // A host: its netdev names its RDMA device.
  v1::Netdev* eth = inv.add_netdevs();
  eth->set_name("eth0");
  eth->set_rdma_device("mlx5_0");
  EXPECT_FALSE(FactsOfInventory("gpu-1", false, inv, absl::Time()).is_switch());
  // An inventory without netdevs says nothing of the node's kind.
  EXPECT_FALSE(FactsOfInventory("gpu-1", false, v1::Inventory(), absl::Time())
                   .is_switch());
}

TEST(FactsOfInventoryTest, NetdevsNameTheirRdmaDevice) {
  v1::Inventory inv;
  v1::RdmaPort* p = inv.add_rdma_ports();
  p->set_device("mlx5_0");
  p->add_netdevs("eth0");
  p->add_netdevs("eth9");
  v1::Netdev* nd = inv.add_netdevs();
  nd->set_name("eth9");
  nd->set_rdma_device("mlx5_9");      // the netdev's own link wins
  inv.add_netdevs()->set_name("lo");  // no RDMA device: left out
  v1::NodeFacts f = FactsOfInventory("gpu-1", false, inv, absl::Time());
  EXPECT_EQ(f.rdma_device_of_netdev().size(), 2u);
  EXPECT_EQ(f.rdma_device_of_netdev().at("eth0"), "mlx5_0");
  EXPECT_EQ(f.rdma_device_of_netdev().at("eth9"), "mlx5_9");
}

TEST(TopologySwitchesTest, FollowsTheAppliedTopology) {
  fabricdiag::testing::TempDir dir;
  FakeClock clock;
  absl::StatusOr<std::unique_ptr<StateStore>> state =
      StateStore::Open(dir.path(), &clock);
  ASSERT_TRUE(state.ok()) << state.status();
  FileDeclaredState declared(state->get());
  LayoutRegistry registry(&declared, &clock);
  TopologySwitches switches(registry);
  EXPECT_FALSE(switches.IsSwitch("leaf-0"));  // no topology yet
  v1::Topology topology;
  topology.add_switches()->set_name("leaf-0");
  v1::Link* link = topology.add_links();
  link->set_host("gpu-0");
  link->set_nic("mlx5_0");
  link->set_switch_("leaf-0");
  link->set_port("swp1");
  ASSERT_TRUE(registry.ApplyTopology(topology).ok());
  EXPECT_TRUE(switches.IsSwitch("leaf-0"));
  EXPECT_FALSE(switches.IsSwitch("gpu-0"));
  topology.mutable_switches(0)->set_name("leaf-1");
  topology.mutable_links(0)->set_switch_("leaf-1");
  ASSERT_TRUE(registry.ApplyTopology(topology).ok());
  EXPECT_FALSE(switches.IsSwitch("leaf-0"));
  EXPECT_TRUE(switches.IsSwitch("leaf-1"));
}

}  // namespace
}  // namespace fabricdiag::collector
