// Where the bridge reads its topology from a collector: the effective view,
// whose declared switches keep their gnmi blocks.
#include "gnmi/bridge_app.h"

#include <string>
#include <vector>

#include "gnmi/bridge.h"
#include "gtest/gtest.h"
#include "tests/client/fake_collector_client.h"

namespace fabricdiag::gnmi {
namespace {

using client::testing::FakeCollectorClient;

// leaf-01 declared with its gNMI address and nothing else; LLDP found its
// uplink and a host cabled to it.
TEST(ReadCollectorTopologyTest, ReadsTheEffectiveView) {
  FakeCollectorClient collector;
  v1::Switch* declared = collector.topology.add_switches();
  declared->set_name("leaf-01");
  declared->mutable_gnmi()->set_address("10.0.0.1:6030");
  declared->mutable_gnmi()->set_dialect("sonic");
  declared->mutable_gnmi()->set_insecure(true);
  collector.effective = collector.topology;
  collector.effective.mutable_switches(0)->add_uplinks("Ethernet0");
  v1::Switch* spine = collector.effective.add_switches();
  spine->set_name("spine-01");
  v1::SwitchLink* up = collector.effective.add_switch_links();
  up->set_switch_a("leaf-01");
  up->set_port_a("Ethernet0");
  up->set_switch_b("spine-01");
  up->set_port_b("Ethernet8");
  up->set_source(v1::LINK_SOURCE_DISCOVERED);

  absl::StatusOr<v1::Topology> read = ReadCollectorTopology(collector);
  ASSERT_TRUE(read.ok()) << read.status();
  ASSERT_EQ(read->switch_links_size(), 1);
  EXPECT_EQ(read->switch_links(0).switch_b(), "spine-01");
  ASSERT_EQ(read->switches(0).uplinks_size(), 1);

  // The switches to subscribe to are still the declared gNMI ones, with
  // their address and dialect.
  std::vector<std::string> errors;
  std::vector<SwitchConfig> switches = SwitchesOf(*read, &errors);
  EXPECT_TRUE(errors.empty());
  ASSERT_EQ(switches.size(), 1u);
  EXPECT_EQ(switches[0].name, "leaf-01");
  EXPECT_EQ(switches[0].address, "10.0.0.1:6030");
  EXPECT_EQ(switches[0].dialect, Dialect::kSonic);
}

// Nothing declared (no topology file, no gNMI switch): the effective view
// answers, with no switch to subscribe to, instead of NOT_FOUND.
TEST(ReadCollectorTopologyTest, NothingDeclaredIsNoSwitchNotAnError) {
  FakeCollectorClient collector;
  collector.has_topology = false;
  collector.effective.add_switches()->set_name("leaf-07");
  absl::StatusOr<v1::Topology> read = ReadCollectorTopology(collector);
  ASSERT_TRUE(read.ok()) << read.status();
  std::vector<std::string> errors;
  EXPECT_TRUE(SwitchesOf(*read, &errors).empty());
}

TEST(ReadCollectorTopologyTest, AnUnreachableCollectorIsAnError) {
  FakeCollectorClient collector;
  collector.fail = absl::UnavailableError("cannot reach collector fake:9811");
  EXPECT_EQ(ReadCollectorTopology(collector).status().code(),
            absl::StatusCode::kUnavailable);
}

// The collector's read token (--token_file) is checked at start, as the
// ingest token is.
TEST(ValidateBridgeConfigTest, AnUnreadableTokenFileIsNamed) {
  BridgeConfig config;
  config.collector = "127.0.0.1:9811";
  EXPECT_TRUE(ValidateBridgeConfig(config).ok());
  config.token_file = "/nonexistent/read-token";
  absl::Status s = ValidateBridgeConfig(config);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("--token_file=/nonexistent/read-token"),
            absl::string_view::npos)
      << s;
}

}  // namespace
}  // namespace fabricdiag::gnmi
