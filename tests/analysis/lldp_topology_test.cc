#include "analysis/lldp_topology.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "analysis/layout_parse.h"
#include "tests/testing/lldp_fabric.h"

namespace fabricdiag::analysis {
namespace {

using ::fabricdiag::testing::BuildClos;
using ::fabricdiag::testing::ClosFabric;
using ::fabricdiag::testing::ClosShape;
using ::fabricdiag::testing::LldpFabric;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;

using Ends = LldpFabric::Ends;
using Kind = TopologyDifference::Kind;

const v1::Switch* FindSwitch(const v1::Topology& t, const std::string& name) {
  for (const v1::Switch& sw : t.switches()) {
    if (sw.name() == name) return &sw;
  }
  return nullptr;
}

std::vector<std::string> Uplinks(const v1::Topology& t,
                                 const std::string& name) {
  const v1::Switch* sw = FindSwitch(t, name);
  if (sw == nullptr) return {"<no switch " + name + ">"};
  return {sw->uplinks().begin(), sw->uplinks().end()};
}

uint32_t Tier(const v1::Topology& t, const std::string& name) {
  const v1::Switch* sw = FindSwitch(t, name);
  return sw == nullptr ? 999 : sw->tier();
}

// "host nic -> switch port" per link, in the topology's order.
std::vector<std::string> Links(const v1::Topology& t) {
  std::vector<std::string> out;
  for (const v1::Link& l : t.links()) {
    out.push_back(absl::StrCat(l.host(), " ", l.nic(), " -> ", l.switch_(), " ",
                               l.port()));
  }
  return out;
}

std::vector<std::string> SwitchLinks(const v1::Topology& t) {
  std::vector<std::string> out;
  for (const v1::SwitchLink& l : t.switch_links()) {
    out.push_back(absl::StrCat(l.switch_a(), " ", l.port_a(), " - ",
                               l.switch_b(), " ", l.port_b()));
  }
  return out;
}

std::vector<std::string> Described(const std::vector<TopologyDifference>& d) {
  std::vector<std::string> out;
  for (const TopologyDifference& x : d) out.push_back(x.Describe());
  return out;
}

v1::Topology Parsed(const std::string& yaml) {
  absl::StatusOr<v1::Topology> t = ParseTopology(yaml);
  EXPECT_TRUE(t.ok()) << t.status();
  return t.ok() ? *t : v1::Topology();
}

TEST(DiscoverTopologyTest, TwoTierRailOptimized) {
  ClosFabric clos = BuildClos(ClosShape{});  // 4 hosts x 8 NICs, 8 leaves
  DiscoveredTopology found = DiscoverTopology(clos.fabric.Facts(), nullptr);
  EXPECT_THAT(found.problems, IsEmpty());
  const v1::Topology& t = found.topology;
  EXPECT_TRUE(ValidateTopology(t).ok()) << ValidateTopology(t);
  ASSERT_THAT(t.links(), SizeIs(32));
  EXPECT_THAT(t.switch_links(), SizeIs(16));
  ASSERT_THAT(t.switches(), SizeIs(10));
  // Rail k of every host on leaf-k, named by the RDMA device.
  EXPECT_EQ(Links(t)[0], "gpu-00000 mlx5_0 -> leaf-0 swp1");
  EXPECT_EQ(Links(t)[3], "gpu-00000 mlx5_3 -> leaf-3 swp1");
  EXPECT_EQ(Links(t)[8], "gpu-00001 mlx5_0 -> leaf-0 swp2");
  for (int leaf = 0; leaf < 8; ++leaf) {
    const std::string name = absl::StrCat("leaf-", leaf);
    EXPECT_EQ(Tier(t, name), 1u) << name;
    EXPECT_THAT(Uplinks(t, name), ElementsAre("swp33", "swp34")) << name;
  }
  EXPECT_EQ(Tier(t, "spine-0-0"), 2u);
  EXPECT_THAT(Uplinks(t, "spine-0-1"), IsEmpty());
  EXPECT_EQ(SwitchLinks(t)[0], "leaf-0 swp33 - spine-0-0 swp1");
  EXPECT_EQ(t.links(0).source(), v1::LINK_SOURCE_UNSPECIFIED);
}

TEST(DiscoverTopologyTest, TwoTierNotRailOptimized) {
  ClosShape shape;
  shape.hosts = 8;
  shape.rail_optimized = false;  // 4 hosts x 8 NICs per leaf
  ClosFabric clos = BuildClos(shape);
  DiscoveredTopology found = DiscoverTopology(clos.fabric.Facts(), nullptr);
  EXPECT_THAT(found.problems, IsEmpty());
  const v1::Topology& t = found.topology;
  EXPECT_EQ(clos.leaves, 2);
  ASSERT_THAT(t.links(), SizeIs(64));
  EXPECT_EQ(Links(t)[7], "gpu-00000 mlx5_7 -> leaf-0 swp8");
  EXPECT_EQ(Links(t)[63], "gpu-00007 mlx5_7 -> leaf-1 swp32");
  EXPECT_THAT(Uplinks(t, "leaf-1"), ElementsAre("swp33", "swp34"));
  EXPECT_EQ(Tier(t, "spine-0-1"), 2u);
}

TEST(DiscoverTopologyTest, ThreeTiers) {
  ClosShape shape;
  shape.hosts = 64;
  shape.host_ports_per_leaf = 16;  // 4 rail groups x 8 rails = 32 leaves
  shape.super_spines = 4;          // spine j of a pod to supers j and j + 2
  ClosFabric clos = BuildClos(shape);
  DiscoveredTopology found = DiscoverTopology(clos.fabric.Facts(), nullptr);
  EXPECT_THAT(found.problems, IsEmpty());
  const v1::Topology& t = found.topology;
  EXPECT_TRUE(ValidateTopology(t).ok()) << ValidateTopology(t);
  EXPECT_THAT(t.links(), SizeIs(512));
  EXPECT_THAT(t.switch_links(), SizeIs(clos.switch_links));
  EXPECT_THAT(t.switches(), SizeIs(32 + 8 + 4));
  EXPECT_EQ(Tier(t, "leaf-31"), 1u);
  EXPECT_THAT(Uplinks(t, "leaf-31"), ElementsAre("swp17", "swp18"));
  EXPECT_EQ(Tier(t, "spine-3-1"), 2u);
  EXPECT_THAT(Uplinks(t, "spine-3-1"), ElementsAre("swp10", "swp9"));
  EXPECT_EQ(Tier(t, "super-3"), 3u);
  EXPECT_THAT(Uplinks(t, "super-3"), IsEmpty());
}

TEST(DiscoverTopologyTest, OutputDoesNotDependOnTheOrderOfTheFacts) {
  ClosShape shape;
  shape.super_spines = 2;
  ClosFabric clos = BuildClos(shape);
  std::vector<const v1::NodeFacts*> facts = clos.fabric.Facts();
  const DiscoveredTopology a = DiscoverTopology(facts, nullptr);
  std::reverse(facts.begin(), facts.end());
  const DiscoveredTopology b = DiscoverTopology(facts, nullptr);
  EXPECT_EQ(a.topology.SerializeAsString(), b.topology.SerializeAsString());
  EXPECT_EQ(a.problems, b.problems);
}

TEST(DiscoverTopologyTest, OneReportingEndIsEnough) {
  LldpFabric fabric;
  // A host whose lldpd hears nothing on eth0: only the leaf reports the
  // cable, naming the netdev (the host's facts map none to a device).
  fabric.Node("gpu-1", /*is_switch=*/false);
  fabric.CableHost("gpu-1", "eth0", "mlx5_0", "leaf-1", "swp1", Ends::kSwitch);
  // A leaf no bridge reads: only the host hears it, and it is a switch.
  fabric.CableHost("gpu-2", "eth0", "mlx5_0", "leaf-2", "swp1", Ends::kHost);
  // A spine that reports nothing, heard by leaf-1 only.
  fabric.CableSwitches("leaf-1", "swp33", "spine-1", "swp1", Ends::kHost);
  DiscoveredTopology found = DiscoverTopology(fabric.Facts(), nullptr);
  EXPECT_THAT(found.problems, IsEmpty());
  EXPECT_THAT(
      Links(found.topology),
      ElementsAre("gpu-1 eth0 -> leaf-1 swp1", "gpu-2 mlx5_0 -> leaf-2 swp1"));
  EXPECT_THAT(SwitchLinks(found.topology),
              ElementsAre("leaf-1 swp33 - spine-1 swp1"));
  EXPECT_EQ(Tier(found.topology, "leaf-2"), 1u);
  EXPECT_EQ(Tier(found.topology, "spine-1"), 2u);
  EXPECT_THAT(Uplinks(found.topology, "leaf-1"), ElementsAre("swp33"));
}

TEST(DiscoverTopologyTest, UnknownNeighborOfASwitchIsASwitch) {
  LldpFabric fabric;
  // gpu-9 neither reports nor is declared: the leaf cannot tell it from a
  // spine that reports nothing, and takes it for a switch.
  fabric.CableHost("gpu-9", "eth0", "mlx5_0", "leaf-1", "swp1", Ends::kSwitch);
  fabric.CableHost("gpu-1", "eth0", "mlx5_0", "leaf-1", "swp2");
  DiscoveredTopology found = DiscoverTopology(fabric.Facts(), nullptr);
  EXPECT_THAT(SwitchLinks(found.topology),
              ElementsAre("gpu-9 eth0 - leaf-1 swp1"));
  // Declared as a host, it is one.
  v1::Topology declared = Parsed(R"(
switches: [{name: leaf-1}]
links: [{host: gpu-9, nic: mlx5_0, switch: leaf-1, port: swp1}]
)");
  found = DiscoverTopology(fabric.Facts(), &declared);
  EXPECT_THAT(found.topology.switch_links(), IsEmpty());
  EXPECT_THAT(Links(found.topology), ElementsAre("gpu-1 mlx5_0 -> leaf-1 swp2",
                                                 "gpu-9 eth0 -> leaf-1 swp1"));
}

TEST(DiscoverTopologyTest, FqdnMatchesItsShortNameWhenUnambiguous) {
  LldpFabric fabric;
  fabric.Node("leaf-1", /*is_switch=*/true);
  fabric.Node("gpu-1", /*is_switch=*/false);
  v1::LldpNeighbor* n = fabric.Node("gpu-1", false).add_lldp_neighbors();
  *n = LldpFabric::Neighbor("leaf-1.pod1.example.com", "swp3");
  n->set_local_port("eth0");
  // The leaf hears the host by its FQDN too.
  n = fabric.Node("leaf-1", true).add_lldp_neighbors();
  *n = LldpFabric::Neighbor("gpu-1.example.com", "eth0");
  n->set_local_port("swp3");
  DiscoveredTopology found = DiscoverTopology(fabric.Facts(), nullptr);
  EXPECT_THAT(found.problems, IsEmpty());
  EXPECT_THAT(Links(found.topology), ElementsAre("gpu-1 eth0 -> leaf-1 swp3"));
  EXPECT_THAT(found.topology.switches(), SizeIs(1));
}

TEST(DiscoverTopologyTest, AmbiguousShortNameIsAProblemNotALink) {
  LldpFabric fabric;
  fabric.Node("leaf-1.a.example.com", true);
  fabric.Node("leaf-1.b.example.com", true);
  v1::LldpNeighbor* n = fabric.Node("gpu-1", false).add_lldp_neighbors();
  *n = LldpFabric::Neighbor("leaf-1", "swp3");
  n->set_local_port("eth0");
  DiscoveredTopology found = DiscoverTopology(fabric.Facts(), nullptr);
  EXPECT_THAT(found.topology.links(), IsEmpty());
  EXPECT_THAT(found.problems,
              ElementsAre("gpu-1 eth0: system name leaf-1 could be any of "
                          "leaf-1.a.example.com, leaf-1.b.example.com"));
}

TEST(DiscoverTopologyTest, ChassisIdNamesADeclaredSwitch) {
  v1::Topology declared;
  v1::Switch* leaf = declared.add_switches();
  leaf->set_name("leaf-7");
  leaf->set_chassis_id("12:27:29:D0:18:68");
  LldpFabric fabric;
  v1::LldpNeighbor* n = fabric.Node("gpu-1", false).add_lldp_neighbors();
  // The switch announces its hostname, which is not the declared name.
  *n = LldpFabric::Neighbor("sonic", "Ethernet8", "12:27:29:d0:18:68");
  n->set_local_port("eth0");
  DiscoveredTopology found = DiscoverTopology(fabric.Facts(), &declared);
  EXPECT_THAT(found.problems, IsEmpty());
  EXPECT_THAT(Links(found.topology),
              ElementsAre("gpu-1 eth0 -> leaf-7 Ethernet8"));
  EXPECT_EQ(found.topology.switches(0).chassis_id(), "12:27:29:d0:18:68");
  // Without the declaration, the system name is all there is.
  found = DiscoverTopology(fabric.Facts(), nullptr);
  EXPECT_THAT(Links(found.topology),
              ElementsAre("gpu-1 eth0 -> sonic Ethernet8"));
}

TEST(DiscoverTopologyTest, MacPortIdFallsBackToTheDescription) {
  LldpFabric fabric;
  v1::NodeFacts& host = fabric.Node("gpu-1", false);
  v1::LldpNeighbor* n = host.add_lldp_neighbors();
  *n = LldpFabric::Neighbor("leaf-1", "swp3");
  n->set_port_id("1c:34:da:00:00:03");
  n->set_port_id_type("mac");
  n->set_local_port("eth0");
  // A MAC and a description that is a sentence: no port to name.
  n = host.add_lldp_neighbors();
  *n = LldpFabric::Neighbor("leaf-2", "to gpu-1 rail 1");
  n->set_port_id("1c:34:da:00:00:04");
  n->set_port_id_type("mac");
  n->set_local_port("eth1");
  // A local port id that is an index: the description names the port.
  n = host.add_lldp_neighbors();
  *n = LldpFabric::Neighbor("leaf-3", "Ethernet12");
  n->set_port_id("12");
  n->set_port_id_type("local");
  n->set_local_port("eth2");
  DiscoveredTopology found = DiscoverTopology(fabric.Facts(), nullptr);
  EXPECT_THAT(Links(found.topology),
              ElementsAre("gpu-1 eth0 -> leaf-1 swp3",
                          "gpu-1 eth2 -> leaf-3 Ethernet12"));
  ASSERT_THAT(found.problems, SizeIs(1));
  EXPECT_THAT(found.problems[0], HasSubstr("gpu-1 eth1: the port of leaf-2"));
  EXPECT_THAT(found.problems[0], HasSubstr("names no interface"));
}

TEST(DiscoverTopologyTest, DeclaredNetdevNamesAreKept) {
  const v1::Topology declared = Parsed(R"(
switches: [{name: leaf-0}]
links:
  - {host: gpu-00000, nic: eth0, switch: leaf-0, port: swp1}
)");
  ClosFabric clos = BuildClos(ClosShape{});
  DiscoveredTopology found = DiscoverTopology(clos.fabric.Facts(), &declared);
  EXPECT_EQ(Links(found.topology)[0], "gpu-00000 eth0 -> leaf-0 swp1");
  EXPECT_EQ(Links(found.topology)[1], "gpu-00000 mlx5_1 -> leaf-1 swp1");
  // Every other host link and the 16 switch links are extra.
  EXPECT_THAT(DiffTopology(declared, found.topology), SizeIs(31 + 16));
}

TEST(DiscoverTopologyTest, ConflictingReportsAreProblems) {
  LldpFabric fabric;
  // gpu-1 says its eth0 is on leaf-1 swp3 and leaf-1 agrees ...
  fabric.CableHost("gpu-1", "eth0", "mlx5_0", "leaf-1", "swp3");
  // ... but leaf-2 swp5 also claims gpu-1 eth0 (a stale or lying speaker).
  v1::LldpNeighbor* n = fabric.Node("leaf-2", true).add_lldp_neighbors();
  *n = LldpFabric::Neighbor("gpu-1", "eth0");
  n->set_local_port("swp5");
  // Host and switch disagree, neither confirmed by the other end: the
  // host's word wins.
  fabric.CableHost("gpu-2", "eth0", "mlx5_0", "leaf-1", "swp4", Ends::kHost);
  n = fabric.Node("leaf-2", true).add_lldp_neighbors();
  *n = LldpFabric::Neighbor("gpu-2", "eth0");
  n->set_local_port("swp6");
  DiscoveredTopology found = DiscoverTopology(fabric.Facts(), nullptr);
  EXPECT_THAT(Links(found.topology),
              ElementsAre("gpu-1 mlx5_0 -> leaf-1 swp3",
                          "gpu-2 mlx5_0 -> leaf-1 swp4"));
  EXPECT_THAT(
      found.problems,
      ElementsAre("gpu-1 mlx5_0 - leaf-2 swp5 (reported by leaf-2) "
                  "contradicts gpu-1 mlx5_0 - leaf-1 swp3 (reported by gpu-1 "
                  "and leaf-1), kept",
                  "gpu-2 mlx5_0 - leaf-2 swp6 (reported by leaf-2) "
                  "contradicts gpu-2 mlx5_0 - leaf-1 swp4 (reported by "
                  "gpu-2), kept"));
}

TEST(DiscoverTopologyTest, ConflictingSwitchLinks) {
  LldpFabric fabric;
  fabric.CableHost("gpu-1", "eth0", "", "leaf-1", "swp1");
  fabric.CableSwitches("leaf-1", "swp33", "spine-1", "swp1");
  // spine-2 claims the same leaf port.
  fabric.CableSwitches("spine-2", "swp1", "leaf-1", "swp33", Ends::kHost);
  DiscoveredTopology found = DiscoverTopology(fabric.Facts(), nullptr);
  EXPECT_THAT(SwitchLinks(found.topology),
              ElementsAre("leaf-1 swp33 - spine-1 swp1"));
  ASSERT_THAT(found.problems, SizeIs(1));
  EXPECT_THAT(found.problems[0],
              HasSubstr("leaf-1 swp33 - spine-2 swp1 (reported by spine-2) "
                        "contradicts leaf-1 swp33 - spine-1 swp1"));
  EXPECT_THAT(Uplinks(found.topology, "leaf-1"), ElementsAre("swp33"));
}

TEST(DiscoverTopologyTest, HostileInput) {
  LldpFabric fabric;
  v1::NodeFacts& host = fabric.Node("gpu-1", false);
  // 10,000 neighbors on one port (a hub, a flood of forged frames).
  for (int i = 0; i < 10000; ++i) {
    v1::LldpNeighbor* n = host.add_lldp_neighbors();
    *n = LldpFabric::Neighbor(absl::StrCat("fake-", i), "swp1");
    n->set_local_port("eth0");
  }
  // Empty names, a name that is no node name, a local port that is none.
  v1::LldpNeighbor* n = host.add_lldp_neighbors();
  *n = LldpFabric::Neighbor("", "");
  n->set_local_port("eth1");
  n = host.add_lldp_neighbors();
  *n = LldpFabric::Neighbor(std::string(300, 'x') + " \x01", "swp1");
  n->set_local_port("eth2");
  n = host.add_lldp_neighbors();
  *n = LldpFabric::Neighbor("leaf-1", "swp1");
  n->set_local_port("");
  fabric.Node("", false);  // facts of a node without a name
  // One good cable survives all of it.
  fabric.CableHost("gpu-1", "eth3", "mlx5_3", "leaf-1", "swp4");
  DiscoveredTopology found = DiscoverTopology(fabric.Facts(), nullptr);
  EXPECT_THAT(Links(found.topology),
              ElementsAre("gpu-1 mlx5_3 -> leaf-1 swp4"));
  EXPECT_TRUE(ValidateTopology(found.topology).ok());
  ASSERT_THAT(found.problems, SizeIs(5));
  EXPECT_THAT(found.problems[0], HasSubstr("facts of node \"\""));
  EXPECT_EQ(found.problems[1],
            "gpu-1 eth0 hears 10000 neighbors (fake-0 swp1, fake-1 swp1, "
            "...): none is taken");
  EXPECT_THAT(found.problems[2], HasSubstr("gpu-1 eth1: no system name"));
  EXPECT_THAT(found.problems[3], HasSubstr("gpu-1 eth2: system name \"xxx"));
  EXPECT_THAT(found.problems[3], HasSubstr("is not a node name"));
  EXPECT_EQ(found.problems[4],
            "gpu-1: local port \"\" is not an interface name");
  for (const std::string& p : found.problems) EXPECT_LE(p.size(), 300u) << p;
  // A fabric of nothing: nothing, no problem.
  EXPECT_THAT(DiscoverTopology({}, nullptr).topology.switches(), IsEmpty());
  EXPECT_THAT(DiscoverTopology({nullptr}, nullptr).problems, IsEmpty());
}

TEST(DiscoverTopologyTest, HostHearingAHostIsAProblem) {
  LldpFabric fabric;
  fabric.Node("gpu-2", false);
  v1::LldpNeighbor* n = fabric.Node("gpu-1", false).add_lldp_neighbors();
  *n = LldpFabric::Neighbor("gpu-2", "eth0");
  n->set_local_port("eth0");
  DiscoveredTopology found = DiscoverTopology(fabric.Facts(), nullptr);
  EXPECT_THAT(found.topology.links(), IsEmpty());
  EXPECT_THAT(found.problems,
              ElementsAre("gpu-1 eth0 hears host gpu-2, not a switch"));
}

constexpr char kDeclared[] = R"(
switches:
  - {name: leaf-0, uplinks: [swp33]}
  - {name: leaf-1}
links:
  - {host: gpu-00000, nic: mlx5_0, switch: leaf-0, port: swp1}
  - {host: gpu-00000, nic: mlx5_1, switch: leaf-1, port: swp1}
  - {host: gpu-00001, nic: mlx5_0, switch: leaf-0, port: swp9}
  - {host: gpu-09999, nic: mlx5_0, switch: leaf-0, port: swp30}
)";

TEST(EffectiveTopologyTest, DeclaredWinsDiscoveredFills) {
  const v1::Topology declared = Parsed(kDeclared);
  ClosFabric clos = BuildClos(ClosShape{});
  const v1::Topology discovered =
      DiscoverTopology(clos.fabric.Facts(), &declared).topology;
  const v1::Topology t = EffectiveTopology(&declared, discovered);
  EXPECT_TRUE(ValidateTopology(t).ok()) << ValidateTopology(t);
  // The four declared links first, as declared, then the 29 of the 32
  // discovered ones whose NIC and port no declared link uses (gpu-00001
  // mlx5_0 is declared on leaf-0 swp9, so its discovered leaf-0 swp2 is not
  // taken; gpu-00000 mlx5_0 and mlx5_1 are declared as discovered).
  ASSERT_THAT(t.links(), SizeIs(4 + 29));
  EXPECT_EQ(Links(t)[2], "gpu-00001 mlx5_0 -> leaf-0 swp9");
  EXPECT_EQ(t.links(2).source(), v1::LINK_SOURCE_DECLARED);
  EXPECT_EQ(Links(t)[4], "gpu-00000 mlx5_2 -> leaf-2 swp1");
  EXPECT_EQ(t.links(4).source(), v1::LINK_SOURCE_DISCOVERED);
  for (const v1::Link& l : t.links()) {
    EXPECT_FALSE(l.host() == "gpu-00001" && l.nic() == "mlx5_0" &&
                 l.port() == "swp2");
  }
  // Declared uplinks stay; a declared switch without any gets those found.
  EXPECT_THAT(Uplinks(t, "leaf-0"), ElementsAre("swp33"));
  EXPECT_THAT(Uplinks(t, "leaf-1"), ElementsAre("swp33", "swp34"));
  EXPECT_EQ(Tier(t, "leaf-0"), 1u);
  EXPECT_EQ(Tier(t, "spine-0-0"), 2u);
  EXPECT_THAT(t.switches(), SizeIs(10));
  EXPECT_THAT(t.switch_links(), SizeIs(16));
  EXPECT_EQ(t.switch_links(0).source(), v1::LINK_SOURCE_DISCOVERED);
}

TEST(EffectiveTopologyTest, NoDeclarationIsTheDiscoveredTopology) {
  ClosFabric clos = BuildClos(ClosShape{});
  const v1::Topology discovered =
      DiscoverTopology(clos.fabric.Facts(), nullptr).topology;
  const v1::Topology t = EffectiveTopology(nullptr, discovered);
  EXPECT_THAT(Links(t), ::testing::ContainerEq(Links(discovered)));
  EXPECT_THAT(SwitchLinks(t), ::testing::ContainerEq(SwitchLinks(discovered)));
  for (const v1::Link& l : t.links()) {
    EXPECT_EQ(l.source(), v1::LINK_SOURCE_DISCOVERED);
  }
  EXPECT_THAT(EffectiveTopology(nullptr, v1::Topology()).links(), IsEmpty());
}

TEST(DiffTopologyTest, MissingExtraMoved) {
  v1::Topology declared = Parsed(R"(
switches: [{name: leaf-1}, {name: leaf-2}, {name: spine-1}, {name: spine-2}]
links:
  - {host: gpu-1, nic: mlx5_0, switch: leaf-1, port: swp3}
  - {host: gpu-1, nic: mlx5_1, switch: leaf-1, port: swp4}
  - {host: gpu-2, nic: mlx5_0, switch: leaf-1, port: swp5}
)");
  for (const char* leaf : {"leaf-1", "leaf-2"}) {
    v1::SwitchLink* up = declared.add_switch_links();
    up->set_switch_a(leaf);
    up->set_port_a("swp33");
    up->set_switch_b("spine-1");
    up->set_port_b(leaf == std::string("leaf-1") ? "swp1" : "swp2");
  }
  LldpFabric fabric;
  fabric.CableHost("gpu-1", "eth0", "mlx5_0", "leaf-1", "swp3");  // as declared
  fabric.CableHost("gpu-1", "eth1", "mlx5_1", "leaf-2", "swp7");  // moved
  // gpu-2 mlx5_0: LLDP silent (missing, not wrong).
  fabric.CableHost("gpu-3", "eth0", "mlx5_0", "leaf-2", "swp1");  // extra
  fabric.CableSwitches("leaf-1", "swp33", "spine-2", "swp1");     // moved
  // leaf-2 swp33: silent.
  fabric.CableSwitches("leaf-2", "swp34", "spine-2", "swp2");  // extra
  const v1::Topology discovered =
      DiscoverTopology(fabric.Facts(), &declared).topology;
  const std::vector<TopologyDifference> diff =
      DiffTopology(declared, discovered);
  EXPECT_THAT(
      Described(diff),
      ElementsAre(
          "moved: gpu-1 mlx5_1 is cabled to leaf-2 swp7, declared leaf-1 swp4",
          "missing: gpu-2 mlx5_0 - leaf-1 swp5 is declared; LLDP reports no "
          "neighbor on gpu-2 mlx5_0 (not reported, not wrong)",
          "extra: gpu-3 mlx5_0 - leaf-2 swp1 is cabled, not declared",
          "moved: leaf-1 swp33 is cabled to spine-2 swp1, declared spine-1 "
          "swp1",
          "missing: leaf-2 swp33 - spine-1 swp2 is declared; LLDP reports no "
          "neighbor on leaf-2 swp33 (not reported, not wrong)",
          "extra: leaf-2 swp34 - spine-2 swp2 is cabled, not declared"));
  EXPECT_EQ(diff[0].kind, Kind::kMoved);
  EXPECT_EQ(diff[0].declared, (LinkEnd{"leaf-1", "swp4", true}));
  EXPECT_EQ(diff[0].observed, (LinkEnd{"leaf-2", "swp7", true}));
  EXPECT_EQ(diff[1].kind, Kind::kMissing);
  EXPECT_EQ(diff[2].kind, Kind::kExtra);
  EXPECT_STREQ(KindName(Kind::kExtra), "extra");
  // A topology against itself: no difference.
  EXPECT_THAT(DiffTopology(discovered, discovered), IsEmpty());
}

}  // namespace
}  // namespace fabricdiag::analysis
