// End-to-end tests of the real fabricdiag-agent binary: flags, --once,
// /metrics against a golden file, devices that vanish at runtime, signals,
// and streaming to a real gRPC ingest server through a collector outage.
#include <signal.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/agent/fake_ingest_server.h"
#include "tests/testing/fake_sysfs.h"
#include "tests/testing/http_get.h"
#include "tests/testing/promtool.h"
#include "tests/testing/subprocess.h"
#include "tests/testing/temp_dir.h"

namespace fabricdiag::agent {
namespace {

using ::fabricdiag::testing::HttpGet;
using ::fabricdiag::testing::PromtoolAccepts;
using ::fabricdiag::testing::PromtoolInstalled;
using ::fabricdiag::testing::RunCommand;
using ::fabricdiag::testing::RunResult;
using ::fabricdiag::testing::Subprocess;
using ::testing::HasSubstr;

const std::string kAgent = FABRICDIAG_AGENT_BINARY;
const std::string kFixtures =
    std::string(FABRICDIAG_SOURCE_DIR) + "/tests/fixtures";

// Starts the agent with `flags` and waits until it serves /metrics.
class RunningAgent {
 public:
  explicit RunningAgent(std::vector<std::string> flags) {
    std::vector<std::string> argv = {kAgent, "--listen=127.0.0.1:0"};
    argv.insert(argv.end(), flags.begin(), flags.end());
    process_ = std::make_unique<Subprocess>(std::move(argv));
  }

  ::testing::AssertionResult Start() {
    if (!process_->Start().ok()) return ::testing::AssertionFailure() << "fork";
    std::string line;
    if (!process_->WaitForStderr("serving /metrics on port", &line)) {
      return ::testing::AssertionFailure() << "agent did not start; stderr:\n"
                                           << process_->Stderr();
    }
    std::smatch m;
    static const std::regex kPort("on port ([0-9]+)");
    if (!std::regex_search(line, m, kPort) ||
        !absl::SimpleAtoi(m[1].str(), &port_)) {
      return ::testing::AssertionFailure() << "no port in: " << line;
    }
    return ::testing::AssertionSuccess();
  }

  std::string Scrape() {
    absl::StatusOr<std::string> body = HttpGet(port_, "/metrics");
    return body.ok() ? *body : "";
  }

  // Polls /metrics until `pred` holds (or 20 s pass); returns the last body.
  std::string ScrapeUntil(const std::function<bool(const std::string&)>& pred) {
    const absl::Time deadline = absl::Now() + absl::Seconds(20);
    std::string body;
    while (absl::Now() < deadline) {
      body = Scrape();
      if (pred(body)) return body;
      absl::SleepFor(absl::Milliseconds(50));
    }
    return body;
  }

  Subprocess& process() { return *process_; }
  int port() const { return port_; }

 private:
  std::unique_ptr<Subprocess> process_;
  int port_ = 0;
};

// Value of the series `name{labels}` in an exposition, NaN when absent.
double Value(const std::string& exposition, const std::string& series) {
  for (absl::string_view line : absl::StrSplit(exposition, '\n')) {
    if (absl::StartsWith(line, series + " ")) {
      double v = NAN;
      if (absl::SimpleAtod(line.substr(series.size() + 1), &v)) return v;
    }
  }
  return NAN;
}

// Lines whose values change from run to run (durations, timestamps, tick
// counts, the HTTP server's own request statistics) are left out of the
// golden comparison; their HELP and TYPE lines stay.
std::string StableLines(const std::string& exposition) {
  static const std::regex kVolatile(
      "^(fabricdiag_agent_(source_duration_seconds|snapshot_duration_seconds|"
      "last_snapshot_timestamp_seconds|snapshots_total)|fabricdiag_http_[a-z_]+"
      ")[ "
      "{].*");
  std::string out;
  for (absl::string_view line : absl::StrSplit(exposition, '\n')) {
    std::string l(line);
    if (l.empty() || std::regex_match(l, kVolatile)) continue;
    absl::StrAppend(&out, l, "\n");
  }
  return out;
}

TEST(AgentBinaryTest, GoldenExpositionOfTheFixtureNode) {
  // LLDP from a real lldpcli capture: eth0's neighbor is kept, eth1 (not
  // in the fixture tree) is counted as unknown.
  RunningAgent agent(
      {"--sysfs_root=" + kFixtures + "/sysfs",
       "--ethtool_dir=" + kFixtures + "/ethtool/demo",
       "--lldp_file=" + kFixtures + "/lldp/host-two-neighbors.json",
       "--node=fixture-node", "--interval=100ms"});
  ASSERT_TRUE(agent.Start());
  const std::string body = agent.ScrapeUntil([](const std::string& b) {
    return absl::StrContains(b, "fabricdiag_agent_snapshots_total");
  });
  const std::string stable = StableLines(body);
  const std::string golden_path = kFixtures + "/golden/fixture_node.prom";
  if (std::getenv("FABRICDIAG_UPDATE_GOLDEN") != nullptr) {
    std::ofstream(golden_path) << stable;
  }
  std::ifstream in(golden_path);
  std::stringstream golden;
  golden << in.rdbuf();
  ASSERT_FALSE(golden.str().empty())
      << "missing " << golden_path
      << "; run with FABRICDIAG_UPDATE_GOLDEN=1 to create it";
  EXPECT_EQ(stable, golden.str())
      << "exposition changed; if intended, regenerate with "
         "FABRICDIAG_UPDATE_GOLDEN=1";
}

TEST(AgentBinaryTest, FixtureExpositionHasTheContractMetricsAndPassesPromtool) {
  RunningAgent agent({"--sysfs_root=" + kFixtures + "/sysfs",
                      "--ethtool_dir=" + kFixtures + "/ethtool/demo",
                      "--interval=100ms"});
  ASSERT_TRUE(agent.Start());
  const std::string body = agent.ScrapeUntil([](const std::string& b) {
    return absl::StrContains(b, "fabricdiag_agent_snapshots_total");
  });
  // docs/metrics.md: port_*_data x 4, same values as node_exporter.
  EXPECT_EQ(Value(body,
                  "fabricdiag_rdma_port_received_bytes_total{device=\"mlx5_0\","
                  "port=\"1\"}"),
            72505381512.0);
  EXPECT_EQ(Value(body,
                  "fabricdiag_rdma_port_transmitted_bytes_total{device=\"hfi1_"
                  "0\",port=\"1\"}"),
            1094233306172.0);
  EXPECT_EQ(Value(body,
                  "fabricdiag_rdma_port_received_bytes_total{device=\"mlx4_0\","
                  "port=\"2\"}"),
            9841747136.0);
  // hw_counters, but never the lifespan setting.
  EXPECT_EQ(Value(body,
                  "fabricdiag_rdma_port_hw_statistic_total{device=\"mlx5_0\","
                  "port=\"1\",statistic=\"local_ack_timeout_err\"}"),
            131.0);
  EXPECT_THAT(body, ::testing::Not(HasSubstr("lifespan")));
  // The real ConnectX-6 Dx capture: RX buffer discards on the physical port.
  EXPECT_EQ(Value(body,
                  "fabricdiag_nic_discards_total{netdev=\"eth0\",reason=\"rx_"
                  "discards_phy\"}"),
            Value(body,
                  "fabricdiag_ethtool_statistic{netdev=\"eth0\",statistic=\"rx_"
                  "discards_phy\"}"));
  EXPECT_GT(Value(body,
                  "fabricdiag_nic_discards_total{netdev=\"eth0\",reason=\"rx_"
                  "discards_phy\"}"),
            0);
  for (const char* source : {"rdma_sysfs", "netdev", "ethtool", "verbs"}) {
    EXPECT_EQ(
        Value(body, absl::StrCat("fabricdiag_agent_source_success{source=\"",
                                 source, "\"}")),
        1)
        << source;
  }
  if (PromtoolInstalled()) {
    std::string lint;
    EXPECT_TRUE(PromtoolAccepts(body, &lint)) << lint;
  }
}

TEST(AgentBinaryTest, OncePrintsJsonOfTheFixtureTree) {
  RunResult r = RunCommand({kAgent, "--once", "--node=n1",
                            "--sysfs_root=" + kFixtures + "/sysfs",
                            "--ethtool_dir=" + kFixtures + "/ethtool/demo"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json snap = nlohmann::json::parse(r.out);
  EXPECT_EQ(snap["node"], "n1");
  EXPECT_EQ(snap["rdma_devices"].size(), 3u);
  bool found = false;
  for (const auto& s : snap["samples"]) {
    if (s["device"] == "mlx5_0" && s["name"] == "port_rcv_data") {
      found = true;
      EXPECT_EQ(s["raw"].get<uint64_t>(), 18126345378u);
      EXPECT_EQ(s["value"].get<double>(), 72505381512.0);
      EXPECT_EQ(s["unit"], "bytes");
    }
  }
  EXPECT_TRUE(found);
}

TEST(AgentBinaryTest, OnceFailsClearlyWhenNothingCanBeRead) {
  ScopedTempDir empty;
  RunResult r = RunCommand({kAgent, "--once", "--sysfs_root=" + empty.path()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("nothing could be read"));
  EXPECT_TRUE(r.out.empty());
}

struct BadFlagCase {
  std::vector<std::string> flags;
  std::string message;
};

TEST(AgentBinaryTest, InvalidFlagsExitTwoNamingTheFlag) {
  const std::vector<BadFlagCase> cases = {
      {{"--interval=0s"}, "--interval"},
      {{"--interval=2h"}, "--interval"},
      {{"--node=bad name"}, "--node"},
      {{"--sysfs_root=/nonexistent/fabricdiag"}, "--sysfs_root"},
      {{"--ethtool_dir=/nonexistent/fabricdiag"}, "--ethtool_dir"},
      {{"--collector=no-port"}, "--collector"},
      {{"--collector=host:99999"}, "--collector"},
      {{"--listen=127.0.0.1:http"}, "--listen"},
      {{"--collector=h:1", "--tls_cert=/etc/hostname"},
       "--tls_cert and --tls_key"},
      {{"--collector=h:1", "--tls_ca=/nonexistent/ca.pem"}, "--tls_ca"},
      // A client certificate needs a CA to verify the collector with (as in
      // every client: docs/client-tls.md).
      {{"--collector=h:1", "--tls_cert=/etc/hostname",
        "--tls_key=/etc/hostname"},
       "--tls_cert: needs --tls_ca"},
      {{"--collector=h:1", "--tls_server_name=c.example"},
       "--tls_server_name: needs --tls_ca"},
      {{"--tls_ca=/etc/hostname"}, "need --collector"},
      {{"--netdev_exclude=([unclosed"}, "--netdev_exclude"},
      {{"--sysfs_fd_cache=sometimes"}, "--sysfs_fd_cache"},
      {{"--stream_buffer_size=lots"}, "--stream_buffer_size: "},
      {{"--stream_buffer_size=1MiB"}, "must be between 4MiB and 64GiB"},
      {{"--stream_buffer_size=1TiB"}, "must be between 4MiB and 64GiB"},
  };
  for (const BadFlagCase& c : cases) {
    std::vector<std::string> argv = {kAgent};
    argv.insert(argv.end(), c.flags.begin(), c.flags.end());
    RunResult r = RunCommand(argv);
    EXPECT_EQ(r.exit_code, 2) << c.flags[0] << ": " << r.err;
    EXPECT_THAT(r.err, HasSubstr(c.message)) << c.flags[0];
  }
}

TEST(AgentBinaryTest, PortInUseIsAClearStartupError) {
  RunningAgent first({"--sysfs_root=" + kFixtures + "/sysfs"});
  ASSERT_TRUE(first.Start());
  RunResult r = RunCommand({kAgent, "--sysfs_root=" + kFixtures + "/sysfs",
                            absl::StrCat("--listen=127.0.0.1:", first.port())});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("cannot serve /metrics"));
}

// --sysfs_fd_cache: kept descriptors are visible in /proc/PID/fd.
TEST(AgentBinaryTest, SysfsFdCacheFlagKeepsOrClosesDescriptors) {
  ScopedTempDir dir;
  ASSERT_TRUE(BuildRoceNode(dir.path(), 8).ok());
  auto open_fds = [](pid_t pid) {
    size_t n = 0;
    std::error_code ec;
    for (auto it = std::filesystem::directory_iterator(
             absl::StrCat("/proc/", pid, "/fd"), ec);
         !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
      ++n;
    }
    return n;
  };
  RunningAgent always({"--sysfs_root=" + dir.path(), "--sysfs_fd_cache=always",
                       "--interval=100ms"});
  ASSERT_TRUE(always.Start());
  always.ScrapeUntil([](const std::string& b) {
    return absl::StrContains(b, "fabricdiag_agent_devices{kind=\"rdma\"} 8");
  });
  EXPECT_GT(open_fds(always.process().pid()), 500u);
  RunningAgent never({"--sysfs_root=" + dir.path(), "--sysfs_fd_cache=never",
                      "--interval=100ms"});
  ASSERT_TRUE(never.Start());
  never.ScrapeUntil([](const std::string& b) {
    return absl::StrContains(b, "fabricdiag_agent_devices{kind=\"rdma\"} 8");
  });
  EXPECT_LT(open_fds(never.process().pid()), 100u);
}

TEST(AgentBinaryTest, SigtermStopsPromptlyWithExitZero) {
  RunningAgent agent({"--sysfs_root=" + kFixtures + "/sysfs", "--interval=1h"});
  ASSERT_TRUE(agent.Start());
  agent.process().Signal(SIGTERM);
  EXPECT_EQ(agent.process().Wait(absl::Seconds(15)), std::optional<int>(0));
}

// A NIC that vanishes (driver reload, dead card), a counter file that turns
// to junk and a NIC that comes back: the agent keeps serving valid metrics
// for everything else and follows the devices without a restart.
TEST(AgentBinaryTest, FollowsDevicesThatVanishAndReturn) {
  ScopedTempDir dir;
  absl::StatusOr<FakeRoceNode> node = BuildRoceNode(dir.path(), 8);
  ASSERT_TRUE(node.ok()) << node.status();
  RunningAgent agent({"--sysfs_root=" + dir.path(), "--interval=100ms",
                      "--ethtool_dir=" + dir.path()});
  ASSERT_TRUE(agent.Start());
  const std::string devices8 = "fabricdiag_agent_devices{kind=\"rdma\"} 8";
  std::string body = agent.ScrapeUntil(
      [&](const std::string& b) { return absl::StrContains(b, devices8); });
  ASSERT_THAT(body, HasSubstr(devices8));

  FakeSysfs fake(dir.path());
  ASSERT_TRUE(fake.RemoveRdmaDevice("mlx5_3").ok());
  ASSERT_TRUE(fake.RemoveNetdev("ens4f0np0").ok());
  ASSERT_TRUE(
      fake.WriteFile("class/infiniband/mlx5_0/ports/1/counters/symbol_error",
                     "\x01\xff garbage\n")
          .ok());
  body = agent.ScrapeUntil([](const std::string& b) {
    return absl::StrContains(b, "fabricdiag_agent_devices{kind=\"rdma\"} 7") &&
           absl::StrContains(
               b, "fabricdiag_agent_source_success{source=\"rdma_sysfs\"} 0");
  });
  EXPECT_THAT(body, HasSubstr("fabricdiag_agent_devices{kind=\"rdma\"} 7"));
  EXPECT_THAT(body, ::testing::Not(HasSubstr("device=\"mlx5_3\"")));
  // The junk counter is absent, its neighbours are still there.
  EXPECT_TRUE(
      std::isnan(Value(body,
                       "fabricdiag_rdma_port_statistic_total{device=\"mlx5_0\","
                       "port=\"1\",statistic=\"symbol_error\"}")));
  EXPECT_FALSE(std::isnan(Value(body,
                                "fabricdiag_rdma_port_received_bytes_total{"
                                "device=\"mlx5_0\",port=\"1\"}")));
  EXPECT_EQ(
      Value(body, "fabricdiag_agent_source_success{source=\"rdma_sysfs\"}"), 0);
  if (PromtoolInstalled()) {
    std::string lint;
    EXPECT_TRUE(PromtoolAccepts(body, &lint)) << lint;
  }

  FakeRdmaDeviceSpec spec;
  spec.netdevs = {"ens4f0np0"};
  absl::Status added = fake.AddRdmaDevice("mlx5_3", spec);
  ASSERT_TRUE(added.ok()) << added;
  body = agent.ScrapeUntil(
      [&](const std::string& b) { return absl::StrContains(b, devices8); });
  EXPECT_THAT(body, HasSubstr(devices8));
  EXPECT_TRUE(agent.process().running());
}

// The agent streams to a real gRPC ingest server; the server goes away and
// comes back; every report reaches it exactly once with no gap, and
// /metrics kept being served throughout.
TEST(AgentBinaryTest, StreamsToCollectorAndReplaysAfterOutage) {
  testing::FakeIngestServer server;
  ASSERT_TRUE(server.Start().ok());
  RunningAgent agent({"--sysfs_root=" + kFixtures + "/sysfs",
                      "--ethtool_dir=" + kFixtures + "/ethtool/demo",
                      "--node=stream-node", "--interval=50ms",
                      "--collector=" + server.target()});
  ASSERT_TRUE(agent.Start());
  ASSERT_TRUE(server.WaitFor("stream-node",
                             [](const testing::FakeIngestServer::Node& n) {
                               return n.report_seqs.size() >= 3;
                             }));
  testing::FakeIngestServer::Node before = server.node("stream-node");
  ASSERT_FALSE(before.schemas.empty());
  bool has_data = false;
  for (const auto& s : before.schemas.begin()->second.series()) {
    if (s.device() == "mlx5_0" && s.name() == "port_xmit_data") {
      has_data = true;
      EXPECT_EQ(s.scale(), 4.0);
    }
  }
  EXPECT_TRUE(has_data);

  server.Stop();
  std::string body = agent.ScrapeUntil([](const std::string& b) {
    return absl::StrContains(b, "fabricdiag_agent_stream_connected 0") &&
           Value(b, "fabricdiag_agent_stream_reports_buffered") >= 5;
  });
  EXPECT_GE(Value(body, "fabricdiag_agent_stream_reports_buffered"), 5);
  const double snapshots_during_outage =
      Value(body, "fabricdiag_agent_snapshots_total");

  ASSERT_TRUE(server.Restart().ok());
  const uint64_t target_seq = static_cast<uint64_t>(snapshots_during_outage);
  ASSERT_TRUE(server.WaitFor(
      "stream-node",
      [&](const testing::FakeIngestServer::Node& n) {
        return !n.report_seqs.empty() &&
               *std::max_element(n.report_seqs.begin(), n.report_seqs.end()) >=
                   target_seq;
      },
      absl::Seconds(30)));
  testing::FakeIngestServer::Node after = server.node("stream-node");
  std::set<uint64_t> seqs(after.report_seqs.begin(), after.report_seqs.end());
  const uint64_t max_seq = *seqs.rbegin();
  EXPECT_EQ(seqs.size(), max_seq) << "a gap in the replayed reports";
  EXPECT_EQ(*seqs.begin(), 1u);
  EXPECT_GE(after.streams, 2);

  body = agent.ScrapeUntil([](const std::string& b) {
    return absl::StrContains(b, "fabricdiag_agent_stream_connected 1");
  });
  EXPECT_THAT(body,
              HasSubstr("fabricdiag_agent_stream_reports_dropped_total 0"));
  agent.process().Signal(SIGTERM);
  EXPECT_EQ(agent.process().Wait(absl::Seconds(15)), std::optional<int>(0));
}

// Inventories `node` sent whose LLDP neighbors include `port_id` on eth0.
int InventoriesWithNeighborPort(const testing::FakeIngestServer::Node& node,
                                const std::string& port_id) {
  int n = 0;
  for (const v1::AgentMessage& m : node.messages) {
    if (!m.has_inventory()) continue;
    for (const v1::LldpNeighbor& nb : m.inventory().lldp_neighbors()) {
      if (nb.local_port() == "eth0" && nb.port_id() == port_id) ++n;
    }
  }
  return n;
}

// Replaces `path` by a copy of `fixture` with every `from` replaced by `to`,
// through a rename so that the agent never reads a half-written file.
void WriteLldpFile(const std::string& fixture, const std::string& path,
                   const std::string& from, const std::string& to) {
  std::ifstream in(fixture);
  std::stringstream text;
  text << in.rdbuf();
  std::string json = text.str();
  ASSERT_TRUE(absl::StrContains(json, from));
  json = std::regex_replace(json, std::regex(from), to);
  const std::string tmp = path + ".tmp";
  std::ofstream(tmp) << json;
  std::filesystem::rename(tmp, path);
}

TEST(AgentBinaryTest, SendsANewInventoryOnlyWhenItsLldpNeighborsChange) {
  testing::FakeIngestServer server;
  ASSERT_TRUE(server.Start().ok());
  fabricdiag::testing::TempDir dir;
  const std::string lldp = dir.path() + "/neighbors.json";
  const std::string fixture = kFixtures + "/lldp/host-one-neighbor.json";
  WriteLldpFile(fixture, lldp, "swp1", "swp1");
  RunningAgent agent({"--sysfs_root=" + kFixtures + "/sysfs",
                      "--ethtool_dir=" + kFixtures + "/ethtool/demo",
                      "--lldp_file=" + lldp, "--node=lldp-node",
                      "--interval=50ms", "--collector=" + server.target()});
  ASSERT_TRUE(agent.Start());
  ASSERT_TRUE(server.WaitFor("lldp-node", [](const auto& n) {
    return InventoriesWithNeighborPort(n, "swp1") == 1;
  }));
  testing::FakeIngestServer::Node first = server.node("lldp-node");
  const v1::Inventory* inventory = nullptr;
  for (const v1::AgentMessage& m : first.messages) {
    if (m.has_inventory()) inventory = &m.inventory();
  }
  ASSERT_NE(inventory, nullptr);
  EXPECT_EQ(inventory->lldp_source(), "file");
  ASSERT_EQ(inventory->lldp_neighbors_size(), 1);
  EXPECT_EQ(inventory->lldp_neighbors(0).system_name(), "leaf01");
  EXPECT_TRUE(inventory->gpus_read());  // the fixture tree has no GPUs

  // Thirty reports (1.5 s) with the same neighbors (the file is re-checked
  // every second): no new inventory.
  const size_t reports = first.report_seqs.size();
  ASSERT_TRUE(server.WaitFor("lldp-node", [&](const auto& n) {
    return n.report_seqs.size() >= reports + 30;
  }));
  EXPECT_EQ(server.node("lldp-node").inventories, first.inventories);

  // The cable moves to swp2: exactly one new inventory, with it.
  WriteLldpFile(fixture, lldp, "swp1", "swp2");
  ASSERT_TRUE(server.WaitFor("lldp-node", [](const auto& n) {
    return InventoriesWithNeighborPort(n, "swp2") == 1;
  }));
  const size_t after_move = server.node("lldp-node").report_seqs.size();
  ASSERT_TRUE(server.WaitFor("lldp-node", [&](const auto& n) {
    return n.report_seqs.size() >= after_move + 30;
  }));
  testing::FakeIngestServer::Node last = server.node("lldp-node");
  EXPECT_EQ(last.streams, 1);
  EXPECT_EQ(last.inventories, first.inventories + 1);
  EXPECT_EQ(InventoriesWithNeighborPort(last, "swp2"), 1);
  agent.process().Signal(SIGTERM);
  EXPECT_EQ(agent.process().Wait(absl::Seconds(15)), std::optional<int>(0));
}

TEST(AgentBinaryTest, DeadCollectorNeverStopsSampling) {
  // A port nobody listens on: bind-free loopback port 1 is refused at once.
  RunningAgent agent({"--sysfs_root=" + kFixtures + "/sysfs", "--interval=50ms",
                      "--collector=127.0.0.1:1"});
  ASSERT_TRUE(agent.Start());
  std::string body = agent.ScrapeUntil([](const std::string& b) {
    return Value(b, "fabricdiag_agent_snapshots_total") >= 10;
  });
  EXPECT_GE(Value(body, "fabricdiag_agent_snapshots_total"), 10);
  EXPECT_EQ(Value(body, "fabricdiag_agent_stream_connected"), 0);
  EXPECT_GE(Value(body, "fabricdiag_agent_stream_reports_buffered"), 5);
}

// A node with 20,000 counters makes reports of ~400 KB. While the collector
// is away, the replay buffer must stay within --stream_buffer_size, dropping
// the oldest reports and counting them, instead of growing by the report
// count alone (600 of them: a quarter of a gigabyte).
TEST(AgentBinaryTest, ReplayBufferIsBoundedInBytes) {
  fabricdiag::testing::TempDir tree;
  const std::string netdev = tree.path() + "/class/net/eth9";
  std::filesystem::create_directories(netdev + "/statistics");
  std::filesystem::create_directories(tree.path() + "/ethtool");
  std::ofstream(netdev + "/operstate") << "up\n";
  std::ofstream(netdev + "/statistics/rx_bytes") << "1\n";
  {
    std::ofstream stats(tree.path() + "/ethtool/eth9");
    stats << "NIC statistics:\n";
    for (int i = 0; i < 20000; ++i) {
      stats << "     vendor_counter_" << i << ": " << i << "\n";
    }
  }
  RunningAgent agent({"--sysfs_root=" + tree.path(),
                      "--ethtool_dir=" + tree.path() + "/ethtool",
                      "--interval=20ms", "--collector=127.0.0.1:1",
                      "--stream_buffer_size=4MiB"});
  ASSERT_TRUE(agent.Start());
  const std::string body = agent.ScrapeUntil([](const std::string& b) {
    return Value(b, "fabricdiag_agent_stream_reports_dropped_total") >= 5;
  });
  EXPECT_GE(Value(body, "fabricdiag_agent_stream_reports_dropped_total"), 5)
      << agent.process().Stderr();
  const double bytes = Value(body, "fabricdiag_agent_stream_buffer_bytes");
  EXPECT_GT(bytes, 2 << 20);
  EXPECT_LE(bytes, 4 << 20);
  // Far fewer than the 600 reports a count bound would keep.
  EXPECT_LT(Value(body, "fabricdiag_agent_stream_reports_buffered"), 20);
}

}  // namespace
}  // namespace fabricdiag::agent
