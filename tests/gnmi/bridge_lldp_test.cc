// The bridge's LLDP against the simulator's gNMI targets (sim/gnmi_target.h)
// in both dialects: a session subscribes, and what the switch's ports hear
// arrives as the snapshot's neighbor set, which changes when the cabling
// does and only then; the whole bridge delivers it to an ingest server in
// the switch's Inventory, once per change.
#include <memory>
#include <string>
#include <vector>

#include "common/clock.h"
#include "gnmi/bridge.h"
#include "gnmi/switch_session.h"
#include "gtest/gtest.h"
#include "sim/gnmi_target.h"
#include "tests/agent/fake_ingest_server.h"
#include "tests/testing/eventually.h"

namespace fabricdiag::gnmi {
namespace {

using ::fabricdiag::testing::Eventually;

constexpr int64_t kStartNanos = 1700000000'000000000;

// leaf-0: swp1 cabled to a host's NIC, swp49 to a spine, swp2 to nothing.
sim::SwitchState Leaf(int64_t t_seconds, const std::string& swp1_hears) {
  sim::SwitchState s;
  s.name = "leaf-0";
  s.timestamp_nanos = kStartNanos + t_seconds * 1'000'000'000;
  s.boot_time_nanos = kStartNanos;
  s.ports = {"swp1", "swp2", "swp49"};
  s.counters.resize(3);
  // (No description: a moved cable changes one leaf, the port id.)
  s.lldp = {
      {"swp1", "gpu-000", "02:00:00:00:00:00", swp1_hears, "", ""},
      {"swp49", "spine-0", "02:01:00:00:00:02", "swp3", "swp3", "10.0.0.2"}};
  return s;
}

class BridgeLldpTest : public ::testing::TestWithParam<Dialect> {
 protected:
  void SetUp() override {
    sim::GnmiTargetOptions o;
    o.dialect = GetParam();
    absl::StatusOr<std::unique_ptr<sim::GnmiTarget>> t =
        sim::GnmiTarget::Start("leaf-0", o);
    ASSERT_TRUE(t.ok()) << t.status();
    target_ = *std::move(t);
    target_->Publish(Leaf(0, "eth0"));
    SwitchConfig c;
    c.name = "leaf-0";
    c.address = target_->address();
    c.dialect = GetParam();
    c.insecure = true;
    SessionOptions options;
    options.backoff_initial = absl::Milliseconds(50);
    options.backoff_max = absl::Milliseconds(400);
    absl::StatusOr<std::shared_ptr<SwitchSession>> s =
        SwitchSession::Create(c, options, clock_, &scheduler_);
    ASSERT_TRUE(s.ok()) << s.status();
    session_ = *std::move(s);
    session_->Start();
  }
  void TearDown() override {
    if (session_ != nullptr) session_->Stop();
  }

  std::shared_ptr<const agent::LldpState> Lldp() {
    agent::Snapshot snap;
    std::vector<agent::SampleRate> rates;
    session_->Build(clock_.MonotonicNanos(), clock_.Now(), absl::Seconds(60),
                    &snap, &rates);
    return snap.lldp;
  }

  SystemClock clock_;
  Scheduler scheduler_;
  std::unique_ptr<sim::GnmiTarget> target_;
  std::shared_ptr<SwitchSession> session_;
};

TEST_P(BridgeLldpTest, NeighborsOfTheSimulatedCablingArriveAndFollowIt) {
  ASSERT_TRUE(Eventually([&] {
    std::shared_ptr<const agent::LldpState> l = Lldp();
    return l != nullptr && l->up && l->set.neighbors.size() == 2;
  }));
  std::shared_ptr<const agent::LldpState> l = Lldp();
  EXPECT_EQ(l->source, "gnmi");
  const agent::LldpNeighbor& host = l->set.neighbors[0];
  EXPECT_EQ(host.netdev, "swp1");  // the switch's port, as the topology has it
  EXPECT_EQ(host.system_name, "gpu-000");
  EXPECT_EQ(host.chassis_id, "02:00:00:00:00:00");
  EXPECT_EQ(host.chassis_id_type, "mac");
  EXPECT_EQ(host.port_id, "eth0");
  EXPECT_EQ(host.port_id_type, "ifname");
  const agent::LldpNeighbor& spine = l->set.neighbors[1];
  EXPECT_EQ(spine.netdev, "swp49");
  EXPECT_EQ(spine.system_name, "spine-0");
  EXPECT_EQ(spine.port_id, "swp3");
  EXPECT_EQ(spine.management_address, "10.0.0.2");
  EXPECT_EQ(session_->stats().lldp_neighbors, 2u);
  EXPECT_TRUE(session_->stats().lldp_up);

  // Counters move every tick; the neighbor set stays the same version.
  const uint64_t version = l->set.version;
  target_->Publish(Leaf(1, "eth0"));
  target_->Publish(Leaf(2, "eth0"));
  EXPECT_EQ(Lldp()->set.version, version);

  // swp1's cable moves to the host's other NIC.
  target_->Publish(Leaf(3, "eth1"));
  ASSERT_TRUE(
      Eventually([&] { return Lldp()->set.neighbors[0].port_id == "eth1"; }));
  EXPECT_EQ(Lldp()->set.version, version + 1);
  EXPECT_EQ(Lldp()->set.neighbors.size(), 2u);
}

// The Inventory messages `node` sent, in order.
std::vector<v1::Inventory> Inventories(
    const agent::testing::FakeIngestServer& server, const std::string& node) {
  std::vector<v1::Inventory> out;
  for (const v1::AgentMessage& m : server.node(node).messages) {
    if (m.has_inventory()) out.push_back(m.inventory());
  }
  return out;
}

TEST_P(BridgeLldpTest, TheBridgeSendsTheNeighborsInTheInventoryOncePerChange) {
  session_->Stop();  // the bridge opens its own
  agent::testing::FakeIngestServer server;
  ASSERT_TRUE(server.Start().ok());
  BridgeOptions options;
  options.interval = absl::Milliseconds(100);
  options.session.backoff_initial = absl::Milliseconds(50);
  options.stream.targets = {server.target()};
  Bridge bridge(options, clock_);
  SwitchConfig c;
  c.name = "leaf-0";
  c.address = target_->address();
  c.dialect = GetParam();
  c.insecure = true;
  bridge.SetSwitches({c});

  // Ticks with fresh counters until an inventory carries the neighbors.
  int t = 1;
  auto tick = [&](const std::string& swp1_hears) {
    target_->Publish(Leaf(t++, swp1_hears));
    bridge.Tick();
  };
  auto with_lldp = [&] {
    std::vector<v1::Inventory> inv = Inventories(server, "leaf-0");
    return !inv.empty() && inv.back().lldp_source() == "gnmi" &&
           inv.back().lldp_neighbors_size() == 2;
  };
  ASSERT_TRUE(Eventually([&] {
    tick("eth0");
    return with_lldp();
  }));
  const v1::Inventory first = Inventories(server, "leaf-0").back();
  EXPECT_EQ(first.lldp_neighbors(0).local_port(), "swp1");
  EXPECT_EQ(first.lldp_neighbors(0).system_name(), "gpu-000");
  EXPECT_EQ(first.lldp_neighbors(0).port_id(), "eth0");
  EXPECT_EQ(first.lldp_neighbors(0).port_id_type(), "ifname");
  EXPECT_EQ(first.lldp_neighbors(1).local_port(), "swp49");
  EXPECT_EQ(first.lldp_neighbors(1).system_name(), "spine-0");

  // More reports, the same neighbors: no new inventory. (The ports'
  // speeds may still arrive and change the inventory once: wait for five
  // reports in a row that sent none.)
  size_t sent = 0;
  size_t reports = 0;
  ASSERT_TRUE(Eventually([&] {
    sent = Inventories(server, "leaf-0").size();
    reports = server.node("leaf-0").report_seqs.size();
    for (int i = 0; i < 5; ++i) tick("eth0");
    return server.node("leaf-0").report_seqs.size() >= reports + 5 &&
           Inventories(server, "leaf-0").size() == sent;
  }));
  ASSERT_EQ(Inventories(server, "leaf-0").back().lldp_neighbors_size(), 2);
  reports = server.node("leaf-0").report_seqs.size();

  // The cable moves: exactly one new inventory, with the new far end.
  ASSERT_TRUE(Eventually([&] {
    tick("eth1");
    std::vector<v1::Inventory> inv = Inventories(server, "leaf-0");
    return inv.back().lldp_neighbors_size() == 2 &&
           inv.back().lldp_neighbors(0).port_id() == "eth1";
  }));
  ASSERT_TRUE(Eventually([&] {
    tick("eth1");
    return server.node("leaf-0").report_seqs.size() >= reports + 5;
  }));
  EXPECT_EQ(Inventories(server, "leaf-0").size(), sent + 1);
  bridge.Stop();
  server.Stop();
}

INSTANTIATE_TEST_SUITE_P(Dialects, BridgeLldpTest,
                         ::testing::Values(Dialect::kOpenConfig,
                                           Dialect::kSonic));

}  // namespace
}  // namespace fabricdiag::gnmi
