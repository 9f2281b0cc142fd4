// cabling_mismatch, and the rate analyzers on a topology LLDP discovered
// with no topology file: the test fabric of pfc_fabric_testing.h, its
// cabling reported over LLDP (leaf uplinks swp49..52 to spine-0..3).
#include "analysis/cabling_mismatch.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "analysis/ecmp_imbalance.h"
#include "analysis/link_errors.h"
#include "analysis/lldp_topology.h"
#include "analysis/pfc_storm.h"
#include "tests/analysis/pfc_fabric_testing.h"
#include "tests/testing/lldp_fabric.h"

namespace fabricdiag::analysis {
namespace {

using ::fabricdiag::analysis::testing::Host;
using ::fabricdiag::analysis::testing::kHosts;
using ::fabricdiag::analysis::testing::kNicsPerHost;
using ::fabricdiag::analysis::testing::Leaf;
using ::fabricdiag::analysis::testing::LeafPort;
using ::fabricdiag::analysis::testing::Nic;
using ::fabricdiag::analysis::testing::TestFabric;
using ::fabricdiag::analysis::testing::Uplink;
using ::fabricdiag::testing::LldpFabric;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::SizeIs;

// What LLDP reports of TestFabric's cabling; `skip` (host, NIC) reports
// nothing, and `moved` host NIC hears `to` instead of its leaf port.
struct Cabling {
  std::pair<std::string, std::string> skip;
  std::pair<std::string, std::string> moved;
  std::pair<std::string, std::string> to;
};

LldpFabric Lldp(const Cabling& cabling = {}) {
  LldpFabric lldp;
  for (int h = 0; h < kHosts; ++h) {
    for (int k = 0; k < kNicsPerHost; ++k) {
      const std::pair<std::string, std::string> nic(Host(h), Nic(k));
      if (nic == cabling.skip) continue;
      std::pair<std::string, std::string> end(Leaf(k), LeafPort(h, k));
      if (nic == cabling.moved) end = cabling.to;
      lldp.CableHost(Host(h), absl::StrCat("eth", k), Nic(k), end.first,
                     end.second);
    }
  }
  for (int leaf = 0; leaf < 2; ++leaf) {
    for (int u = 0; u < 4; ++u) {
      lldp.CableSwitches(absl::StrCat("leaf-", leaf), Uplink(u),
                         absl::StrCat("spine-", u),
                         absl::StrCat("swp", leaf + 1));
    }
  }
  return lldp;
}

v1::Topology Discovered(const Cabling& cabling = {}) {
  DiscoveredTopology found = DiscoverTopology(Lldp(cabling).Facts(), nullptr);
  EXPECT_THAT(found.problems, IsEmpty());
  return found.topology;
}

std::vector<Finding> Mismatches(TestFabric& fabric,
                                const v1::Topology* discovered) {
  const FabricView view = fabric.View();
  AnalysisInput in = fabric.Input(view);
  in.declared_topology = &fabric.topology();
  in.discovered_topology = discovered;
  return CablingMismatchFindings(in);
}

TEST(CablingMismatchTest, ACableOnAnotherSwitchNamesBothEnds) {
  TestFabric fabric(1);
  const v1::Topology discovered =
      Discovered({{}, {"gpu-003", "mlx5_2"}, {"leaf-1", "swp40"}});
  const std::vector<Finding> found = Mismatches(fabric, &discovered);
  ASSERT_THAT(found, SizeIs(1));
  const Finding& f = found[0];
  EXPECT_EQ(f.kind, "cabling_mismatch");
  EXPECT_EQ(f.severity, Severity::kWarning);
  EXPECT_EQ(f.node, "gpu-003");
  EXPECT_EQ(f.device, "mlx5_2");
  // Identity is the host NIC alone: no job, no group.
  EXPECT_EQ(f.job, "");
  EXPECT_EQ(f.group, "");
  EXPECT_FALSE(f.immediate);
  EXPECT_THAT(f.nodes, ElementsAre("gpu-003", "leaf-0", "leaf-1"));
  EXPECT_EQ(f.evidence_text.at("declared_switch"), "leaf-0");
  EXPECT_EQ(f.evidence_text.at("declared_port"), "swp15");
  EXPECT_EQ(f.evidence_text.at("observed_switch"), "leaf-1");
  EXPECT_EQ(f.evidence_text.at("observed_port"), "swp40");
  EXPECT_EQ(f.evidence_text.at("job"), "moe-train-42");
  EXPECT_EQ(f.summary,
            "gpu-003 mlx5_2 is cabled to leaf-1 swp40 (LLDP), but the "
            "topology declares leaf-0 swp15: move the cable back to leaf-0 "
            "swp15, or adopt the discovered topology: fabricdiag topology "
            "adopt");
}

TEST(CablingMismatchTest, AnotherPortOfTheSameSwitch) {
  TestFabric fabric(1);
  const v1::Topology discovered =
      Discovered({{}, {"gpu-000", "mlx5_1"}, {"leaf-0", "swp40"}});
  const std::vector<Finding> found = Mismatches(fabric, &discovered);
  ASSERT_THAT(found, SizeIs(1));
  EXPECT_THAT(found[0].nodes, ElementsAre("gpu-000", "leaf-0"));
  EXPECT_EQ(found[0].evidence_text.at("observed_port"), "swp40");
}

TEST(CablingMismatchTest, SilenceIsNoMismatch) {
  TestFabric fabric(1);
  // gpu-005 mlx5_0 reports nothing; everything else is as declared.
  const v1::Topology discovered = Discovered({{"gpu-005", "mlx5_0"}, {}, {}});
  EXPECT_THAT(Mismatches(fabric, &discovered), IsEmpty());
  // No LLDP at all, or no declaration: nothing to compare.
  EXPECT_THAT(Mismatches(fabric, nullptr), IsEmpty());
  const FabricView view = fabric.View();
  AnalysisInput in = fabric.Input(view);
  in.discovered_topology = &discovered;
  EXPECT_THAT(CablingMismatchFindings(in), IsEmpty());
}

TEST(CablingMismatchTest, ResolvesWhenTheCableOrTheDeclarationIsFixed) {
  TestFabric fabric(1);
  const Cabling moved{{}, {"gpu-003", "mlx5_2"}, {"leaf-1", "swp40"}};
  v1::Topology discovered = Discovered(moved);
  ASSERT_THAT(Mismatches(fabric, &discovered), SizeIs(1));
  // The cable goes back.
  discovered = Discovered();
  EXPECT_THAT(Mismatches(fabric, &discovered), IsEmpty());
  // Or the discovered topology is adopted as the declared one.
  discovered = Discovered(moved);
  fabric.topology() = discovered;
  EXPECT_THAT(Mismatches(fabric, &discovered), IsEmpty());
}

// The test fabric's uplinks declared as switch links (as Lldp() cables
// them: leaf-L Uplink(u) to spine-u swp<L+1>).
void DeclareSwitchLinks(v1::Topology* topology) {
  for (int leaf = 0; leaf < 2; ++leaf) {
    for (int u = 0; u < 4; ++u) {
      v1::SwitchLink* link = topology->add_switch_links();
      link->set_switch_a(absl::StrCat("leaf-", leaf));
      link->set_port_a(Uplink(u));
      link->set_switch_b(absl::StrCat("spine-", u));
      link->set_port_b(absl::StrCat("swp", leaf + 1));
    }
  }
}

// Where LLDP says uplink `u` of leaf `leaf` is cabled, when not where
// Lldp() cables it.
struct MovedUplink {
  int leaf;
  int u;
  std::string spine;
  std::string port;
};

// What LLDP reports with the `moved` uplinks.
v1::Topology UplinksMoved(const std::vector<MovedUplink>& moved) {
  LldpFabric lldp;
  for (int h = 0; h < kHosts; ++h) {
    for (int k = 0; k < kNicsPerHost; ++k) {
      lldp.CableHost(Host(h), absl::StrCat("eth", k), Nic(k), Leaf(k),
                     LeafPort(h, k));
    }
  }
  for (int leaf = 0; leaf < 2; ++leaf) {
    for (int u = 0; u < 4; ++u) {
      std::pair<std::string, std::string> far(absl::StrCat("spine-", u),
                                              absl::StrCat("swp", leaf + 1));
      for (const MovedUplink& m : moved) {
        if (m.leaf == leaf && m.u == u) far = {m.spine, m.port};
      }
      lldp.CableSwitches(absl::StrCat("leaf-", leaf), Uplink(u), far.first,
                         far.second);
    }
  }
  DiscoveredTopology found = DiscoverTopology(lldp.Facts(), nullptr);
  EXPECT_THAT(found.problems, IsEmpty());
  return found.topology;
}

// The comparison of the two topologies, made once when they change
// (CablingMismatchesOf), gives each pass the same findings as comparing
// them in the pass: a host link's job is still read from the pass's
// layouts. A pass given the comparison reads it, not the topologies.
TEST(CablingMismatchTest, ComparedOnceAsInEachPass) {
  TestFabric fabric(1);
  DeclareSwitchLinks(&fabric.topology());
  // gpu-003 mlx5_2 heard on leaf-1 swp40, leaf-0's first uplink on
  // spine-1 swp9.
  v1::Topology discovered = UplinksMoved({{0, 0, "spine-1", "swp9"}});
  for (v1::Link& link : *discovered.mutable_links()) {
    if (link.host() == "gpu-003" && link.nic() == "mlx5_2") {
      link.set_switch_("leaf-1");
      link.set_port("swp40");
    }
  }

  const CablingMismatches once =
      CablingMismatchesOf(fabric.topology(), discovered);
  ASSERT_THAT(once.host_links, SizeIs(1));
  EXPECT_EQ(once.host_links[0].evidence_text.count("job"), 0u);
  ASSERT_THAT(once.switch_links, SizeIs(1));

  const FabricView view = fabric.View();
  AnalysisInput in = fabric.Input(view);
  in.declared_topology = &fabric.topology();
  in.discovered_topology = &discovered;
  const std::vector<Finding> each_pass = CablingMismatchFindings(in);
  in.cabling_mismatches = &once;
  const std::vector<Finding> given = CablingMismatchFindings(in);
  ASSERT_THAT(given, SizeIs(2));
  ASSERT_THAT(each_pass, SizeIs(2));
  for (size_t i = 0; i < given.size(); ++i) {
    EXPECT_EQ(given[i].node, each_pass[i].node);
    EXPECT_EQ(given[i].device, each_pass[i].device);
    EXPECT_EQ(given[i].summary, each_pass[i].summary);
    EXPECT_EQ(given[i].nodes, each_pass[i].nodes);
    EXPECT_EQ(given[i].evidence_text, each_pass[i].evidence_text);
  }
  EXPECT_EQ(given[0].node, "gpu-003");
  EXPECT_EQ(given[0].evidence_text.at("job"), "moe-train-42");
  EXPECT_EQ(given[1].node, "leaf-0");

  const CablingMismatches none;
  in.cabling_mismatches = &none;
  EXPECT_THAT(CablingMismatchFindings(in), IsEmpty());
}

// A declared switch link LLDP contradicts: the port whose cable moved names
// the declared and the observed far end. Its declared far end, spine-0
// swp1, now hears nothing: silence, no second finding.
TEST(CablingMismatchTest, ASwitchLinkOnAnotherSpineNamesBothEnds) {
  TestFabric fabric(1);
  DeclareSwitchLinks(&fabric.topology());
  const v1::Topology discovered = UplinksMoved({{0, 0, "spine-1", "swp9"}});
  const std::vector<Finding> found = Mismatches(fabric, &discovered);
  ASSERT_THAT(found, SizeIs(1));
  const Finding& f = found[0];
  EXPECT_EQ(f.kind, "cabling_mismatch");
  EXPECT_EQ(f.severity, Severity::kWarning);
  EXPECT_EQ(f.node, "leaf-0");
  EXPECT_EQ(f.device, Uplink(0));
  EXPECT_EQ(f.job, "");
  EXPECT_THAT(f.nodes, ElementsAre("leaf-0", "spine-0", "spine-1"));
  EXPECT_EQ(f.evidence_text.at("declared_switch"), "spine-0");
  EXPECT_EQ(f.evidence_text.at("declared_port"), "swp1");
  EXPECT_EQ(f.evidence_text.at("observed_switch"), "spine-1");
  EXPECT_EQ(f.evidence_text.at("observed_port"), "swp9");
  EXPECT_EQ(f.evidence_text.count("job"), 0u);
  EXPECT_EQ(f.summary,
            "leaf-0 swp49 is cabled to spine-1 swp9 (LLDP), but the topology "
            "declares spine-0 swp1: move the cable back to spine-0 swp1, or "
            "adopt the discovered topology: fabricdiag topology adopt");
}

// Both ends of a declared switch link hear someone else: one finding per
// port, each its own identity. The declared link named the other way round
// (spine first) finds the same.
TEST(CablingMismatchTest, EachEndOfASwitchLinkIsItsOwnFinding) {
  TestFabric fabric(1);
  DeclareSwitchLinks(&fabric.topology());
  // leaf-0 swp49 and leaf-1 swp49 swap spine-0's ports: spine-0 swp1
  // hears leaf-1 swp49, spine-0 swp2 hears leaf-0 swp49.
  const v1::Topology discovered =
      UplinksMoved({{0, 0, "spine-0", "swp2"}, {1, 0, "spine-0", "swp1"}});
  std::vector<Finding> found = Mismatches(fabric, &discovered);
  ASSERT_THAT(found, SizeIs(4));
  EXPECT_EQ(found[0].node, "leaf-0");
  EXPECT_EQ(found[0].evidence_text.at("observed_port"), "swp2");
  EXPECT_EQ(found[1].node, "leaf-1");
  EXPECT_EQ(found[1].evidence_text.at("observed_port"), "swp1");
  EXPECT_EQ(found[2].node, "spine-0");
  EXPECT_EQ(found[2].device, "swp1");
  EXPECT_EQ(found[2].evidence_text.at("observed_switch"), "leaf-1");
  EXPECT_EQ(found[3].node, "spine-0");
  EXPECT_EQ(found[3].device, "swp2");
  EXPECT_EQ(found[3].evidence_text.at("observed_switch"), "leaf-0");

  for (v1::SwitchLink& link : *fabric.topology().mutable_switch_links()) {
    std::swap(*link.mutable_switch_a(), *link.mutable_switch_b());
    std::swap(*link.mutable_port_a(), *link.mutable_port_b());
  }
  EXPECT_THAT(Mismatches(fabric, &discovered), SizeIs(4));
}

// Not reported is no mismatch; cabled as declared is none; adopting what
// LLDP sees resolves it.
TEST(CablingMismatchTest, SwitchLinksSilentOrAsDeclaredOrAdopted) {
  TestFabric fabric(1);
  DeclareSwitchLinks(&fabric.topology());
  v1::Topology discovered = Discovered();
  EXPECT_THAT(Mismatches(fabric, &discovered), IsEmpty());
  discovered.clear_switch_links();
  EXPECT_THAT(Mismatches(fabric, &discovered), IsEmpty());
  discovered = UplinksMoved({{0, 0, "spine-1", "swp9"}});
  ASSERT_THAT(Mismatches(fabric, &discovered), SizeIs(1));
  fabric.topology() = discovered;
  EXPECT_THAT(Mismatches(fabric, &discovered), IsEmpty());
}

TEST(CablingMismatchTest, RegisteredWithTheRateAnalyzers) {
  TestFabric fabric(1);
  const v1::Topology discovered =
      Discovered({{}, {"gpu-003", "mlx5_2"}, {"leaf-1", "swp40"}});
  const FabricView view = fabric.View();
  AnalysisInput in = fabric.Input(view);
  in.declared_topology = &fabric.topology();
  in.discovered_topology = &discovered;
  const std::vector<Finding> found = RunRateAnalyzers(in);
  ASSERT_THAT(found, SizeIs(1));
  EXPECT_EQ(found[0].kind, kCablingMismatchKind);
}

// The same fault found on the declared topology and on the one LLDP
// discovered, with no topology file (EffectiveTopology(nullptr, ...)).
class DiscoveredOnlyTopologyTest : public ::testing::Test {
 protected:
  template <typename Analyzer>
  std::pair<std::vector<Finding>, std::vector<Finding>> BothWays(
      TestFabric& fabric, Analyzer analyzer) {
    const FabricView view = fabric.View();
    std::vector<Finding> declared = analyzer(fabric.Input(view));
    const v1::Topology effective = EffectiveTopology(nullptr, Discovered());
    AnalysisInput in = fabric.Input(view);
    in.topology = &effective;
    return {std::move(declared), analyzer(in)};
  }
};

TEST_F(DiscoveredOnlyTopologyTest, TheDiscoveredCablingIsTheDeclaredOne) {
  TestFabric fabric(1);
  for (const TopologyDifference& d :
       DiffTopology(fabric.topology(), Discovered())) {
    // Only the switch links, which the test fabric does not declare.
    EXPECT_EQ(d.kind, TopologyDifference::Kind::kExtra) << d.Describe();
    EXPECT_TRUE(d.near.is_switch) << d.Describe();
  }
}

TEST_F(DiscoveredOnlyTopologyTest, EcmpImbalance) {
  TestFabric fabric(1);
  const double tx[] = {38.2e9, 4.1e9, 8e9, 10e9};
  for (int u = 0; u < 4; ++u)
    fabric.Port("leaf-0", Uplink(u)).s.tx_bytes = tx[u];
  auto [declared, discovered] = BothWays(fabric, [](const AnalysisInput& in) {
    return EcmpImbalanceFindings(in, nullptr);
  });
  ASSERT_THAT(discovered, SizeIs(1));
  EXPECT_EQ(discovered[0].node, "leaf-0");
  EXPECT_EQ(discovered[0].evidence_text.at("hot_uplinks"), "swp49");
  EXPECT_EQ(discovered[0].summary, declared.at(0).summary);
  EXPECT_EQ(discovered[0].evidence_text, declared.at(0).evidence_text);
}

TEST_F(DiscoveredOnlyTopologyTest, PfcVictimsTracedToTheirSource) {
  TestFabric fabric(1);
  constexpr int kP = testing::kRocePriority;
  fabric.Port("gpu-003", "mlx5_2").s.tx_pause_fraction[kP] = 0.94;
  fabric.Port("gpu-003", "mlx5_2").s.rx_bytes = 1.2e9;
  fabric.Port("leaf-0", "swp15").s.rx_pause_fraction[kP] = 0.93;
  for (const char* relay : {"swp1", "swp2", "swp49", "swp50"}) {
    fabric.Port("leaf-0", relay).s.tx_pause_fraction[kP] = 0.6;
  }
  fabric.Port("gpu-000", "mlx5_0").s.rx_pause_fraction[kP] = 0.58;
  fabric.Port("leaf-1", "swp49").s.rx_pause_fraction[kP] = 0.3;
  auto [declared, discovered] = BothWays(fabric, PfcStormFindings);
  ASSERT_THAT(discovered, SizeIs(1));
  EXPECT_EQ(discovered[0].node, "gpu-003");
  EXPECT_EQ(discovered[0].evidence_text.at("victim_ports"),
            "leaf-0 swp15, gpu-000 mlx5_0, leaf-1 swp49");
  EXPECT_EQ(discovered[0].nodes, declared.at(0).nodes);
}

TEST_F(DiscoveredOnlyTopologyTest, FarEndOfACable) {
  TestFabric fabric(1);
  fabric.Port("gpu-003", "mlx5_2").s.crc_errors = 12;
  auto [declared, discovered] = BothWays(fabric, LinkErrorsFindings);
  ASSERT_THAT(discovered, SizeIs(1));
  EXPECT_EQ(discovered[0].evidence_text.at("link_partner"), "leaf-0 swp15");
  EXPECT_EQ(discovered[0].nodes, declared.at(0).nodes);
}

}  // namespace
}  // namespace fabricdiag::analysis
