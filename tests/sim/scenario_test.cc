#include "sim/scenario.h"

#include <cmath>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/fabric.h"
#include "tests/sim/sim_test_util.h"

namespace fabricdiag::sim {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

TEST(ScenarioTest, ParsesYamlWithDefaults) {
  auto s = ParseScenario(R"(
step_seconds: 2.5
faults:
  - {kind: hot_expert, node: gpu-003, nic: mlx5_2, start: 20, end: 80}
  - {kind: pfc_storm, node: gpu-001, nic: mlx5_0, start: 30, priority: 4}
  - {kind: ecmp_polarization, switch: leaf-0, start: 10, end: 40}
  - {kind: link_flap, switch: leaf-1, port: swp3, start: 5, period: 2}
  - {kind: nic_gone, node: gpu-002, nic: mlx5_1, start: 0, end: 1.5}
)");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_DOUBLE_EQ(s->step_seconds, 2.5);
  ASSERT_EQ(s->faults.size(), 5u);
  EXPECT_EQ(s->faults[0].kind, FaultKind::kHotExpert);
  EXPECT_DOUBLE_EQ(s->faults[0].factor, 6.0);
  EXPECT_EQ(s->faults[0].Describe(), "hot_expert gpu-003 mlx5_2");
  EXPECT_EQ(s->faults[1].priority, 4);
  EXPECT_TRUE(std::isinf(s->faults[1].end));
  EXPECT_EQ(s->faults[2].switch_name, "leaf-0");
  EXPECT_EQ(s->faults[2].uplinks, 1);
  EXPECT_EQ(s->faults[3].Describe(), "link_flap leaf-1 swp3");
  EXPECT_DOUBLE_EQ(s->faults[3].period, 2.0);
  EXPECT_TRUE(s->faults[4].ActiveAt(0));
  EXPECT_TRUE(s->faults[4].ActiveAt(1.49));
  EXPECT_FALSE(s->faults[4].ActiveAt(1.5));
}

TEST(ScenarioTest, PolarizationNamesItsUplinks) {
  auto s = ParseScenario(
      "faults: [{kind: ecmp_polarization, switch: leaf-0, start: 1, "
      "uplinks: 2}]");
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_EQ(s->faults.size(), 1u);
  EXPECT_EQ(s->faults[0].uplinks, 2);
}

TEST(ScenarioTest, ParsesJson) {
  auto s = ParseScenario(
      R"({"faults": [{"kind": "straggler", "node": "gpu-000",
          "nic": "mlx5_7", "start": 3, "end": 9}]})");
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_EQ(s->faults.size(), 1u);
  EXPECT_EQ(s->faults[0].kind, FaultKind::kStraggler);
  EXPECT_EQ(s->faults[0].nic, "mlx5_7");
  EXPECT_EQ(s->step_seconds, 0);  // derived from the models
}

TEST(ScenarioTest, SwitchFaultsOfTheGnmiTargetsNeedASwitchOnly) {
  auto s = ParseScenario(R"(
faults:
  - {kind: gnmi_outage, switch: leaf-0, start: 2, end: 4}
  - {kind: switch_reload, switch: leaf-1, start: 5, end: 6}
)");
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_EQ(s->faults.size(), 2u);
  EXPECT_EQ(s->faults[0].kind, FaultKind::kGnmiOutage);
  EXPECT_EQ(s->faults[0].Describe(), "gnmi_outage leaf-0");
  EXPECT_EQ(s->faults[1].kind, FaultKind::kSwitchReload);
  EXPECT_EQ(ParseScenario("faults: [{kind: gnmi_outage, start: 1}]")
                .status()
                .message(),
            "faults[0].switch: missing (gnmi_outage needs it)");
  EXPECT_EQ(ParseScenario("faults: [{kind: switch_reload, switch: leaf-0, "
                          "port: swp1, start: 1}]")
                .status()
                .message(),
            "faults[0].port: not used by switch_reload");
}

TEST(ScenarioTest, EmptyFileIsNoFaults) {
  auto s = ParseScenario("");
  ASSERT_TRUE(s.ok());
  EXPECT_TRUE(s->faults.empty());
}

struct BadCase {
  const char* text;
  const char* field;    // the message starts with it
  const char* message;  // and says this
};

class MalformedScenarioTest : public ::testing::TestWithParam<BadCase> {};

TEST_P(MalformedScenarioTest, NamesTheField) {
  auto s = ParseScenario(GetParam().text);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.status().message()), StartsWith(GetParam().field));
  EXPECT_THAT(std::string(s.status().message()), HasSubstr(GetParam().message));
}

INSTANTIATE_TEST_SUITE_P(
    Cases, MalformedScenarioTest,
    ::testing::Values(
        BadCase{"faults: [{kind: meltdown, node: a, nic: b, start: 1}]",
                "faults[0].kind", "unknown kind \"meltdown\""},
        BadCase{"faults: [{node: a, nic: b, start: 1}]", "faults[0].kind",
                "missing"},
        BadCase{"faults: [{kind: straggler, node: a, nic: b, start: 9, "
                "end: 3}]",
                "faults[0].end", "must be after start"},
        BadCase{"faults: [{kind: straggler, node: a, nic: b, start: 3, "
                "end: 3}]",
                "faults[0].end", "must be after start"},
        BadCase{"faults: [{kind: straggler, node: a, nic: b}]",
                "faults[0].start", "missing"},
        BadCase{"faults:\n - {kind: straggler, node: a, nic: b, start: 1}\n"
                " - {kind: hot_expert, node: a, start: 1}",
                "faults[1].nic", "missing (hot_expert needs it)"},
        BadCase{"faults: [{kind: ecmp_polarization, start: 1}]",
                "faults[0].switch", "missing"},
        BadCase{"faults: [{kind: ecmp_polarization, switch: s, start: 1, "
                "uplinks: 0}]",
                "faults[0].uplinks", "must be an integer 1..64, got 0"},
        BadCase{"faults: [{kind: ecmp_polarization, switch: s, start: 1, "
                "uplinks: 1.5}]",
                "faults[0].uplinks", "must be an integer"},
        BadCase{"faults: [{kind: ecmp_polarization, switch: s, start: 1, "
                "uplinks: two}]",
                "faults[0].uplinks", "expected a number"},
        BadCase{"faults: [{kind: straggler, node: a, nic: b, start: 1, "
                "uplinks: 2}]",
                "faults[0].uplinks", "not used by straggler"},
        BadCase{"faults: [{kind: link_flap, switch: s, start: 1}]",
                "faults[0].port", "missing"},
        BadCase{"faults: [{kind: link_flap, node: a, nic: b, switch: s, "
                "port: p, start: 1}]",
                "faults[0]", "not both"},
        BadCase{"faults: [{kind: pfc_storm, node: a, nic: b, start: 1, "
                "priority: 8}]",
                "faults[0].priority", "0..7"},
        BadCase{"faults: [{kind: pfc_storm, node: a, nic: b, start: 1, "
                "factor: 3}]",
                "faults[0].factor", "not used by pfc_storm"},
        BadCase{"faults: [{kind: hot_expert, node: a, nic: b, start: 1, "
                "factr: 3}]",
                "faults[0].factr", "unknown key"},
        BadCase{"faults: [{kind: hot_expert, node: a, nic: b, start: \"1\"}]",
                "faults[0].start", "expected a number"},
        BadCase{"faults: [{kind: hot_expert, node: a, nic: b, start: -1}]",
                "faults[0].start", "must not be negative"},
        BadCase{"faults: [{kind: hot_expert, node: [a], nic: b, start: 1}]",
                "faults[0].node", "expected a name"},
        BadCase{"faults: {kind: hot_expert}", "faults", "expected a list"},
        BadCase{"step_seconds: 0", "step_seconds", "greater than 0"},
        BadCase{"stepseconds: 1", "\"stepseconds\"", "unknown key"},
        BadCase{"faults: [", "not valid YAML", ""},
        BadCase{"[1, 2]", "expected a mapping", ""}));

TEST(ScenarioNamesTest, UnknownNamesAreNamed) {
  const Fabric fabric = testing::BuildFabric();
  auto check = [&](const char* text, const char* field, const char* msg) {
    auto s = ParseScenario(text);
    ASSERT_TRUE(s.ok()) << s.status();
    absl::Status st = ValidateScenarioNames(*s, fabric);
    ASSERT_FALSE(st.ok()) << text;
    EXPECT_THAT(std::string(st.message()), StartsWith(field));
    EXPECT_THAT(std::string(st.message()), HasSubstr(msg));
  };
  check("faults: [{kind: straggler, node: gpu-099, nic: mlx5_0, start: 1}]",
        "faults[0].node", "unknown node \"gpu-099\"");
  check("faults: [{kind: straggler, node: gpu-001, nic: mlx5_9, start: 1}]",
        "faults[0].nic", "gpu-001 has no NIC \"mlx5_9\"");
  check("faults: [{kind: ecmp_polarization, switch: spine-0, start: 1}]",
        "faults[0].switch", "unknown switch \"spine-0\"");
  check("faults: [{kind: link_flap, switch: leaf-0, port: swp7, start: 1}]",
        "faults[0].port", "leaf-0 has no port \"swp7\"");
  // All 4 uplinks hot is a balanced group.
  check(
      "faults: [{kind: ecmp_polarization, switch: leaf-0, start: 1, "
      "uplinks: 4}]",
      "faults[0].uplinks",
      "leaf-0 has 4 uplinks: at most 3 can be polarized, got 4");

  auto ok = ParseScenario(
      "faults: [{kind: link_flap, switch: leaf-0, port: swp49, start: 1}, "
      "{kind: hot_expert, node: gpu-003, nic: mlx5_2, start: 1}, "
      "{kind: ecmp_polarization, switch: leaf-1, start: 1, uplinks: 3}]");
  ASSERT_TRUE(ok.ok());
  EXPECT_TRUE(ValidateScenarioNames(*ok, fabric).ok());
}

TEST(FabricTest, HostsNicsNetdevsAndPorts) {
  const Fabric fabric = testing::BuildFabric();
  ASSERT_EQ(fabric.hosts().size(), 4u);
  ASSERT_EQ(fabric.nics().size(), 32u);
  auto nic = fabric.FindNic("gpu-003", "mlx5_2");
  ASSERT_TRUE(nic.has_value());
  EXPECT_EQ(fabric.nics()[*nic].netdev, "eth2");
  EXPECT_FALSE(fabric.nics()[*nic].switch_port.has_value());
  auto cabled = fabric.FindNic("gpu-002", "mlx5_1");
  ASSERT_TRUE(fabric.nics()[*cabled].switch_port.has_value());
  const SimPort& port = fabric.ports()[*fabric.nics()[*cabled].switch_port];
  EXPECT_EQ(port.switch_name, "leaf-1");
  EXPECT_EQ(port.port, "swp3");
  ASSERT_EQ(fabric.switches().size(), 2u);
  // swp1..4 then the uplinks, in natural order.
  std::vector<std::string> names;
  for (size_t p : fabric.switches()[0].members) {
    names.push_back(fabric.ports()[p].port);
  }
  EXPECT_THAT(names,
              ::testing::ElementsAre("swp1", "swp2", "swp3", "swp4", "swp49",
                                     "swp50", "swp51", "swp52"));
  EXPECT_TRUE(fabric.ports()[*fabric.FindPort("leaf-0", "swp50")].uplink);
}

TEST(FabricTest, HostWithoutRailsGetsEightNics) {
  const Fabric fabric = testing::BuildFabric(R"(
job: j
gpus_per_node: 4
parallelism: {tp: 4, pp: 1, dp: 2}
hosts: [a, b]
)",
                                             "");
  ASSERT_EQ(fabric.nics().size(), 16u);
  EXPECT_EQ(fabric.nics()[7].rdma_device, "mlx5_7");
  EXPECT_EQ(fabric.nics()[7].netdev, "eth7");
}

TEST(FabricTest, NaturalOrder) {
  EXPECT_TRUE(NaturalLess("mlx5_2", "mlx5_10"));
  EXPECT_FALSE(NaturalLess("mlx5_10", "mlx5_2"));
  EXPECT_TRUE(NaturalLess("swp9", "swp49"));
  EXPECT_TRUE(NaturalLess("eth", "eth0"));
  EXPECT_FALSE(NaturalLess("a", "a"));
}

}  // namespace
}  // namespace fabricdiag::sim
