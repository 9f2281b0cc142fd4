// topology show --discovered|--effective, topology diff, topology adopt
// against the in-memory client.
#include <nlohmann/json.hpp>
#include <string>

#include "cli/commands.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cli/test_env.h"
#include "tests/client/fake_collector_client.h"

namespace fabricdiag::cli {
namespace {

using client::testing::FakeCollectorClient;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using testing::TestEnv;

v1::Topology OneLink(const std::string& host, const std::string& port) {
  v1::Topology t;
  t.add_switches()->set_name("leaf-0");
  v1::Link* link = t.add_links();
  link->set_host(host);
  link->set_nic("mlx5_0");
  link->set_switch_("leaf-0");
  link->set_port(port);
  return t;
}

class TopologyCommandsTest : public ::testing::Test {
 protected:
  FakeCollectorClient client;
  TestEnv t;
  CommandOptions options;
};

TEST_F(TopologyCommandsTest, ShowPrintsTheViewAsked) {
  client.topology = OneLink("gpu-000", "swp1");
  client.discovered = OneLink("gpu-000", "swp7");
  client.effective = OneLink("gpu-000", "swp1");
  client.effective.mutable_links(0)->set_source(v1::LINK_SOURCE_DECLARED);

  options.discovered = true;
  EXPECT_EQ(TopologyShowCommand(client, options, t.env), kExitOk);
  EXPECT_THAT(t.out.str(), AllOf(HasSubstr("swp7"), Not(HasSubstr("swp1"))));

  TestEnv effective;
  options.discovered = false;
  options.effective = true;
  options.json = true;
  EXPECT_EQ(TopologyShowCommand(client, options, effective.env), kExitOk);
  nlohmann::json j = nlohmann::json::parse(effective.out.str());
  EXPECT_EQ(j["links"][0]["port"], "swp1");
  EXPECT_EQ(j["links"][0]["source"], "LINK_SOURCE_DECLARED");

  TestEnv declared;
  options = {};
  EXPECT_EQ(TopologyShowCommand(client, options, declared.env), kExitOk);
  EXPECT_THAT(declared.out.str(), HasSubstr("port: swp1"));
}

TEST_F(TopologyCommandsTest, ShowRefusesTwoViews) {
  options.discovered = true;
  options.effective = true;
  EXPECT_EQ(TopologyShowCommand(client, options, t.env), kExitInvalid);
  EXPECT_THAT(t.err.str(), HasSubstr("--discovered and --effective"));
  EXPECT_EQ(client.calls, 0);
}

// Equal: exit 0 and says so. A NIC cabled elsewhere: exit 3, one line
// naming the NIC, the port LLDP hears and the one declared.
TEST_F(TopologyCommandsTest, DiffExitStatusSaysWhetherTheCablingMatches) {
  client.topology = OneLink("gpu-000", "swp1");
  client.discovered = OneLink("gpu-000", "swp1");
  EXPECT_EQ(TopologyDiffCommand(client, options, t.env), kExitOk);
  EXPECT_THAT(t.out.str(), HasSubstr("matches the declared topology"));

  TestEnv moved;
  client.discovered = OneLink("gpu-000", "swp7");
  EXPECT_EQ(TopologyDiffCommand(client, options, moved.env), kExitDiffers);
  EXPECT_THAT(moved.out.str(),
              AllOf(HasSubstr("moved"), HasSubstr("gpu-000 mlx5_0"),
                    HasSubstr("leaf-0 swp7"), HasSubstr("leaf-0 swp1")));

  TestEnv json;
  options.json = true;
  EXPECT_EQ(TopologyDiffCommand(client, options, json.env), kExitDiffers);
  nlohmann::json j = nlohmann::json::parse(json.out.str());
  ASSERT_EQ(j.size(), 1u);
  EXPECT_EQ(j[0]["kind"], "moved");
  EXPECT_EQ(j[0]["near"]["node"], "gpu-000");
  EXPECT_EQ(j[0]["declared"]["port"], "swp1");
  EXPECT_EQ(j[0]["observed"]["port"], "swp7");
}

// Both sides come from one answer of the collector (a dry run of adopt
// with `snapshot`), never from two reads a redraw could fall between; a
// diff writes nothing.
TEST_F(TopologyCommandsTest, DiffReadsBothViewsInOneCall) {
  client.topology = OneLink("gpu-000", "swp1");
  client.discovered = OneLink("gpu-000", "swp7");
  EXPECT_EQ(TopologyDiffCommand(client, options, t.env), kExitDiffers);
  EXPECT_EQ(client.calls, 1);
  ASSERT_EQ(client.adopt_requests.size(), 1u);
  EXPECT_TRUE(client.adopt_requests[0].dry_run());
  EXPECT_TRUE(client.adopt_requests[0].snapshot());
  EXPECT_EQ(client.topology.links(0).port(), "swp1");
  EXPECT_THAT(t.err.str(), IsEmpty());
}

// A collector older than `snapshot` ignores it: the diff reads the two
// views one after the other, gives the same answer and says so on stderr.
TEST_F(TopologyCommandsTest, DiffFallsBackToTwoReadsOnAnOlderCollector) {
  client.snapshots = false;
  client.topology = OneLink("gpu-000", "swp1");
  client.discovered = OneLink("gpu-000", "swp7");
  EXPECT_EQ(TopologyDiffCommand(client, options, t.env), kExitDiffers);
  EXPECT_EQ(client.calls, 3);
  EXPECT_THAT(t.out.str(), AllOf(HasSubstr("moved"), HasSubstr("leaf-0 swp7"),
                                 HasSubstr("leaf-0 swp1")));
  EXPECT_THAT(t.err.str(), AllOf(HasSubstr("note"), HasSubstr("fake:9811"),
                                 HasSubstr("one after the other")));

  TestEnv none;
  client.has_topology = false;
  EXPECT_EQ(TopologyDiffCommand(client, options, none.env), kExitDiffers);
  EXPECT_THAT(none.out.str(), HasSubstr("extra"));
}

// Nothing declared: every discovered link is extra.
TEST_F(TopologyCommandsTest, DiffWithoutADeclaredTopologyListsExtras) {
  client.has_topology = false;
  client.discovered = OneLink("gpu-000", "swp1");
  EXPECT_EQ(TopologyDiffCommand(client, options, t.env), kExitDiffers);
  EXPECT_THAT(t.out.str(), AllOf(HasSubstr("extra"), HasSubstr("gpu-000")));
}

// A collector that cannot be reached is exit 1, not "differ".
TEST_F(TopologyCommandsTest, DiffUnreachableCollectorIsExit1) {
  client.fail = absl::UnavailableError("cannot reach collector fake:9811");
  EXPECT_EQ(TopologyDiffCommand(client, options, t.env), kExitCollector);
  EXPECT_THAT(t.err.str(), HasSubstr("cannot reach collector"));
  EXPECT_THAT(t.out.str(), IsEmpty());
}

// Adopt reads the declared version, writes over exactly it and prints what
// it wrote.
TEST_F(TopologyCommandsTest, AdoptWritesOverTheVersionItReadAndPrintsIt) {
  client.declared_version = 41;
  client.discovered = OneLink("gpu-000", "swp7");
  EXPECT_EQ(TopologyAdoptCommand(client, options, t.env), kExitOk);
  ASSERT_EQ(client.adopt_requests.size(), 2u);
  EXPECT_TRUE(client.adopt_requests[0].dry_run());
  EXPECT_FALSE(client.adopt_requests[1].dry_run());
  EXPECT_EQ(client.adopt_requests[1].expected_declared_version(), 41u);
  EXPECT_EQ(client.topology.links(0).port(), "swp7");
  EXPECT_THAT(t.out.str(),
              AllOf(HasSubstr("# adopted as the declared topology (1 switch, "
                              "1 host link, 0 switch links)"),
                    HasSubstr("port: swp7")));
}

// Someone applied a topology between the read and the write: exit 1,
// nothing written.
TEST_F(TopologyCommandsTest, AdoptLostRaceIsExit1) {
  client.topology = OneLink("gpu-000", "swp1");
  client.discovered = OneLink("gpu-000", "swp7");
  client.adopt_race = true;
  EXPECT_EQ(TopologyAdoptCommand(client, options, t.env), kExitCollector);
  EXPECT_THAT(t.err.str(), HasSubstr("changed"));
  EXPECT_EQ(client.topology.links(0).port(), "swp1");
}

}  // namespace
}  // namespace fabricdiag::cli
