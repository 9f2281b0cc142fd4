// A collector cluster of real processes on loopback: three nats-server
// processes in one JetStream cluster and three fabricdiag-collector
// processes joined to it with --nats, driven through the fabricdiag CLI and
// their HTTP endpoints. Every process is stopped when the test ends.
#include <signal.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "client/collector_list.h"
#include "cluster/jetstream_declared_state.h"
#include "cluster/jetstream_features.h"
#include "cluster/leader_handoff.h"
#include "cluster/nats_connection.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/agent/pci_fake_tree.h"
#include "tests/testing/eventually.h"
#include "tests/testing/http_get.h"
#include "tests/testing/nats_cluster.h"
#include "tests/testing/stall_proxy.h"
#include "tests/testing/subprocess.h"
#include "tests/testing/temp_dir.h"

namespace fabricdiag {
namespace {

using ::fabricdiag::testing::HttpGet;
using ::fabricdiag::testing::PortFromLog;
using ::fabricdiag::testing::RunCommand;
using ::fabricdiag::testing::RunResult;
using ::fabricdiag::testing::Subprocess;
using ::testing::HasSubstr;
using ::testing::Not;

const std::string kCollector = FABRICDIAG_COLLECTOR_BINARY;
const std::string kAgent = FABRICDIAG_AGENT_BINARY;
const std::string kFixtures =
    std::string(FABRICDIAG_SOURCE_DIR) + "/tests/fixtures";
const std::string kCli = FABRICDIAG_CLI_BINARY;
const std::string kSim = FABRICDIAG_SIM_BINARY;

struct Collector {
  std::string name;
  std::unique_ptr<Subprocess> process;
  int grpc = 0;
  int http = 0;
};

class CollectorClusterTest : public ::testing::Test {
 protected:
  explicit CollectorClusterTest(
      testing::NatsCluster::Security security = testing::NatsCluster::kOpen)
      : nats_(3, security) {}

  void SetUp() override {
    absl::Status started = nats_.Start();
    ASSERT_TRUE(started.ok()) << started;
  }

  // Collector `name` joined to the NATS servers `urls` (empty: an embedded
  // collector, without NATS), on the given ports (0: any; a restart reuses
  // its ports).
  // `extra` flags come last (a repeated flag: the last one counts); `env`
  // ("NAME=value") is added to its environment.
  Collector Start(const std::string& name, const std::string& urls,
                  int grpc = 0, int http = 0,
                  const std::vector<std::string>& extra = {},
                  const std::vector<std::string>& env = {}) {
    Collector c;
    c.name = name;
    std::vector<std::string> argv;
    if (!env.empty()) {
      // env(1) execs the collector in its own process: signals reach it.
      argv.push_back("/usr/bin/env");
      argv.insert(argv.end(), env.begin(), env.end());
    }
    argv.insert(argv.end(),
                {kCollector, absl::StrCat("--listen=127.0.0.1:", grpc),
                 absl::StrCat("--http_listen=127.0.0.1:", http),
                 absl::StrCat("--state_dir=", dir_.path(), "/", name),
                 "--analysis_interval=200ms"});
    if (!urls.empty()) {
      argv.insert(argv.end(), {"--nats=" + urls, "--collector_id=" + name});
      const std::vector<std::string> security = nats_.ClientFlags();
      argv.insert(argv.end(), security.begin(), security.end());
    }
    argv.insert(argv.end(), extra.begin(), extra.end());
    c.process = std::make_unique<Subprocess>(std::move(argv));
    EXPECT_TRUE(c.process->Start().ok());
    std::string line;
    EXPECT_TRUE(
        c.process->WaitForStderr("gRPC on port", &line, absl::Seconds(40)))
        << c.process->Stderr();
    c.grpc = PortFromLog(line, "gRPC");
    c.http = PortFromLog(line, "HTTP");
    return c;
  }

  // Collectors col-a, col-b and col-c joined to the three servers, and
  // their gRPC addresses (an agent's --collector list).
  void StartThree(std::vector<Collector>* c,
                  std::vector<std::string>* targets) {
    for (const char* name : {"col-a", "col-b", "col-c"}) {
      c->push_back(Start(name, nats_.urls()));
      ASSERT_GT(c->back().grpc, 0);
      targets->push_back(absl::StrCat("127.0.0.1:", c->back().grpc));
    }
  }

  RunResult Cli(const Collector& c, std::vector<std::string> args) {
    std::vector<std::string> argv = {
        kCli, absl::StrCat("--collector=127.0.0.1:", c.grpc)};
    argv.insert(argv.end(), args.begin(), args.end());
    return RunCommand(argv);
  }

  std::string LayoutFile(const std::string& job, int hosts) {
    std::string path = absl::StrCat(dir_.path(), "/", job, ".yaml");
    std::ofstream out(path);
    out << "job: " << job
        << "\ngpus_per_node: 8\nparallelism: {tp: 8, pp: 1, dp: " << hosts
        << "}\nhosts: [";
    for (int h = 0; h < hosts; ++h) out << (h ? ", " : "") << "gpu-00" << h;
    out << "]\n";
    return path;
  }

  // Whether the NATS server at `url` alone serves the declared bucket with
  // `job`'s layout in it.
  static bool ServesLayout(const std::string& url, const std::string& job) {
    cluster::NatsConnection::Options options;
    options.urls = {url};
    options.startup_timeout = absl::Seconds(2);
    absl::StatusOr<std::unique_ptr<cluster::NatsConnection>> nats =
        cluster::NatsConnection::Connect(options);
    if (!nats.ok()) return false;
    cluster::JetStreamDeclaredState::Options state_options;
    state_options.deadline = absl::Seconds(2);
    absl::StatusOr<std::unique_ptr<cluster::JetStreamDeclaredState>> state =
        cluster::JetStreamDeclaredState::Open(nats->get(), state_options);
    if (!state.ok()) return false;
    absl::StatusOr<std::vector<collector::DeclaredLayout>> layouts =
        (*state)->ReadLayouts();
    if (!layouts.ok()) return false;
    for (const collector::DeclaredLayout& l : *layouts) {
      if (l.layout.job() == job) return true;
    }
    return false;
  }

  bool Lists(const Collector& c, const std::string& job) {
    RunResult r = Cli(c, {"layout", "list"});
    return r.exit_code == 0 && r.out.find(job) != std::string::npos;
  }

  // Nodes whose agents stream to `c` (its /metrics says them up).
  static int AgentsOf(const Collector& c) {
    absl::StatusOr<std::string> m = HttpGet(c.http, "/metrics");
    if (!m.ok()) return -1;
    const std::regex up("\nfabricdiag_agent_up\\{[^}]*\\} 1");
    return static_cast<int>(
        std::distance(std::sregex_iterator(m->begin(), m->end(), up),
                      std::sregex_iterator()));
  }

  // The value of metric `name` (its first series) on `c`'s /metrics; -1
  // when it does not answer or has none.
  static double Metric(const Collector& c, const std::string& name) {
    absl::StatusOr<std::string> m = HttpGet(c.http, "/metrics");
    std::smatch found;
    return m.ok() && std::regex_search(
                         *m, found,
                         std::regex("\n" + name + "(\\{[^}]*\\})? ([0-9.e+]+)"))
               ? std::stod(found[2])
               : -1.0;
  }

  testing::TempDir dir_;
  testing::NatsCluster nats_;
};

#ifndef FABRICDIAG_SANITIZED  // real time
TEST_F(CollectorClusterTest, LayoutsAndTopologyAreSharedAndSurviveFailures) {
  std::vector<Collector> c;
  for (const char* name : {"col-a", "col-b", "col-c"}) {
    c.push_back(Start(name, nats_.urls()));
    ASSERT_GT(c.back().grpc, 0);
  }

  // 1. A layout applied through A is listed by B and C within a second.
  RunResult applied = Cli(c[0], {"layout", "apply", LayoutFile("train", 2)});
  ASSERT_EQ(applied.exit_code, 0) << applied.err;
  const absl::Time acked = absl::Now();
  // Polled through /metrics, which costs less than starting the CLI: the
  // bound is on the collectors, not on this test's process starts.
  for (int i : {1, 2}) {
    EXPECT_TRUE(testing::Eventually(
        [&] {
          absl::StatusOr<std::string> m = HttpGet(c[i].http, "/metrics");
          return m.ok() && absl::StrContains(*m, "\nfabricdiag_layouts 1\n");
        },
        absl::Seconds(1), absl::Milliseconds(20)))
        << "collector " << i << " did not serve the layout within 1 s";
  }
  EXPECT_LT(absl::Now() - acked, absl::Seconds(3));
  EXPECT_TRUE(Lists(c[1], "train"));
  EXPECT_TRUE(Lists(c[2], "train"));

  // The topology too: `topology show` agrees on all three.
  const std::string topology = dir_.path() + "/topology.yaml";
  std::ofstream(topology) << "switches:\n  - name: leaf-0\n"
                             "    uplinks: [swp49, swp50]\n"
                             "links:\n  - {host: gpu-000, nic: mlx5_0, "
                             "switch: leaf-0, port: swp1}\n";
  RunResult topo = Cli(c[1], {"topology", "apply", topology});
  ASSERT_EQ(topo.exit_code, 0) << topo.err;
  std::string shown_on_b = Cli(c[1], {"topology", "show"}).out;
  ASSERT_THAT(shown_on_b, HasSubstr("leaf-0"));
  for (int i : {0, 2}) {
    EXPECT_TRUE(testing::Eventually(
        [&] {
          return Cli(c[i], {"topology", "show"}).out == shown_on_b;
        },
        absl::Seconds(5), absl::Milliseconds(50)));
  }

  // /healthz names the collector and its NATS server; /metrics has the
  // cluster's families.
  absl::StatusOr<std::string> health = HttpGet(c[2].http, "/healthz");
  ASSERT_TRUE(health.ok()) << health.status();
  EXPECT_THAT(*health, HasSubstr("collector_id col-c"));
  EXPECT_THAT(*health, HasSubstr("NATS connected to nats://127.0.0.1:"));
  EXPECT_THAT(*health, HasSubstr("3 collectors live: col-a, col-b, col-c"));
  absl::StatusOr<std::string> metrics = HttpGet(c[1].http, "/metrics");
  ASSERT_TRUE(metrics.ok());
  EXPECT_THAT(*metrics, HasSubstr("fabricdiag_cluster_nats_connected{"
                                  "collector_id=\"col-b\"} 1"));
  EXPECT_THAT(*metrics,
              HasSubstr("fabricdiag_cluster_declared_changes_total{"
                        "collector_id=\"col-b\",outcome=\"applied\"} 1"));
  EXPECT_THAT(*metrics,
              HasSubstr("fabricdiag_cluster_baselines_write_errors_total{"
                        "collector_id=\"col-b\"} 0"));

  // 4. kill -9 of one NATS server: writes and their delivery go on.
  nats_.Kill(0);
  RunResult after_kill =
      Cli(c[2], {"--timeout=30s", "layout", "apply", LayoutFile("after", 1)});
  ASSERT_EQ(after_kill.exit_code, 0) << after_kill.err;
  for (int i : {0, 1}) {
    EXPECT_TRUE(testing::Eventually([&] { return Lists(c[i], "after"); },
                                    absl::Seconds(20), absl::Milliseconds(100)))
        << "collector " << i << " after the kill: " << c[i].process->Stderr();
  }

  // 5. Cut off from NATS (its servers stopped): unhealthy, and healthy
  // again when they come back.
  nats_.Pause(1);
  nats_.Pause(2);
  EXPECT_TRUE(testing::Eventually(
      [&] {
        absl::StatusOr<std::string> h = HttpGet(c[0].http, "/healthz");
        return !h.ok() && absl::StrContains(h.status().message(), "503") &&
               absl::StrContains(h.status().message(), "NATS not connected");
      },
      absl::Seconds(20), absl::Milliseconds(200)));
  // A request with a short deadline: the collector stops its write at it
  // and says so itself, instead of retrying for its own 15 s.
  const absl::Time short_start = absl::Now();
  RunResult short_deadline =
      Cli(c[0], {"--timeout=3s", "layout", "apply", LayoutFile("short", 1)});
  const absl::Duration short_took = absl::Now() - short_start;
  EXPECT_EQ(short_deadline.exit_code, 1) << short_deadline.err;
  EXPECT_THAT(short_deadline.err,
              HasSubstr(absl::StrCat("collector 127.0.0.1:", c[0].grpc,
                                     ": cluster unavailable: ")))
      << short_deadline.err;
  EXPECT_THAT(short_deadline.err, HasSubstr("request's deadline"))
      << short_deadline.err;
  EXPECT_LT(short_took, absl::Seconds(5));
  std::cout << "write with --timeout=3s, cluster cut off: answered after "
            << short_took << ": " << short_deadline.err << "\n";
  // A write cannot be acknowledged now: refused, not lost silently.
  // (The collector retries for 15 s, and an attempt in progress then may
  // take a few seconds more: the CLI waits longer than that.)
  RunResult cut_off =
      Cli(c[0], {"--timeout=60s", "layout", "apply", LayoutFile("cut", 1)});
  EXPECT_NE(cut_off.exit_code, 0);
  // Said as the collector's answer, not as a network problem of the CLI.
  EXPECT_THAT(cut_off.err,
              HasSubstr(absl::StrCat("collector 127.0.0.1:", c[0].grpc,
                                     ": cluster unavailable: ")))
      << cut_off.err;
  nats_.Resume(1);
  nats_.Resume(2);
  ASSERT_TRUE(nats_.Restart(0).ok());
  // The refused write keeps /healthz red until a write succeeds again,
  // once the JetStream cluster has its leaders back.
  const absl::Time resumed = absl::Now();
  RunResult retried;
  EXPECT_TRUE(testing::Eventually(
      [&] {
        retried = Cli(
            c[0], {"--timeout=30s", "layout", "apply", LayoutFile("cut", 1)});
        return retried.exit_code == 0;
      },
      absl::Seconds(90), absl::Seconds(1)))
      << retried.err;
  std::cout << "first write after the servers resumed: "
            << absl::Now() - resumed << "\n";
  // The write's failure is forgotten at once; whatever else the outage
  // left (the feature stream's leaders, elected again after the servers
  // resumed, slower on a loaded machine) clears on its own.
  const auto health_says = [&] {
    health = HttpGet(c[0].http, "/healthz");
    return health.ok() ? *health : std::string(health.status().message());
  };
  EXPECT_TRUE(testing::Eventually(
      [&] {
        return !absl::StrContains(health_says(),
                                  "the last write of declared state failed");
      },
      absl::Seconds(5), absl::Milliseconds(100)))
      << health.status();
  const absl::Time healthy_start = absl::Now();
  EXPECT_TRUE(testing::Eventually(
      [&] {
        health_says();
        return health.ok();
      },
      absl::Seconds(90), absl::Milliseconds(200)))
      << health.status() << "\n"
      << c[0].process->Stderr();
  std::cout << "healthy again " << absl::Now() - healthy_start
            << " after the write\n";

  // 6. Restart of every collector: the declared state comes back.
  // First the restarted NATS server must serve the bucket: right after a
  // restart (more so on a loaded machine) it can answer "no stream matches
  // subject" for a while, and a collector that meets only that fails to
  // start (exit 1, restarted by systemd in production). That is the NATS
  // server converging, not what this step tests.
  EXPECT_TRUE(
      testing::Eventually([&] { return ServesLayout(nats_.url(0), "after"); },
                          absl::Seconds(90), absl::Seconds(1)));
  for (Collector& each : c) each.process.reset();
  Collector again = Start("col-a2", nats_.urls());
  ASSERT_GT(again.grpc, 0);
  // Strict, not eventually: a collector that starts must serve the whole
  // declared state at once, never an older subset.
  RunResult listed = Cli(again, {"layout", "list"});
  EXPECT_EQ(listed.exit_code, 0) << listed.err;
  EXPECT_THAT(listed.out, HasSubstr("train")) << again.process->Stderr();
  EXPECT_THAT(listed.out, HasSubstr("after")) << again.process->Stderr();
  EXPECT_THAT(Cli(again, {"topology", "show"}).out, HasSubstr("leaf-0"));
}
#endif  // FABRICDIAG_SANITIZED

#ifndef FABRICDIAG_SANITIZED
// The first sample of metric `name` on collector `c` (labels or not); -1 if
// none.
double MetricOf(const Collector& c, const std::string& name) {
  absl::StatusOr<std::string> m = HttpGet(c.http, "/metrics");
  if (!m.ok()) return -1;
  const std::regex sample("\n" + name + "(\\{[^}]*\\})? ([^\n]+)");
  std::smatch match;
  double value = -1;
  if (!std::regex_search(*m, match, sample) ||
      !absl::SimpleAtod(match[2].str(), &value)) {
    return -1;
  }
  return value;
}

// The analysis leader's lighter weight in the placement, through real
// collector processes: a simulator's agents, each given the three
// collectors as real agents are, start at their first choice; exactly the
// leader's agents whose weighted first choice is another collector
// (LeaderHandoff::Preferred) are handed there, once each, paced, they go on
// streaming there, and no report is lost. Real time (the simulator's agents
// report every second): not in the sanitized build, as ClusterStoryTest.
TEST_F(CollectorClusterTest, TheLeaderHandsItsShareOfAgentsToTheOthers) {
  std::vector<Collector> c;
  std::vector<std::string> targets;
  ASSERT_NO_FATAL_FAILURE(StartThree(&c, &targets));
  // A leader that sees the two others (members announce every 2 s).
  size_t leader = c.size();
  ASSERT_TRUE(testing::Eventually(
      [&] {
        for (size_t i = 0; i < c.size(); ++i) {
          if (MetricOf(c[i], "fabricdiag_cluster_analysis_leader") == 1 &&
              MetricOf(c[i], "fabricdiag_cluster_members") == 3) {
            leader = i;
            return true;
          }
        }
        return false;
      },
      absl::Seconds(30), absl::Milliseconds(200)));
  constexpr int kAgents = 120;
  cluster::LeaderHandoff::View view;
  view.self = c[leader].name;
  view.leader = c[leader].name;
  for (size_t i = 0; i < c.size(); ++i) {
    view.live.push_back(
        {c[i].name, targets[i], absl::Hours(1), absl::ZeroDuration()});
  }
  // How many of the agents named `prefix`NNNNN the leader hands off: those
  // that rank it first, and rank another first once its weight counts.
  const auto handed_off = [&](const std::string& prefix) {
    int n = 0;
    for (int i = 0; i < kAgents; ++i) {
      const std::string node = absl::StrFormat("%s%05d", prefix, i);
      if (client::RankCollectors(node, targets)[0] == leader &&
          cluster::LeaderHandoff::Preferred(node, targets, view) !=
              targets[leader]) {
        ++n;
      }
    }
    return n;
  };
  // The collectors' ports are the hash's input: names under which the
  // leader hands off a few (some 14% of the ~40 that rank it first; with
  // some ports, none of one set of names).
  std::string prefix;
  int expected = 0;
  for (char c1 = 'a'; c1 <= 'z' && expected < 3; ++c1) {
    prefix = absl::StrCat("h", std::string(1, c1), "-");
    expected = handed_off(prefix);
  }
  ASSERT_GE(expected, 3);
  // One hand-back per second at this size (1% of ~40 streams, at least
  // one): the run lasts long enough for all of them.
  RunResult sim = RunCommand({kSim, absl::StrCat("--virtual_agents=", kAgents),
                              "--virtual_agent_prefix=" + prefix,
                              absl::StrCat("--duration=", expected + 8, "s"),
                              "--collector=" + absl::StrJoin(targets, ",")},
                             absl::Seconds(expected + 60));
  ASSERT_EQ(sim.exit_code, 0) << sim.out << sim.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(
      sim.out, m,
      std::regex("reports acked ([0-9]+) of ([0-9]+) \\(dropped ([0-9]+)\\); "
                 "streams rejected 0 failed 0 handed off ([0-9]+)")))
      << sim.out;
  EXPECT_EQ(m[1].str(), m[2].str()) << sim.out;  // every report stored
  EXPECT_EQ(m[3].str(), "0") << sim.out;
  EXPECT_EQ(m[4].str(), std::to_string(expected)) << sim.out;
  EXPECT_EQ(MetricOf(c[leader], "fabricdiag_ingest_handed_off_streams_total"),
            expected);
  EXPECT_EQ(MetricOf(c[leader], "fabricdiag_ingest_handed_back_streams_total"),
            expected);
  for (size_t i = 0; i < c.size(); ++i) {
    if (i == leader) continue;
    EXPECT_EQ(MetricOf(c[i], "fabricdiag_ingest_handed_off_streams_total"), 0)
        << c[i].name;
  }
  for (Collector& each : c) each.process->Signal(SIGTERM);
  for (Collector& each : c) {
    EXPECT_TRUE(each.process->Wait(absl::Seconds(20)).has_value());
  }
}

// The nodes' facts are the cluster's: a simulator's virtual agents, which
// report LLDP neighbors (sim/virtual_node.h AddVirtualLldp: 4 hosts behind
// each leaf, NIC n of host slot k on port swp<8k+n+1>), start at the
// collector their node picks, so each collector hears only some of them;
// every collector then draws the same discovered topology, and it is the
// simulated cabling. A node forgotten through one collector leaves every
// collector's topology.
TEST_F(CollectorClusterTest, EveryCollectorDiscoversTheWholeFabric) {
  std::vector<Collector> c;
  std::vector<std::string> targets;
  ASSERT_NO_FATAL_FAILURE(StartThree(&c, &targets));
  constexpr int kAgents = 12;
  constexpr int kNics = 8;
  constexpr int kHostsPerLeaf = 4;
  RunResult sim = RunCommand({kSim, absl::StrCat("--virtual_agents=", kAgents),
                              "--virtual_agent_prefix=tv-", "--duration=3s",
                              "--collector=" + absl::StrJoin(targets, ",")});
  ASSERT_EQ(sim.exit_code, 0) << sim.out << sim.err;
  const absl::Time ended = absl::Now();

  std::set<std::string> cabling;
  for (int i = 0; i < kAgents; ++i) {
    for (int n = 0; n < kNics; ++n) {
      cabling.insert(absl::StrFormat("tv-%05d -> tv-leaf-%05d swp%d", i,
                                     i / kHostsPerLeaf,
                                     (i % kHostsPerLeaf) * kNics + n + 1));
    }
  }
  auto discovered = [&](const Collector& each) -> std::set<std::string> {
    RunResult r = Cli(each, {"topology", "show", "--discovered", "--json"});
    std::set<std::string> links;
    if (r.exit_code != 0) return links;
    const nlohmann::json topology =
        nlohmann::json::parse(r.out, nullptr,
                              /*allow_exceptions=*/false);
    if (!topology.is_object() || !topology.contains("links")) return links;
    for (const nlohmann::json& l : topology["links"]) {
      links.insert(absl::StrCat(l.value("host", ""), " -> ",
                                l.value("switch", ""), " ",
                                l.value("port", "")));
    }
    return links;
  };
  for (const Collector& each : c) {
    EXPECT_TRUE(testing::Eventually([&] { return discovered(each) == cabling; },
                                    absl::Seconds(30), absl::Milliseconds(200)))
        << each.name;
  }
  std::cout << "every collector drew the whole fabric "
            << absl::FormatDuration(
                   absl::Trunc(absl::Now() - ended, absl::Milliseconds(10)))
            << " after the agents stopped\n";
  // The whole output, tiers included, is the same everywhere.
  const RunResult first = Cli(c[0], {"topology", "show", "--discovered"});
  ASSERT_EQ(first.exit_code, 0) << first.err;
  for (size_t i = 1; i < c.size(); ++i) {
    EXPECT_EQ(Cli(c[i], {"topology", "show", "--discovered"}).out, first.out)
        << c[i].name;
  }
  // Each node's facts were written once, by whichever collector heard it,
  // and no collector heard every agent.
  double writes = 0;
  for (const Collector& each : c) {
    const double mine = MetricOf(each, "fabricdiag_node_facts_writes_total");
    EXPECT_LT(mine, kAgents) << each.name;
    writes += mine;
    EXPECT_EQ(MetricOf(each, "fabricdiag_node_facts_nodes"), kAgents)
        << each.name;
    EXPECT_EQ(MetricOf(each, "fabricdiag_node_facts_bucket_skipped_total"), 0)
        << each.name;
  }
  EXPECT_EQ(writes, kAgents);

  // `nodes forget` through one collector, once the agents stopped: the
  // node's facts go from every collector's discovered topology, and its
  // agent series from the /metrics of the collector it streamed to.
  const std::string gone = "tv-00000";
  EXPECT_TRUE(testing::Eventually(
      [&] {
        // Forgotten for good once its agent is no longer heard (3 s).
        if (Cli(c[1], {"nodes", "forget", gone}).exit_code != 0) return false;
        return MetricOf(c[1], "fabricdiag_node_facts_nodes") == kAgents - 1;
      },
      absl::Seconds(20), absl::Milliseconds(500)));
  for (const Collector& each : c) {
    EXPECT_TRUE(testing::Eventually(
        [&] {
          absl::StatusOr<std::string> m = HttpGet(each.http, "/metrics");
          return m.ok() &&
                 !absl::StrContains(
                     *m, absl::StrCat("fabricdiag_agent_up{node=\"", gone,
                                      "\"}")) &&
                 MetricOf(each, "fabricdiag_node_facts_nodes") == kAgents - 1;
        },
        absl::Seconds(10), absl::Milliseconds(100)))
        << each.name;
    // The discovered topology is drawn again at the next analysis pass.
    std::set<std::string> left;
    EXPECT_TRUE(testing::Eventually(
        [&] {
          left = discovered(each);
          return left.size() == cabling.size() - kNics;
        },
        absl::Seconds(10), absl::Milliseconds(200)))
        << each.name << ": " << left.size() << " links";
    for (const std::string& link : left) {
      EXPECT_FALSE(absl::StartsWith(link, gone + " ")) << each.name << link;
    }
  }
  for (Collector& each : c) each.process->Signal(SIGTERM);
  for (Collector& each : c) {
    EXPECT_TRUE(each.process->Wait(absl::Seconds(20)).has_value());
  }
}

// The agents' GPU-NIC pairs are the cluster's: a layout naming no NIC (no
// rails, no ranks), applied through B, is filled on B and C from the pairs
// of a real agent on a DGX H100-like fake PCI tree that streams to A alone.
// B and C hear the agent only through the node facts bucket
// (cluster/jetstream_node_facts.h), which their fill reads
// (collector/declared/filled_layouts.h). Not in the sanitized build, as the
// other tests of real agents above: its bound is a real-time figure, and
// gpu_nic_fill_e2e_test runs the fill itself there.
TEST_F(CollectorClusterTest, AnAgentOnOneCollectorFillsALayoutOfAnother) {
  std::vector<Collector> c;
  std::vector<std::string> targets;
  ASSERT_NO_FATAL_FAILURE(StartThree(&c, &targets));
  const Collector& a = c[0];
  const Collector& b = c[1];
  const Collector& other = c[2];

  // 8 ranks on gpu-000 (tp=8), applied before the agent reports.
  RunResult applied = Cli(b, {"layout", "apply", LayoutFile("fill", 1)});
  ASSERT_EQ(applied.exit_code, 0) << applied.err;
  ASSERT_TRUE(testing::Eventually([&] { return Lists(other, "fill"); },
                                  absl::Seconds(5), absl::Milliseconds(100)));
  RunResult early = Cli(other, {"layout", "check", "fill"});
  EXPECT_EQ(early.exit_code, 3) << early.out << early.err;
  EXPECT_THAT(early.out, HasSubstr("8 ranks have no known NIC"));

  const std::string tree = dir_.path() + "/gpu-000";
  const std::string no_ethtool = dir_.path() + "/no-ethtool";
  ASSERT_TRUE(std::filesystem::create_directories(tree));
  // No ethtool statistics: no ioctl on this host.
  ASSERT_TRUE(std::filesystem::create_directories(no_ethtool));
  ASSERT_TRUE(agent::BuildPciTreeFromFixture(tree, "dgx-h100.txt").ok());
  Subprocess agent_process({kAgent, "--node=gpu-000", "--sysfs_root=" + tree,
                            "--ethtool_dir=" + no_ethtool,
                            "--listen=127.0.0.1:0", "--interval=200ms",
                            "--collector=" + targets[0]});
  ASSERT_TRUE(agent_process.Start().ok());
  ASSERT_TRUE(agent_process.WaitForStderr("serving /metrics", nullptr))
      << agent_process.Stderr();
  const absl::Time started = absl::Now();

  // `layout show` on B and on C: every rank's NIC, paired by the agent.
  // Within 10 s of the agent's start: its first report, one write to the
  // bucket and its watch by B and C took 90-120 ms until B showed them and
  // 270-350 ms until C did (after B's checks) in six runs on a loaded
  // 2-core machine; the rest is room for one slowed further by builds.
  auto show_json = [&](const Collector& each) -> nlohmann::json {
    RunResult r = Cli(each, {"layout", "show", "fill", "--json"});
    if (r.exit_code != 0) return nullptr;
    return nlohmann::json::parse(r.out, nullptr, /*allow_exceptions=*/false);
  };
  for (const Collector* each : {&b, &other}) {
    nlohmann::json shown;
    ASSERT_TRUE(testing::Eventually(
        [&] {
          shown = show_json(*each);
          return shown.is_object() && shown.contains("nic_sources") &&
                 shown["nic_sources"]["agent"] == 8;
        },
        absl::Seconds(10) - (absl::Now() - started), absl::Milliseconds(100)))
        << each->name << ": " << shown.dump() << "\n"
        << each->process->Stderr();
    std::cout << each->name << " shows the agent's NICs "
              << absl::FormatDuration(
                     absl::Trunc(absl::Now() - started, absl::Milliseconds(10)))
              << " after the agent started\n";
    EXPECT_EQ(shown["nic_sources"]["unknown"], 0) << each->name;
    EXPECT_TRUE(shown["ranks"].empty()) << shown.dump();
    EXPECT_TRUE(shown["rails"].empty()) << shown.dump();
    ASSERT_EQ(shown["nics"].size(), 8U) << shown.dump();
    for (int r = 0; r < 8; ++r) {
      const nlohmann::json& n = shown["nics"][r];
      EXPECT_EQ(n["host"], "gpu-000") << n.dump();
      EXPECT_EQ(n["gpu"], r) << n.dump();
      EXPECT_EQ(n["nic"], agent::kDgxH100PairedNic[r]) << n.dump();
      EXPECT_EQ(n["source"], "agent") << n.dump();
    }
    RunResult yaml = Cli(*each, {"layout", "show", "fill"});
    EXPECT_EQ(yaml.exit_code, 0) << yaml.err;
    EXPECT_THAT(yaml.out, HasSubstr("  - {rank: 5, host: gpu-000, gpu: 5, "
                                    "nic: mlx5_9, source: agent, distance: "
                                    "pcie_switch}\n"))
        << each->name;
  }

  // `layout check` on C: none unknown, and the host and NICs reported (by
  // A's agent, which C lists as a remote node).
  RunResult check;
  EXPECT_TRUE(testing::Eventually(
      [&] {
        check = Cli(other, {"layout", "check", "fill"});
        return check.exit_code == 0;
      },
      absl::Seconds(10), absl::Milliseconds(200)))
      << check.out << check.err;
  EXPECT_THAT(check.out, HasSubstr("layout fill: 8 of 8 ranks have a known NIC "
                                   "(0 declared in ranks, 0 from rails, 8 "
                                   "paired by the agent)\n"));

  // The agent streamed to A alone, and only A wrote its facts: B and C
  // filled the layout from the bucket.
  EXPECT_EQ(MetricOf(a, "fabricdiag_node_facts_writes_total"), 1);
  for (const Collector* each : {&b, &other}) {
    EXPECT_EQ(MetricOf(*each, "fabricdiag_node_facts_writes_total"), 0)
        << each->name;
    EXPECT_EQ(MetricOf(*each, "fabricdiag_node_facts_nodes"), 1) << each->name;
    EXPECT_EQ(MetricOf(*each, "fabricdiag_agent_up"), -1) << each->name;
  }
  EXPECT_EQ(MetricOf(a, "fabricdiag_agent_up"), 1);

  agent_process.Signal(SIGTERM);
  EXPECT_EQ(agent_process.Wait(absl::Seconds(10)), 0);
  for (Collector& each : c) each.process->Signal(SIGTERM);
  for (Collector& each : c) {
    EXPECT_TRUE(each.process->Wait(absl::Seconds(20)).has_value());
  }
}

// `report` of a job whose two hosts stream to A and B, asked of C (which
// holds no series): with every collector in --collector it reads each
// host's rates from the collector that holds them; with C alone it names
// the hosts whose rates it cannot read and where they are. About 10 s.
TEST_F(CollectorClusterTest, AReportReadsEachNodesRatesWhereTheyAre) {
  std::vector<Collector> c;
  std::vector<std::string> targets;
  ASSERT_NO_FATAL_FAILURE(StartThree(&c, &targets));
  const std::string layout = dir_.path() + "/rails.yaml";
  {
    std::ofstream out(layout);
    out << "job: rails\ngpus_per_node: 1\nparallelism: {tp: 1, pp: 1, dp: 2}\n"
           "hosts: [gpu-r0, gpu-r1]\nrails: [mlx5_0]\n";
  }
  RunResult applied = Cli(c[2], {"layout", "apply", layout});
  ASSERT_EQ(applied.exit_code, 0) << applied.err;
  std::vector<std::unique_ptr<Subprocess>> agents;
  for (int i : {0, 1}) {
    agents.push_back(std::make_unique<Subprocess>(std::vector<std::string>{
        kAgent, absl::StrCat("--node=gpu-r", i),
        "--sysfs_root=" + kFixtures + "/sysfs", "--listen=127.0.0.1:0",
        "--interval=200ms", "--collector=" + targets[i]}));
    ASSERT_TRUE(agents.back()->Start().ok());
  }
  const std::string every =
      "--collector=" + targets[2] + "," + targets[0] + "," + targets[1];
  nlohmann::json report;
  std::string err;
  EXPECT_TRUE(testing::Eventually(
      [&] {
        RunResult r =
            RunCommand({kCli, every, "report", "--job=rails", "--format=json"});
        err = r.err;
        report = nlohmann::json::parse(r.out, nullptr, false);
        return r.exit_code == 0 && report.is_object() &&
               report["group_rates"].is_object() &&
               report["group_rates"]["nics_reporting"] == 2;
      },
      absl::Seconds(15), absl::Milliseconds(300)))
      << report.dump() << err;
  EXPECT_EQ(report["collector"], targets[2]) << report.dump();
  RunResult alone = Cli(c[2], {"report", "--job=rails", "--format=json"});
  EXPECT_EQ(alone.exit_code, 0) << alone.err;
  EXPECT_THAT(alone.out, HasSubstr("The rates of 2 hosts (gpu-r0, gpu-r1) are "
                                   "not in this report"));
  for (auto& agent : agents) agent->Signal(SIGTERM);
  for (Collector& each : c) each.process->Signal(SIGTERM);
  for (Collector& each : c) {
    EXPECT_TRUE(each.process->Wait(absl::Seconds(20)).has_value());
  }
}
#endif  // FABRICDIAG_SANITIZED

TEST_F(CollectorClusterTest, BadClusterFlagsAreClearErrors) {
  for (const auto& [flag, message] :
       std::vector<std::pair<std::string, std::string>>{
           {"--nats=127.0.0.1:4222", "is not nats://HOST:PORT"},
           {"--nats_replicas=9", "--nats_replicas"},
           {"--nats_startup_timeout=0s", "--nats_startup_timeout"},
           {"--collector_id=-bad", "--collector_id"}}) {
    std::vector<std::string> argv = {kCollector, "--state_dir=" + dir_.path(),
                                     flag};
    if (flag.rfind("--nats=", 0) != 0) argv.push_back("--nats=" + nats_.urls());
    RunResult r = RunCommand(argv, absl::Seconds(20));
    EXPECT_EQ(r.exit_code, 2) << flag << ": " << r.err;
    EXPECT_THAT(r.err, HasSubstr(message)) << flag;
  }
  // No server answers: a clear startup error naming the URL, in bounded time.
  const std::string dead =
      absl::StrCat("nats://127.0.0.1:", testing::FreeLoopbackPort());
  const absl::Time start = absl::Now();
  RunResult r = RunCommand({kCollector, "--state_dir=" + dir_.path() + "/x",
                            "--listen=127.0.0.1:0", "--http_listen=127.0.0.1:0",
                            "--nats=" + dead, "--nats_startup_timeout=2s"},
                           absl::Seconds(60));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_THAT(r.err, HasSubstr(dead));
  EXPECT_THAT(r.err, HasSubstr("--nats_startup_timeout"));
  EXPECT_LT(absl::Now() - start, absl::Seconds(10));
}

#ifndef FABRICDIAG_SANITIZED  // real time
// A collector of a cluster stops within seconds when every NATS server hangs
// (it used to wait out request timeouts one after the other: 20-40 s), and
// one started against a cluster that just restarted waits for JetStream
// instead of exiting.
TEST_F(CollectorClusterTest, StopsInTimeWithoutNatsAndWaitsForARestartedOne) {
  Collector a = Start("col-a", nats_.urls());
  ASSERT_GT(a.grpc, 0);
  for (int i = 0; i < 3; ++i) nats_.Pause(i);
  absl::SleepFor(absl::Seconds(1));  // its pass and lease calls now hang
  absl::Time stop = absl::Now();
  a.process->Signal(SIGTERM);
  EXPECT_EQ(a.process->Wait(absl::Seconds(30)), 0) << a.process->Stderr();
  const absl::Duration stopped = absl::Now() - stop;
  std::cout << "SIGTERM with every NATS server stopped: exited in " << stopped
            << "\n";
#ifdef FABRICDIAG_SANITIZED
  constexpr absl::Duration kStopBound = absl::Seconds(12);  // slower processes
#else
  constexpr absl::Duration kStopBound = absl::Seconds(6);
#endif
  EXPECT_LT(stopped, kStopBound) << a.process->Stderr();

  // Every server restarts, one of them seconds before the others: until
  // they elect JetStream's leaders, nothing answers.
  for (int i = 0; i < 3; ++i) nats_.Kill(i);
  ASSERT_TRUE(nats_.Restart(0).ok());
  auto b = std::make_unique<Subprocess>(std::vector<std::string>{
      kCollector, "--listen=127.0.0.1:0", "--http_listen=127.0.0.1:0",
      absl::StrCat("--state_dir=", dir_.path(), "/col-b"),
      "--nats=" + nats_.urls(), "--collector_id=col-b",
      "--analysis_interval=200ms", "--nats_startup_timeout=40s"});
  ASSERT_TRUE(b->Start().ok());
  EXPECT_TRUE(b->WaitForStderr("waiting for NATS JetStream", nullptr,
                               absl::Seconds(10)))
      << b->Stderr();
  EXPECT_TRUE(b->Running()) << b->Stderr();
  ASSERT_TRUE(nats_.Restart(1).ok());
  ASSERT_TRUE(nats_.Restart(2).ok());
  const absl::Time quorum = absl::Now();
  EXPECT_TRUE(b->WaitForStderr("gRPC on port", nullptr, absl::Seconds(30)))
      << b->Stderr();
  std::cout << "started against a restarting cluster: ready "
            << absl::Now() - quorum << " after its quorum was up\n";
  stop = absl::Now();
  b->Signal(SIGTERM);
  EXPECT_EQ(b->Wait(absl::Seconds(30)), 0) << b->Stderr();
  std::cout << "SIGTERM with NATS up: exited in " << absl::Now() - stop << "\n";
}
#endif  // FABRICDIAG_SANITIZED

#ifndef FABRICDIAG_SANITIZED  // real time
// Agents are spread over the collectors, analysis runs on one of them: a
// fault on a node that streams to collector B alone is listed by A, B and C
// with one id.
TEST_F(CollectorClusterTest, AFindingOfOneCollectorsAgentHasOneIdEverywhere) {
  std::vector<Collector> c;
  for (const char* name : {"col-a", "col-b", "col-c"}) {
    c.push_back(Start(name, nats_.urls()));
    ASSERT_GT(c.back().grpc, 0);
  }
  Subprocess agent({kAgent, "--node=gpu-b1",
                    "--sysfs_root=" + kFixtures + "/sysfs",
                    "--listen=127.0.0.1:0", "--interval=200ms",
                    absl::StrCat("--collector=127.0.0.1:", c[1].grpc)});
  ASSERT_TRUE(agent.Start().ok());
  ASSERT_TRUE(testing::Eventually(
      [&] {
        absl::StatusOr<std::string> m = HttpGet(c[1].http, "/metrics");
        return m.ok() &&
               std::regex_search(*m, std::regex("fabricdiag_agent_up\\{[^}]*"
                                                "node=\"gpu-b1\"[^}]*\\} 1"));
      },
      absl::Seconds(20), absl::Milliseconds(100)))
      << agent.Stderr();
  // The fault: the agent dies (kill -9); agent_down opens after 3 of its
  // intervals, on whichever collector analyses.
  agent.Signal(SIGKILL);
  auto down_id = [&](const Collector& each) {
    RunResult r = Cli(each, {"--timeout=3s", "findings", "--json"});
    if (r.exit_code != 0) return std::string();
    const nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
    if (!j.is_array()) return std::string();
    for (const nlohmann::json& f : j) {
      if (f.value("kind", "") == "agent_down" &&
          f.value("node", "") == "gpu-b1") {
        return f.value("id", "");
      }
    }
    return std::string();
  };
  std::string id;
  ASSERT_TRUE(testing::Eventually(
      [&] {
        id = down_id(c[1]);
        return !id.empty();
      },
      absl::Seconds(20), absl::Milliseconds(200)));
  for (int i : {0, 2}) {
    EXPECT_TRUE(testing::Eventually([&] { return down_id(c[i]) == id; },
                                    absl::Seconds(10), absl::Milliseconds(200)))
        << "collector " << i << " does not list " << id;
  }
  // /metrics says the same on every collector, and one of them leads.
  int leaders = 0;
  for (const Collector& each : c) {
    absl::StatusOr<std::string> m = HttpGet(each.http, "/metrics");
    ASSERT_TRUE(m.ok());
    EXPECT_TRUE(std::regex_search(
        *m, std::regex("fabricdiag_finding_active\\{[^}]*kind=\"agent_down\""
                       "[^}]*\\} 1")))
        << *m;
    leaders += std::regex_search(
        *m, std::regex("fabricdiag_cluster_analysis_leader\\{[^}]*\\} 1"));
  }
  EXPECT_EQ(leaders, 1);
  // An ack through one collector marks the finding on every collector
  // (bucket fabricdiag_marks), the new leader's below included.
  RunResult ack = Cli(c[0], {"--timeout=3s", "ack", id, "--comment=known"});
  ASSERT_EQ(ack.exit_code, 0) << ack.err;

  // The leader is killed (kill -9): another collector takes over and keeps
  // the finding, still true, under its id; nothing resolves or reopens.
  size_t leader = c.size();
  for (size_t i = 0; i < c.size(); ++i) {
    absl::StatusOr<std::string> m = HttpGet(c[i].http, "/metrics");
    if (m.ok() &&
        std::regex_search(*m, std::regex("fabricdiag_cluster_analysis_"
                                         "leader\\{[^}]*\\} 1"))) {
      leader = i;
    }
  }
  ASSERT_LT(leader, c.size());
  c[leader].process->Signal(SIGKILL);
  const size_t survivor = leader == 0 ? 1 : 0;
  ASSERT_TRUE(testing::Eventually(
      [&] {
        absl::StatusOr<std::string> h = HttpGet(c[survivor].http, "/healthz");
        std::smatch named;
        return h.ok() &&
               std::regex_search(*h, named,
                                 std::regex("analysis leader: (col-[a-z])")) &&
               named[1] != c[leader].name;
      },
      absl::Seconds(15), absl::Milliseconds(100)));
  // A few passes of the new leader (200 ms each).
  absl::SleepFor(absl::Seconds(2));
  for (size_t i = 0; i < c.size(); ++i) {
    if (i == leader) continue;
    RunResult all = Cli(c[i], {"--timeout=3s", "findings", "--all", "--json"});
    ASSERT_EQ(all.exit_code, 0) << all.err;
    const nlohmann::json j = nlohmann::json::parse(all.out, nullptr, false);
    ASSERT_TRUE(j.is_array()) << all.out;
    std::vector<std::string> versions;
    for (const nlohmann::json& f : j) {
      if (f.value("kind", "") == "agent_down") {
        versions.push_back(f.value("id", "") + " " + f.value("state", ""));
      }
    }
    EXPECT_EQ(versions.size(), 1u) << "collector " << i << ": " << all.out;
    EXPECT_EQ(down_id(c[i]), id) << "collector " << i;
    RunResult marked = Cli(c[i], {"--timeout=3s", "findings", "--json"});
    EXPECT_NE(marked.out.find("\"acked\":{\"who\":"), std::string::npos)
        << "collector " << i << ": " << marked.out;
  }
}
#endif  // FABRICDIAG_SANITIZED

// The issue's whole story on a simulated MoE cluster: six nodes whose real
// agents are each given all three collectors, a hot expert found once, the
// collector most agents stream to killed (-9), a second fault after the
// kill, one NATS server killed, then everything restarted. Its NATS servers
// are secured as deployed (a user with a password, TLS), so that the whole
// story runs over authenticated TLS connections, reconnects included.
class ClusterStoryTest : public CollectorClusterTest {
 protected:
  ClusterStoryTest() : CollectorClusterTest(testing::NatsCluster::kSecured) {}

  static constexpr int kNodes = 6;

  static std::string NodeName(int i) { return absl::StrCat("gpu-00", i); }

  // The flapping link starts `flap_start` into the simulator's clock.
  void WriteInputs(absl::Duration flap_start = kSecondFault) {
    const std::string w = dir_.path();
    std::string hosts;
    for (int i = 0; i < kNodes; ++i) {
      absl::StrAppend(&hosts, i > 0 ? ", " : "", NodeName(i));
    }
    std::ofstream(w + "/layout.yaml")
        << "job: moe\ngpus_per_node: 4\n"
           "parallelism: {tp: 4, pp: 1, dp: 6, ep: 6}\n"
           "hosts: ["
        << hosts
        << "]\nrails: [mlx5_0, mlx5_1, mlx5_2, mlx5_3]\n"
           "model: {params: 1.6e10, hidden: 4096, layers: 32, seq_len: 4096, "
           "micro_batch: 1, micro_batches: 4, dtype_bytes: 2, experts: 24, "
           "top_k: 2}\n";
    std::ofstream topology(w + "/topology.yaml");
    topology << "switches:\n  - {name: leaf-0, uplinks: [swp49, swp50]}\n"
                "links:\n";
    for (int i = 0; i < kNodes; ++i) {
      for (int n = 0; n < 4; ++n) {
        topology << "  - {host: " << NodeName(i) << ", nic: mlx5_" << n
                 << ", switch: leaf-0, port: swp" << i * 4 + n + 1 << "}\n";
      }
    }
    // The hot expert from 4 s to the end of the test; the flapping link
    // from `flap_start` (by default kSecondFault, after the kill).
    std::ofstream(w + "/scenario.json")
        << "{\"step_seconds\": 1.0, \"faults\": ["
           "{\"kind\": \"hot_expert\", \"node\": \"gpu-001\", \"nic\": "
           "\"mlx5_2\", \"factor\": 6, \"start\": 4},"
           "{\"kind\": \"link_flap\", \"node\": \"gpu-004\", \"nic\": "
           "\"mlx5_0\", \"period\": 2, \"start\": "
        << absl::ToInt64Seconds(flap_start) << "}]}";
    // As sim_faults_e2e at 0.5 s: a fault is seen after the window fills
    // and 3 passes. This test is about failover, not about the margin of
    // the hot expert's condition: on a loaded machine its NIC measured
    // 4.1-9.3 times the group's median from pass to pass (1.5 s windows over
    // a 1 s training step, agents late to read), hence 3x here. Two CI runs
    // saw it resolve and reopen; the second did at 3x, without a failover:
    // the hot NIC runs at 95% of its line rate, and an agent read that
    // missed the simulator's tick was followed by one that saw two, above
    // the line rate over its own interval, refused, so the window kept the
    // zero alone (down to 0x the median for passes in a row). The agent now
    // judges such a jump over the time since the counter last moved
    // (agent/rate.h); a resolve here is the failover's doing.
    std::ofstream(w + "/analysis.yaml")
        << "window_seconds: 1.5\nhysteresis: {open_after: 3, clear_after: 4}\n"
           "hot_expert_incast: {rx_over_median: 3}\n";
  }

  // The simulator writing the fabric's sysfs and ethtool trees
  // (WriteInputs()), started; false (logged) when it did not write them
  // within 20 s.
  bool StartSim(std::unique_ptr<Subprocess>* sim) const {
    const std::string w = dir_.path();
    *sim = std::make_unique<Subprocess>(
        std::vector<std::string>{kSim, "--layout=" + w + "/layout.yaml",
                                 "--topology=" + w + "/topology.yaml",
                                 "--scenario=" + w + "/scenario.json",
                                 "--out=" + w + "/fabric", "--interval=500ms"});
    if (!(*sim)->Start().ok()) return false;
    const bool written = testing::Eventually(
        [&] {
          return std::filesystem::is_directory(
              w + "/fabric/" + NodeName(kNodes - 1) + "/sys/class/net");
        },
        absl::Seconds(20), absl::Milliseconds(50));
    if (!written) std::cout << (*sim)->Stderr();
    return written;
  }

  // "127.0.0.1:P1,127.0.0.1:P2,...": every collector, for an agent.
  static std::string AllCollectors(const std::vector<Collector>& c) {
    std::string all;
    for (const Collector& each : c) {
      absl::StrAppend(&all, all.empty() ? "" : ",", "127.0.0.1:", each.grpc);
    }
    return all;
  }

  // The agent of simulated node `i`, streaming to `collectors`.
  std::unique_ptr<Subprocess> SimAgent(int i,
                                       const std::string& collectors) const {
    const std::string tree = dir_.path() + "/fabric/" + NodeName(i);
    return std::make_unique<Subprocess>(std::vector<std::string>{
        kAgent, "--node=" + NodeName(i), "--sysfs_root=" + tree + "/sys",
        "--ethtool_dir=" + tree + "/ethtool", "--listen=127.0.0.1:0",
        "--interval=500ms", "--collector=" + collectors});
  }

  // `fabricdiag watch --json` on each collector, started.
  static std::vector<std::unique_ptr<Subprocess>> StartWatches(
      const std::vector<Collector>& c) {
    std::vector<std::unique_ptr<Subprocess>> watches;
    watches.reserve(c.size());
    for (const Collector& each : c) {
      watches.push_back(std::make_unique<Subprocess>(std::vector<std::string>{
          kCli, absl::StrCat("--collector=127.0.0.1:", each.grpc), "watch",
          "--json"}));
      EXPECT_TRUE(watches.back()->Start().ok());
    }
    return watches;
  }

  std::vector<std::string> CollectorFlags() const {
    return {"--analysis_interval=500ms",
            "--analysis_config=" + dir_.path() + "/analysis.yaml"};
  }

  // The id of the active finding of `kind` on `node` `device` that
  // collector `c` lists; empty when it lists none (or does not answer).
  std::string ActiveId(const Collector& c, const std::string& kind,
                       const std::string& node, const std::string& device) {
    RunResult r = Cli(c, {"--timeout=3s", "findings", "--json"});
    if (r.exit_code != 0) return "";
    const nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
    if (!j.is_array()) return "";
    for (const nlohmann::json& f : j) {
      if (f.value("kind", "") == kind && f.value("node", "") == node &&
          f.value("device", "") == device) {
        return f.value("id", "");
      }
    }
    return "";
  }

  // The simulator's second fault starts this long after the simulator.
  static constexpr absl::Duration kSecondFault = absl::Seconds(45);
};

// Real time on a simulated cluster, as sim_faults_e2e: not in the sanitized
// build (tests/CMakeLists.txt), whose processes are several times slower.
#ifndef FABRICDIAG_SANITIZED
TEST_F(ClusterStoryTest, FindingsSurviveTheBusiestCollectorAndARestart) {
  const std::string w = dir_.path();
  WriteInputs();
  std::vector<Collector> c;
  for (const char* name : {"col-a", "col-b", "col-c"}) {
    c.push_back(Start(name, nats_.urls(), 0, 0, CollectorFlags()));
    ASSERT_GT(c.back().grpc, 0);
  }
  ASSERT_EQ(Cli(c[0], {"layout", "apply", w + "/layout.yaml"}).exit_code, 0);
  ASSERT_EQ(Cli(c[1], {"topology", "apply", w + "/topology.yaml"}).exit_code,
            0);

  std::unique_ptr<Subprocess> sim;
  ASSERT_TRUE(StartSim(&sim));
  const absl::Time sim_start = absl::Now();

  const std::string all_collectors = AllCollectors(c);
  std::vector<std::unique_ptr<Subprocess>> agents;
  std::vector<int> agent_http;
  for (int i = 0; i < kNodes; ++i) {
    agents.push_back(SimAgent(i, all_collectors));
    ASSERT_TRUE(agents.back()->Start().ok());
    std::string line;
    ASSERT_TRUE(agents.back()->WaitForStderr("serving /metrics", &line))
        << agents.back()->Stderr();
    agent_http.push_back(PortFromLog(line, "serving /metrics"));
  }
  // Every collector's events, from before the fault to the end.
  std::vector<std::unique_ptr<Subprocess>> watches = StartWatches(c);

  // 2. The hot expert opens one finding, with one id on A, B and C.
  std::string hot;
  ASSERT_TRUE(testing::Eventually(
      [&] {
        hot = ActiveId(c[0], "hot_expert_incast", "gpu-001", "mlx5_2");
        return !hot.empty();
      },
      absl::Seconds(40), absl::Milliseconds(250)))
      << c[0].process->Stderr();
  for (int i : {1, 2}) {
    EXPECT_TRUE(testing::Eventually(
        [&] {
          return ActiveId(c[i], "hot_expert_incast", "gpu-001", "mlx5_2") ==
                 hot;
        },
        absl::Seconds(10), absl::Milliseconds(250)))
        << "collector " << i << " does not list " << hot;
  }

  // 3. kill -9 of the collector that most agents stream to.
  size_t busiest = 0;
  std::vector<int> spread;
  for (size_t i = 0; i < c.size(); ++i) {
    spread.push_back(AgentsOf(c[i]));
    if (spread[i] > spread[busiest]) busiest = i;
  }
  ASSERT_GT(spread[busiest], 0);
  std::cout << "agents per collector:";
  for (int n : spread) std::cout << " " << n;
  std::cout << "; killing " << c[busiest].name << "\n";
  const std::string killed_address =
      absl::StrCat("127.0.0.1:", c[busiest].grpc);
  c[busiest].process->Signal(SIGKILL);
  ASSERT_TRUE(c[busiest].process->Wait(absl::Seconds(10)).has_value());
  const absl::Time killed = absl::Now();
  ASSERT_LT(killed - sim_start, kSecondFault)
      << "too slow to test a fault after the kill";
  std::vector<size_t> survivors;
  for (size_t i = 0; i < c.size(); ++i) {
    if (i != busiest) survivors.push_back(i);
  }

  // Its agents stream to another collector within 5 s.
  const std::regex connected_to(
      "\nfabricdiag_agent_stream_collector_info\\{collector=\"([^\"]+)\"\\} 1");
  for (int i = 0; i < kNodes; ++i) {
    std::string where;
    EXPECT_TRUE(testing::Eventually(
        [&] {
          absl::StatusOr<std::string> m = HttpGet(agent_http[i], "/metrics");
          std::smatch found;
          if (!m.ok() || !std::regex_search(*m, found, connected_to)) {
            return false;
          }
          where = found[1];
          return where != killed_address &&
                 absl::StrContains(*m, "\nfabricdiag_agent_stream_connected 1");
        },
        absl::Seconds(5) - (absl::Now() - killed), absl::Milliseconds(50)))
        << NodeName(i) << " still on " << where << " " << absl::Now() - killed
        << " after the kill";
  }
  std::cout << "every agent streams to a survivor " << absl::Now() - killed
            << " after the kill\n";
  // `fabricdiag nodes`, given every collector, answers from a survivor and
  // shows every node up again, each on a survivor; the collectors that
  // hold the streams saw no report missing.
  int up = 0;
  std::string listed;
  EXPECT_TRUE(testing::Eventually(
      [&] {
        RunResult r = RunCommand({kCli, "--collector=" + all_collectors,
                                  "--timeout=3s", "nodes", "--json"});
        listed = r.out;
        const nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
        if (!j.is_array()) return false;
        up = 0;
        for (const nlohmann::json& n : j) {
          up += n.value("up", false) &&
                n.value("collector", "") != c[busiest].name;
        }
        return up == kNodes;
      },
      absl::Seconds(10), absl::Milliseconds(250)))
      << up << " nodes up on the survivors: " << listed;
  // Agents handed from one collector to another before (to their weighted
  // first choice once the leader was known) may have failed over back to
  // the first: their Hello says what the other one acknowledged meanwhile,
  // which is no gap (docs/cli.md, `gaps`).
  for (size_t i : survivors) {
    RunResult r = Cli(c[i], {"--timeout=3s", "nodes", "--json"});
    const nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
    ASSERT_TRUE(j.is_array()) << r.out;
    EXPECT_EQ(j.size(), static_cast<size_t>(kNodes)) << r.out;
    for (const nlohmann::json& n : j) {
      if (!n.value("remote", true)) {
        EXPECT_EQ(n["gaps"], 0) << n.dump();
      }
    }
  }
  for (int i = 0; i < kNodes; ++i) {
    absl::StatusOr<std::string> m = HttpGet(agent_http[i], "/metrics");
    ASSERT_TRUE(m.ok());
    EXPECT_THAT(*m,
                HasSubstr("\nfabricdiag_agent_stream_reports_dropped_total 0"))
        << NodeName(i);
  }

  // The open finding keeps its id on the survivors.
  for (size_t i : survivors) {
    EXPECT_TRUE(testing::Eventually(
        [&] {
          return ActiveId(c[i], "hot_expert_incast", "gpu-001", "mlx5_2") ==
                 hot;
        },
        absl::Seconds(10), absl::Milliseconds(250)))
        << c[i].name << " lost " << hot;
  }

  // A second fault, begun after the kill, is found.
  std::string flap;
  EXPECT_TRUE(testing::Eventually(
      [&] {
        flap = ActiveId(c[survivors[0]], "link_flap", "gpu-004", "mlx5_0");
        return !flap.empty();
      },
      kSecondFault - (absl::Now() - sim_start) + absl::Seconds(20),
      absl::Milliseconds(250)))
      << c[survivors[0]].process->Stderr();
  std::cout << "the second fault opened "
            << absl::Now() - sim_start - kSecondFault << " after it began\n";
  EXPECT_TRUE(testing::Eventually(
      [&] {
        return ActiveId(c[survivors[1]], "link_flap", "gpu-004", "mlx5_0") ==
               flap;
      },
      absl::Seconds(10), absl::Milliseconds(250)));

  // 4. kill -9 of one NATS server: writes and analysis go on.
  nats_.Kill(1);
  RunResult written = Cli(c[survivors[0]], {"--timeout=30s", "layout", "apply",
                                            LayoutFile("after-nats", 1)});
  EXPECT_EQ(written.exit_code, 0) << written.err;
  EXPECT_TRUE(
      testing::Eventually([&] { return Lists(c[survivors[1]], "after-nats"); },
                          absl::Seconds(20), absl::Milliseconds(200)));
  EXPECT_EQ(ActiveId(c[survivors[1]], "hot_expert_incast", "gpu-001", "mlx5_2"),
            hot);

  // Through all of it the survivors never resolved the hot expert.
  for (size_t i : survivors) {
    for (absl::string_view line : absl::StrSplit(watches[i]->Stdout(), '\n')) {
      const nlohmann::json e = nlohmann::json::parse(line, nullptr, false);
      if (!e.is_object() || e.value("id", "") != hot) continue;
      EXPECT_NE(absl::AsciiStrToLower(e.value("event", "")), "resolved")
          << c[i].name << ": " << line;
    }
  }
  for (auto& watch : watches) watch.reset();
  // What the collectors logged so far is lost at the restart below: kept
  // in the output of a run that failed, to tell why.
  if (HasFailure()) {
    for (const Collector& each : c) {
      std::cout << "--- " << each.name << "'s log before the restart:\n"
                << each.process->Stderr();
    }
  }

  // 6. Restart of everything but the agents: every NATS server and every
  // collector (on its ports, so the agents find it again). The declared
  // state and the open findings, still true, come back under their ids.
  for (Collector& each : c) each.process.reset();
  for (int i = 0; i < 3; ++i) nats_.Kill(i);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(nats_.Restart(i).ok());
  for (Collector& each : c) {
    Collector again =
        Start(each.name, nats_.urls(), each.grpc, each.http, CollectorFlags());
    ASSERT_EQ(again.grpc, each.grpc) << again.process->Stderr();
    each = std::move(again);
  }
  const absl::Time restarted = absl::Now();
  for (const Collector& each : c) {
    EXPECT_TRUE(Lists(each, "moe")) << each.name;
    const bool at_once = Lists(each, "after-nats");
    EXPECT_TRUE(testing::Eventually([&] { return Lists(each, "after-nats"); },
                                    absl::Seconds(60), absl::Milliseconds(200)))
        << each.name;
    std::cout << each.name << " lists after-nats "
              << (at_once ? "at once" : "late") << ", "
              << absl::Now() - restarted << " after the restart\n";
    EXPECT_TRUE(testing::Eventually(
        [&] {
          return ActiveId(each, "hot_expert_incast", "gpu-001", "mlx5_2") ==
                 hot;
        },
        absl::Seconds(30), absl::Milliseconds(250)))
        << each.name << ": " << Cli(each, {"findings", "--all"}).out;
  }
  // Whoever leads now judges the NICs against the straggler baselines the
  // leader before the restart wrote (bucket fabricdiag_baselines), not
  // afresh: it says how many it restored. Within 30 s of the restart: a
  // collector leads once the restarted JetStream cluster serves the lease
  // bucket, which took more than 10 s in one clean-clone run here (no
  // collector had led by then).
  std::string restored;
  EXPECT_TRUE(testing::Eventually(
      [&] {
        for (const Collector& each : c) {
          for (absl::string_view line :
               absl::StrSplit(each.process->Stderr(), '\n')) {
            if (absl::StrContains(line, " straggler baselines restored")) {
              restored = absl::StrCat(each.name, ": ", line);
              return true;
            }
          }
        }
        return false;
      },
      absl::Seconds(30) - (absl::Now() - restarted), absl::Milliseconds(200)))
      << "no collector restored the straggler baselines; their logs:\n"
      << c[0].process->Stderr() << c[1].process->Stderr()
      << c[2].process->Stderr();
  std::cout << restored << " (seen " << absl::Now() - restarted
            << " after the restart)\n";
  // Every agent is back (each retried with its own backoff, up to 30 s),
  // and the hot expert never resolved in between: still open under its id.
  int back = 0;
  EXPECT_TRUE(testing::Eventually(
      [&] {
        RunResult r = RunCommand({kCli, "--collector=" + all_collectors,
                                  "--timeout=3s", "nodes", "--json"});
        const nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
        if (!j.is_array()) return false;
        back = 0;
        for (const nlohmann::json& n : j) back += n.value("up", false);
        return back == kNodes;
      },
      absl::Seconds(45), absl::Milliseconds(500)))
      << back << " nodes up after the restart";
  for (const Collector& each : c) {
    EXPECT_EQ(ActiveId(each, "hot_expert_incast", "gpu-001", "mlx5_2"), hot)
        << each.name << ": " << Cli(each, {"findings", "--all"}).out;
  }
  if (HasFailure()) {
    for (const Collector& each : c) {
      std::cout << "--- " << each.name << "'s log since the restart:\n"
                << each.process->Stderr();
    }
    for (int i = 0; i < kNodes; ++i) {
      std::cout << "--- " << NodeName(i) << "'s agent log:\n"
                << agents[i]->Stderr();
    }
  }
  for (auto& agent : agents) {
    agent->Signal(SIGTERM);
    EXPECT_EQ(agent->Wait(absl::Seconds(10)), 0);
  }
}
// The rate analysis cut into shards (--analysis_shards) on three
// collectors: the hot expert (a job shard's finding) and the flapping link
// (the port part of the node's collector) open with one id on every
// collector, and keep it when the collector most agents stream to is
// killed (its shards go to the survivors, its agents too) and when it
// comes back (the survivors hand it its shards): nothing resolves or opens
// again.
TEST_F(ClusterStoryTest, ShardedCollectorsKeepTheirFindingsThroughAKill) {
  const std::string w = dir_.path();
  WriteInputs(absl::Seconds(4));
  std::vector<std::string> flags = CollectorFlags();
  flags.push_back("--analysis_shards");
  std::vector<Collector> c;
  for (const char* name : {"col-a", "col-b", "col-c"}) {
    c.push_back(Start(name, nats_.urls(), 0, 0, flags));
    ASSERT_GT(c.back().grpc, 0);
  }
  ASSERT_EQ(Cli(c[0], {"layout", "apply", w + "/layout.yaml"}).exit_code, 0);
  ASSERT_EQ(Cli(c[1], {"topology", "apply", w + "/topology.yaml"}).exit_code,
            0);
  std::unique_ptr<Subprocess> sim;
  ASSERT_TRUE(StartSim(&sim));
  std::vector<std::unique_ptr<Subprocess>> agents;
  agents.reserve(kNodes);
  for (int i = 0; i < kNodes; ++i) {
    agents.push_back(SimAgent(i, AllCollectors(c)));
    ASSERT_TRUE(agents.back()->Start().ok());
  }
  std::vector<std::unique_ptr<Subprocess>> watches = StartWatches(c);

  struct Fault {
    const char* kind;
    const char* node;
    const char* device;
    std::string id;
  };
  std::vector<Fault> faults = {{"hot_expert_incast", "gpu-001", "mlx5_2", ""},
                               {"link_flap", "gpu-004", "mlx5_0", ""}};
  for (Fault& f : faults) {
    ASSERT_TRUE(testing::Eventually(
        [&] {
          f.id = ActiveId(c[0], f.kind, f.node, f.device);
          return !f.id.empty();
        },
        absl::Seconds(40), absl::Milliseconds(250)))
        << f.kind << "\n"
        << c[0].process->Stderr() << c[1].process->Stderr()
        << c[2].process->Stderr();
    for (int i : {1, 2}) {
      EXPECT_TRUE(testing::Eventually(
          [&] { return ActiveId(c[i], f.kind, f.node, f.device) == f.id; },
          absl::Seconds(10), absl::Milliseconds(250)))
          << c[i].name << " does not list " << f.kind << " " << f.id;
    }
  }

  // No collector holds the fabric's ports, yet `layout apply` on each warns
  // of the names no agent reports: a host no collector heard from, and a
  // NIC the collector its host streams to does not know (the others know
  // the host alone).
  const std::string probe = w + "/probe.yaml";
  std::ofstream(probe) << "job: probe\ngpus_per_node: 2\n"
                          "parallelism: {tp: 2, pp: 1, dp: 2}\n"
                          "hosts: [gpu-000, gpu-0O1]\n"
                          "rails: [mlx5_0, mlx5_9]\n";
  int nic_warned = 0;
  for (const Collector& each : c) {
    const RunResult r = Cli(each, {"layout", "apply", probe});
    EXPECT_EQ(r.exit_code, 0) << each.name << ": " << r.err;
    EXPECT_THAT(r.err,
                HasSubstr("warning: hosts: host \"gpu-0O1\" is reported by "
                          "no agent\n"))
        << each.name;
    EXPECT_THAT(r.err, Not(HasSubstr("host \"gpu-000\""))) << each.name;
    EXPECT_THAT(r.err, Not(HasSubstr("\"mlx5_0\""))) << each.name;
    nic_warned += absl::StrContains(
        r.err, "NIC \"mlx5_9\" is reported by no agent on \"gpu-000\"");
  }
  EXPECT_GE(nic_warned, 1);
  ASSERT_EQ(Cli(c[0], {"layout", "delete", "probe"}).exit_code, 0);

  // A TP group across gpu-000 and gpu-001: whichever collector leads holds
  // few of their ports, yet the finding carries what their NICs send, as
  // the job shard's owner measured and told it.
  const std::string tp = w + "/tp.yaml";
  std::ofstream(tp) << "job: tp-live\ngpus_per_node: 1\n"
                       "parallelism: {tp: 2, pp: 1, dp: 1}\n"
                       "hosts: [gpu-000, gpu-001]\nrails: [mlx5_0]\n";
  ASSERT_EQ(Cli(c[1], {"layout", "apply", tp}).exit_code, 0);
  double measured = -1;
  EXPECT_TRUE(testing::Eventually(
      [&] {
        RunResult r = Cli(c[2], {"--timeout=3s", "findings", "--json"});
        const nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
        if (r.exit_code != 0 || !j.is_array()) return false;
        for (const nlohmann::json& f : j) {
          if (f.value("kind", "") != "tp_cross_node" ||
              f.value("job", "") != "tp-live") {
            continue;
          }
          const nlohmann::json& e = f["evidence"];
          if (e.is_object() && e.contains("measured_nic_tx_bytes_per_second")) {
            measured = e["measured_nic_tx_bytes_per_second"].get<double>();
            return true;
          }
        }
        return false;
      },
      absl::Seconds(15), absl::Milliseconds(300)))
      << "no tp_cross_node of tp-live with its NICs' rate";
  EXPECT_GT(measured, 0) << "the simulated job's NICs send";
  ASSERT_EQ(Cli(c[1], {"layout", "delete", "tp-live"}).exit_code, 0);

  // Each collector's page shows its own agents' ports and says so; together
  // the pages show every node. (The first request of each makes its view
  // wanted; the passes after it publish one.)
  std::set<std::string> on_pages;
  std::set<std::string> scopes;
  const bool every_node_shown = testing::Eventually(
      [&] {
        on_pages.clear();
        for (const Collector& each : c) {
          absl::StatusOr<std::string> body =
              HttpGet(each.http, "/api/v1/fabric");
          if (!body.ok()) continue;
          const nlohmann::json fabric =
              nlohmann::json::parse(*body, nullptr, /*allow_exceptions=*/false);
          if (fabric.is_discarded()) continue;
          scopes.insert(fabric.value("scope", "(none)"));
          for (const nlohmann::json& n : fabric["nodes"]) {
            on_pages.insert(n.get<std::string>());
          }
        }
        return on_pages.size() == static_cast<size_t>(kNodes);
      },
      absl::Seconds(15), absl::Milliseconds(500));
  EXPECT_TRUE(every_node_shown) << absl::StrJoin(on_pages, ", ");
  EXPECT_THAT(scopes, ::testing::ElementsAre("collector"));
  // So does a job's, its rates of the collector's own agents, but on the
  // collector that owns the job's shard: there every member's rates show
  // (from the pass after the first request), and each names it.
  std::vector<std::string> job_scopes;
  const bool one_whole_job = testing::Eventually(
      [&] {
        job_scopes.clear();
        int whole = 0;
        int own = 0;
        std::string whole_on;
        std::set<std::string> named;
        for (const Collector& each : c) {
          absl::StatusOr<std::string> body =
              HttpGet(each.http, "/api/v1/jobs/moe?dim=dp");
          if (!body.ok()) return false;
          const nlohmann::json job =
              nlohmann::json::parse(*body, nullptr, /*allow_exceptions=*/false);
          if (job.is_discarded() || job["groups"].empty()) return false;
          const std::string scope = job.value("scope", "(none)");
          int shown = 0;
          for (const nlohmann::json& m : job["groups"][0]["members"]) {
            shown += m["rx_bytes"].is_number() ? 1 : 0;
          }
          const std::string owner = job.value("shard_owner", "(none)");
          job_scopes.push_back(absl::StrCat(each.name, " ", scope, " ", shown,
                                            " of 6, owner ", owner));
          if (scope == "fabric" && shown == 6) {
            ++whole;
            whole_on = each.name;
          }
          own += scope == "collector" ? 1 : 0;
          named.insert(owner);
        }
        return whole == 1 && own == 2 && named.size() == 1 &&
               *named.begin() == whole_on;
      },
      absl::Seconds(15), absl::Milliseconds(500));
  EXPECT_TRUE(one_whole_job) << absl::StrJoin(job_scopes, "; ");

  // The analysis is cut: each collector owns some of the 128 shards, every
  // shard one, and the collectors send each other ports and news.
  auto owned_by = [&](const std::vector<size_t>& which) {
    std::vector<double> owned;
    owned.reserve(which.size());
    for (size_t i : which) {
      owned.push_back(Metric(c[i], "fabricdiag_cluster_analysis_shards_owned"));
    }
    return owned;
  };
  auto spread_over = [](const std::vector<double>& owned) {
    double sum = 0;
    for (double n : owned) {
      if (n <= 0) return false;
      sum += n;
    }
    return sum == 128;
  };
  std::vector<double> owned;
  EXPECT_TRUE(testing::Eventually(
      [&] {
        return spread_over(owned = owned_by({0, 1, 2}));
      },
      absl::Seconds(10), absl::Milliseconds(250)))
      << absl::StrJoin(owned, " ");
  // Every collector reads the lease bucket alike: every shard held, and
  // every member sharding.
  for (const Collector& each : c) {
    EXPECT_EQ(Metric(each, "fabricdiag_cluster_analysis_shards"), 128)
        << each.name;
    EXPECT_EQ(Metric(each, "fabricdiag_cluster_members_not_sharding"), 0)
        << each.name;
    EXPECT_TRUE(testing::Eventually(
        [&] {
          return Metric(each, "fabricdiag_cluster_analysis_shards_unowned") ==
                 0;
        },
        absl::Seconds(5), absl::Milliseconds(250)))
        << each.name;
  }
  // Rendezvous hashing over the same three members deals the same shards.
  const std::vector<double> dealt = owned;
  for (const Collector& each : c) {
    EXPECT_GT(Metric(each, "fabricdiag_cluster_analysis_news_received_total"),
              0)
        << each.name;
  }
  // Only each node's liveness travels besides: no port on the features
  // stream.
  for (const Collector& each : c) {
    EXPECT_EQ(Metric(each, "fabricdiag_cluster_features_published_bytes"), 0)
        << each.name;
    EXPECT_GT(Metric(each, "fabricdiag_cluster_liveness_published_bytes"), 0)
        << each.name;
  }
  double chunks = 0;
  for (const Collector& each : c) {
    chunks += Metric(each, "fabricdiag_cluster_shard_chunks_received_total");
  }
  EXPECT_GT(chunks, 0);
  std::cout << "shards owned: " << absl::StrJoin(owned, " ")
            << "; shard chunks received: " << chunks << "\n";

  size_t busiest = 0;
  std::vector<int> spread;
  for (size_t i = 0; i < c.size(); ++i) {
    spread.push_back(AgentsOf(c[i]));
    if (spread[i] > spread[busiest]) busiest = i;
  }
  std::cout << "agents per collector:";
  for (int n : spread) std::cout << " " << n;
  std::cout << "; killing " << c[busiest].name << "\n";
  c[busiest].process->Signal(SIGKILL);
  ASSERT_TRUE(c[busiest].process->Wait(absl::Seconds(10)).has_value());
  std::vector<size_t> survivors;
  for (size_t i = 0; i < c.size(); ++i) {
    if (i != busiest) survivors.push_back(i);
  }
  // Its agents and shards move, and the analysis goes on for some passes on
  // the survivors alone. Its shards are taken once its keys expired (3 s):
  // it no longer holds its own nodes' shard, so it is no choice, before the
  // members' view drops it (6 s). How many had no owner meanwhile is
  // printed (the window is short, a sample may miss it); none once the
  // survivors took them.
  double most_unowned = 0;
  absl::Duration taken_after = absl::InfiniteDuration();
  const absl::Time killed = absl::Now();
  while (absl::Now() < killed + absl::Seconds(15)) {
    most_unowned = std::max(
        most_unowned,
        Metric(c[survivors[0]], "fabricdiag_cluster_analysis_shards_unowned"));
    if (taken_after == absl::InfiniteDuration() &&
        spread_over(owned_by(survivors))) {
      taken_after = absl::Now() - killed;
    }
    absl::SleepFor(absl::Milliseconds(100));
  }
  for (size_t i : survivors) {
    EXPECT_EQ(Metric(c[i], "fabricdiag_cluster_analysis_shards_unowned"), 0)
        << c[i].name;
  }
  std::cout << "shards taken by the survivors " << taken_after
            << " after the kill; without an owner meanwhile, at most: "
            << most_unowned << "\n";
  EXPECT_TRUE(spread_over(owned = owned_by(survivors)))
      << absl::StrJoin(owned, " ");
  std::cout << "shards owned by the survivors: " << absl::StrJoin(owned, " ")
            << "\n";
  for (size_t i : survivors) {
    for (const Fault& f : faults) {
      EXPECT_EQ(ActiveId(c[i], f.kind, f.node, f.device), f.id)
          << c[i].name << ": " << Cli(c[i], {"findings", "--all"}).out;
    }
  }

  // It comes back under its name (on new ports: its agents stay where they
  // are): once every member has seen it live for 4 s, the survivors hand it
  // the shards it is the first choice for, writing what they hold of each
  // before they let go, and it picks their findings up under their ids.
  const auto handovers = [&] {
    double n = 0;
    for (size_t i : survivors) {
      n += Metric(c[i], "fabricdiag_cluster_analysis_shard_handovers_total");
    }
    return n;
  };
  const double handed_before = handovers();
  c[busiest] = Start(c[busiest].name, nats_.urls(), 0, 0, flags);
  ASSERT_GT(c[busiest].grpc, 0);
  EXPECT_TRUE(testing::Eventually(
      [&] {
        return (owned = owned_by({0, 1, 2})) == dealt;
      },
      absl::Seconds(30), absl::Milliseconds(250)))
      << absl::StrJoin(owned, " ") << " against " << absl::StrJoin(dealt, " ");
  // Every one of its shards handed over by the survivor that held it, none
  // taken after a lapsed lease.
  const double handed = handovers() - handed_before;
  EXPECT_EQ(handed, dealt[busiest]);
  std::cout << c[busiest].name << " back: shards owned "
            << absl::StrJoin(owned, " ") << ", " << handed
            << " of them handed over to it\n";
  absl::SleepFor(absl::Seconds(5));  // some passes of the new owners
  for (const Collector& each : c) {
    for (const Fault& f : faults) {
      EXPECT_TRUE(testing::Eventually(
          [&] { return ActiveId(each, f.kind, f.node, f.device) == f.id; },
          absl::Seconds(10), absl::Milliseconds(250)))
          << each.name << " " << f.kind << ": "
          << Cli(each, {"findings", "--all"}).out;
    }
  }
  // Neither resolved nor opened twice on any survivor, through the kill
  // and the hand-over.
  for (size_t i : survivors) {
    for (const Fault& f : faults) {
      int opened = 0;
      for (absl::string_view line :
           absl::StrSplit(watches[i]->Stdout(), '\n')) {
        const nlohmann::json e = nlohmann::json::parse(line, nullptr, false);
        if (!e.is_object() || e.value("kind", "") != f.kind ||
            e.value("node", "") != f.node) {
          continue;
        }
        const std::string event = absl::AsciiStrToLower(e.value("event", ""));
        EXPECT_NE(event, "resolved") << c[i].name << ": " << line;
        opened += event == "opened" || event == "snapshot";
      }
      EXPECT_EQ(opened, 1) << c[i].name << " " << f.kind;
    }
  }

  // A fourth collector started without --analysis_shards says at its start
  // that the others shard. It holds no shard of its own nodes, so the
  // others never make it an owner: no shard moves to it and none goes
  // unowned, after it has settled (4 s) and a hand-over's wait (3 s).
  Collector odd = Start("col-d", nats_.urls(), 0, 0, CollectorFlags());
  ASSERT_GT(odd.grpc, 0);
  std::string warned;
  EXPECT_TRUE(
      odd.process->WaitForStderr("runs without it", &warned, absl::Seconds(5)))
      << odd.process->Stderr();
  std::cout << "col-d: " << warned << "\n";
  auto unowned = [&](const Collector& each) {
    return Metric(each, "fabricdiag_cluster_analysis_shards_unowned");
  };
  double most_unowned_with_d = 0;
  const absl::Time settled = absl::Now() + absl::Seconds(10);
  while (absl::Now() < settled) {
    most_unowned_with_d = std::max(most_unowned_with_d, unowned(c[0]));
    absl::SleepFor(absl::Milliseconds(250));
  }
  EXPECT_EQ(most_unowned_with_d, 0);
  EXPECT_EQ(owned = owned_by({0, 1, 2}), dealt) << absl::StrJoin(owned, " ");
  // The collectors that shard tell it too, for as long as it runs: a
  // gauge (alert FabricdiagClusterMembersNotSharding) and /healthz.
  auto count_not_sharding = [&](double want, absl::Duration within) {
    for (const Collector& each : c) {
      EXPECT_TRUE(testing::Eventually(
          [&] {
            return Metric(each, "fabricdiag_cluster_members_not_sharding") ==
                   want;
          },
          within, absl::Milliseconds(250)))
          << each.name << " does not count " << want;
    }
  };
  count_not_sharding(1, absl::Seconds(10));
  // Said whether the collector is healthy or not (a 503 for other reasons
  // while the machine is loaded).
  absl::StatusOr<testing::HttpResponse> told =
      testing::HttpGetAnyStatus(c[0].http, "/healthz");
  ASSERT_TRUE(told.ok()) << told.status();
  EXPECT_TRUE(absl::StrContains(
      told->body,
      "cluster: analysis shards: col-d runs without --analysis_shards"))
      << told->body;
  odd.process->Signal(SIGTERM);
  EXPECT_TRUE(odd.process->Wait(absl::Seconds(20)).has_value());
  // Gone (its key deleted as it stopped): nobody left to tell of.
  count_not_sharding(0, absl::Seconds(5));
  if (HasFailure()) {
    for (const Collector& each : c) {
      std::cout << "--- " << each.name << ":\n" << each.process->Stderr();
    }
  }
  for (auto& agent : agents) agent->Signal(SIGTERM);
  for (const Collector& each : c) each.process->Signal(SIGTERM);
  for (const Collector& each : c) {
    EXPECT_TRUE(each.process->Wait(absl::Seconds(20)).has_value());
  }
}

// What the unobserved-nodes tests share: real agents (the fixture sysfs,
// reporting every 500 ms, so agent_down would open after 5 s of silence),
// and whether any collector lists an agent_down.
class UnobservedNodesTest : public CollectorClusterTest {
 protected:
  // A collector given one NATS URL knows that server alone.
  void SetUp() override {
    nats_.StopAdvertising();
    CollectorClusterTest::SetUp();
  }

  // An agent as `node` streaming to the collectors `targets`, in order.
  std::unique_ptr<Subprocess> StartAgent(
      const std::string& node, const std::vector<std::string>& targets) {
    auto agent = std::make_unique<Subprocess>(std::vector<std::string>{
        kAgent, "--node=" + node, "--sysfs_root=" + kFixtures + "/sysfs",
        "--listen=127.0.0.1:0", "--interval=500ms",
        "--collector=" + absl::StrJoin(targets, ",")});
    EXPECT_TRUE(agent->Start().ok());
    return agent;
  }

  // The nodes of the agent_down findings collector `c` lists ("" when it
  // does not answer).
  std::string DownNodes(const Collector& c) {
    RunResult r = Cli(c, {"--timeout=3s", "findings", "--json"});
    if (r.exit_code != 0) return "";
    const nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
    std::string down;
    if (!j.is_array()) return down;
    for (const nlohmann::json& f : j) {
      if (f.value("kind", "") == "agent_down") {
        absl::StrAppend(&down, f.value("node", ""), " ");
      }
    }
    return down;
  }

  // How many nodes of collector `of` collector `c` lists unobserved, with
  // the time since when (`fabricdiag nodes --json`); -1 when it does not
  // answer, or lists any of them down.
  int Unobserved(const Collector& c, const std::string& of) {
    RunResult r = Cli(c, {"--timeout=3s", "nodes", "--json"});
    const nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
    if (r.exit_code != 0 || !j.is_array()) return -1;
    int unobserved = 0;
    for (const nlohmann::json& n : j) {
      if (n.value("collector", "") != of) continue;
      if (n.value("unobserved", false) && n["unobserved_since"].is_string()) {
        ++unobserved;
      } else if (!n.value("up", false)) {
        return -1;
      }
    }
    return unobserved;
  }

  // On failure, even an ASSERT's early return, prints every collector's
  // and agent's log as it goes out of scope: where the time went.
  class LogsOnFailure {
   public:
    LogsOnFailure(const std::vector<Collector>& collectors,
                  const std::vector<std::unique_ptr<Subprocess>>& agents)
        : collectors_(collectors), agents_(agents) {}
    LogsOnFailure(const LogsOnFailure&) = delete;
    LogsOnFailure& operator=(const LogsOnFailure&) = delete;
    ~LogsOnFailure() {
      if (!::testing::Test::HasFailure()) return;
      for (const Collector& each : collectors_) {
        std::cout << "--- " << each.name << "'s log:\n"
                  << each.process->Stderr();
      }
      for (const auto& agent : agents_) {
        std::cout << "--- an agent's log:\n" << agent->Stderr();
      }
    }

   private:
    const std::vector<Collector>& collectors_;
    const std::vector<std::unique_ptr<Subprocess>>& agents_;
  };

  // Agent streams connected to `c` now.
  static int Streams(const Collector& c) {
    return static_cast<int>(MetricOf(c, "fabricdiag_ingest_connected_streams"));
  }

  // The index of the NATS server that leads stream `stream` (its
  // server_name is n<i>), or -1.
  int StreamLeader(const std::string& stream) {
    cluster::NatsConnection::Options options;
    options.urls = absl::StrSplit(nats_.urls(), ',');
    options.startup_timeout = absl::Seconds(5);
    absl::StatusOr<std::unique_ptr<cluster::NatsConnection>> nats =
        cluster::NatsConnection::Connect(options);
    if (!nats.ok()) return -1;
    jsStreamInfo* info = nullptr;
    jsErrCode code = static_cast<jsErrCode>(0);
    int leader = -1;
    if (js_GetStreamInfo(&info, (*nats)->js(), stream.c_str(), nullptr,
                         &code) == NATS_OK) {
      if (info->Cluster != nullptr && info->Cluster->Leader != nullptr &&
          info->Cluster->Leader[0] == 'n') {
        leader = info->Cluster->Leader[1] - '0';
      }
      jsStreamInfo_Destroy(info);
    }
    return leader;
  }
};

// The NATS server that leads the features stream is killed (-9) while six
// agents stream to three collectors: the stream elects another leader and
// the features flow again, and meanwhile no collector opens agent_down for
// any node (what their collectors cannot publish is unobserved, not
// silence). About 30 s.
TEST_F(UnobservedNodesTest, KillingTheFeatureStreamsLeaderOpensNoAgentDown) {
  std::vector<Collector> c;
  std::vector<std::string> targets;
  ASSERT_NO_FATAL_FAILURE(StartThree(&c, &targets));
  std::vector<std::unique_ptr<Subprocess>> agents;
  agents.reserve(6);
  for (int i = 0; i < 6; ++i) {
    agents.push_back(StartAgent(absl::StrCat("gpu-u", i), targets));
  }
  // Every agent streams to some collector, and the leader merged them all.
  ASSERT_TRUE(testing::Eventually(
      [&] {
        int streams = 0;
        for (const Collector& each : c) streams += std::max(0, Streams(each));
        RunResult r = Cli(c[0], {"--timeout=3s", "nodes", "--json"});
        const nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
        int up = 0;
        if (j.is_array()) {
          for (const nlohmann::json& n : j) up += n.value("up", false);
        }
        return streams == 6 && up == 6;
      },
      absl::Seconds(30), absl::Milliseconds(300)));
  const int leader = StreamLeader(cluster::kFeaturesStream);
  ASSERT_GE(leader, 0);
  ASSERT_LT(leader, nats_.size());
  nats_.Kill(leader);
  const absl::Time killed = absl::Now();
  // Three times agent_down's 5 s; every collector asked about once a
  // second.
  while (absl::Now() - killed < absl::Seconds(15)) {
    for (const Collector& each : c) {
      EXPECT_EQ(DownNodes(each), "")
          << each.name << " after " << absl::Now() - killed;
    }
    absl::SleepFor(absl::Milliseconds(500));
  }
  for (auto& agent : agents) agent->Signal(SIGTERM);
  for (Collector& each : c) each.process->Signal(SIGTERM);
  for (Collector& each : c) {
    EXPECT_TRUE(each.process->Wait(absl::Seconds(20)).has_value());
  }
}

// A collector cut off from NATS (its only server paused with SIGSTOP; the
// other two keep the quorum and serve the other collectors) hands its
// agents to the connected collectors: within 15 s they all stream there,
// no collector opens agent_down meanwhile, and once the server resumes the
// collector takes agents again (the others hand back those that prefer
// it). About 40 s.
TEST_F(UnobservedNodesTest, ACollectorCutOffFromNatsHandsItsAgentsOver) {
  // B and C on servers 1 and 2; one of them leads before A, on server 0
  // alone, joins.
  std::vector<Collector> c;
  const std::string others = nats_.url(1) + "," + nats_.url(2);
  c.push_back(Start("col-b", others));
  c.push_back(Start("col-c", others));
  ASSERT_TRUE(testing::Eventually(
      [&] {
        return MetricOf(c[0], "fabricdiag_cluster_analysis_leader") +
                   MetricOf(c[1], "fabricdiag_cluster_analysis_leader") ==
               1;
      },
      absl::Seconds(30), absl::Milliseconds(200)));
  c.push_back(Start("col-a", nats_.url(0)));
  const Collector& a = c[2];
  std::vector<std::string> targets;
  for (const Collector& each : c) {
    ASSERT_GT(each.grpc, 0);
    targets.push_back(absl::StrCat("127.0.0.1:", each.grpc));
  }
  // Three nodes whose agents rank col-a first whichever collector leads
  // (the leader weighs LeaderHandoff::kLeaderWeight in the ranking, and
  // the lease may move to col-a while the returning server's JetStream
  // elections run).
  const auto prefers_a = [&](const std::string& node) {
    const double w = cluster::LeaderHandoff::kLeaderWeight;
    for (const std::vector<double>& weights : std::vector<std::vector<double>>{
             {1, 1, 1}, {w, 1, 1}, {1, w, 1}, {1, 1, w}}) {
      if (client::RankCollectors(node, targets, weights)[0] != 2) {
        return false;
      }
    }
    return true;
  };
  std::vector<std::unique_ptr<Subprocess>> agents;
  const LogsOnFailure logs(c, agents);
  for (int i = 0; agents.size() < 3 && i < 200; ++i) {
    const std::string node = absl::StrCat("gpu-a", i);
    if (prefers_a(node)) agents.push_back(StartAgent(node, targets));
  }
  ASSERT_EQ(agents.size(), 3u);
  ASSERT_TRUE(testing::Eventually(
      [&] {
        return Streams(a) == 3 &&
               MetricOf(c[0], "fabricdiag_cluster_members") == 3;
      },
      absl::Seconds(30), absl::Milliseconds(200)));
  // A few analysis passes with every agent observed.
  absl::SleepFor(absl::Seconds(2));

  nats_.Pause(0);
  const absl::Time paused = absl::Now();
  absl::Duration moved = absl::InfiniteDuration();
  // Before they move, `fabricdiag nodes` on the others tells col-a's nodes
  // unobserved, never down.
  int most_unobserved = 0;
  // Until agent_down would have opened for a moved agent (5 s), at most
  // 20 s.
  while (absl::Now() - paused <
         std::min(moved + absl::Seconds(6), absl::Seconds(20))) {
    if (moved == absl::InfiniteDuration() &&
        Streams(c[0]) + Streams(c[1]) == 3) {
      moved = absl::Now() - paused;
      std::cerr << "the agents moved " << moved << " after the pause\n";
    }
    for (size_t i : {0, 1}) {
      EXPECT_EQ(DownNodes(c[i]), "")
          << c[i].name << " after " << absl::Now() - paused;
    }
    const int unobserved = Unobserved(c[0], "col-a");
    EXPECT_GE(unobserved, 0)
        << "col-b lists a node of col-a down after " << absl::Now() - paused;
    most_unobserved = std::max(most_unobserved, unobserved);
    absl::SleepFor(absl::Milliseconds(500));
  }
  EXPECT_LE(moved, absl::Seconds(15));
  EXPECT_EQ(most_unobserved, 3);
  EXPECT_EQ(Streams(a), 0);
  EXPECT_GE(MetricOf(a, "fabricdiag_ingest_refused_streams_total"), 3);

  nats_.Resume(0);
  const absl::Time resumed = absl::Now();
  // Every collector's streams and view while they come back, printed as
  // they change: where the time went when this fails. Within 50 s: about
  // 4-13 s here (the returning server's JetStream elections take a few
  // seconds, during which leases and views lapse, then one hand-back per
  // collector per second), but an agent handed back while those elections
  // last can bounce to a collector that handed it off moments before,
  // which then keeps it for the hand-back pause (5 s, doubling with each
  // such return up to 30 s) before handing it back again: no ping-pong, at
  // the price of a later return.
  std::string timeline;
  std::string last;
  EXPECT_TRUE(testing::Eventually(
      [&] {
        const std::string now = absl::StrCat(
            "col-a ", Streams(a), ", col-b ", Streams(c[0]), ", col-c ",
            Streams(c[1]), " streams; members seen by col-a ",
            MetricOf(a, "fabricdiag_cluster_members"), ", by col-b ",
            MetricOf(c[0], "fabricdiag_cluster_members"), "; leading:",
            MetricOf(a, "fabricdiag_cluster_analysis_leader") == 1 ? " col-a"
                                                                   : "",
            MetricOf(c[0], "fabricdiag_cluster_analysis_leader") == 1 ? " col-b"
                                                                      : "",
            MetricOf(c[1], "fabricdiag_cluster_analysis_leader") == 1 ? " col-c"
                                                                      : "");
        if (now != last) {
          absl::StrAppend(&timeline, "  +",
                          absl::FormatDuration(absl::Trunc(
                              absl::Now() - resumed, absl::Milliseconds(100))),
                          ": ", now, "\n");
          last = now;
        }
        return Streams(a) == 3;
      },
      absl::Seconds(50), absl::Milliseconds(300)))
      << Streams(a) << " agents back on col-a; after the resume:\n"
      << timeline;
  std::cerr << "the agents were back " << absl::Now() - resumed
            << " after the resume:\n"
            << timeline;
  for (const Collector& each : c) {
    EXPECT_EQ(DownNodes(each), "") << each.name << "'s agent_down findings: "
                                   << Cli(each, {"--timeout=3s", "findings",
                                                 "--kind=agent_down", "--json"})
                                          .out;
  }
  for (auto& agent : agents) agent->Signal(SIGTERM);
  for (Collector& each : c) each.process->Signal(SIGTERM);
  for (Collector& each : c) {
    EXPECT_TRUE(each.process->Wait(absl::Seconds(20)).has_value());
  }
}

// An agent handed back to a collector that came back is silent on its way
// there: it waits out a pause, and its new collector publishes its arrival
// a pass later. Here its connection is held for 8 s on the way (a
// StallProxy in front of col-a, the address col-a advertises), longer than
// agent_down's 5 s. The collector it left says it handed it off: no
// collector opens agent_down, `fabricdiag nodes` there lists it unobserved
// with the time of the hand-off, and fabricdiag_cluster_moving_nodes counts
// it until it arrives. About 30 s.
TEST_F(UnobservedNodesTest, AnAgentOnItsWayToAnotherCollectorIsNotDown) {
  std::vector<Collector> c;
  c.push_back(Start("col-b", nats_.urls()));
  ASSERT_TRUE(testing::Eventually(
      [&] { return MetricOf(c[0], "fabricdiag_cluster_analysis_leader") == 1; },
      absl::Seconds(30), absl::Milliseconds(200)));
  const int a_port = testing::FreeLoopbackPort();
  ASSERT_GT(a_port, 0);
  absl::StatusOr<std::unique_ptr<testing::StallProxy>> proxy =
      testing::StallProxy::Start(a_port);
  ASSERT_TRUE(proxy.ok()) << proxy.status();
  const std::string via_proxy = absl::StrCat("127.0.0.1:", (*proxy)->port());
  const std::vector<std::string> targets = {
      via_proxy, absl::StrCat("127.0.0.1:", c[0].grpc)};
  // A node whose agent ranks col-a first whichever of the two leads.
  std::string node;
  for (int i = 0; node.empty() && i < 200; ++i) {
    const std::string name = absl::StrCat("gpu-w", i);
    const double w = cluster::LeaderHandoff::kLeaderWeight;
    bool first = true;
    for (const std::vector<double>& weights :
         std::vector<std::vector<double>>{{1, 1}, {w, 1}, {1, w}}) {
      first = first && client::RankCollectors(name, targets, weights)[0] == 0;
    }
    if (first) node = name;
  }
  ASSERT_FALSE(node.empty());
  std::vector<std::unique_ptr<Subprocess>> agents;
  const LogsOnFailure logs(c, agents);
  // col-a is not there yet: the agent streams to col-b.
  agents.push_back(StartAgent(node, targets));
  ASSERT_TRUE(testing::Eventually([&] { return Streams(c[0]) == 1; },
                                  absl::Seconds(30), absl::Milliseconds(200)));
  absl::SleepFor(absl::Seconds(1));  // a few reports there
  // Whatever the agent sends col-a next is held on the way.
  (*proxy)->HoldRequestsFrom("PRI * HTTP/2.0");
  c.push_back(Start("col-a", nats_.urls(), a_port, 0,
                    {"--advertise_address=" + via_proxy}));
  ASSERT_EQ(c[1].grpc, a_port);
  // col-b hands the agent back to col-a; its connection is held.
  ASSERT_TRUE(testing::Eventually([&] { return (*proxy)->holding(); },
                                  absl::Seconds(30), absl::Milliseconds(100)));
  const absl::Time held = absl::Now();
  double most_moving = 0;
  while (absl::Now() - held < absl::Seconds(8)) {
    for (const Collector& each : c) {
      EXPECT_EQ(DownNodes(each), "")
          << each.name << " after " << absl::Now() - held;
    }
    most_moving = std::max(most_moving,
                           MetricOf(c[0], "fabricdiag_cluster_moving_nodes"));
    absl::SleepFor(absl::Milliseconds(500));
  }
  EXPECT_EQ(most_moving, 1);
  EXPECT_EQ(Streams(c[0]) + Streams(c[1]), 0);
  // On the collector it left, and on the one it goes to.
  const auto listed = [&](const Collector& on) {
    RunResult r = Cli(on, {"--timeout=3s", "nodes", "--json"});
    const nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
    if (j.is_array()) {
      for (const nlohmann::json& n : j) {
        if (n.value("node", "") == node) return n;
      }
    }
    ADD_FAILURE() << on.name << " does not list " << node << ": " << r.out
                  << r.err;
    return nlohmann::json();
  };
  for (const Collector& on : c) {
    const nlohmann::json n = listed(on);
    EXPECT_EQ(n.value("unobserved", false), true) << on.name << ": " << n;
    EXPECT_EQ(n.value("up", false), true) << on.name << ": " << n;
    EXPECT_EQ(n.value("collector", ""), "col-b") << on.name << ": " << n;
    EXPECT_TRUE(n["handed_off"].is_string()) << on.name << ": " << n;
  }
  RunResult table = Cli(c[0], {"--timeout=3s", "nodes"});
  EXPECT_THAT(table.out,
              HasSubstr("moving: 1 node(s) handed off by collector col-b"));

  (*proxy)->Release();
  ASSERT_TRUE(testing::Eventually([&] { return Streams(c[1]) == 1; },
                                  absl::Seconds(30), absl::Milliseconds(200)));
  EXPECT_TRUE(testing::Eventually(
      [&] {
        const nlohmann::json n = listed(c[0]);
        return MetricOf(c[0], "fabricdiag_cluster_moving_nodes") == 0 &&
               n.value("collector", "") == "col-a" &&
               !n.value("unobserved", true) && n["handed_off"].is_null();
      },
      absl::Seconds(10), absl::Milliseconds(200)));
  for (const Collector& each : c) {
    EXPECT_EQ(DownNodes(each), "") << each.name;
  }
  for (auto& agent : agents) agent->Signal(SIGTERM);
  for (Collector& each : c) each.process->Signal(SIGTERM);
  for (Collector& each : c) {
    EXPECT_TRUE(each.process->Wait(absl::Seconds(20)).has_value());
  }
}

// The analysis leader itself cut off from NATS (its only server paused with
// SIGSTOP): it loses the lease and another collector leads within the
// lease's time; its agents move to the others; no agent_down opens for
// them; the agent_down open before (a dead agent of col-b) keeps its id
// through the new leader's rewrite, and once the server resumes it keeps
// it: one leader again, the same id everywhere, no watch sees it resolve
// or open again. About 35 s.
TEST_F(UnobservedNodesTest, ALeaderCutOffFromNatsHandsOverWithoutFlaps) {
  std::vector<Collector> c;
  c.push_back(Start("col-a", nats_.url(0)));
  ASSERT_TRUE(testing::Eventually(
      [&] { return MetricOf(c[0], "fabricdiag_cluster_analysis_leader") == 1; },
      absl::Seconds(30), absl::Milliseconds(200)));
  const std::string others = nats_.url(1) + "," + nats_.url(2);
  c.push_back(Start("col-b", others));
  c.push_back(Start("col-c", others));
  std::vector<std::string> targets;
  for (const Collector& each : c) {
    ASSERT_GT(each.grpc, 0);
    targets.push_back(absl::StrCat("127.0.0.1:", each.grpc));
  }
  // Three nodes whose agents rank col-a, the leader (weight 0.8), first.
  std::vector<std::unique_ptr<Subprocess>> agents;
  const LogsOnFailure logs(c, agents);
  for (int i = 0; agents.size() < 3 && i < 100; ++i) {
    const std::string node = absl::StrCat("gpu-l", i);
    if (client::RankCollectors(node, targets, {0.8, 1, 1})[0] == 0) {
      agents.push_back(StartAgent(node, targets));
    }
  }
  ASSERT_EQ(agents.size(), 3u);
  // The finding that must not flap: a dead agent of col-b.
  std::unique_ptr<Subprocess> victim = StartAgent("gpu-dead", {targets[1]});
  ASSERT_TRUE(testing::Eventually(
      [&] {
        return Streams(c[0]) == 3 && Streams(c[1]) >= 1 &&
               MetricOf(c[0], "fabricdiag_cluster_members") == 3;
      },
      absl::Seconds(30), absl::Milliseconds(200)));
  victim->Signal(SIGKILL);
  auto down_ids = [&](const Collector& each) {
    RunResult r = Cli(each, {"--timeout=3s", "findings", "--json"});
    const nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
    std::string ids;  // "f-000001@gpu-dead "
    if (r.exit_code != 0 || !j.is_array()) return ids;
    for (const nlohmann::json& f : j) {
      if (f.value("kind", "") == "agent_down") {
        absl::StrAppend(&ids, f.value("id", ""), "@", f.value("node", ""), " ");
      }
    }
    return ids;
  };
  std::string open;
  ASSERT_TRUE(testing::Eventually(
      [&] {
        open = down_ids(c[1]);
        return absl::StrContains(open, "@gpu-dead");
      },
      absl::Seconds(20), absl::Milliseconds(200)));
  const std::string id = open.substr(0, open.find('@'));
  std::vector<std::unique_ptr<Subprocess>> watches;
  for (int i : {1, 2}) {
    watches.push_back(std::make_unique<Subprocess>(std::vector<std::string>{
        kCli, absl::StrCat("--collector=127.0.0.1:", c[i].grpc), "watch",
        "--json"}));
    ASSERT_TRUE(watches.back()->Start().ok());
  }
  ASSERT_TRUE(testing::Eventually(
      [&] {
        return absl::StrContains(watches[0]->Stdout(), id) &&
               absl::StrContains(watches[1]->Stdout(), id);
      },
      absl::Seconds(10), absl::Milliseconds(100)));

  nats_.Pause(0);
  const absl::Time paused = absl::Now();
  absl::Duration led = absl::InfiniteDuration();
  absl::Duration moved = absl::InfiniteDuration();
  while (absl::Now() - paused <
         std::min(std::max(led, moved) + absl::Seconds(6), absl::Seconds(20))) {
    const absl::Duration now = absl::Now() - paused;
    if (led == absl::InfiniteDuration() &&
        MetricOf(c[1], "fabricdiag_cluster_analysis_leader") +
                MetricOf(c[2], "fabricdiag_cluster_analysis_leader") ==
            1) {
      led = now;
      std::cout << "another collector led " << led << " after the pause\n";
    }
    if (moved == absl::InfiniteDuration() &&
        Streams(c[1]) + Streams(c[2]) == 3) {
      moved = now;
      std::cout << "the agents moved " << moved << " after the pause\n";
    }
    for (size_t i : {1, 2}) {
      EXPECT_EQ(down_ids(c[i]), id + "@gpu-dead ")
          << c[i].name << " after " << now;
    }
    absl::SleepFor(absl::Milliseconds(300));
  }
  // The lease's 3 s after its last renewal, and the lease bucket electing
  // another stream leader when the paused server led it: a NATS Raft
  // follower waits 4-9 s for a lost leader before it campaigns (up to
  // 0.8 s more), then the 250 ms acquire tries. 4.5-6.7 s measured alone;
  // 10.1 and 12.9 s beside the other cluster tests on 2 cores.
  EXPECT_LE(led, absl::Seconds(15));
  EXPECT_LE(moved, absl::Seconds(15));
  const size_t next =
      MetricOf(c[1], "fabricdiag_cluster_analysis_leader") == 1 ? 1 : 2;
  std::string rewrote;
  EXPECT_TRUE(c[next].process->WaitForStderr("active findings under it",
                                             &rewrote, absl::ZeroDuration()))
      << c[next].process->Stderr();
  std::cout << c[next].name << ": " << rewrote << "\n";

  nats_.Resume(0);
  const absl::Time resumed = absl::Now();
  ASSERT_TRUE(testing::Eventually(
      [&] { return MetricOf(c[0], "fabricdiag_cluster_nats_connected") == 1; },
      absl::Seconds(15), absl::Milliseconds(200)));
  // Its watcher catches up and a few passes run. The JetStream cluster's
  // elections as the server returns can hold every collector's features
  // and lease renewals back for several seconds (docs/cluster.md, limits
  // of a cut-off leader; the members bucket was seen unanswered for 10 s
  // here on a loaded machine): a moment without a leader, or an agent
  // handed back meanwhile judged down, is reported, not asserted; one
  // leader again and the finding that was open keeping its id everywhere
  // are. Who leads is printed as it changes: two at once would be a
  // defect of the lease, none for long the NATS cluster's elections.
  std::string leaders_timeline;
  std::string last_leaders;
  ASSERT_TRUE(testing::Eventually(
      [&] {
        std::string leading;
        for (const Collector& each : c) {
          if (MetricOf(each, "fabricdiag_cluster_analysis_leader") == 1) {
            absl::StrAppend(&leading, " ", each.name);
          }
        }
        if (leading != last_leaders || leaders_timeline.empty()) {
          absl::StrAppend(&leaders_timeline, "  +",
                          absl::FormatDuration(absl::Trunc(
                              absl::Now() - resumed, absl::Milliseconds(100))),
                          ": leading:", leading, "\n");
          last_leaders = leading;
        }
        return std::count(leading.begin(), leading.end(), ' ') == 1;
      },
      absl::Seconds(30), absl::Milliseconds(200)))
      << "who led after the resume:\n"
      << leaders_timeline;
  std::cout << "one leader again " << absl::Now() - resumed
            << " after the resume:\n"
            << leaders_timeline;
  absl::SleepFor(absl::Seconds(2));
  std::cout << "checked " << absl::Now() - resumed << " after the resume\n";
  for (const Collector& each : c) {
    const std::string ids = down_ids(each);
    EXPECT_TRUE(absl::StrContains(ids, id + "@gpu-dead ")) << each.name << ids;
    if (ids != id + "@gpu-dead ") {
      std::cout << each.name << " lists agent_down " << ids << "\n";
    }
  }
  for (size_t w = 0; w < watches.size(); ++w) {
    int opened = 0;
    for (absl::string_view line : absl::StrSplit(watches[w]->Stdout(), '\n')) {
      const nlohmann::json e = nlohmann::json::parse(line, nullptr, false);
      if (!e.is_object() || e.value("id", "") != id) continue;
      const std::string event = e.value("event", "");
      EXPECT_NE(event, "RESOLVED") << c[w + 1].name << ": " << line;
      opened += event == "OPENED" || event == "SNAPSHOT";
    }
    EXPECT_EQ(opened, 1) << c[w + 1].name << ": " << watches[w]->Stdout();
  }
  for (auto& agent : agents) agent->Signal(SIGTERM);
  for (Collector& each : c) each.process->Signal(SIGTERM);
  for (Collector& each : c) {
    EXPECT_TRUE(each.process->Wait(absl::Seconds(20)).has_value());
  }
}
#endif  // FABRICDIAG_SANITIZED

// A delayed write (docs/cluster.md#fenced-findings): the leader is stopped
// (SIGSTOP) while its write of a finding's resolve is in flight, held by the
// test hook after its lease check; another collector takes over and keeps
// the finding open (the agent is down again); the old leader resumes. Its
// late resolve is refused: no follower, `watch` or /metrics ever shows it
// after the new leader's version. Real time: not in the sanitized build.
#ifndef FABRICDIAG_SANITIZED
TEST_F(CollectorClusterTest, ADeposedLeadersDelayedWriteNeverLands) {
  std::vector<Collector> c;
  c.push_back(Start("col-a", nats_.urls(), 0, 0, {},
                    {"FABRICDIAG_TEST_FINDINGS_WRITE_DELAY=2s"}));
  ASSERT_GT(c[0].grpc, 0);
  auto leader_of = [](const Collector& each) {
    absl::StatusOr<std::string> h = HttpGet(each.http, "/healthz");
    std::smatch named;
    return h.ok() && std::regex_search(*h, named,
                                       std::regex("analysis leader: "
                                                  "(col-[a-z])"))
               ? std::string(named[1])
               : std::string();
  };
  ASSERT_TRUE(testing::Eventually([&] { return leader_of(c[0]) == "col-a"; },
                                  absl::Seconds(15), absl::Milliseconds(100)));
  for (const char* name : {"col-b", "col-c"}) {
    c.push_back(Start(name, nats_.urls()));
    ASSERT_GT(c.back().grpc, 0);
  }
  // At 100 ms the agent is down after 1 s of silence (10 intervals). The
  // next leader takes the lease 2 to 3 s after col-a stops (its TTL): by
  // its first pass the agent, killed then, is down whatever the lag of the
  // facts it judges from. At 200 ms (2 s) its first pass sometimes found
  // the agent still up, and rightly resolved the finding.
  const std::vector<std::string> agent_argv = {
      kAgent,
      "--node=gpu-b1",
      "--sysfs_root=" + kFixtures + "/sysfs",
      "--listen=127.0.0.1:0",
      "--interval=100ms",
      absl::StrCat("--collector=127.0.0.1:", c[1].grpc)};
  auto agent = std::make_unique<Subprocess>(agent_argv);
  ASSERT_TRUE(agent->Start().ok());
  const std::regex agent_up(
      "fabricdiag_agent_up\\{[^}]*node=\"gpu-b1\"[^}]*\\} 1");
  ASSERT_TRUE(testing::Eventually(
      [&] {
        absl::StatusOr<std::string> m = HttpGet(c[1].http, "/metrics");
        return m.ok() && std::regex_search(*m, agent_up);
      },
      absl::Seconds(20), absl::Milliseconds(100)))
      << agent->Stderr();
  // agent_down opens on col-a; its write lands after the hook's 2 s.
  agent->Signal(SIGKILL);
  auto down = [&](const Collector& each, bool all) {
    std::vector<std::string> argv = {"--timeout=3s", "findings", "--json"};
    if (all) argv.push_back("--all");
    RunResult r = Cli(each, argv);
    std::vector<std::string> versions;  // "f-000001 ACTIVE"
    const nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
    if (r.exit_code != 0 || !j.is_array()) return versions;
    for (const nlohmann::json& f : j) {
      if (f.value("kind", "") == "agent_down") {
        versions.push_back(f.value("id", "") + " " + f.value("state", ""));
      }
    }
    return versions;
  };
  std::string id;
  ASSERT_TRUE(testing::Eventually(
      [&] {
        const std::vector<std::string> v = down(c[2], false);
        if (v.size() != 1) return false;
        id = v[0].substr(0, v[0].find(' '));
        return true;
      },
      absl::Seconds(20), absl::Milliseconds(200)))
      << c[0].process->Stderr();
  std::vector<std::unique_ptr<Subprocess>> watches;
  for (int i : {1, 2}) {
    watches.push_back(std::make_unique<Subprocess>(std::vector<std::string>{
        kCli, absl::StrCat("--collector=127.0.0.1:", c[i].grpc), "watch",
        "--json"}));
    ASSERT_TRUE(watches.back()->Start().ok());
  }
  ASSERT_TRUE(testing::Eventually(
      [&] {
        return absl::StrContains(watches[0]->Stdout(), id) &&
               absl::StrContains(watches[1]->Stdout(), id);
      },
      absl::Seconds(10), absl::Milliseconds(100)));

  // The agent comes back: col-a resolves the finding, and its write is
  // held. col-a is stopped with the write in flight, and the agent dies
  // again, so that the condition holds for whoever leads next.
  agent = std::make_unique<Subprocess>(agent_argv);
  ASSERT_TRUE(agent->Start().ok());
  std::string held;
  ASSERT_TRUE(c[0].process->WaitForStderr(
      absl::StrCat("holding the write of ", id, " (FINDING_STATE_RESOLVED"),
      &held, absl::Seconds(20)))
      << c[0].process->Stderr();
  c[0].process->Signal(SIGSTOP);
  agent->Signal(SIGKILL);
  const absl::Time stopped = absl::Now();
  std::string successor;
  ASSERT_TRUE(testing::Eventually(
      [&] {
        successor = leader_of(c[1]);
        return successor == "col-b" || successor == "col-c";
      },
      absl::Seconds(15), absl::Milliseconds(100)))
      << c[1].process->Stderr();
  const size_t next = successor == "col-b" ? 1 : 2;
  std::cout << successor << " leads " << absl::Now() - stopped
            << " after col-a stopped\n";
  // The new leader took the finding over under its term and keeps it open.
  ASSERT_TRUE(c[next].process->WaitForStderr("active findings under it", &held,
                                             absl::Seconds(5)))
      << c[next].process->Stderr();
  std::cout << successor << ": " << held << "\n";
  absl::SleepFor(absl::Seconds(1));  // a few of its passes (200 ms)

  // col-a resumes: its held write meets the new term and is refused.
  c[0].process->Signal(SIGCONT);
  const std::regex fenced(
      "fabricdiag_cluster_findings_fenced_writes_total\\{[^}]*\\} [1-9]");
  const std::regex open_metric(
      "fabricdiag_finding_active\\{[^}]*kind=\"agent_down\"[^}]*"
      "node=\"gpu-b1\"[^}]*\\} 1");
  bool refused = false;
  // Meanwhile, and for 2 s after, every collector's /metrics shows the
  // finding open (col-a's own resolve is replaced by the new leader's
  // version as soon as its watcher catches up).
  const absl::Time until = absl::Now() + absl::Seconds(8);
  absl::Time refused_at = absl::InfiniteFuture();
  while (absl::Now() < until && absl::Now() < refused_at + absl::Seconds(2)) {
    for (int i : {1, 2}) {
      absl::StatusOr<std::string> m = HttpGet(c[i].http, "/metrics");
      ASSERT_TRUE(m.ok()) << c[i].name;
      EXPECT_TRUE(std::regex_search(*m, open_metric)) << c[i].name << *m;
    }
    absl::StatusOr<std::string> a = HttpGet(c[0].http, "/metrics");
    if (!refused && a.ok() && std::regex_search(*a, fenced)) {
      refused = true;
      refused_at = absl::Now();
    }
    absl::SleepFor(absl::Milliseconds(200));
  }
  EXPECT_TRUE(refused) << c[0].process->Stderr();
  std::string refusal;
  EXPECT_TRUE(c[0].process->WaitForStderr(
      absl::StrCat("not writing ", id, " (FINDING_STATE_RESOLVED)"), &refusal,
      absl::ZeroDuration()));
  std::cout << "col-a: " << refusal << "\n";
  // The followers list the finding open once, never resolved, and so does
  // col-a once its watcher applied the new leader's version (its own
  // resolve stays in its history); the followers' watches never saw it
  // resolve.
  for (size_t i = 0; i < c.size(); ++i) {
    EXPECT_TRUE(testing::Eventually(
        [&] {
          return down(c[i], i != 0) == std::vector<std::string>{id + " active"};
        },
        absl::Seconds(5), absl::Milliseconds(200)))
        << c[i].name << ": " << Cli(c[i], {"findings", "--all"}).out;
  }
  for (size_t w = 0; w < watches.size(); ++w) {
    for (absl::string_view line : absl::StrSplit(watches[w]->Stdout(), '\n')) {
      const nlohmann::json e = nlohmann::json::parse(line, nullptr, false);
      if (!e.is_object() || e.value("id", "") != id) continue;
      EXPECT_NE(absl::AsciiStrToLower(e.value("event", "")), "resolved")
          << c[w + 1].name << ": " << line;
    }
  }
  if (HasFailure()) {
    for (const Collector& each : c) {
      std::cout << "--- " << each.name << ":\n" << each.process->Stderr();
    }
  }
}

// The live test at scale: three collectors sharding the analysis over three
// nats-servers, fed by a simulated cluster of kHosts hosts and their leaf
// switches whose agents are the simulator's virtual agents (fabricdiag-sim
// --virtual_agents --virtual_switch_agents with the fabric's layouts,
// topology and scenario): the counters of its counter model, eight faults
// among them. One embedded collector first finds what
// it finds on that traffic; the three must then find the same, under one id
// on all three, and keep every id through the kill of one of them, none
// resolved or opened twice; two more faults start as its agents move, and
// the survivors find them as the one collector did.
class ScaleStoryTest : public CollectorClusterTest {
 protected:
  // As many as 2 cores carry beside three collectors and three
  // nats-servers with room for the test's timing: about 1.5 cores on
  // average (docs/cluster.md gives the figures).
  static constexpr int kHosts = 2048;
  static constexpr int kHostsPerLeaf = 16;
  static constexpr int kRails = 8;
  static constexpr int kQuarter = kHosts / 4;

  static std::string Host(int i) { return absl::StrFormat("gpu-%03d", i); }
  // The leaf NIC `nic` of host `host` is cabled to, and the port.
  static int Leaf(int host, int nic) {
    return host / kHostsPerLeaf * kRails + nic;
  }
  static int LeafPort(int host) { return host % kHostsPerLeaf + 1; }

  struct Fault {
    std::string sim_kind;  // the scenario's
    std::string kind;      // the finding's
    int host = 0;          // -1: on leaf `nic`'s ECMP group
    int nic = 0;
    std::string extra;  // more fields of the scenario's fault
    int start = 3;      // seconds into the scenario

    // What the scenario names, and how its finding begins.
    std::string Where() const {
      return host < 0 ? absl::StrCat("switch: leaf-", nic)
                      : absl::StrCat("node: ", Host(host), ", nic: mlx5_", nic);
    }
    std::string FindingPrefix() const {
      return host < 0 ? absl::StrCat(kind, " leaf-", nic, " uplinks ")
                      : absl::StrCat(kind, " ", Host(host), " mlx5_", nic, " ");
    }
  };
  // When the collector is killed, and when the last two faults start: a
  // second later, while the agents it had move to the others and its
  // shards change hands.
  static constexpr int kKillSecond = 29;
  static constexpr int kLateStart = kKillSecond + 1;
  // The host of the late link_errors: the collector killed is the one its
  // agent streams to, so that it is found by a collector that never had it.
  static constexpr int kMovingHost = kQuarter + 40;

  // One of every kind a host's counters show, each in a job of its own or
  // on another leaf, and a leaf's flows piled onto two of its uplinks, from
  // 3 s on; link errors and a straggler from kLateStart.
  static std::vector<Fault> Faults() {
    return {
        {"hot_expert", "hot_expert_incast", 3, 2, "factor: 6"},
        {"link_errors", "link_errors", kQuarter + 4, 5, ""},
        {"half_speed", "link_degraded", kQuarter + 9, 7, ""},
        {"pfc_storm", "pfc_storm", 2 * kQuarter + 5, 1, "priority: 3"},
        {"retransmissions", "retransmissions", 3 * kQuarter + 2, 3, ""},
        {"link_flap", "link_flap", 3 * kQuarter + 9, 0, "period: 4"},
        {"straggler", "straggler_nic", 3 * kQuarter + 13, 4, ""},
        {"ecmp_polarization", "ecmp_imbalance", -1,
         Leaf(2 * kQuarter + 2 * kHostsPerLeaf, 6), "uplinks: 2"},
        {"link_errors", "link_errors", kMovingHost, 2, "", kLateStart},
        {"straggler", "straggler_nic", 2 * kQuarter + 60, 4, "", kLateStart},
    };
  }

  // Two MoE jobs and two dense ones, a quarter of the hosts each; rail
  // leaves (each group of kHostsPerLeaf hosts has a leaf per rail, with
  // four uplinks: 4:1, so that piled-up flows do not overrun an uplink);
  // the faults; the analysis.
  void WriteInputs() {
    const std::string w = dir_.path();
    const std::string rails =
        "[mlx5_0, mlx5_1, mlx5_2, mlx5_3, mlx5_4, mlx5_5, mlx5_6, mlx5_7]";
    auto hosts = [](int first) {
      std::string list;
      for (int i = first; i < first + kQuarter; ++i) {
        absl::StrAppend(&list, i > first ? ", " : "", Host(i));
      }
      return list;
    };
    for (int j = 0; j < 4; ++j) {
      const bool moe = j < 2;
      const std::string job = absl::StrCat(moe ? "moe-" : "dense-", j);
      const std::string path = absl::StrCat(w, "/", job, ".yaml");
      std::ofstream out(path);
      out << "job: " << job << "\ngpus_per_node: 8\n";
      if (moe) {
        out << "parallelism: {tp: 8, pp: 1, dp: " << kQuarter
            << ", ep: " << kQuarter << "}\n";
      } else {
        out << "parallelism: {tp: 8, pp: 2, dp: " << kQuarter / 2 << "}\n";
      }
      out << "hosts: [" << hosts(j * kQuarter) << "]\nrails: " << rails
          << "\nmodel: {params: 1.6e10, hidden: 4096, layers: 32, "
             "seq_len: 4096, micro_batch: 1, micro_batches: 8, "
             "dtype_bytes: 2";
      if (moe) out << ", experts: " << kQuarter * 8 << ", top_k: 2";
      out << "}\n";
      layouts_.push_back(path);
    }
    std::ofstream topology(w + "/topology.yaml");
    topology << "switches:\n";
    for (int l = 0; l < kHosts / kHostsPerLeaf * kRails; ++l) {
      topology << "  - {name: leaf-" << l << ", uplinks: [";
      for (int u = 1; u <= 4; ++u) {
        topology << (u > 1 ? ", " : "") << "swp" << kHostsPerLeaf + u;
      }
      topology << "]}\n";
    }
    topology << "links:\n";
    for (int i = 0; i < kHosts; ++i) {
      for (int n = 0; n < kRails; ++n) {
        topology << "  - {host: " << Host(i) << ", nic: mlx5_" << n
                 << ", switch: leaf-" << Leaf(i, n) << ", port: swp"
                 << LeafPort(i) << "}\n";
      }
    }
    std::ofstream scenario(w + "/scenario.yaml");
    scenario << "step_seconds: 1.0\nfaults:\n";
    for (const Fault& f : Faults()) {
      scenario << "  - {kind: " << f.sim_kind << ", " << f.Where()
               << ", start: " << f.start << (f.extra.empty() ? "" : ", ")
               << f.extra << "}\n";
    }
    // The simulator's dense jobs move ~3.3 GB/s per NIC, under the 10% of
    // the link rate at which a group counts as busy by default.
    std::ofstream(w + "/analysis.yaml")
        << "straggler_nic: {min_median_link_fraction: 0.05}\n";
  }

  std::vector<std::string> AnalysisFlags() const {
    return {"--analysis_interval=1s",
            "--analysis_config=" + dir_.path() + "/analysis.yaml"};
  }

  // The layouts and the topology, declared on `c`.
  void Declare(const Collector& c) {
    for (const std::string& layout : layouts_) {
      ASSERT_EQ(Cli(c, {"layout", "apply", layout}).exit_code, 0) << layout;
    }
    ASSERT_EQ(
        Cli(c, {"topology", "apply", dir_.path() + "/topology.yaml"}).exit_code,
        0);
  }

  // Every host and every leaf as a virtual agent streaming to `collectors`.
  std::unique_ptr<Subprocess> StartAgents(const std::string& collectors) {
    const std::string w = dir_.path();
    auto sim = std::make_unique<Subprocess>(std::vector<std::string>{
        kSim, absl::StrCat("--virtual_agents=", kHosts),
        "--virtual_switch_agents", "--collector=" + collectors,
        "--layout=" + absl::StrJoin(layouts_, ","),
        "--topology=" + w + "/topology.yaml",
        "--scenario=" + w + "/scenario.yaml", "--interval=1s",
        "--duration=600s"});
    EXPECT_TRUE(sim->Start().ok());
    return sim;
  }

  // "kind node device job group" of every active finding `c` lists, and its
  // id; with `all`, every finding, resolved ones too (key + " resolved").
  std::map<std::string, std::string> Findings(const Collector& c,
                                              bool all = false) {
    std::vector<std::string> args = {"--timeout=5s", "findings", "--json"};
    if (all) args.push_back("--all");
    RunResult r = Cli(c, args);
    std::map<std::string, std::string> found;
    const nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
    if (r.exit_code != 0 || !j.is_array()) return found;
    for (const nlohmann::json& f : j) {
      std::string key =
          absl::StrCat(f.value("kind", ""), " ", f.value("node", ""), " ",
                       f.value("device", ""), " ", f.value("job", ""), " ",
                       f.value("group", ""));
      if (all && absl::AsciiStrToLower(f.value("state", "")) != "active") {
        absl::StrAppend(&key, " ", f.value("state", ""), " ",
                        f.value("id", ""));
      }
      found[key] = f.value("id", "");
    }
    return found;
  }

  // Whether `found` holds the finding of every fault that starts by
  // `second`.
  static bool HasEveryFault(const std::map<std::string, std::string>& found,
                            int second) {
    for (const Fault& f : Faults()) {
      if (f.start > second) continue;
      const std::string prefix = f.FindingPrefix();
      auto it = found.lower_bound(prefix);
      if (it == found.end() || !absl::StartsWith(it->first, prefix)) {
        return false;
      }
    }
    return true;
  }

  static std::string Keys(const std::map<std::string, std::string>& found) {
    std::string keys;
    for (const auto& [key, id] : found) absl::StrAppend(&keys, key, "\n");
    return keys;
  }

  std::vector<std::string> layouts_;
};

TEST_F(ScaleStoryTest, ThreeShardingCollectorsFindWhatOneFinds) {
  WriteInputs();
  // One collector alone, on the simulated cluster's traffic: what it finds
  // before the late faults start, and after.
  std::map<std::string, std::string> alone_early;
  std::map<std::string, std::string> alone_found;
  {
    Collector alone = Start("alone", /*urls=*/"", 0, 0, AnalysisFlags());
    ASSERT_GT(alone.grpc, 0);
    Declare(alone);
    const absl::Time started = absl::Now();
    std::unique_ptr<Subprocess> sim =
        StartAgents(absl::StrCat("127.0.0.1:", alone.grpc));
    ASSERT_TRUE(testing::Eventually(
        [&] { return HasEveryFault(alone_early = Findings(alone), 3); },
        absl::Seconds(90), absl::Milliseconds(500)))
        << Keys(alone_early) << sim->Stdout() << sim->Stderr();
    // Whatever else the faults raise, raised by now too (a few passes).
    absl::SleepFor(absl::Seconds(5));
    alone_early = Findings(alone);
    ASSERT_LT(absl::Now() - started, absl::Seconds(kLateStart))
        << "the late faults started before one collector found the others";
    ASSERT_TRUE(testing::Eventually(
        [&] {
          return HasEveryFault(alone_found = Findings(alone), kLateStart);
        },
        absl::Seconds(kLateStart + 60) - (absl::Now() - started),
        absl::Milliseconds(500)))
        << Keys(alone_found);
    std::cout << "one collector found the late faults "
              << absl::Now() - started - absl::Seconds(kLateStart)
              << " after they started\n";
    absl::SleepFor(absl::Seconds(5));
    alone_found = Findings(alone);
    sim->Signal(SIGINT);
    EXPECT_TRUE(sim->Wait(absl::Seconds(20)).has_value());
    std::cout << "one collector, " << kHosts
              << " hosts and their leaves: " << alone_early.size()
              << " findings, then " << alone_found.size() << "\n"
              << Keys(alone_found)
              << sim->Stdout().substr(sim->Stdout().rfind("virtual agents:"));
  }

  std::vector<std::string> flags = AnalysisFlags();
  flags.push_back("--analysis_shards");
  std::vector<Collector> c;
  std::vector<std::string> targets;
  for (const char* name : {"col-a", "col-b", "col-c"}) {
    c.push_back(Start(name, nats_.urls(), 0, 0, flags));
    ASSERT_GT(c.back().grpc, 0);
    targets.push_back(absl::StrCat("127.0.0.1:", c.back().grpc));
  }
  Declare(c[0]);
  const absl::Time started = absl::Now();
  std::unique_ptr<Subprocess> sim = StartAgents(absl::StrJoin(targets, ","));
  // The same findings on each, and each under one id on all three.
  std::vector<std::map<std::string, std::string>> found(c.size());
  for (size_t i = 0; i < c.size(); ++i) {
    EXPECT_TRUE(testing::Eventually(
        [&] {
          found[i] = Findings(c[i]);
          return Keys(found[i]) == Keys(alone_early);
        },
        absl::Seconds(90), absl::Milliseconds(500)))
        << c[i].name << " lists:\n"
        << Keys(found[i]) << "one collector listed:\n"
        << Keys(alone_early);
  }
  EXPECT_EQ(found[1], found[0]);
  EXPECT_EQ(found[2], found[0]);
  const std::map<std::string, std::string> ids = found[0];

  // The shards are spread over the three. At kKillSecond, kill the
  // collector the late link errors' host streams to.
  std::vector<double> owned;
  owned.reserve(c.size());
  for (const Collector& each : c) {
    owned.push_back(Metric(each, "fabricdiag_cluster_analysis_shards_owned"));
  }
  std::vector<int> agents;
  agents.reserve(c.size());
  std::optional<size_t> victim;
  const std::string moving =
      absl::StrCat("fabricdiag_agent_up{node=\"", Host(kMovingHost), "\"} 1");
  for (size_t i = 0; i < c.size(); ++i) {
    agents.push_back(AgentsOf(c[i]));
    absl::StatusOr<std::string> m = HttpGet(c[i].http, "/metrics");
    if (m.ok() && absl::StrContains(*m, moving)) victim = i;
  }
  ASSERT_TRUE(victim.has_value()) << Host(kMovingHost) << " streams nowhere";
  const size_t killed_one = *victim;
  absl::SleepFor(absl::Seconds(kKillSecond) - (absl::Now() - started));
  std::cout << "shards owned: " << absl::StrJoin(owned, " ")
            << "; agents: " << absl::StrJoin(agents, " ") << "; killing "
            << c[killed_one].name << " at "
            << absl::ToDoubleSeconds(absl::Now() - started) << " s\n";
  c[killed_one].process->Signal(SIGKILL);
  ASSERT_TRUE(c[killed_one].process->Wait(absl::Seconds(10)).has_value());
  std::vector<size_t> survivors;
  for (size_t i = 0; i < c.size(); ++i) {
    if (i != killed_one) survivors.push_back(i);
  }
  const absl::Time killed = absl::Now();
  EXPECT_TRUE(testing::Eventually(
      [&] {
        double sum = 0;
        for (size_t i : survivors) {
          const double n =
              Metric(c[i], "fabricdiag_cluster_analysis_shards_owned");
          if (n <= 0) return false;
          sum += n;
        }
        return sum == 128;
      },
      absl::Seconds(30), absl::Milliseconds(250)));
  std::cout << "the survivors own every shard " << absl::Now() - killed
            << " after the kill\n";
  // The late faults, started as the agents moved, found as one collector
  // found them; every earlier finding under its id.
  std::map<std::string, absl::Duration> late;  // when each was first seen
  for (size_t i : survivors) {
    std::map<std::string, std::string> now;
    EXPECT_TRUE(testing::Eventually(
        [&] {
          now = Findings(c[i]);
          for (const auto& [key, id] : now) {
            if (ids.count(key) == 0 && late.count(key) == 0) {
              late[key] = absl::Now() - started - absl::Seconds(kLateStart);
            }
          }
          return Keys(now) == Keys(alone_found);
        },
        absl::Seconds(60), absl::Milliseconds(500)))
        << c[i].name << " lists:\n"
        << Keys(now) << "one collector listed:\n"
        << Keys(alone_found);
  }
  for (const auto& [key, after_start] : late) {
    std::cout << "the survivors found " << key << " " << after_start
              << " after its fault started\n";
  }
  // Some passes of the new owners over the agents that moved.
  absl::SleepFor(absl::Seconds(5));
  const std::map<std::string, std::string> after = Findings(c[survivors[0]]);
  for (const auto& [key, id] : ids) {
    auto it = after.find(key);
    EXPECT_TRUE(it != after.end() && it->second == id) << key;
  }
  for (size_t i : survivors) {
    EXPECT_EQ(Findings(c[i]), after) << c[i].name;
    // Nothing resolved: every finding it ever listed is active.
    const std::map<std::string, std::string> all = Findings(c[i], true);
    EXPECT_EQ(all, after) << c[i].name << " lists:\n"
                          << Cli(c[i], {"findings", "--all"}).out;
  }
  sim->Signal(SIGINT);
  EXPECT_TRUE(sim->Wait(absl::Seconds(20)).has_value());
  std::cout << sim->Stdout().substr(sim->Stdout().rfind("virtual agents:"));
}
#endif  // FABRICDIAG_SANITIZED

}  // namespace
}  // namespace fabricdiag
