// fabricdiag-sim's switches as gNMI targets (sim/gnmi_fleet.h): whole
// simulations whose leaves a client reaches only over gNMI, faults
// included. A topology-only fabric (4 hosts x 2 NICs) keeps the host trees
// small.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <memory>
#include <regex>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "analysis/layout_parse.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/gnmi_fleet.h"
#include "sim/sim_app.h"
#include "tests/sim/gnmi_test_client.h"
#include "tests/sim/sim_test_util.h"
#include "tests/testing/subprocess.h"
#include "tests/testing/test_pki.h"

namespace fabricdiag::sim {
namespace {

using gnmi::Dialect;
using gnmi::GroupsFor;
using gnmi::GroupSpec;
using testing::GnmiTestClient;
using testing::Group;
using ::testing::HasSubstr;
using testing::kInOctets;
using testing::kOutOctets;
using testing::kPfc3In;
using testing::kPfc3Out;

constexpr int64_t kStartSeconds = 1700000000;

struct SimRun {
  sim::testing::TempDir dir;
  std::unique_ptr<Simulation> sim;

  explicit SimRun(Dialect d, const std::string& scenario = "",
                  GnmiFlags gnmi = {}) {
    SimConfig c;
    c.topology_file = dir.Write("topology.yaml", sim::testing::kTwoLeaves);
    if (!scenario.empty()) c.scenario_file = dir.Write("s.yaml", scenario);
    c.out_dir = dir.path() + "/out";
    c.gnmi = std::move(gnmi);
    c.gnmi.listen = "127.0.0.1:0";
    c.gnmi.dialect = gnmi::DialectName(d);
    c.start_time = absl::FromUnixSeconds(kStartSeconds);
    EXPECT_TRUE(ValidateSimConfig(c).ok()) << ValidateSimConfig(c);
    absl::StatusOr<std::unique_ptr<Simulation>> s = Simulation::Create(c);
    EXPECT_TRUE(s.ok()) << s.status();
    if (s.ok()) sim = *std::move(s);
  }

  const GnmiTarget& Target(size_t i) const {
    return *sim->gnmi()->targets()[i];
  }
  uint64_t Port(const char* sw, const char* port, Counter c) const {
    return sim->port_counters()[*sim->fabric().FindPort(sw, port)]
        .value[static_cast<size_t>(c)];
  }
  void Ticks(int n) {
    for (int i = 0; i < n; ++i) ASSERT_TRUE(sim->Tick(1.0, nullptr).ok());
  }
};

// Reads until `pred` holds; false when the stream ends first (the client's
// deadline bounds the wait).
template <typename Pred>
absl::Status ReadUntil(GnmiTestClient* c, Pred pred) {
  while (!pred()) {
    absl::Status st = c->ReadOne();
    if (!st.ok()) return st;
  }
  return absl::OkStatus();
}

TEST(GnmiSimTest, CountersGrowAsTheSimulationCounts) {
  SimRun run(Dialect::kOpenConfig);
  ASSERT_NE(run.sim, nullptr);
  ASSERT_EQ(run.sim->gnmi()->targets().size(), 2u);
  EXPECT_EQ(run.Target(0).switch_name(), "leaf-0");
  GnmiTestClient c(run.Target(0).address(), grpc::InsecureChannelCredentials());
  ASSERT_TRUE(c.Subscribe(Group(Dialect::kOpenConfig, "interfaces")).ok());
  ASSERT_TRUE(c.ReadUntilSync().ok());
  EXPECT_EQ(c.series["swp1"][kInOctets], 0u);
  EXPECT_EQ(c.last_timestamp, kStartSeconds * 1000000000);
  // Every port of leaf-0: 4 host ports and 4 uplinks.
  EXPECT_EQ(c.series.size(), 8u);

  uint64_t before = 0;
  for (int tick = 1; tick <= 2; ++tick) {
    run.Ticks(1);
    const uint64_t want = run.Port("leaf-0", "swp1", kRxBytes);
    ASSERT_GT(want, before);
    ASSERT_TRUE(ReadUntil(&c, [&] {
                  return c.series["swp1"][kInOctets] == want &&
                         c.series["swp49"][kOutOctets] ==
                             run.Port("leaf-0", "swp49", kTxBytes);
                }).ok());
    EXPECT_EQ(c.last_timestamp, (kStartSeconds + tick) * 1000000000);
    before = want;
  }
  // Hosts of no layout carry 10 GB/s: the growth is traffic, not noise.
  EXPECT_GT(before, uint64_t{1} << 30);
}

// ---- LLDP from the cabling -------------------------------------------------

TEST(GnmiSimLldpTest, HostPortsHearTheirNicAndSwitchLinksTheFarSwitch) {
  const Fabric plain = sim::testing::BuildFabric("");
  v1::Topology topology = plain.topology();
  topology.add_switches()->set_name("spine-0");
  for (const char* leaf : {"leaf-0", "leaf-1"}) {
    v1::SwitchLink* l = topology.add_switch_links();
    l->set_switch_a(leaf);
    l->set_port_a("swp49");
    l->set_switch_b("spine-0");
    l->set_port_b(leaf == std::string("leaf-0") ? "swp1" : "swp2");
  }
  absl::StatusOr<Fabric> fabric = Fabric::Build({}, topology);
  ASSERT_TRUE(fabric.ok()) << fabric.status();

  const std::vector<LldpPeer> leaf1 =
      LldpPeersOf(*fabric, *fabric->FindSwitch("leaf-1"));
  // Four host ports and one uplink with a far end, in port order.
  ASSERT_EQ(leaf1.size(), 5u);
  EXPECT_EQ(leaf1[0].local_port, "swp1");
  EXPECT_EQ(leaf1[0].system_name, "gpu-000");
  EXPECT_EQ(leaf1[0].port_id, "eth1");  // gpu-000's mlx5_1
  EXPECT_EQ(leaf1[3].local_port, "swp4");
  EXPECT_EQ(leaf1[3].system_name, "gpu-003");
  EXPECT_EQ(leaf1[4].local_port, "swp49");
  EXPECT_EQ(leaf1[4].system_name, "spine-0");
  EXPECT_EQ(leaf1[4].port_id, "swp2");
  // One chassis id per host, another per switch.
  EXPECT_NE(leaf1[0].chassis_id, leaf1[1].chassis_id);
  EXPECT_EQ(leaf1[0].chassis_id,
            LldpPeersOf(*fabric, *fabric->FindSwitch("leaf-0"))[0].chassis_id);

  const std::vector<LldpPeer> spine =
      LldpPeersOf(*fabric, *fabric->FindSwitch("spine-0"));
  ASSERT_EQ(spine.size(), 2u);
  EXPECT_EQ(spine[0].local_port, "swp1");
  EXPECT_EQ(spine[0].system_name, "leaf-0");
  EXPECT_EQ(spine[0].port_id, "swp49");
  EXPECT_EQ(spine[1].system_name, "leaf-1");
  EXPECT_NE(spine[0].chassis_id, spine[1].chassis_id);
}

class GnmiSimLldpDialectTest : public ::testing::TestWithParam<Dialect> {};

TEST_P(GnmiSimLldpDialectTest, TargetsServeTheCabling) {
  SimRun run(GetParam());
  ASSERT_NE(run.sim, nullptr);
  GnmiTestClient c(run.Target(1).address(), grpc::InsecureChannelCredentials(),
                   GetParam());
  ASSERT_TRUE(c.Subscribe(Group(GetParam(), "lldp")).ok());
  ASSERT_TRUE(c.ReadUntilSync().ok());
  // leaf-1's host ports; its uplinks have no far end in this topology.
  ASSERT_EQ(c.lldp.size(), 4u);
  EXPECT_EQ(c.lldp["swp2"][gnmi::LldpField::kSystemName], "gpu-001");
  EXPECT_EQ(c.lldp["swp2"][gnmi::LldpField::kPortId], "eth1");
  // "interfaces" is one more group a bridge opens: LLDP is no part of it.
  GnmiTestClient counters(run.Target(1).address(),
                          grpc::InsecureChannelCredentials(), GetParam());
  ASSERT_TRUE(
      counters.Subscribe(Group(GetParam(), GroupsFor(GetParam())[0].name))
          .ok());
  ASSERT_TRUE(counters.ReadUntilSync().ok());
  EXPECT_TRUE(counters.lldp.empty());
}

INSTANTIATE_TEST_SUITE_P(Dialects, GnmiSimLldpDialectTest,
                         ::testing::Values(Dialect::kOpenConfig,
                                           Dialect::kSonic));

TEST(GnmiSimTest, NoSwitchTreeWithGnmi) {
  SimRun run(Dialect::kSonic);
  ASSERT_NE(run.sim, nullptr);
  run.Ticks(1);
  EXPECT_TRUE(std::filesystem::exists(run.dir.path() + "/out/gpu-000/sys"));
  EXPECT_FALSE(std::filesystem::exists(run.dir.path() + "/out/leaf-0"));
  EXPECT_FALSE(std::filesystem::exists(run.dir.path() + "/out/leaf-1"));
}

// --gnmi_switches: a fabric of gNMI switches and agent-read ones at once.
TEST(GnmiSimTest, GnmiSwitchesAreTargetsAndTheOthersKeepTheirTrees) {
  sim::testing::TempDir keys;
  GnmiFlags flags;
  flags.switches = {"leaf-1"};
  flags.topology_out = keys.path() + "/topology-gnmi.json";
  SimRun run(Dialect::kOpenConfig, "", flags);
  ASSERT_NE(run.sim, nullptr);
  run.Ticks(1);
  ASSERT_EQ(run.sim->gnmi()->targets().size(), 1u);
  EXPECT_EQ(run.Target(0).switch_name(), "leaf-1");
  const std::string out = run.dir.path() + "/out";
  EXPECT_TRUE(std::filesystem::exists(out + "/leaf-0/sys/class/net/swp1"));
  EXPECT_TRUE(std::filesystem::exists(out + "/leaf-0/ethtool/swp49"));
  EXPECT_TRUE(std::filesystem::exists(out + "/leaf-0/lldp.json"));
  EXPECT_FALSE(std::filesystem::exists(out + "/leaf-1"));
  EXPECT_TRUE(std::filesystem::exists(out + "/gpu-003/sys"));
  absl::StatusOr<v1::Topology> t =
      analysis::ParseTopology(sim::testing::ReadText(flags.topology_out));
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_EQ(t->switches_size(), 2);
  EXPECT_FALSE(t->switches(0).has_gnmi());
  EXPECT_EQ(t->switches(1).gnmi().address(), run.Target(0).address());

  // The target serves leaf-1's counters, not leaf-0's (same port names).
  GnmiTestClient c(run.Target(0).address(), grpc::InsecureChannelCredentials());
  ASSERT_TRUE(c.Subscribe(Group(Dialect::kOpenConfig, "interfaces")).ok());
  ASSERT_TRUE(c.ReadUntilSync().ok());
  EXPECT_EQ(c.series.size(), 8u);
  EXPECT_EQ(c.series["swp1"][kInOctets], run.Port("leaf-1", "swp1", kRxBytes));
  EXPECT_NE(c.series["swp1"][kInOctets], run.Port("leaf-0", "swp1", kRxBytes));
}

TEST(GnmiSimTest, AnUnknownGnmiSwitchIsAnError) {
  sim::testing::TempDir dir;
  SimConfig c;
  c.topology_file = dir.Write("topology.yaml", sim::testing::kTwoLeaves);
  c.out_dir = dir.path() + "/out";
  c.gnmi.listen = "127.0.0.1:0";
  c.gnmi.switches = {"leaf-1", "leaf-9"};
  ASSERT_TRUE(ValidateSimConfig(c).ok());
  EXPECT_EQ(Simulation::Create(c).status().message(),
            "--gnmi_switches: \"leaf-9\" is not a simulated switch");
}

class GnmiFaultsTest : public ::testing::TestWithParam<Dialect> {};

TEST_P(GnmiFaultsTest, PfcStormVictimsAndPolarizationAreVisible) {
  const Dialect d = GetParam();
  SimRun run(d, R"(
faults:
  - {kind: pfc_storm, node: gpu-001, nic: mlx5_0, start: 0, priority: 3}
  - {kind: ecmp_polarization, switch: leaf-0, start: 0}
)");
  ASSERT_NE(run.sim, nullptr);
  run.Ticks(3);
  const bool sonic = d == Dialect::kSonic;
  GnmiTestClient c(run.Target(0).address(), grpc::InsecureChannelCredentials(),
                   d);
  ASSERT_TRUE(c.Subscribe(Group(d, sonic ? "counters" : "arista_pfc")).ok());
  ASSERT_TRUE(c.ReadUntilSync().ok());
  const std::string rx = sonic ? "SAI_PORT_STAT_PFC_3_RX_PKTS" : kPfc3In;
  const std::string tx = sonic ? "SAI_PORT_STAT_PFC_3_TX_PKTS" : kPfc3Out;
  // swp2 faces the stuck receiver; swp1 pauses its healthy host (a victim).
  EXPECT_EQ(
      c.series["swp2"][rx],
      run.Port("leaf-0", "swp2", static_cast<Counter>(kRxPauseFrames + 3)));
  EXPECT_GT(c.series["swp2"][rx], 10000u);
  EXPECT_GT(c.series["swp1"][tx], 1000u);
  EXPECT_EQ(
      c.series["swp1"][tx],
      run.Port("leaf-0", "swp1", static_cast<Counter>(kTxPauseFrames + 3)));
  if (sonic) {
    // Pause time: ~95% of 3 s, in microseconds.
    EXPECT_GT(c.series["swp2"]["SAI_PORT_STAT_PFC_3_RX_PAUSE_DURATION_US"],
              2'500'000u);
    EXPECT_GT(c.series["swp1"]["SAI_PORT_STAT_PFC_3_TX_PAUSE_DURATION_US"], 0u);
  }
  GnmiTestClient o(run.Target(0).address(), grpc::InsecureChannelCredentials(),
                   d);
  ASSERT_TRUE(o.Subscribe(Group(d, sonic ? "counters" : "interfaces")).ok());
  ASSERT_TRUE(o.ReadUntilSync().ok());
  const std::string out = sonic ? "SAI_PORT_STAT_IF_OUT_OCTETS" : kOutOctets;
  // 70% of the uplink traffic on the first uplink, 10% on each other.
  EXPECT_GT(o.series["swp49"][out], 4 * o.series["swp50"][out]);
  EXPECT_GT(o.series["swp50"][out], 0u);
}

TEST_P(GnmiFaultsTest, OutageClosesAndRefusesStreamsThenServesGrownCounters) {
  const Dialect d = GetParam();
  SimRun run(d, R"(
faults:
  - {kind: gnmi_outage, switch: leaf-0, start: 2, end: 4}
)");
  ASSERT_NE(run.sim, nullptr);
  const bool sonic = d == Dialect::kSonic;
  const GroupSpec& g = GroupsFor(d)[0];
  const std::string in = sonic ? "SAI_PORT_STAT_IF_IN_OCTETS" : kInOctets;
  GnmiTestClient c(run.Target(0).address(), grpc::InsecureChannelCredentials(),
                   d);
  ASSERT_TRUE(c.Subscribe(g).ok());
  ASSERT_TRUE(c.ReadUntilSync().ok());
  GnmiTestClient other(run.Target(1).address(),
                       grpc::InsecureChannelCredentials(), d);
  ASSERT_TRUE(other.Subscribe(g).ok());
  ASSERT_TRUE(other.ReadUntilSync().ok());

  run.Ticks(3);  // the third tick starts at t=2: the outage
  EXPECT_FALSE(run.Target(0).available());
  const uint64_t at_outage = run.Port("leaf-0", "swp1", kRxBytes);
  absl::Status st = ReadUntil(&c, [] { return false; });
  EXPECT_EQ(st.code(), absl::StatusCode::kUnavailable) << st;
  EXPECT_LT(c.series["swp1"][in], at_outage);
  GnmiTestClient again(run.Target(0).address(),
                       grpc::InsecureChannelCredentials(), d);
  ASSERT_TRUE(again.Subscribe(g).ok());
  EXPECT_EQ(again.ReadUntilSync().code(), absl::StatusCode::kUnavailable);
  // leaf-1 keeps streaming.
  ASSERT_TRUE(ReadUntil(&other, [&] {
                return other.series["swp1"][in] ==
                       run.Port("leaf-1", "swp1", kRxBytes);
              }).ok());

  run.Ticks(2);  // t=4: back
  EXPECT_TRUE(run.Target(0).available());
  GnmiTestClient back(run.Target(0).address(),
                      grpc::InsecureChannelCredentials(), d);
  ASSERT_TRUE(back.Subscribe(g).ok());
  ASSERT_TRUE(back.ReadUntilSync().ok());
  // The counters kept counting through the outage.
  EXPECT_GT(back.series["swp1"][in], at_outage);
  EXPECT_EQ(back.series["swp1"][in], run.Port("leaf-0", "swp1", kRxBytes));
}

INSTANTIATE_TEST_SUITE_P(Dialects, GnmiFaultsTest,
                         ::testing::Values(Dialect::kOpenConfig,
                                           Dialect::kSonic));

TEST(GnmiSimTest, SwitchReloadRestartsCountersAndMovesBootTime) {
  SimRun run(Dialect::kOpenConfig, R"(
faults:
  - {kind: switch_reload, switch: leaf-0, start: 3, end: 4}
)");
  ASSERT_NE(run.sim, nullptr);
  run.Ticks(3);
  const uint64_t before = run.Port("leaf-0", "swp1", kRxBytes);
  run.Ticks(2);  // reloaded at t=3, serving again from t=4
  GnmiTestClient c(run.Target(0).address(), grpc::InsecureChannelCredentials());
  ASSERT_TRUE(c.Subscribe(Group(Dialect::kOpenConfig, "system")).ok());
  ASSERT_TRUE(c.ReadUntilSync().ok());
  EXPECT_EQ(c.boot_time, uint64_t{kStartSeconds + 3} * 1000000000);
  GnmiTestClient i(run.Target(0).address(), grpc::InsecureChannelCredentials());
  ASSERT_TRUE(i.Subscribe(Group(Dialect::kOpenConfig, "interfaces")).ok());
  ASSERT_TRUE(i.ReadUntilSync().ok());
  EXPECT_LT(i.series["swp1"][kInOctets], before);
  EXPECT_GT(i.series["swp1"][kInOctets], 0u);
  // leaf-1 did not reload.
  GnmiTestClient l1(run.Target(1).address(),
                    grpc::InsecureChannelCredentials());
  ASSERT_TRUE(l1.Subscribe(Group(Dialect::kOpenConfig, "system")).ok());
  ASSERT_TRUE(l1.ReadUntilSync().ok());
  EXPECT_EQ(l1.boot_time, uint64_t{kStartSeconds} * 1000000000);
}

// ---- Topology out and flags ---------------------------------------------

TEST(GnmiSimTest, WritesATopologyTheParserAccepts) {
  sim::testing::TempDir keys;
  absl::StatusOr<fabricdiag::testing::TestPki> pki =
      fabricdiag::testing::MakeTestPki(keys.path(), {});
  ASSERT_TRUE(pki.ok()) << pki.status();
  const std::string cred = keys.Write("leaf.cred", "fabricdiag\npw\n");
  ASSERT_EQ(chmod(cred.c_str(), 0600), 0);
  GnmiFlags flags;
  flags.tls_cert = pki->server.cert;
  flags.tls_key = pki->server.key;
  flags.tls_ca = pki->ca_cert;
  flags.credentials_file = cred;
  flags.topology_out = keys.path() + "/topology-gnmi.json";
  SimRun run(Dialect::kSonic, "", flags);
  ASSERT_NE(run.sim, nullptr);
  absl::StatusOr<v1::Topology> t = analysis::ParseTopology(
      sim::testing::ReadText(keys.path() + "/topology-gnmi.json"));
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_EQ(t->switches_size(), 2);
  for (int i = 0; i < 2; ++i) {
    const v1::GnmiTarget& g = t->switches(i).gnmi();
    EXPECT_EQ(g.address(), run.Target(static_cast<size_t>(i)).address());
    EXPECT_EQ(g.dialect(), "sonic");
    EXPECT_FALSE(g.insecure());
    EXPECT_EQ(g.tls_ca(), pki->ca_cert);
    EXPECT_EQ(g.credentials_file(), cred);
  }
  EXPECT_EQ(t->links_size(), 8);

  // What the topology says is enough to connect: TLS with its CA, and its
  // credentials on every RPC.
  grpc::SslCredentialsOptions ssl;
  ssl.pem_root_certs = sim::testing::ReadText(t->switches(0).gnmi().tls_ca());
  GnmiTestClient c(t->switches(0).gnmi().address(), grpc::SslCredentials(ssl),
                   Dialect::kSonic);
  EXPECT_EQ(c.Capabilities().code(), absl::StatusCode::kUnauthenticated);
  c.SetCredentials("fabricdiag", "pw");
  ASSERT_TRUE(c.Subscribe(Group(Dialect::kSonic, "counters")).ok());
  EXPECT_TRUE(c.ReadUntilSync().ok());
  EXPECT_EQ(c.series.size(), 8u);
}

// A port the kernel just handed out and took back: free unless another
// process takes it meanwhile (the test below tries a few).
int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
    port = ntohs(a.sin_port);
  }
  close(fd);
  return port;
}

TEST(GnmiSimTest, SwitchIListensOnPortPlusI) {
  sim::testing::TempDir dir;
  SimConfig c;
  c.topology_file = dir.Write("topology.yaml", sim::testing::kTwoLeaves);
  c.out_dir = dir.path() + "/out";
  for (int attempt = 0; attempt < 5; ++attempt) {
    const int port = FreePort();
    ASSERT_GT(port, 0);
    if (port >= 65535) continue;
    c.gnmi.listen = absl::StrCat("127.0.0.1:", port);
    absl::StatusOr<std::unique_ptr<Simulation>> s = Simulation::Create(c);
    if (!s.ok() && absl::StrContains(s.status().message(), "cannot listen")) {
      continue;  // taken meanwhile
    }
    ASSERT_TRUE(s.ok()) << s.status();
    EXPECT_EQ((*s)->gnmi()->targets()[0]->address(),
              absl::StrCat("127.0.0.1:", port));
    EXPECT_EQ((*s)->gnmi()->targets()[1]->port(), port + 1);
    return;
  }
  FAIL() << "no two free consecutive ports in 5 attempts";
}

TEST(GnmiSimTest, PortsBeyond65535AreAnError) {
  sim::testing::TempDir dir;
  SimConfig c;
  c.topology_file = dir.Write("topology.yaml", sim::testing::kTwoLeaves);
  c.out_dir = dir.path() + "/out";
  c.gnmi.listen = "127.0.0.1:65535";
  ASSERT_TRUE(ValidateSimConfig(c).ok());
  EXPECT_EQ(Simulation::Create(c).status().message(),
            "--gnmi_listen: 2 switches need ports 65535..65536, beyond 65535");
}

TEST(GnmiSimTest, FlagErrorsNameTheFlag) {
  auto error = [](const std::function<void(SimConfig*)>& edit) {
    SimConfig c;
    c.layout_files = {"l.yaml"};
    c.topology_file = "t.yaml";
    c.out_dir = "/tmp/x";
    c.gnmi.listen = "127.0.0.1:0";
    edit(&c);
    return std::string(ValidateSimConfig(c).message());
  };
  EXPECT_EQ(error([](SimConfig*) {}), "");
  EXPECT_THAT(error([](SimConfig* c) { c->gnmi.dialect = "eos"; }),
              HasSubstr("--gnmi_dialect: \"eos\" is not a gNMI dialect"));
  EXPECT_THAT(error([](SimConfig* c) { c->gnmi.listen = "localhost"; }),
              HasSubstr("--gnmi_listen=localhost"));
  EXPECT_THAT(error([](SimConfig* c) { c->gnmi.listen = "h:70000"; }),
              HasSubstr("--gnmi_listen=h:70000"));
  EXPECT_EQ(error([](SimConfig* c) { c->gnmi.tls_cert = "/c.pem"; }),
            "--gnmi_tls_cert and --gnmi_tls_key must be given together");
  EXPECT_THAT(error([](SimConfig* c) { c->gnmi.credentials_file = "/c"; }),
              HasSubstr("--gnmi_credentials_file: credentials travel only "
                        "over TLS"));
  EXPECT_THAT(error([](SimConfig* c) {
                c->topology_file.clear();
                c->gnmi.topology_out = "/o.json";
              }),
              HasSubstr("--gnmi_topology_out: needs --topology"));
  EXPECT_EQ(error([](SimConfig* c) {
              c->gnmi.listen.clear();
              c->gnmi.tls_key = "/k.pem";
            }),
            "--gnmi_tls_key: needs --gnmi_listen");
  EXPECT_EQ(error([](SimConfig* c) { c->gnmi.refresh = absl::Seconds(1); }),
            "");
  EXPECT_EQ(error([](SimConfig* c) { c->gnmi.refresh = absl::Seconds(-1); }),
            "--gnmi_refresh=-1s: must be 0 (counters change every tick) up "
            "to 1h");
  EXPECT_EQ(error([](SimConfig* c) {
              c->gnmi.listen.clear();
              c->gnmi.refresh = absl::Seconds(1);
            }),
            "--gnmi_refresh: needs --gnmi_listen");
  EXPECT_EQ(error([](SimConfig* c) {
              c->gnmi.pfc_refresh = absl::Seconds(10);
              c->gnmi.overlap = true;
            }),
            "");
  EXPECT_EQ(
      error([](SimConfig* c) { c->gnmi.pfc_refresh = absl::Hours(2); }),
      "--gnmi_pfc_refresh=2h: must be 0 (counters change every tick) up to "
      "1h");
  EXPECT_EQ(error([](SimConfig* c) {
              c->gnmi.listen.clear();
              c->gnmi.pfc_refresh = absl::Seconds(10);
            }),
            "--gnmi_pfc_refresh: needs --gnmi_listen");
  EXPECT_EQ(error([](SimConfig* c) {
              c->gnmi.listen.clear();
              c->gnmi.overlap = true;
            }),
            "--gnmi_overlap: needs --gnmi_listen");
  EXPECT_EQ(error([](SimConfig* c) { c->gnmi.switches = {"leaf-1"}; }), "");
  EXPECT_EQ(error([](SimConfig* c) {
              c->gnmi.listen.clear();
              c->gnmi.switches = {"leaf-1"};
            }),
            "--gnmi_switches: needs --gnmi_listen");
}

TEST(GnmiSimTest, UnreadableOrMalformedCredentialsFileIsAnError) {
  sim::testing::TempDir keys;
  absl::StatusOr<fabricdiag::testing::TestPki> pki =
      fabricdiag::testing::MakeTestPki(keys.path(), {});
  ASSERT_TRUE(pki.ok()) << pki.status();
  sim::testing::TempDir dir;
  SimConfig c;
  c.topology_file = dir.Write("topology.yaml", sim::testing::kTwoLeaves);
  c.out_dir = dir.path() + "/out";
  c.gnmi.listen = "127.0.0.1:0";
  c.gnmi.tls_cert = pki->server.cert;
  c.gnmi.tls_key = pki->server.key;

  c.gnmi.credentials_file = dir.path() + "/missing";
  absl::Status st = Simulation::Create(c).status();
  EXPECT_THAT(std::string(st.message()),
              HasSubstr("--gnmi_credentials_file: cannot open " + dir.path() +
                        "/missing"));

  c.gnmi.credentials_file = dir.Write("open.cred", "u\nhunter2-secret\n");
  ASSERT_EQ(chmod(c.gnmi.credentials_file.c_str(), 0644), 0);
  st = Simulation::Create(c).status();
  EXPECT_THAT(std::string(st.message()), HasSubstr("--gnmi_credentials_file"));
  EXPECT_THAT(std::string(st.message()), HasSubstr("chmod"));

  c.gnmi.credentials_file = dir.Write("one.cred", "hunter2-secret\n");
  ASSERT_EQ(chmod(c.gnmi.credentials_file.c_str(), 0600), 0);
  st = Simulation::Create(c).status();
  EXPECT_THAT(std::string(st.message()),
              HasSubstr("expected the user name on line 1 and the password on "
                        "line 2"));
  EXPECT_THAT(std::string(st.message()),
              ::testing::Not(HasSubstr("hunter2-secret")));
}

// ---- The fabricdiag-sim process -----------------------------------------

TEST(GnmiSimBinaryTest, PrintsOneLinePerSwitchAndWritesTheTopology) {
  sim::testing::TempDir dir;
  const std::string topology =
      dir.Write("topology.yaml", sim::testing::kTwoLeaves);
  const std::string out_topology = dir.path() + "/topology-gnmi.json";
  fabricdiag::testing::Subprocess sim(
      {FABRICDIAG_SIM_BINARY, "--topology=" + topology,
       "--out=" + dir.path() + "/out", "--interval=200ms",
       "--gnmi_listen=127.0.0.1:0", "--gnmi_dialect=sonic",
       "--gnmi_topology_out=" + out_topology});
  ASSERT_TRUE(sim.Start().ok());
  std::string line;
  ASSERT_TRUE(sim.WaitForStderr("gnmi target leaf-1", &line)) << sim.Stderr();
  const std::regex re(
      "fabricdiag-sim: gnmi target (leaf-[01]) \\(sonic\\) listening on "
      "(127\\.0\\.0\\.1:[0-9]+)\n");
  std::map<std::string, std::string> printed;
  const std::string err = sim.Stderr();
  for (auto it = std::sregex_iterator(err.begin(), err.end(), re);
       it != std::sregex_iterator(); ++it) {
    printed[(*it)[1]] = (*it)[2];
  }
  ASSERT_EQ(printed.size(), 2u) << err;
  EXPECT_NE(printed["leaf-0"], printed["leaf-1"]);

  absl::StatusOr<v1::Topology> t =
      analysis::ParseTopology(sim::testing::ReadText(out_topology));
  ASSERT_TRUE(t.ok()) << t.status();
  for (const v1::Switch& sw : t->switches()) {
    EXPECT_EQ(sw.gnmi().address(), printed[sw.name()]);
    EXPECT_EQ(sw.gnmi().dialect(), "sonic");
    EXPECT_TRUE(sw.gnmi().insecure());
  }

  GnmiTestClient c(printed["leaf-0"], grpc::InsecureChannelCredentials(),
                   Dialect::kSonic);
  ASSERT_TRUE(c.Subscribe(Group(Dialect::kSonic, "counters")).ok());
  ASSERT_TRUE(c.ReadUntilSync().ok());
  // Real time: the counters grow tick after tick.
  ASSERT_TRUE(ReadUntil(&c, [&] {
                return c.series["swp1"]["SAI_PORT_STAT_IF_IN_OCTETS"] > 0;
              }).ok());
  EXPECT_TRUE(std::filesystem::exists(dir.path() + "/out/gpu-000/sys"));
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/out/leaf-0"));

  sim.Signal(SIGTERM);
  EXPECT_EQ(sim.Wait(absl::Seconds(10)), 0);
}

TEST(GnmiSimBinaryTest, BadGnmiFlagsExitTwoNamingTheFlag) {
  sim::testing::TempDir dir;
  const std::string topology =
      dir.Write("topology.yaml", sim::testing::kTwoLeaves);
  const std::vector<std::string> base = {
      FABRICDIAG_SIM_BINARY, "--topology=" + topology,
      "--out=" + dir.path() + "/out", "--ticks=1"};
  auto run = [&](std::vector<std::string> flags) {
    std::vector<std::string> argv = base;
    argv.insert(argv.end(), flags.begin(), flags.end());
    return fabricdiag::testing::RunCommand(argv);
  };
  auto r = run({"--gnmi_listen=127.0.0.1:0", "--gnmi_dialect=eos"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err,
              HasSubstr("--gnmi_dialect: \"eos\" is not a gNMI dialect"));
  r = run({"--gnmi_listen=127.0.0.1"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--gnmi_listen=127.0.0.1"));
  r = run({"--gnmi_listen=127.0.0.1:0", "--gnmi_tls_cert=/c.pem"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--gnmi_tls_cert and --gnmi_tls_key"));
  r = run({"--gnmi_listen=127.0.0.1:0", "--gnmi_tls_cert=/nonexistent.pem",
           "--gnmi_tls_key=/nonexistent.key"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--gnmi_tls_cert"));
  r = fabricdiag::testing::RunCommand(
      {FABRICDIAG_SIM_BINARY, "--virtual_agents=1", "--gnmi_listen=h:1"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--gnmi_listen: not with --virtual_agents"));
}

}  // namespace
}  // namespace fabricdiag::sim
