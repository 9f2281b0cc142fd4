// A pass hands what the series store knows about each node to agent_down
// with the configured thresholds; passes run on the wall clock's grid and
// wait for the reports of their read.
#include "collector/runner/analysis_runner.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "analysis/agent_down.h"
#include "analysis/shard_map.h"
#include "analysis/tp_cross_node.h"
#include "collector/declared/file_declared_state.h"
#include "collector/runner/agent_liveness.h"
#include "collector/runner/analysis_shards.h"
#include "collector/runner/sharded_rate_pass.h"
#include "collector/state/baselines_store.h"
#include "collector/state/state_store.h"
#include "common/clock.h"
#include "tests/testing/eventually.h"
#include "tests/testing/fake_sysfs.h"
#include "tests/testing/fixed_topology.h"

namespace fabricdiag::collector {
namespace {

// One embedded collector's seams, the baselines kept nowhere.
// With `shards` set, its rate analysis is sharded.
struct OneCollector {
  EmbeddedFeatureExchange features;
  AlwaysLeading role;
  NoBaselinesStore baselines;
  testing::FixedTopology topology;
  AnalysisShards* shards = nullptr;
  AnalysisStats stats;
  AnalysisRunner::Seams seams() {
    return {features, role, baselines, topology, shards};
  }
};

// What a runner on the real clock needs, in a temporary --state_dir.
struct RealTimeRunner {
  explicit RealTimeRunner(absl::Duration interval) {
    options.interval = interval;
  }
  static std::unique_ptr<StateStore> OpenState(const std::string& dir,
                                               const Clock* clock) {
    auto opened = StateStore::Open(dir, clock);
    EXPECT_TRUE(opened.ok()) << opened.status();
    return opened.ok() ? *std::move(opened) : nullptr;
  }
  AnalysisRunner Make() {
    return AnalysisRunner(&series, &registry, &findings, &stats, clock,
                          {features, role, *baselines, topology}, options);
  }

  agent::ScopedTempDir tmp;
  SystemClock clock;
  std::unique_ptr<StateStore> state = OpenState(tmp.path(), &clock);
  FileDeclaredState declared{state.get()};
  LayoutRegistry registry{&declared, &clock};
  FindingsStore findings{state.get(), FindingsStoreOptions{}};
  SeriesStore series{SeriesStore::Options{}, clock};
  AnalysisStats stats;
  EmbeddedFeatureExchange features;
  AlwaysLeading role;
  NoBaselinesStore no_baselines;
  BaselinesStore* baselines = &no_baselines;
  testing::FixedTopology topology;
  AnalysisRunner::Options options;
};

// A pass waits, past its settling time, for a report of the read still
// awaited (an agent on the grid that reported just after the previous grid
// point), and gives up on it half an interval after the grid point.
// With a baselines store the first pass loads the baselines file (a
// damaged one: moved aside, a fresh start) and writes it anew.
TEST(AnalysisRunnerTest, FirstPassLoadsAndWritesTheBaselines) {
  RealTimeRunner r(absl::Seconds(1));
  FileBaselinesStore store(r.state.get());
  r.baselines = &store;
  const std::string path = r.state->baselines_path();
  {
    std::ofstream out(path, std::ios::binary);
    out << "not a state file";
  }
  AnalysisRunner runner = r.Make();
  runner.RunOnce();
  runner.FlushBaselines();
  const std::vector<std::string> problems = r.state->problems();
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_THAT(problems[0], ::testing::HasSubstr(path));
  absl::StatusOr<std::optional<ObjectFile>> file = r.state->ReadBaselines();
  ASSERT_TRUE(file.ok()) << file.status();
  ASSERT_TRUE(file->has_value());
  analysis::StragglerBaselines back;
  EXPECT_TRUE(back.Restore((*file)->payload, nullptr).ok());
}

TEST(AnalysisRunnerTest, APassWaitsForTheReportsOfTheRead) {
  RealTimeRunner r(absl::Milliseconds(200));
  const SystemClock& clock = r.clock;
  AnalysisStats& stats = r.stats;
  std::shared_ptr<NodeSeries> node = r.series.OpenNode("gpu-000");
  ASSERT_TRUE(node->BeginStream("boot", 200, 1, "peer", clock.Now()).ok());
  v1::Schema schema;
  schema.set_schema_id(1);
  v1::Series* s = schema.add_series();
  s->set_subsystem(v1::SUBSYSTEM_ETHTOOL);
  s->set_device("eth0");
  s->set_name("rx_bytes");
  absl::StatusOr<std::vector<uint32_t>> slots = node->MapSchema(schema);
  ASSERT_TRUE(slots.ok()) << slots.status();
  uint64_t seq = 0;
  auto report = [&] {
    const double rate = 1.0;
    ReportView view;
    view.seq = ++seq;
    view.wall_time_unix_nanos = absl::ToUnixNanos(clock.Now());
    view.rates = absl::MakeConstSpan(&rate, 1);
    uint64_t held;
    node->Ingest("boot", view, *slots, clock.Now(), &held);
  };
  // Wall times of the grid of 200 ms.
  auto grid_after = [](absl::Time t) {
    return absl::FromUnixMillis((absl::ToUnixMillis(t) / 200 + 1) * 200);
  };
  AnalysisRunner runner = r.Make();
  runner.Start();
  auto passes_after = [&](uint64_t n, absl::Duration limit) {
    const absl::Time deadline = absl::Now() + limit;
    while (stats.passes.load() < n && absl::Now() < deadline) {
      absl::SleepFor(absl::Milliseconds(1));
    }
    return stats.passes.load() >= n ? absl::Now() : absl::InfiniteFuture();
  };
  ASSERT_NE(passes_after(1, absl::Seconds(10)), absl::InfiniteFuture());
  // Sleeps until `t`; false when this thread woke too late for the round
  // to show anything (a loaded machine): the round is tried again.
  auto sleep_until = [](absl::Time t) {
    absl::SleepFor(t - absl::Now());
    return absl::Now() < t + absl::Milliseconds(30);
  };
  bool shown = false;
  for (int round = 0; round < 10 && !shown; ++round) {
    // The agent reads just after a grid point, and its report is in the
    // pass of that grid point.
    const absl::Time g0 = grid_after(absl::Now());
    if (!sleep_until(g0 + absl::Milliseconds(10))) continue;
    report();
    if (!sleep_until(g0 + absl::Milliseconds(100))) continue;
    const uint64_t before = stats.passes.load();
    // The next read's report comes 80 ms after its grid point, past the
    // settling time (20 ms): the pass waits for it.
    const absl::Time g1 = g0 + absl::Milliseconds(200);
    if (!sleep_until(g1 + absl::Milliseconds(80))) continue;
    const uint64_t at_report = stats.passes.load();
    const absl::Time reported = absl::Now();
    report();
    EXPECT_EQ(at_report, before) << "the pass ran without the report";
    EXPECT_GE(passes_after(before + 1, absl::Seconds(10)), reported);
    shown = true;
  }
  ASSERT_TRUE(shown) << "this thread never woke in time";
  // No report at all: the next passes still run, each at most half an
  // interval after its grid point.
  const absl::Time from = absl::Now();
  const uint64_t then = stats.passes.load();
  ASSERT_NE(passes_after(then + 4, absl::Seconds(10)), absl::InfiniteFuture());
  EXPECT_LT(absl::Now() - from, absl::Seconds(5));
  runner.Stop();
}

// A TP group of 16 GPUs over two 8-GPU nodes: a tp_cross_node finding.
v1::Layout TpAcrossTwoNodes() {
  v1::Layout tp16;
  tp16.set_job("dense-tp16");
  tp16.set_gpus_per_node(8);
  tp16.mutable_parallelism()->set_tp(16);
  tp16.mutable_parallelism()->set_pp(1);
  tp16.mutable_parallelism()->set_dp(1);
  tp16.add_hosts("gpu-000");
  tp16.add_hosts("gpu-001");
  return tp16;
}

// An expert-parallel job "moe" of one GPU on each of gpu-000 and gpu-001.
v1::Layout MoeOnTwoNodes() {
  v1::Layout moe;
  moe.set_job("moe");
  moe.set_gpus_per_node(1);
  moe.mutable_parallelism()->set_tp(1);
  moe.mutable_parallelism()->set_pp(1);
  moe.mutable_parallelism()->set_dp(2);
  moe.mutable_parallelism()->set_ep(2);
  moe.add_hosts("gpu-000");
  moe.add_hosts("gpu-001");
  return moe;
}

// A critical pfc_storm the rate analyzers opened on `node`'s `device`
// (priority 3), as written to the findings store.
analysis::Finding StormOn(const std::string& node,
                          const std::string& device = "mlx5_0") {
  analysis::Finding f;
  f.kind = "pfc_storm";
  f.severity = analysis::Severity::kCritical;
  f.node = node;
  f.nodes = {node};
  f.device = device;
  f.evidence["priority"] = 3;
  f.summary = node + " " + device + " has transmitted PFC pause on priority 3";
  f.immediate = true;
  return f;
}

// What a runner reads and writes, in a temporary --state_dir, on a fake
// clock.
class AnalysisRunnerStateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto state = StateStore::Open(tmp_.path(), &clock);
    ASSERT_TRUE(state.ok()) << state.status();
    state_ = *std::move(state);
    declared_ = std::make_unique<FileDeclaredState>(state_.get());
    registry_ = std::make_unique<LayoutRegistry>(declared_.get(), &clock);
    findings_ =
        std::make_unique<FindingsStore>(state_.get(), FindingsStoreOptions{});
    ASSERT_TRUE(findings_->Load().ok());
  }

  // An agent of `node` streaming to this collector's series store: each
  // call of the returned function stores one report (no counters) at the
  // clock's time.
  std::function<void()> StartEmptyAgent(const std::string& node) {
    std::shared_ptr<NodeSeries> series_of = series.OpenNode(node);
    EXPECT_TRUE(
        series_of
            ->BeginStream("boot-a", 1000, 1, "ipv4:127.0.0.1:1", clock.Now())
            .ok());
    v1::Schema schema;
    schema.set_schema_id(1);
    absl::StatusOr<std::vector<uint32_t>> slots = series_of->MapSchema(schema);
    EXPECT_TRUE(slots.ok()) << slots.status();
    auto seq = std::make_shared<uint64_t>(0);
    return [this, series_of, seq,
            mapped = slots.value_or(std::vector<uint32_t>{})] {
      ReportView report;
      report.seq = ++*seq;
      report.wall_time_unix_nanos = absl::ToUnixNanos(clock.Now());
      uint64_t held = 0;
      EXPECT_EQ(series_of->Ingest("boot-a", report, mapped, clock.Now(), &held),
                NodeSeries::Outcome::kStored);
    };
  }

  // After a restart: findings of nodes not heard from hold for the grace
  // (FindingsOfNodesNotHeardSinceARestartHold).
  void ExpectFindingsOfNodesNotHeardHold(bool sharded);
  // A lone collector's tp_cross_node is confirmed by its NICs' rates
  // (ALoneCollectorConfirmsTpCrossingsAtRuntime).
  void ExpectTpCrossingConfirmed(bool sharded);

  // The id of the active finding of `kind`; "" when none.
  std::string ActiveId(const std::string& kind) const {
    for (const v1::Finding& f : findings_->Active()) {
      if (f.kind() == kind) return f.id();
    }
    return "";
  }

  // A runner of `one` (a OneCollector or a DeclaredCollector) over this
  // fixture's stores and clock.
  template <typename Collector>
  AnalysisRunner RunnerOf(Collector& one,
                          AnalysisRunner::Options options = {}) {
    return AnalysisRunner(&series, registry_.get(), findings_.get(), &one.stats,
                          clock, one.seams(), std::move(options));
  }

  agent::ScopedTempDir tmp_;
  FakeClock clock{absl::FromUnixSeconds(1795000000)};
  std::unique_ptr<StateStore> state_;
  std::unique_ptr<FileDeclaredState> declared_;
  std::unique_ptr<LayoutRegistry> registry_;
  std::unique_ptr<FindingsStore> findings_;
  SeriesStore series{SeriesStore::Options{}, clock};
  testing::FixedTopology no_topology_;
};

TEST_F(AnalysisRunnerStateTest, AgentDownFollowsTheAnalysisConfig) {
  // An agent with a 1 s interval reports once and goes silent.
  std::shared_ptr<NodeSeries> node = series.OpenNode("gpu-1");
  ASSERT_TRUE(
      node->BeginStream("boot-a", 1000, 1, "ipv4:127.0.0.1:1", clock.Now())
          .ok());
  v1::Schema schema;
  schema.set_schema_id(1);
  absl::StatusOr<std::vector<uint32_t>> slots = node->MapSchema(schema);
  ASSERT_TRUE(slots.ok()) << slots.status();
  ReportView report;
  report.seq = 1;
  report.wall_time_unix_nanos = absl::ToUnixNanos(clock.Now());
  uint64_t held = 0;
  ASSERT_EQ(node->Ingest("boot-a", report, *slots, clock.Now(), &held),
            NodeSeries::Outcome::kStored);
  node->EndStream(1);

  AnalysisRunner::Options options;
  options.analysis.agent_down.missed_intervals = 5;
  OneCollector one;
  AnalysisRunner runner = RunnerOf(one, options);
  clock.Advance(absl::Seconds(4));
  runner.RunOnce();
  EXPECT_THAT(findings_->Active(), ::testing::IsEmpty())
      << "down after 4 intervals of the configured 5";
  clock.Advance(absl::Seconds(1));
  runner.RunOnce();
  std::vector<v1::Finding> active = findings_->Active();
  ASSERT_THAT(active, ::testing::SizeIs(1));
  EXPECT_EQ(active[0].kind(), "agent_down");
  EXPECT_EQ(active[0].node(), "gpu-1");
  EXPECT_EQ(active[0].evidence().at("missed_intervals"), 5);
}

// After a restart the collector has heard only from the agents that
// reported since: an agent_down finding of a node not heard from stays
// open, with its id, from what the finding recorded; one whose agent
// reports again resolves.
TEST_F(AnalysisRunnerStateTest, AgentDownOfANodeNotHeardSinceARestartStays) {
  std::vector<analysis::NodeLiveness> before;
  for (const char* node : {"gpu-gone", "gpu-back"}) {
    before.push_back({node, clock.Now() - absl::Seconds(30), absl::Seconds(1),
                      /*ever_reported=*/true});
  }
  ASSERT_TRUE(findings_
                  ->Update(analysis::AgentDownFindings(before, clock.Now()),
                           clock.Now(), kAgentLivenessSource)
                  .ok());
  std::map<std::string, std::string> ids;
  for (const v1::Finding& f : findings_->Active()) ids[f.node()] = f.id();
  ASSERT_EQ(ids.size(), 2u);

  std::function<void()> back = StartEmptyAgent("gpu-back");
  AnalysisRunner::Options options;
  options.analysis.hysteresis.clear_after = 1;
  OneCollector one;
  AnalysisRunner runner = RunnerOf(one, options);
  for (int pass = 1; pass <= 3; ++pass) {
    back();
    runner.RunOnce();
    clock.Advance(absl::Seconds(1));
    std::map<std::string, std::string> active;
    for (const v1::Finding& f : findings_->Active()) {
      EXPECT_EQ(f.kind(), analysis::kAgentDownKind);
      active[f.node()] = f.id();
    }
    EXPECT_EQ(
        active,
        (std::map<std::string, std::string>{{"gpu-gone", ids["gpu-gone"]}}))
        << "pass " << pass;
  }
}

// A job's findings carry its layout's labels, whichever analyzer raised
// them, and follow the layout when it is applied again with others.
TEST_F(AnalysisRunnerStateTest, FindingsCarryTheirJobsLabels) {
  OneCollector one;
  AnalysisRunner runner = RunnerOf(one);
  v1::Layout tp16 = TpAcrossTwoNodes();
  (*tp16.mutable_labels())["team"] = "ml-infra";
  ASSERT_TRUE(registry_->Apply(tp16).ok());
  std::vector<v1::Finding> found = runner.RunLayoutPass("dense-tp16");
  ASSERT_THAT(found, ::testing::SizeIs(1));
  EXPECT_EQ(found[0].kind(), "tp_cross_node");
  EXPECT_THAT(found[0].labels(), ::testing::UnorderedElementsAre(
                                     ::testing::Pair("team", "ml-infra")));

  (*tp16.mutable_labels())["team"] = "research";
  ASSERT_TRUE(registry_->Apply(tp16).ok());
  clock.Advance(absl::Seconds(1));
  runner.RunOnce();
  found = findings_->Active();
  ASSERT_THAT(found, ::testing::SizeIs(1));
  EXPECT_EQ(found[0].labels().at("team"), "research");
}

// A lone collector confirms a TP crossing by what the group's NICs send,
// sharded or not, whether or not anyone looks at its page: its ports are
// the whole fabric.
void AnalysisRunnerStateTest::ExpectTpCrossingConfirmed(bool sharded) {
  // gpu-000 and gpu-001 each send 10 GB/s on eth0 (a 50 GB/s link): 20% of
  // the link, past kConfirmLinkFraction.
  std::vector<std::function<void()>> agents;
  for (const char* host : {"gpu-000", "gpu-001"}) {
    std::shared_ptr<NodeSeries> node = series.OpenNode(host);
    ASSERT_TRUE(
        node->BeginStream("boot-a", 1000, 1, "ipv4:127.0.0.1:1", clock.Now())
            .ok());
    v1::Inventory inventory;
    v1::Netdev* eth0 = inventory.add_netdevs();
    eth0->set_name("eth0");
    eth0->set_operstate("up");
    eth0->set_speed_bytes_per_second(50e9);
    node->SetInventory(inventory);
    v1::Schema schema;
    schema.set_schema_id(1);
    v1::Series* tx = schema.add_series();
    tx->set_subsystem(v1::SUBSYSTEM_NETDEV_STATISTICS);
    tx->set_device("eth0");
    tx->set_name("tx_bytes");
    tx->set_kind(v1::KIND_COUNTER);
    tx->set_meaning(v1::MEANING_NETDEV_BYTES);
    tx->set_direction(v1::DIRECTION_TX);
    absl::StatusOr<std::vector<uint32_t>> slots = node->MapSchema(schema);
    ASSERT_TRUE(slots.ok()) << slots.status();
    auto seq = std::make_shared<uint64_t>(0);
    agents.push_back([this, node, seq, mapped = *slots] {
      const double rate = 10e9;
      ReportView report;
      report.seq = ++*seq;
      report.wall_time_unix_nanos = absl::ToUnixNanos(clock.Now());
      report.rates = absl::MakeConstSpan(&rate, 1);
      uint64_t held = 0;
      EXPECT_EQ(node->Ingest("boot-a", report, mapped, clock.Now(), &held),
                NodeSeries::Outcome::kStored);
    });
  }
  v1::Layout tp2;
  tp2.set_job("tp2");
  tp2.set_gpus_per_node(1);
  tp2.mutable_parallelism()->set_tp(2);
  tp2.mutable_parallelism()->set_pp(1);
  tp2.mutable_parallelism()->set_dp(1);
  tp2.add_hosts("gpu-000");
  tp2.add_hosts("gpu-001");
  tp2.add_rails("eth0");
  ASSERT_TRUE(registry_->Apply(tp2).ok());
  OneCollectorShards shards;
  OneCollector one;
  if (sharded) one.shards = &shards;
  AnalysisRunner runner = RunnerOf(one);
  EXPECT_TRUE(runner.ViewIsWholeFabric());
  for (int pass = 0; pass < 4; ++pass) {
    for (const std::function<void()>& report : agents) report();
    runner.RunOnce();
    clock.Advance(absl::Seconds(1));
  }
  std::vector<v1::Finding> tp;
  for (const v1::Finding& f : findings_->Active()) {
    if (f.kind() == "tp_cross_node") tp.push_back(f);
  }
  ASSERT_THAT(tp, ::testing::SizeIs(1));
  EXPECT_EQ(tp[0].evidence().at("confirmed_at_runtime"), 1);
  EXPECT_THAT(tp[0].summary(),
              ::testing::HasSubstr("Confirmed at runtime: its 2 NICs send"));
  // Alone, sharded or not, the view is the fabric's: ready for the page's
  // first request, though nobody looked yet.
  EXPECT_NE(runner.LatestView(), nullptr);
}

TEST_F(AnalysisRunnerStateTest, ALoneCollectorConfirmsTpCrossingsAtRuntime) {
  ExpectTpCrossingConfirmed(false);
}

TEST_F(AnalysisRunnerStateTest,
       ALoneShardedCollectorConfirmsTpCrossingsAtRuntime) {
  ExpectTpCrossingConfirmed(true);
}

// After a restart, a finding of a node whose agent has not reconnected yet
// holds (same id) for kUnheardNodesGrace; one of a node that reports again
// and no longer has the condition resolves after clear_after passes.
// See FindingsOfNodesNotHeardSinceARestartHold below.
void AnalysisRunnerStateTest::ExpectFindingsOfNodesNotHeardHold(bool sharded) {
  auto storm_on = [](const std::string& node) { return StormOn(node, "eth0"); };
  // What the process before the restart left open.
  ASSERT_TRUE(findings_
                  ->Update({storm_on("gpu-away"), storm_on("gpu-back")},
                           clock.Now(), "rate_analyzers")
                  .ok());
  // And one of a node that never reports again, of a port analyzer: no
  // shard takes it; with the analysis sharded it is resolved once the
  // agents had the grace to reconnect.
  analysis::Finding errors;
  errors.kind = "link_errors";
  errors.node = "gpu-gone";
  errors.device = "eth0";
  if (sharded) {
    ASSERT_TRUE(
        findings_
            ->Update({storm_on("gpu-away"), storm_on("gpu-back"), errors},
                     clock.Now(), "rate_analyzers")
            .ok());
  }
  std::map<std::string, std::string> ids;
  for (const v1::Finding& f : findings_->Active()) ids[f.node()] = f.id();
  ASSERT_EQ(ids.size(), sharded ? 3u : 2u);

  // gpu-back's agent reconnects at once and reports every second, healthy.
  std::function<void()> back = StartEmptyAgent("gpu-back");
  AnalysisRunner::Options options;
  options.analysis.hysteresis.clear_after = 3;
  OneCollectorShards shards;
  OneCollector one;
  if (sharded) one.shards = &shards;
  AnalysisRunner runner = RunnerOf(one, options);
  auto pass = [&] {
    back();
    runner.RunOnce();
    clock.Advance(absl::Seconds(1));
    std::map<std::string, std::string> active;
    for (const v1::Finding& f : findings_->Active()) active[f.node()] = f.id();
    return active;
  };
  const absl::Time start = clock.Now();
  ::testing::internal::CaptureStderr();
  for (int i = 1; i <= 3; ++i) {
    std::map<std::string, std::string> active = pass();
    EXPECT_EQ(active["gpu-away"], ids["gpu-away"]) << "pass " << i;
    if (i < 3) {
      EXPECT_EQ(active["gpu-back"], ids["gpu-back"]) << "pass " << i;
    } else {
      EXPECT_EQ(active.count("gpu-back"), 0u) << "resolved after clear_after";
    }
  }
  // gpu-away never reports: its finding holds for the grace, then counts
  // down like any other.
  int passes = 3;
  while (clock.Now() - start < AnalysisRunner::kUnheardNodesGrace) {
    ASSERT_EQ(pass()["gpu-away"], ids["gpu-away"]) << "pass " << passes + 1;
    ++passes;
  }
  EXPECT_EQ(pass().count("gpu-gone"), 0u);
  EXPECT_EQ(pass().count("gpu-away"), 1u);
  EXPECT_EQ(pass().count("gpu-away"), 0u);
  // The log says whose findings are held, once, and when they count down.
  const std::string log = ::testing::internal::GetCapturedStderr();
  const std::string held =
      sharded ? "2 nodes (gpu-away, gpu-gone)" : "1 node (gpu-away)";
  EXPECT_THAT(log, ::testing::HasSubstr(absl::StrCat(
                       "analysis: holding the open findings of ", held,
                       " not heard from yet, for up to 40s while agents "
                       "reconnect\n")));
  EXPECT_THAT(log, ::testing::HasSubstr(absl::StrCat(
                       "analysis: the open findings of ", held,
                       " not heard from within 40s count down from now "
                       "on\n")));
  EXPECT_EQ(log.find("holding"), log.rfind("holding")) << log;
}

TEST_F(AnalysisRunnerStateTest, FindingsOfNodesNotHeardSinceARestartHold) {
  ExpectFindingsOfNodesNotHeardHold(false);
}

// The same with the rate analysis sharded (a cluster of one), restarted
// from what the unsharded analysis left: its shards take the findings over.
TEST_F(AnalysisRunnerStateTest, ShardedFindingsOfNodesNotHeardHoldToo) {
  ExpectFindingsOfNodesNotHeardHold(true);
}

// After a restart a node's agent reports once, then goes silent past
// agent_down's limit while it moves on (handed to its preferred collector,
// or retrying with a growing backoff): within the grace its finding still
// holds.
TEST_F(AnalysisRunnerStateTest, AFindingOfANodeHeardOnceThenSilentHolds) {
  ASSERT_TRUE(
      findings_
          ->Update({StormOn("gpu-blip", "eth0")}, clock.Now(), "rate_analyzers")
          .ok());
  ASSERT_EQ(findings_->Active().size(), 1u);
  const std::string id = findings_->Active()[0].id();

  std::function<void()> report = StartEmptyAgent("gpu-blip");
  AnalysisRunner::Options options;
  options.analysis.hysteresis.clear_after = 3;
  OneCollector one;
  AnalysisRunner runner = RunnerOf(one, options);
  auto active_id = [&] { return ActiveId("pfc_storm"); };
  report();
  runner.RunOnce();
  // Silent for 25 s: down after 10 of its 1 s intervals, within the grace.
  for (int pass = 1; pass <= 25; ++pass) {
    clock.Advance(absl::Seconds(1));
    runner.RunOnce();
    ASSERT_EQ(active_id(), id) << "pass " << pass;
  }
}

// A hot expert open before a restart, on gpu-000 of an expert-parallel
// group whose other member, gpu-001, has not reported since: gpu-000's
// agent is back, but the group's median cannot be taken without gpu-001,
// so the finding holds (same id) while gpu-001 is not heard from, within
// kUnheardNodesGrace. Once gpu-001 reports and the condition is gone, it
// resolves after clear_after passes; a member that never comes back
// holds it only for the grace.
TEST_F(AnalysisRunnerStateTest, AGroupFindingHoldsWhileAMemberIsNotHeard) {
  ASSERT_TRUE(registry_->Apply(MoeOnTwoNodes()).ok());
  analysis::Finding hot;
  hot.kind = "hot_expert_incast";
  hot.job = "moe";
  hot.group = "ep:0";
  hot.node = "gpu-000";
  hot.nodes = {"gpu-000"};
  hot.device = "mlx5_0";
  hot.summary = "gpu-000 mlx5_0 receives 4.8x the median of ep:0";
  hot.immediate = true;
  auto active_id = [&] { return ActiveId("hot_expert_incast"); };
  auto open = [&] {
    EXPECT_TRUE(findings_->Update({hot}, clock.Now(), "rate_analyzers").ok());
    return active_id();
  };
  AnalysisRunner::Options options;
  options.analysis.hysteresis.clear_after = 3;
  std::function<void()> first = StartEmptyAgent("gpu-000");
  std::function<void()> second;
  {
    const std::string id = open();
    OneCollector one;
    AnalysisRunner runner = RunnerOf(one, options);
    auto pass = [&] {
      first();
      if (second) second();
      runner.RunOnce();
      clock.Advance(absl::Seconds(1));
      return active_id();
    };
    for (int i = 1; i <= 10; ++i) {
      ASSERT_EQ(pass(), id) << "pass " << i << ": gpu-001 not heard yet";
    }
    second = StartEmptyAgent("gpu-001");
    int passes = 1;
    while (!pass().empty() && passes <= 10) ++passes;
    EXPECT_EQ(passes, options.analysis.hysteresis.clear_after)
        << "judged once every member reports";
  }
  // A restart; gpu-001 gone for good.
  second = nullptr;
  clock.Advance(absl::Minutes(5));
  const std::string id = open();
  OneCollector one;
  AnalysisRunner runner = RunnerOf(one, options);
  const absl::Time start = clock.Now();
  while (!active_id().empty() && clock.Now() - start < absl::Seconds(120)) {
    EXPECT_EQ(active_id(), id);
    first();
    runner.RunOnce();
    clock.Advance(absl::Seconds(1));
  }
  EXPECT_GE(clock.Now() - start, AnalysisRunner::kUnheardNodesGrace);
  EXPECT_LE(clock.Now() - start,
            AnalysisRunner::kUnheardNodesGrace + absl::Seconds(5));
}

// Adds to `view` a PFC victim: switch port leaf-0/swp1 receiving pause on
// priority 3 most of the time.
void AddPausedVictim(analysis::FabricView* view) {
  analysis::PortView& port = view->AddPort("leaf-0", "swp1");
  port.is_switch_port = true;
  port.s.rx_pause_fraction[3] = 0.9;
  view->Finish();
}

// What `show` says of each active finding of `kind`.
std::vector<std::string> ActiveOf(
    const FindingsStore& findings, absl::string_view kind,
    const std::function<std::string(const v1::Finding&)>& show) {
  std::vector<std::string> out;
  for (const v1::Finding& f : findings.Active()) {
    if (f.kind() == kind) out.push_back(show(f));
  }
  return out;
}

// The active pfc_storm findings, as "node device".
std::vector<std::string> Storms(const FindingsStore& findings) {
  return ActiveOf(findings, "pfc_storm", [](const v1::Finding& f) {
    return absl::StrCat(f.node(), " ", f.device());
  });
}

// A cluster seen from the runner: another collector's silent node merged
// in, and a lease this collector may or may not hold.
// `node` streaming to `series` one port, eth0, whose one series is its PFC
// pause duration (the fraction of the time paused); the schema's slots, to
// Ingest reports of that rate with.
absl::StatusOr<std::vector<uint32_t>> StartPauseAgent(NodeSeries& node,
                                                      absl::Time now) {
  const absl::StatusOr<uint64_t> begun =
      node.BeginStream("boot-a", 1000, 1, "ipv4:127.0.0.1:1", now);
  if (!begun.ok()) return begun.status();
  v1::Inventory inventory;
  v1::Netdev* eth0 = inventory.add_netdevs();
  eth0->set_name("eth0");
  eth0->set_operstate("up");
  eth0->set_speed_bytes_per_second(50e9);
  node.SetInventory(inventory);
  v1::Schema schema;
  schema.set_schema_id(1);
  v1::Series* pause = schema.add_series();
  pause->set_subsystem(v1::SUBSYSTEM_ETHTOOL);
  pause->set_device("eth0");
  pause->set_name("tx_prio3_pause_duration");
  pause->set_kind(v1::KIND_COUNTER);
  pause->set_meaning(v1::MEANING_PFC_PAUSE_DURATION);
  pause->set_direction(v1::DIRECTION_TX);
  pause->set_priority(3);
  return node.MapSchema(schema);
}

class FakeExchange final : public FeatureExchange {
 public:
  explicit FakeExchange(absl::Time last_report) : remote_report(last_report) {}
  std::string Describe() const override { return "fake"; }
  absl::Status Publish(const FeatureSlice& /*local*/,
                       absl::Time /*now*/) override {
    ++published;
    return absl::OkStatus();
  }
  absl::Status PublishLiveness(const FeatureSlice& /*local*/,
                               absl::Time /*now*/) override {
    ++published_liveness;
    return absl::OkStatus();
  }
  FeatureSlice Merged(FeatureSlice local, absl::Time /*now*/,
                      MergeScope scope) override {
    scopes.push_back(scope);
    for (NodeFacts& n : local.nodes) n.collector = local_collector;
    NodeFacts remote;
    remote.liveness.node = "gpu-remote";
    remote.liveness.last_report = remote_report;
    remote.liveness.interval = absl::Seconds(1);
    remote.liveness.ever_reported = true;
    remote.liveness.observed_until = observed_until;
    remote.unobserved = unobserved;
    remote.collector = remote_collector;
    local.nodes.push_back(remote);
    local.complete = complete;
    if (remote_samples.has_value()) {
      analysis::PortView& port = local.window.AddPort("gpu-remote", "mlx5_0");
      port.samples = *remote_samples;
      local.window.Finish();
    }
    if (paused_victim) AddPausedVictim(&local.window);
    return local;
  }
  int published = 0;
  int published_liveness = 0;  // without the ports
  std::vector<MergeScope> scopes;
  // What the exchange says of the remote node: until when its collector
  // vouched for it, and whether its collector's features stopped.
  absl::Time observed_until = absl::InfiniteFuture();
  bool unobserved = false;
  // Whether every live collector's features are in the merge.
  bool complete = true;
  // The collectors this one's nodes and the remote node stream to.
  std::string local_collector;
  std::string remote_collector;
  // Whether the merged view holds a PFC victim.
  bool paused_victim = false;
  // The remote node's last report, and how its traffic samples lie in the
  // window (its port mlx5_0 is in the view when set).
  absl::Time remote_report;
  std::optional<analysis::SampleEvidence> remote_samples;
};

class FakeRole final : public AnalysisRole {
 public:
  bool Leading() const override { return term > 0; }
  uint64_t Term() const override { return term; }
  uint64_t term = 0;
};

// One collector of a cluster: features through `exchange` (another
// collector's node last heard 10 s ago), analysing while `role` leads.
class AnalysisRunnerClusterTest : public AnalysisRunnerStateTest {
 protected:
  void SetUp() override {
    AnalysisRunnerStateTest::SetUp();
    runner_.emplace(
        &series, registry_.get(), findings_.get(), &stats, clock,
        AnalysisRunner::Seams{exchange, role, no_baselines, no_topology_},
        AnalysisRunner::Options{});
  }

  // Another runner of this collector, its rate analysis sharded by
  // `shards`.
  AnalysisRunner ShardedRunner(AnalysisShards* shards) {
    return AnalysisRunner(&series, registry_.get(), findings_.get(), &stats,
                          clock,
                          AnalysisRunner::Seams{exchange, role, no_baselines,
                                                no_topology_, shards},
                          AnalysisRunner::Options{});
  }

  FakeExchange exchange{clock.Now() - absl::Seconds(10)};
  FakeRole role;
  NoBaselinesStore no_baselines;
  AnalysisStats stats;
  std::optional<AnalysisRunner> runner_;
};

TEST_F(AnalysisRunnerClusterTest, OnlyTheLeaderAnalysesTheMergedFabric) {
  runner_->RunOnce();
  EXPECT_EQ(exchange.published, 1) << "followers publish their features too";
  EXPECT_THAT(findings_->Active(), ::testing::IsEmpty())
      << "a follower writes no findings";
  role.term = 7;
  runner_->RunOnce();
  // The node only another collector heard from is down: the leader
  // analyses the merged fabric, not its own series store alone.
  std::vector<v1::Finding> active = findings_->Active();
  ASSERT_THAT(active, ::testing::SizeIs(1));
  EXPECT_EQ(active[0].kind(), "agent_down");
  EXPECT_EQ(active[0].node(), "gpu-remote");
  EXPECT_EQ(exchange.published, 2);
}

// A node whose collector's features stopped arriving a second after its
// last report is unobserved, not silent: the leader opens no agent_down for
// it. Once its collector's slice says it has been silent, it is down, and
// unobserved again (that collector's features stop) it stays down.
TEST_F(AnalysisRunnerClusterTest, AnUnobservedNodeIsNotFoundDown) {
  role.term = 7;
  exchange.observed_until = clock.Now() - absl::Seconds(9);
  exchange.unobserved = true;
  runner_->RunOnce();
  EXPECT_THAT(findings_->Active(), ::testing::IsEmpty());
  clock.Advance(absl::Seconds(30));
  runner_->RunOnce();
  EXPECT_THAT(findings_->Active(), ::testing::IsEmpty());

  exchange.observed_until = clock.Now();
  exchange.unobserved = false;
  runner_->RunOnce();
  ASSERT_THAT(findings_->Active(), ::testing::SizeIs(1));
  const std::string id = findings_->Active()[0].id();
  exchange.unobserved = true;
  clock.Advance(absl::Seconds(30));
  runner_->RunOnce();
  ASSERT_THAT(findings_->Active(), ::testing::SizeIs(1));
  EXPECT_EQ(findings_->Active()[0].id(), id);
}

// A node found down whose collector's features stop is judged as of now,
// not as of its last report: a new leader that took over the finding while
// the resolve of the one before never landed (the agent came back, and went
// again) holds it under its id while that collector is unobserved, and
// resolves it only when the node is seen reporting.
TEST_F(AnalysisRunnerClusterTest, AnUnobservedNodesOpenAgentDownHolds) {
  role.term = 7;
  runner_->RunOnce();
  ASSERT_THAT(findings_->Active(), ::testing::SizeIs(1));
  const std::string id = findings_->Active()[0].id();

  // Its last report came after the stalled collector's last news.
  exchange.remote_report = clock.Now();
  clock.Advance(absl::Seconds(30));
  exchange.unobserved = true;
  exchange.observed_until = exchange.remote_report;
  runner_->RunOnce();
  ASSERT_THAT(findings_->Active(), ::testing::SizeIs(1));
  EXPECT_EQ(findings_->Active()[0].id(), id);
  EXPECT_THAT(findings_->Active()[0].summary(),
              ::testing::HasSubstr("has not reported for 30 s"));

  // That collector's features arrive without a new report: still down.
  exchange.unobserved = false;
  exchange.observed_until = absl::InfiniteFuture();
  clock.Advance(absl::Seconds(1));
  runner_->RunOnce();
  ASSERT_THAT(findings_->Active(), ::testing::SizeIs(1));
  EXPECT_EQ(findings_->Active()[0].id(), id);

  // Seen reporting, even while unobserved: resolved.
  exchange.remote_report = clock.Now();
  exchange.unobserved = true;
  exchange.observed_until = exchange.remote_report;
  clock.Advance(absl::Seconds(1));
  runner_->RunOnce();
  EXPECT_THAT(findings_->Active(), ::testing::IsEmpty());
}

// The declared topology of AgentMissing* tests: gpu-1 on leaf-0, gpu-2 on
// leaf-0 and leaf-1.
v1::Topology TwoHostsDeclared() {
  v1::Topology t;
  auto link = [&t](const char* host, const char* nic, const char* sw,
                   const char* port) {
    v1::Link* l = t.add_links();
    l->set_host(host);
    l->set_nic(nic);
    l->set_switch_(sw);
    l->set_port(port);
  };
  link("gpu-1", "mlx5_0", "leaf-0", "swp1");
  link("gpu-2", "mlx5_0", "leaf-0", "swp2");
  link("gpu-2", "mlx5_1", "leaf-1", "swp2");
  return t;
}

// The agent_missing findings, as "node: summary".
std::vector<std::string> Missing(const FindingsStore& findings) {
  return ActiveOf(findings, "agent_missing", [](const v1::Finding& f) {
    return absl::StrCat(f.node(), ": ", f.summary());
  });
}

// One embedded collector's seams over TwoHostsDeclared().
struct DeclaredCollector {
  testing::FixedTopology topology =
      testing::FixedTopology::Declared(TwoHostsDeclared());
  EmbeddedFeatureExchange features;
  AlwaysLeading role;
  NoBaselinesStore baselines;
  AnalysisStats stats;
  AnalysisRunner::Seams seams() {
    return {features, role, baselines, topology};
  }
};

// A host of the topology whose agent never reports is agent_missing once
// the collector has watched for agent_missing.after_seconds, naming its
// links; it resolves when the agent reports.
TEST_F(AnalysisRunnerStateTest, AgentMissingOpensForAHostThatNeverReports) {
  DeclaredCollector one;
  AnalysisRunner runner = RunnerOf(one);
  std::function<void()> gpu1 = StartEmptyAgent("gpu-1");
  const absl::Time start = clock.Now();
  while (clock.Now() - start < absl::Seconds(119)) {
    gpu1();
    runner.RunOnce();
    ASSERT_THAT(Missing(*findings_), ::testing::IsEmpty())
        << "after " << clock.Now() - start;
    clock.Advance(absl::Seconds(1));
  }
  clock.Advance(absl::Seconds(1));
  gpu1();
  runner.RunOnce();
  ASSERT_THAT(
      Missing(*findings_),
      ::testing::ElementsAre(::testing::StartsWith(
          "gpu-2: gpu-2 is in the topology (2 links, cabled to leaf-0, "
          "leaf-1) but no fabricdiag agent has reported from it for 2 min")));
  const v1::Finding missing = findings_->Active()[0];
  EXPECT_EQ(missing.severity(), v1::SEVERITY_WARNING);
  EXPECT_EQ(missing.evidence().at("links"), 2);
  EXPECT_EQ(missing.evidence().at("unheard_seconds"), 120);

  // gpu-2's agent starts: the finding resolves at the next pass.
  std::function<void()> gpu2 = StartEmptyAgent("gpu-2");
  gpu2();
  clock.Advance(absl::Seconds(1));
  runner.RunOnce();
  EXPECT_THAT(Missing(*findings_), ::testing::IsEmpty());
}

// An agent reporting as gpu-2's name with a domain and in other case is
// named in the finding: the usual reason a deployed agent is missing. A
// forgotten host (decommissioned) is not expected: its finding resolves.
TEST_F(AnalysisRunnerStateTest, AgentMissingNamesANearNameAndForgetEndsIt) {
  DeclaredCollector one;
  std::optional<absl::Time> forgotten;
  AnalysisRunner::Options options;
  options.analysis.agent_missing.after_seconds = 10;
  options.forgotten_at = [&](absl::string_view node) {
    return node == "gpu-2" ? forgotten : std::nullopt;
  };
  AnalysisRunner runner = RunnerOf(one, options);
  std::function<void()> gpu1 = StartEmptyAgent("gpu-1");
  std::function<void()> misnamed = StartEmptyAgent("GPU-2.example.com");
  for (int pass = 0; pass <= 10; ++pass) {
    gpu1();
    misnamed();
    runner.RunOnce();
    clock.Advance(absl::Seconds(1));
  }
  std::vector<std::string> missing = Missing(*findings_);
  ASSERT_THAT(missing, ::testing::SizeIs(1));
  EXPECT_THAT(missing[0],
              ::testing::HasSubstr(
                  "An agent reports as GPU-2.example.com, which the topology "
                  "does not list: give that agent --node=gpu-2"));
  EXPECT_EQ(findings_->Active()[0].evidence_text().at("reporting_as"),
            "GPU-2.example.com");

  forgotten = clock.Now();
  runner.RunOnce();
  EXPECT_THAT(Missing(*findings_), ::testing::IsEmpty());
}

// In a cluster, while a live collector's features do not arrive, the
// host's agent may stream there: the wait starts again, and only once the
// whole fabric has been in view for after_seconds does the finding open.
// An open one holds across a new term without waiting again.
TEST_F(AnalysisRunnerStateTest, AgentMissingWaitsForTheWholeFabric) {
  testing::FixedTopology topology =
      testing::FixedTopology::Declared(TwoHostsDeclared());
  FakeExchange exchange(clock.Now());
  FakeRole role;
  role.term = 3;
  NoBaselinesStore no_baselines;
  AnalysisStats stats;
  AnalysisRunner::Options options;
  options.analysis.agent_missing.after_seconds = 10;
  AnalysisRunner runner(&series, registry_.get(), findings_.get(), &stats,
                        clock, {exchange, role, no_baselines, topology},
                        options);
  std::function<void()> gpu1 = StartEmptyAgent("gpu-1");
  auto passes = [&](int n) {
    for (int i = 0; i < n; ++i) {
      gpu1();
      exchange.remote_report = clock.Now();
      runner.RunOnce();
      clock.Advance(absl::Seconds(1));
    }
  };
  exchange.complete = false;
  passes(30);
  EXPECT_THAT(Missing(*findings_), ::testing::IsEmpty())
      << "judged without the whole fabric in view";
  exchange.complete = true;
  passes(10);
  EXPECT_THAT(Missing(*findings_), ::testing::IsEmpty());
  passes(1);
  ASSERT_THAT(Missing(*findings_), ::testing::SizeIs(1));
  const std::string id = findings_->Active()[0].id();

  // A new term (another collector led meanwhile), features missing again:
  // the open finding holds, same id.
  role.term = 4;
  exchange.complete = false;
  passes(3);
  ASSERT_THAT(findings_->Active(), ::testing::SizeIs(1));
  EXPECT_EQ(findings_->Active()[0].id(), id);
}

// A storm opened before a new term, its source's node not heard from
// since (held while agents reconnect): its victim, still in view, makes no
// second pfc_storm ("without a visible source") beside it.
TEST_F(AnalysisRunnerClusterTest, AHeldStormSourcesVictimsOpenNoSecondStorm) {
  analysis::Finding storm = StormOn("gpu-away");
  storm.nodes = {"gpu-away", "leaf-0"};
  ASSERT_TRUE(findings_->Update({storm}, clock.Now(), "rate_analyzers").ok());
  role.term = 7;
  exchange.paused_victim = true;
  for (int pass = 0; pass < 10; ++pass) {
    runner_->RunOnce();
    clock.Advance(absl::Seconds(1));
    EXPECT_THAT(Storms(*findings_), ::testing::ElementsAre("gpu-away mlx5_0"))
        << "pass " << pass;
  }
}

// A storm source's agent moved to another collector (a failover, a
// hand-back): heard there, but its first report makes no rate yet. Its
// finding holds (same id) while it has none, for at most kRatelessHold;
// once its rates are in the view and the storm is gone, it resolves after
// clear_after passes.
TEST_F(AnalysisRunnerClusterTest, ANodeWithoutRatesYetHoldsItsFindings) {
  const analysis::Finding storm = StormOn("gpu-remote");
  ASSERT_TRUE(findings_->Update({storm}, clock.Now(), "rate_analyzers").ok());
  const std::string id = findings_->Active()[0].id();
  role.term = 7;
  analysis::SampleEvidence no_rate_yet;
  no_rate_yet.expected_reports = 5;
  exchange.remote_samples = no_rate_yet;
  auto pass = [&] {
    exchange.remote_report = clock.Now();
    runner_->RunOnce();
    clock.Advance(absl::Seconds(1));
    std::vector<std::string> ids;
    for (const v1::Finding& f : findings_->Active()) ids.push_back(f.id());
    return ids;
  };
  for (int i = 1; i <= 10; ++i) {
    ASSERT_THAT(pass(), ::testing::ElementsAre(id)) << "pass " << i;
  }
  analysis::SampleEvidence rated = no_rate_yet;
  rated.reports = 4;
  exchange.remote_samples = rated;
  int passes = 0;
  while (!pass().empty() && passes < 10) ++passes;
  EXPECT_EQ(passes, analysis::HysteresisConfig{}.clear_after - 1)
      << "resolved as any finding whose condition is gone";

  // Without a rate past kRatelessHold: judged on what is seen.
  ASSERT_TRUE(findings_->Update({storm}, clock.Now(), "rate_analyzers").ok());
  exchange.remote_samples = no_rate_yet;
  role.term = 8;  // a new term takes the open finding over
  const absl::Time start = clock.Now();
  passes = 0;
  while (!pass().empty() && passes < 100) ++passes;
  EXPECT_GE(clock.Now() - start, AnalysisRunner::kRatelessHold);
  EXPECT_LE(clock.Now() - start,
            AnalysisRunner::kRatelessHold +
                absl::Seconds(analysis::HysteresisConfig{}.clear_after + 1));
}

// A collector of a cluster that owns no analysis shard (yet).
class NoShardsOwned final : public AnalysisShards {
 public:
  std::string Id() const override { return "col-a"; }
  analysis::ShardCounts Counts() const override { return {}; }
  std::vector<Owned> OwnedShards() const override { return {}; }
  absl::Status Exchange(const FeatureSlice& /*local*/,
                        absl::Span<const analysis::ShardPorts> /*shards*/,
                        absl::Span<const Owned> /*owned*/,
                        absl::Time /*now*/) override {
    ++exchanges;
    return absl::OkStatus();
  }
  void Receive(absl::string_view /*shard*/, absl::Time /*now*/,
               const FeatureSlice& /*local*/,
               absl::Span<const uint32_t> /*own_ports*/,
               Received* views) override {
    views->window.Clear();
    views->recent.Clear();
  }
  absl::Status PublishNews(const analysis::PartNews& /*news*/) override {
    ++news;
    return absl::OkStatus();
  }
  std::vector<analysis::PartNews> News(absl::Time /*now*/) override {
    return others;
  }
  int exchanges = 0;
  int news = 0;
  // The other collectors' latest news.
  std::vector<analysis::PartNews> others;
};

// The shards a test hands this collector: every one of `counts` at
// first, in term 1; Own() changes them between passes. Each owned shard's
// views hold this collector's own ports and what `received` adds.
class SwitchedShards final : public AnalysisShards {
 public:
  explicit SwitchedShards(analysis::ShardCounts counts)
      : all_(counts), owned_(all_.OwnedShards()) {}
  void Own(std::vector<Owned> owned) {
    std::lock_guard<std::mutex> lock(mu_);
    owned_ = std::move(owned);
  }
  std::string Id() const override { return id; }
  analysis::ShardCounts Counts() const override { return all_.Counts(); }
  std::vector<Owned> OwnedShards() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return owned_;
  }
  absl::Status Exchange(const FeatureSlice& local,
                        absl::Span<const analysis::ShardPorts> shards,
                        absl::Span<const Owned> owned,
                        absl::Time now) override {
    return all_.Exchange(local, shards, owned, now);
  }
  void Receive(absl::string_view shard, absl::Time now,
               const FeatureSlice& local, absl::Span<const uint32_t> own_ports,
               Received* views) override {
    all_.Receive(shard, now, local, own_ports, views);
    if (received) received(shard, views);
  }
  absl::Status PublishNews(const analysis::PartNews& news) override {
    return all_.PublishNews(news);
  }
  std::vector<analysis::PartNews> News(absl::Time now) override {
    return all_.News(now);
  }
  // From the pass's thread or the baselines writer's.
  void LetGo(absl::string_view shard) override {
    if (on_let_go) on_let_go(shard);
    std::lock_guard<std::mutex> lock(mu_);
    let_go_.emplace_back(shard);
  }
  std::vector<std::string> let_go() const {
    std::lock_guard<std::mutex> lock(mu_);
    return let_go_;
  }
  std::string OwnerOf(absl::string_view shard) const override {
    return owner_of ? owner_of(shard) : "";
  }
  std::function<void(absl::string_view shard, Received* views)> received;
  // The collector's id: "" alone, else a cluster's member.
  std::string id;
  std::function<std::string(absl::string_view shard)> owner_of;
  // Called first by LetGo().
  std::function<void(absl::string_view shard)> on_let_go;

 private:
  OneCollectorShards all_;
  mutable std::mutex mu_;
  std::vector<Owned> owned_;
  std::vector<std::string> let_go_;
};

// Alone (no id: the embedded collector) the runner owns every shard and runs
// each kind of part over its own view: no shard's views are assembled, and
// its view, the fabric's, is ready every pass. A cluster's member that owns
// every shard assembles each one's, every pass.
TEST_F(AnalysisRunnerClusterTest, AloneNoShardsViewsAreAssembled) {
  const analysis::ShardCounts counts{2, 2};
  SwitchedShards shards(counts);
  int received = 0;
  shards.received = [&](absl::string_view /*shard*/,
                        AnalysisShards::Received* /*views*/) { ++received; };
  role.term = 3;
  {
    AnalysisRunner runner = ShardedRunner(&shards);
    EXPECT_TRUE(runner.ViewIsWholeFabric());
    for (int pass = 0; pass < 3; ++pass) {
      runner.RunOnce();
      clock.Advance(absl::Seconds(1));
      EXPECT_NE(runner.LatestView(), nullptr) << "pass " << pass;
    }
  }
  EXPECT_EQ(received, 0);
  shards.id = "col-a";
  AnalysisRunner member = ShardedRunner(&shards);
  EXPECT_FALSE(member.ViewIsWholeFabric());
  for (int pass = 0; pass < 3; ++pass) {
    member.RunOnce();
    clock.Advance(absl::Seconds(1));
  }
  EXPECT_EQ(received, 3 * (counts.jobs + counts.switches));
}

// Sharded in a cluster, the collector that owns a job's shard builds, while
// the job's page is looked at, a view of every port of the job's hosts: its
// own agents' and those the others sent. One that does not own the shard
// has none.
TEST_F(AnalysisRunnerClusterTest, ShardedTheJobShardsOwnerViewsTheWholeJob) {
  ASSERT_TRUE(registry_->Apply(TpAcrossTwoNodes()).ok());
  const analysis::ShardCounts counts{2, 2};
  SwitchedShards shards(counts);
  shards.id = "col-a";
  const std::vector<AnalysisShards::Owned> every = shards.OwnedShards();
  const std::string job_shard = analysis::JobShardOf("dense-tp16", counts);
  shards.received = [&](absl::string_view shard,
                        AnalysisShards::Received* views) {
    if (shard != job_shard) return;
    // gpu-001 streams to another collector; a node of another job too.
    analysis::PortView& member = views->window.AddPort("gpu-001", "mlx5_0");
    member.s.tx_bytes = 5e9;
    views->window.AddPort("gpu-other", "mlx5_0");
    views->window.Finish();
  };
  shards.owner_of = [&](absl::string_view shard) {
    return std::string(shard == job_shard ? "col-a" : "col-b");
  };
  AnalysisRunner runner = ShardedRunner(&shards);
  role.term = 3;
  EXPECT_FALSE(runner.ViewIsWholeFabric());
  EXPECT_EQ(runner.JobShardOwner("dense-tp16"), "col-a");
  EXPECT_EQ(runner.LatestJobView("dense-tp16"), nullptr)
      << "not looked at before";
  runner.RunOnce();
  clock.Advance(absl::Seconds(1));
  std::shared_ptr<const analysis::FabricView> view =
      runner.LatestJobView("dense-tp16");
  ASSERT_NE(view, nullptr);
  const analysis::PortView* member = view->Find("gpu-001", "mlx5_0");
  ASSERT_NE(member, nullptr);
  EXPECT_EQ(member->s.tx_bytes, 5e9);
  EXPECT_THAT(view->PortsOf("gpu-other"), ::testing::IsEmpty())
      << "not the job's";

  // The shard handed to another collector: no view of the job here.
  shards.Own({});
  runner.RunOnce();
  clock.Advance(absl::Seconds(1));
  EXPECT_EQ(runner.LatestJobView("dense-tp16"), nullptr);

  // Owned again, but no one looked for kViewWantedFor: none built, until
  // the page asks again.
  shards.Own(every);
  clock.Advance(AnalysisRunner::kViewWantedFor + absl::Seconds(1));
  runner.RunOnce();
  EXPECT_EQ(runner.LatestJobView("dense-tp16"), nullptr) << "no longer wanted";
  runner.RunOnce();
  EXPECT_NE(runner.LatestJobView("dense-tp16"), nullptr);
}

// Sharded, the same: a storm opened before, its source's node not heard
// from since, and its victim in the view of its switch's shard: no second,
// source-less pfc_storm from that shard's part.
TEST_F(AnalysisRunnerClusterTest, ShardedAHeldStormSourcesVictimsOpenNoSecond) {
  analysis::Finding storm = StormOn("gpu-away");
  storm.nodes = {"gpu-away", "leaf-0"};
  ASSERT_TRUE(findings_->Update({storm}, clock.Now(), "rate_analyzers").ok());
  const analysis::ShardCounts counts{2, 2};
  SwitchedShards shards(counts);
  // A cluster's member that owns every shard: its shards' views come
  // from the others (alone, its parts run over its own view).
  shards.id = "col-a";
  const std::string leaf_shard = analysis::SwitchShardOf("leaf-0", counts);
  int victims = 0;
  shards.received = [&](absl::string_view shard,
                        AnalysisShards::Received* views) {
    if (shard != leaf_shard) return;
    ++victims;
    AddPausedVictim(&views->window);
  };
  AnalysisRunner runner = ShardedRunner(&shards);
  role.term = 7;
  for (int pass = 0; pass < 10; ++pass) {
    runner.RunOnce();
    clock.Advance(absl::Seconds(1));
    EXPECT_THAT(Storms(*findings_), ::testing::ElementsAre("gpu-away mlx5_0"))
        << "pass " << pass;
  }
  EXPECT_EQ(victims, 10);
}

// Sharded in a cluster, the lease holder holds none of a TP group's NICs
// (they stream elsewhere): it confirms the crossing by what the job
// shard's owner measured and told (its news), as long as that news comes.
TEST_F(AnalysisRunnerClusterTest, ShardedTheLeaderConfirmsTpCrossingsByNews) {
  ASSERT_TRUE(registry_->Apply(TpAcrossTwoNodes()).ok());
  NoShardsOwned shards;
  AnalysisRunner runner = ShardedRunner(&shards);
  role.term = 3;
  const auto tp_finding = [&] {
    std::vector<v1::Finding> tp;
    for (const v1::Finding& f : findings_->Active()) {
      if (f.kind() == "tp_cross_node") tp.push_back(f);
    }
    EXPECT_THAT(tp, ::testing::SizeIs(1));
    return tp.empty() ? v1::Finding() : tp[0];
  };
  runner.RunOnce();
  clock.Advance(absl::Seconds(1));
  const v1::Finding unconfirmed = tp_finding();
  EXPECT_EQ(unconfirmed.evidence().count("confirmed_at_runtime"), 0u)
      << "no news yet";

  // col-b owns the job's shard: its 16 NICs send 10 GB/s of 50 GB/s links.
  const auto members_now = [&] {
    return analysis::TpGroupMembers(
        registry_->Snapshot()->layouts.at("dense-tp16")->model, 0);
  };
  analysis::PartNews from_b;
  from_b.collector_id = "col-b";
  from_b.tp_loads.push_back(
      {"dense-tp16", {{0, 10e9, 50e9, 16, members_now()}}});
  shards.others = {from_b};
  for (int pass = 0; pass < 2; ++pass) {
    runner.RunOnce();
    clock.Advance(absl::Seconds(1));
  }
  const v1::Finding confirmed = tp_finding();
  EXPECT_EQ(confirmed.id(), unconfirmed.id());
  EXPECT_EQ(confirmed.evidence().at("confirmed_at_runtime"), 1);
  EXPECT_EQ(confirmed.evidence().at("measured_nic_tx_bytes_per_second"), 10e9);
  EXPECT_THAT(confirmed.summary(),
              ::testing::HasSubstr("Confirmed at runtime: its 16 NICs send"));

  // Below 10% of the link: measured, not confirmed.
  shards.others[0].tp_loads[0].groups[0].tx = 1e9;
  for (int pass = 0; pass < 2; ++pass) {
    runner.RunOnce();
    clock.Advance(absl::Seconds(1));
  }
  EXPECT_EQ(tp_finding().evidence().at("confirmed_at_runtime"), 0);

  // The layout is replaced (group 0 on other hosts) while the owner still
  // measures the old one's group 0: its news confirms nothing of the new
  // group, until it measures the new one.
  shards.others[0].tp_loads[0].groups[0].tx = 10e9;
  v1::Layout moved = TpAcrossTwoNodes();
  moved.set_hosts(1, "gpu-002");
  ASSERT_TRUE(registry_->Apply(moved).ok());
  for (int pass = 0; pass < 2; ++pass) {
    runner.RunOnce();
    clock.Advance(absl::Seconds(1));
  }
  EXPECT_EQ(tp_finding().evidence().count("confirmed_at_runtime"), 0u)
      << "measured under the old layout";
  shards.others[0].tp_loads[0].groups[0].members = members_now();
  for (int pass = 0; pass < 2; ++pass) {
    runner.RunOnce();
    clock.Advance(absl::Seconds(1));
  }
  EXPECT_EQ(tp_finding().evidence().at("confirmed_at_runtime"), 1);

  // The news stops (its owner died): no runtime words, the finding stays.
  shards.others.clear();
  for (int pass = 0; pass < 2; ++pass) {
    runner.RunOnce();
    clock.Advance(absl::Seconds(1));
  }
  const v1::Finding after = tp_finding();
  EXPECT_EQ(after.id(), unconfirmed.id());
  EXPECT_EQ(after.evidence().count("confirmed_at_runtime"), 0u);
}

// Sharded, a collector of a cluster publishes its nodes' liveness alone
// (each shard's ports go to its owner), and merges the others' nodes alone
// even while its page is looked at (their ports are not published): the
// page shows its own part, as such.
TEST_F(AnalysisRunnerClusterTest, ShardedACollectorPublishesItsLivenessAlone) {
  NoShardsOwned shards;
  AnalysisRunner runner = ShardedRunner(&shards);
  role.term = 3;
  EXPECT_FALSE(runner.ViewIsWholeFabric());
  for (int i = 0; i < 3; ++i) {
    // Looked at before every pass: a view from the first pass on.
    std::shared_ptr<const analysis::FabricView> view = runner.LatestView();
    EXPECT_EQ(view == nullptr, i == 0) << "pass " << i;
    if (view != nullptr) {
      EXPECT_THAT(view->PortsOf("gpu-remote"), ::testing::IsEmpty());
    }
    runner.RunOnce();
    clock.Advance(absl::Seconds(1));
  }
  EXPECT_EQ(exchange.published, 0);
  EXPECT_EQ(exchange.published_liveness, 3);
  EXPECT_THAT(exchange.scopes, ::testing::Each(MergeScope::kNodes));
  EXPECT_EQ(shards.exchanges, 3);
  EXPECT_EQ(shards.news, 3);
  EXPECT_THAT(*runner.LatestNodes(), ::testing::SizeIs(1)) << "gpu-remote";
}

// Sharded, a layout's names are checked against this collector's own
// ports and the names of the nodes the others heard from, whose NICs it
// does not know.
TEST_F(AnalysisRunnerClusterTest, ShardedNamesAreTheOwnPortsAndTheOthersNodes) {
  std::shared_ptr<NodeSeries> node = series.OpenNode("gpu-own");
  absl::StatusOr<std::vector<uint32_t>> slots =
      StartPauseAgent(*node, clock.Now());
  ASSERT_TRUE(slots.ok()) << slots.status();
  exchange.local_collector = "col-a";
  exchange.remote_collector = "col-b";
  NoShardsOwned shards;  // col-a
  AnalysisRunner runner = ShardedRunner(&shards);
  EXPECT_EQ(runner.LatestNames().ports, nullptr) << "before the first pass";
  // A report of the agent's one series, and a pass.
  const auto report_and_pass = [&](uint64_t seq, double rate) {
    ReportView view;
    view.seq = seq;
    view.wall_time_unix_nanos = absl::ToUnixNanos(clock.Now());
    view.rates = absl::MakeConstSpan(&rate, 1);
    uint64_t held = 0;
    EXPECT_EQ(node->Ingest("boot-a", view, *slots, clock.Now(), &held),
              NodeSeries::Outcome::kStored);
    runner.RunOnce();
    clock.Advance(absl::Seconds(1));
  };
  for (uint64_t seq = 1; seq <= 3; ++seq) report_and_pass(seq, 0.001);
  ReportedNames names = runner.LatestNames();
  ASSERT_NE(names.ports, nullptr);
  EXPECT_THAT(names.ports->PortsOf("gpu-own"), ::testing::SizeIs(1));
  EXPECT_THAT(names.hosts_elsewhere, ::testing::ElementsAre("gpu-remote"));
  v1::Layout layout;
  layout.set_job("j");
  layout.set_gpus_per_node(1);
  for (const char* host : {"gpu-own", "gpu-remote", "gpu-0wn"}) {
    layout.add_hosts(host);
  }
  layout.add_rails(names.ports->PortsOf("gpu-own")[0].device);
  layout.add_rails("mlx5_9");
  EXPECT_THAT(
      UnreportedNames(layout, *names.ports, names.hosts_elsewhere),
      ::testing::ElementsAre(
          "hosts: NIC \"mlx5_9\" is reported by no agent on \"gpu-own\"",
          "hosts: host \"gpu-0wn\" is reported by no agent"));
  // Looked at, the page shows this collector's agents' ports alone: the
  // ports the name check reads, not a copy of them.
  EXPECT_EQ(runner.LatestView(), nullptr) << "not looked at before";
  runner.RunOnce();
  const std::shared_ptr<const analysis::FabricView> view = runner.LatestView();
  ASSERT_NE(view, nullptr);
  EXPECT_EQ(view, runner.LatestNames().ports);
  EXPECT_THAT(view->PortsOf("gpu-own"), ::testing::SizeIs(1));
  EXPECT_THAT(view->PortsOf("gpu-remote"), ::testing::IsEmpty());
  EXPECT_FALSE(runner.ViewIsWholeFabric());
  // Views a reader holds stay as they were while the passes go on (the
  // runner writes the next passes' ports over views no one holds any
  // more): here the page's, then the name check's.
  const analysis::PortSignals seen = view->PortsOf("gpu-own")[0].s;
  const std::shared_ptr<const analysis::FabricView> names_view =
      runner.LatestNames().ports;
  for (uint64_t seq = 4; seq <= 8; ++seq) report_and_pass(seq, 0.5);
  const auto same = [](const analysis::PortSignals& a,
                       const analysis::PortSignals& b) {
    return std::memcmp(&a, &b, sizeof(a)) == 0;
  };
  EXPECT_TRUE(same(view->PortsOf("gpu-own")[0].s, seen));
  EXPECT_TRUE(same(names_view->PortsOf("gpu-own")[0].s, seen));
  EXPECT_FALSE(same(runner.LatestNames().ports->PortsOf("gpu-own")[0].s, seen))
      << "the rate changed";
}

TEST_F(AnalysisRunnerClusterTest, AFollowerMergesPortsOnlyForItsPage) {
  // Nobody looked: nodes only, and no view of this collector's part alone.
  runner_->RunOnce();
  ASSERT_THAT(exchange.scopes, ::testing::ElementsAre(MergeScope::kNodes));
  EXPECT_THAT(*runner_->LatestNodes(), ::testing::SizeIs(1)) << "gpu-remote";
  EXPECT_EQ(runner_->LatestView(), nullptr);
  // Looked at: the whole fabric, for a minute after the last look.
  clock.Advance(absl::Seconds(1));
  runner_->RunOnce();
  EXPECT_EQ(exchange.scopes.back(), MergeScope::kFabric);
  EXPECT_NE(runner_->LatestView(), nullptr);
  clock.Advance(AnalysisRunner::kViewWantedFor - absl::Seconds(1));
  runner_->RunOnce();
  EXPECT_EQ(exchange.scopes.back(), MergeScope::kFabric);
  clock.Advance(absl::Seconds(2));
  runner_->RunOnce();
  EXPECT_EQ(exchange.scopes.back(), MergeScope::kNodes);
  // The leader merges the fabric whether or not anyone looks.
  role.term = 3;
  clock.Advance(AnalysisRunner::kViewWantedFor * 2);
  runner_->RunOnce();
  EXPECT_EQ(exchange.scopes.back(), MergeScope::kFabric);
}

// Baselines kept in memory, counting what the runner asks of them.
class FakeBaselines final : public BaselinesStore {
 public:
  absl::Status Write(absl::string_view payload, absl::Time written) override {
    std::lock_guard<std::mutex> lock(mu_);
    ++writes_;
    stored_ = ObjectFile{std::string(payload), written};
    return absl::OkStatus();
  }
  absl::StatusOr<std::optional<ObjectFile>> Read() override {
    std::lock_guard<std::mutex> lock(mu_);
    ++reads_;
    if (!read_error_.ok()) return read_error_;
    return stored_;
  }
  void Reject(absl::string_view /*why*/) override {}
  std::string Describe() const override { return "fake baselines"; }
  // Each shard's a FakeBaselines of its own (shard()).
  std::unique_ptr<BaselinesStore> ForShard(absl::string_view shard) override;

  // The store of `shard`, made when there was none.
  std::shared_ptr<FakeBaselines> shard(absl::string_view name) {
    std::lock_guard<std::mutex> lock(mu_);
    std::shared_ptr<FakeBaselines>& store = shards_[std::string(name)];
    if (store == nullptr) store = std::make_shared<FakeBaselines>();
    return store;
  }
  // Writes to every shard's store.
  int shard_writes() const {
    std::lock_guard<std::mutex> lock(mu_);
    int writes = 0;
    for (const auto& [name, store] : shards_) writes += store->writes();
    return writes;
  }
  // What `shard`'s store last had written, as baselines.
  analysis::StragglerBaselines StoredOf(absl::string_view name) {
    analysis::StragglerBaselines back;
    const std::optional<ObjectFile> stored = shard(name)->stored();
    EXPECT_TRUE(stored.has_value()) << name;
    if (stored.has_value()) {
      EXPECT_TRUE(back.Restore(stored->payload, nullptr).ok());
    }
    return back;
  }
  // What was last written, without counting a read.
  std::optional<ObjectFile> stored() const {
    std::lock_guard<std::mutex> lock(mu_);
    return stored_;
  }

  void FailReads(absl::Status error) {
    std::lock_guard<std::mutex> lock(mu_);
    read_error_ = std::move(error);
  }
  int reads() const {
    std::lock_guard<std::mutex> lock(mu_);
    return reads_;
  }
  int writes() const {
    std::lock_guard<std::mutex> lock(mu_);
    return writes_;
  }

 private:
  mutable std::mutex mu_;
  int reads_ = 0;
  int writes_ = 0;
  absl::Status read_error_;
  std::optional<ObjectFile> stored_;
  std::map<std::string, std::shared_ptr<FakeBaselines>> shards_;
};

// A shard's store as the runner holds it: the test's FakeBaselines of it.
class ShardOfFake final : public BaselinesStore {
 public:
  explicit ShardOfFake(std::shared_ptr<FakeBaselines> store)
      : store_(std::move(store)) {}
  absl::Status Write(absl::string_view payload, absl::Time written) override {
    return store_->Write(payload, written);
  }
  absl::StatusOr<std::optional<ObjectFile>> Read() override {
    return store_->Read();
  }
  void Reject(absl::string_view why) override { store_->Reject(why); }
  std::string Describe() const override { return store_->Describe(); }
  std::unique_ptr<BaselinesStore> ForShard(absl::string_view shard) override {
    return store_->ForShard(shard);
  }

 private:
  const std::shared_ptr<FakeBaselines> store_;
};

std::unique_ptr<BaselinesStore> FakeBaselines::ForShard(
    absl::string_view name) {
  return std::make_unique<ShardOfFake>(shard(name));
}

// A lease the test hands over from another thread than the runner's.
class SwitchedRole final : public AnalysisRole {
 public:
  bool Leading() const override { return term.load() > 0; }
  uint64_t Term() const override { return term.load(); }
  std::atomic<uint64_t> term{0};
};

// In a cluster the baselines follow the analysis: read by each new term's
// first pass, written while this collector leads, never by a collector
// that stopped leading (it would replace the leader's).
// One collector of a cluster whose baselines go to `store`.
class AnalysisRunnerBaselinesTest : public AnalysisRunnerStateTest {
 protected:
  AnalysisRunner Make() {
    return AnalysisRunner(&series, registry_.get(), findings_.get(), &stats,
                          clock, {exchange, role, store, no_topology_}, {});
  }
  // A pass, and the baselines it handed over written.
  static void Pass(AnalysisRunner& runner) {
    runner.RunOnce();
    runner.FlushBaselines();
  }

  FakeExchange exchange{clock.Now() - absl::Seconds(10)};
  SwitchedRole role;
  FakeBaselines store;
  AnalysisStats stats;
};

TEST_F(AnalysisRunnerBaselinesTest, TheBaselinesFollowTheAnalysisLease) {
  AnalysisRunner runner = Make();
  Pass(runner);
  EXPECT_EQ(store.reads(), 0) << "a follower reads no baselines";
  EXPECT_EQ(store.writes(), 0);
  role.term = 7;
  Pass(runner);
  EXPECT_EQ(store.reads(), 1) << "the new leader's first pass reads them";
  EXPECT_EQ(store.writes(), 1) << "and writes what it starts from";
  clock.Advance(kStragglerBaselinesEvery);
  Pass(runner);
  EXPECT_EQ(store.reads(), 1);
  EXPECT_EQ(store.writes(), 2) << "every kStragglerBaselinesEvery";
  // Another collector led meanwhile (term 8); this one leads again.
  role.term = 9;
  Pass(runner);
  EXPECT_EQ(store.reads(), 2) << "each term starts from the stored ones";

  // The lease is lost, then the collector stops: it writes nothing.
  const uint64_t passes = stats.passes.load();
  runner.Start();
  ASSERT_TRUE(fabricdiag::testing::Eventually(
      [&] { return stats.passes.load() > passes; }, absl::Seconds(20)));
  role.term = 0;
  runner.FlushBaselines();
  const int written = store.writes();
  runner.Stop();
  EXPECT_EQ(store.writes(), written)
      << "a former leader's baselines would replace the leader's";
}

// Sharded, each shard's owner keeps its NICs' baselines: a collector reads
// the stored ones once, at its first pass (its shards start from them), and
// the leader does not replace them, not even when it stops.
TEST_F(AnalysisRunnerBaselinesTest, ShardedTheLeaderLeavesTheBaselinesAlone) {
  OneCollectorShards shards;
  AnalysisRunner runner(&series, registry_.get(), findings_.get(), &stats,
                        clock, {exchange, role, store, no_topology_, &shards},
                        {});
  role.term = 7;
  Pass(runner);
  clock.Advance(kStragglerBaselinesEvery);
  Pass(runner);
  // Leading anew does not load them again over the shards' own.
  role.term = 9;
  Pass(runner);
  const uint64_t passes = stats.passes.load();
  runner.Start();
  ASSERT_TRUE(fabricdiag::testing::Eventually(
      [&] { return stats.passes.load() > passes; }, absl::Seconds(20)));
  runner.Stop();
  EXPECT_EQ(store.reads(), 1);
  EXPECT_EQ(store.writes(), 0);
}

// Sharded, each job shard's straggler baselines go with the shard: its
// owner writes them under the shard's name every kStragglerBaselinesEvery
// (the first a period after taking it) and at its stop, and a collector
// that takes a shard takes in what the shard's last owner wrote, over
// what it knew of the shard's jobs; a shard it keeps is not read again.
TEST_F(AnalysisRunnerBaselinesTest, ShardedEachJobShardsBaselinesGoWithIt) {
  v1::Layout moe = MoeOnTwoNodes();
  moe.add_rails("mlx5_0");
  ASSERT_TRUE(registry_->Apply(moe).ok());
  const std::shared_ptr<const RegistrySnapshot> layouts = registry_->Snapshot();
  const analysis::LayoutModel& model = layouts->layouts.at("moe")->model;
  ASSERT_FALSE(model.Hosts().empty());
  ASSERT_FALSE(model.Nics().empty());
  const std::string host = model.Hosts()[0];
  const std::string nic = model.Nics()[0];
  const analysis::ShardCounts counts{2, 1};
  const std::string mine = analysis::JobShardOf("moe", counts);
  const std::string other = mine == "jobs.0" ? "jobs.1" : "jobs.0";
  // Baselines of the moe NIC at `rate`, as a shard's owner writes them.
  auto written_at = [&](double rate) {
    analysis::Finding slow;
    slow.kind = "straggler_nic";
    slow.job = "moe";
    slow.node = host;
    slow.device = nic;
    slow.evidence = {{"own_baseline_bytes_per_second", rate},
                     {"own_baseline_passes", 300}};
    analysis::StragglerBaselines b;
    b.Seed({slow});
    return b.Serialize();
  };
  auto rate_in = [&](const std::string& shard) {
    const analysis::StragglerBaselines b = store.StoredOf(shard);
    const analysis::StragglerBaselines::Baseline* found =
        b.Find("moe", host, nic);
    return found == nullptr ? 0.0 : found->bytes_per_second;
  };
  ASSERT_TRUE(store.shard(mine)->Write(written_at(2e10), clock.Now()).ok());

  SwitchedShards shards(counts);
  AnalysisRunner runner(&series, registry_.get(), findings_.get(), &stats,
                        clock, {exchange, role, store, no_topology_, &shards},
                        {});
  Pass(runner);
  EXPECT_EQ(store.shard(mine)->reads(), 1);
  EXPECT_EQ(store.shard(other)->reads(), 1);
  EXPECT_EQ(store.shard("switches.0")->reads(), 0) << "a job shard's only";
  EXPECT_EQ(store.shard_writes(), 1) << "the test's own; a period first";
  clock.Advance(kStragglerBaselinesEvery);
  Pass(runner);
  EXPECT_EQ(store.shard(mine)->reads(), 1) << "a shard kept is its owner's";
  EXPECT_EQ(store.shard(mine)->writes(), 2);
  EXPECT_EQ(rate_in(mine), 2e10) << "taken in, then written again";
  EXPECT_EQ(store.shard(other)->writes(), 1);
  EXPECT_EQ(store.StoredOf(other).size(), 0u);

  // Handed over: another collector owns the shard and writes its own.
  shards.Own({{other, 1}, {"switches.0", 1}});
  Pass(runner);
  ASSERT_TRUE(store.shard(mine)->Write(written_at(3e10), clock.Now()).ok());
  clock.Advance(kStragglerBaselinesEvery);
  Pass(runner);
  EXPECT_EQ(store.shard(mine)->writes(), 3) << "not written by a former owner";
  EXPECT_EQ(store.shard(other)->writes(), 1)
      << "none of its jobs' baselines, as at its last write: not again";

  // Taken back under a newer term: what the other owner wrote replaces
  // what this collector knew.
  shards.Own({{mine, 2}, {other, 1}, {"switches.0", 1}});
  Pass(runner);
  EXPECT_EQ(store.shard(mine)->reads(), 2);
  clock.Advance(kStragglerBaselinesEvery);
  Pass(runner);
  EXPECT_EQ(store.shard(mine)->writes(), 4);
  EXPECT_EQ(rate_in(mine), 3e10);

  // At its stop, every job shard it owns, due or not.
  const uint64_t passes = stats.passes.load();
  const int mine_before = store.shard(mine)->writes();
  const int other_before = store.shard(other)->writes();
  runner.Start();
  ASSERT_TRUE(fabricdiag::testing::Eventually(
      [&] { return stats.passes.load() > passes; }, absl::Seconds(20)));
  runner.Stop();
  EXPECT_EQ(store.shard(mine)->writes(), mine_before + 1);
  EXPECT_EQ(store.shard(other)->writes(), other_before) << "still none";
  EXPECT_EQ(store.writes(), 0) << "the unsharded analysis's stay as they are";
}

// A shard handing over to another collector: a job shard's baselines are
// written once, for its next owner, and only then is it let go; a switch
// shard (which keeps none) is let go at once.
TEST_F(AnalysisRunnerBaselinesTest, ShardedAShardHandedOverIsLetGoOnceWritten) {
  const analysis::ShardCounts counts{2, 2};
  SwitchedShards shards(counts);
  std::map<std::string, int> written_at_let_go;
  shards.on_let_go = [&](absl::string_view shard) {
    written_at_let_go[std::string(shard)] = store.shard(shard)->writes();
  };
  AnalysisRunner runner(&series, registry_.get(), findings_.get(), &stats,
                        clock, {exchange, role, store, no_topology_, &shards},
                        {});
  role.term = 3;
  const auto pass = [&] {
    Pass(runner);
    clock.Advance(absl::Seconds(1));
  };
  pass();
  EXPECT_THAT(shards.let_go(), ::testing::IsEmpty());
  EXPECT_EQ(store.shard("jobs.0")->writes(), 0) << "a period after the take";
  shards.Own({{"jobs.0", 1, /*handing_over=*/true},
              {"jobs.1", 1},
              {"switches.0", 1, /*handing_over=*/true},
              {"switches.1", 1}});
  for (int i = 0; i < 3; ++i) pass();
  EXPECT_THAT(shards.let_go(),
              ::testing::UnorderedElementsAre("jobs.0", "switches.0"))
      << "once each, though still handing over for three passes";
  EXPECT_EQ(store.shard("jobs.0")->writes(), 1);
  EXPECT_EQ(written_at_let_go["jobs.0"], 1) << "let go once written";
  EXPECT_EQ(store.shard("jobs.1")->writes(), 0);
  EXPECT_EQ(store.shard("switches.0")->writes(), 0);
  // Owned again (the hand-over called off), then handing over anew: let go
  // once more, after a second write.
  shards.Own({{"jobs.0", 1}, {"jobs.1", 1}});
  pass();
  shards.Own({{"jobs.0", 1, /*handing_over=*/true}, {"jobs.1", 1}});
  pass();
  EXPECT_THAT(shards.let_go(), ::testing::UnorderedElementsAre(
                                   "jobs.0", "switches.0", "jobs.0"));
  EXPECT_EQ(written_at_let_go["jobs.0"], 2);
}

// Sharded, a store that does not answer is asked once per pass: the job
// shards taken after it are not read (each read would wait out its
// deadline), and none is written before a period has passed.
TEST_F(AnalysisRunnerBaselinesTest, ShardedAStoreThatDoesNotAnswerIsAskedOnce) {
  const analysis::ShardCounts counts{2, 1};
  store.shard("jobs.0")->FailReads(absl::UnavailableError("no answer"));
  SwitchedShards shards(counts);
  AnalysisRunner runner(&series, registry_.get(), findings_.get(), &stats,
                        clock, {exchange, role, store, no_topology_, &shards},
                        {});
  Pass(runner);
  EXPECT_EQ(store.shard("jobs.0")->reads(), 1);
  EXPECT_EQ(store.shard("jobs.1")->reads(), 0);
  EXPECT_EQ(store.shard_writes(), 0);
  clock.Advance(kStragglerBaselinesEvery);
  Pass(runner);
  EXPECT_EQ(store.shard("jobs.0")->writes(), 1);
  EXPECT_EQ(store.shard("jobs.1")->writes(), 1);
}

// A write that held no baseline (a leader's first pass, before traffic) is
// followed by one as soon as there are some, not a period later.
TEST_F(AnalysisRunnerBaselinesTest, AWriteOfNoneIsFollowedAtOnce) {
  AnalysisRunner runner = Make();
  role.term = 7;
  Pass(runner);
  ASSERT_EQ(store.writes(), 1);
  // The leader of term 8 opened a straggler; this collector mirrored it
  // and leads again: its next pass starts from that finding's baseline.
  analysis::Finding slow;
  slow.kind = "straggler_nic";
  slow.job = "moe";
  slow.node = "gpu-007";
  slow.device = "mlx5_3";
  slow.group = "ep:0";
  slow.summary = "mlx5_3 of gpu-007 carries half of its usual throughput";
  slow.evidence = {{"own_baseline_bytes_per_second", 2e10},
                   {"own_baseline_passes", 300}};
  slow.immediate = true;
  ASSERT_TRUE(findings_->Update({slow}, clock.Now(), "rate_analyzers").ok());
  clock.Advance(absl::Seconds(1));
  role.term = 9;
  Pass(runner);
  EXPECT_EQ(store.writes(), 2);
  absl::StatusOr<std::optional<ObjectFile>> stored = store.Read();
  ASSERT_TRUE(stored.ok() && stored->has_value());
  analysis::StragglerBaselines back;
  ASSERT_TRUE(back.Restore((*stored)->payload, nullptr).ok());
  EXPECT_NE(back.Find("moe", "gpu-007", "mlx5_3"), nullptr);
  clock.Advance(absl::Seconds(1));
  Pass(runner);
  EXPECT_EQ(store.writes(), 2) << "then every kStragglerBaselinesEvery";
}

// A leader that could not read the stored baselines (NATS did not answer)
// does not replace them with the little it knows at once: it writes after
// learning for kStragglerBaselinesEvery.
TEST_F(AnalysisRunnerBaselinesTest, AFailedReadPostponesTheFirstWrite) {
  role.term = 1;
  store.FailReads(absl::UnavailableError("no answer"));
  AnalysisRunner runner = Make();
  Pass(runner);
  EXPECT_EQ(store.reads(), 1);
  EXPECT_EQ(store.writes(), 0);
  clock.Advance(kStragglerBaselinesEvery - absl::Seconds(1));
  Pass(runner);
  EXPECT_EQ(store.writes(), 0);
  clock.Advance(absl::Seconds(1));
  Pass(runner);
  EXPECT_EQ(store.writes(), 1);
}

// ... and reads them again every kBaselinesRetryEvery until then: once the
// store answers, the stored history replaces what was learned meanwhile.
// Where an open straggler was judged against a baseline of its own, that
// one stays.
TEST_F(AnalysisRunnerBaselinesTest, AFailedReadIsTriedAgainUntilTheFirstWrite) {
  v1::Layout moe = MoeOnTwoNodes();
  moe.add_rails("mlx5_0");
  ASSERT_TRUE(registry_->Apply(moe).ok());
  const std::shared_ptr<const RegistrySnapshot> layouts = registry_->Snapshot();
  const analysis::LayoutModel& model = layouts->layouts.at("moe")->model;
  ASSERT_GE(model.Hosts().size(), 2u);
  ASSERT_FALSE(model.Nics().empty());
  const std::string& host = model.Hosts()[0];
  const std::string& slow_host = model.Hosts()[1];
  const std::string& nic = model.Nics()[0];
  auto straggler = [&](const std::string& on, double rate) {
    analysis::Finding f;
    f.kind = "straggler_nic";
    f.job = "moe";
    f.node = on;
    f.device = nic;
    f.group = "ep:0";
    f.summary = "slow";
    f.evidence = {{"own_baseline_bytes_per_second", rate},
                  {"own_baseline_passes", 300}};
    return f;
  };
  {
    analysis::StragglerBaselines stored;
    stored.Seed({straggler(host, 2e10), straggler(slow_host, 3e10)});
    ASSERT_TRUE(store.Write(stored.Serialize(), clock.Now()).ok());
  }
  // The leader before opened a straggler on slow_host, judged against 4e10.
  analysis::Finding open = straggler(slow_host, 4e10);
  open.immediate = true;
  ASSERT_TRUE(findings_->Update({open}, clock.Now(), "rate_analyzers").ok());
  // What the runner last wrote of `on`'s NIC.
  auto written_of = [&](const std::string& on) {
    absl::StatusOr<std::optional<ObjectFile>> stored = store.Read();
    analysis::StragglerBaselines back;
    if (!stored.ok() || !stored->has_value() ||
        !back.Restore((*stored)->payload, nullptr).ok()) {
      return -1.0;
    }
    const analysis::StragglerBaselines::Baseline* b = back.Find("moe", on, nic);
    return b == nullptr ? 0.0 : b->bytes_per_second;
  };

  role.term = 1;
  store.FailReads(absl::UnavailableError("no answer"));
  AnalysisRunner runner = Make();
  Pass(runner);
  EXPECT_EQ(store.reads(), 1);
  clock.Advance(AnalysisRunner::kBaselinesRetryEvery - absl::Seconds(1));
  Pass(runner);
  EXPECT_EQ(store.reads(), 1) << "not before kBaselinesRetryEvery";
  clock.Advance(absl::Seconds(1));
  Pass(runner);
  EXPECT_EQ(store.reads(), 2) << "read again";
  store.FailReads(absl::OkStatus());
  clock.Advance(AnalysisRunner::kBaselinesRetryEvery);
  Pass(runner);
  EXPECT_EQ(store.reads(), 3) << "and again, answered";
  const int reads = store.reads();
  EXPECT_EQ(store.writes(), 1) << "only the test's own";
  clock.Advance(kStragglerBaselinesEvery -
                2 * AnalysisRunner::kBaselinesRetryEvery);
  Pass(runner);
  EXPECT_EQ(store.reads(), reads) << "not read again once it answered";
  EXPECT_EQ(store.writes(), 2) << "a period after the first read";
  EXPECT_EQ(written_of(host), 2e10) << "the stored history, restored";
  EXPECT_EQ(written_of(slow_host), 4e10)
      << "the open straggler's own baseline stays";
}

// A store that never answers is read until the first write is due, and no
// more.
TEST_F(AnalysisRunnerBaselinesTest, AStoreThatNeverAnswersIsReadForAPeriod) {
  role.term = 1;
  store.FailReads(absl::UnavailableError("no answer"));
  AnalysisRunner runner = Make();
  Pass(runner);
  for (absl::Duration t = absl::ZeroDuration(); t < kStragglerBaselinesEvery;
       t += absl::Seconds(1)) {
    clock.Advance(absl::Seconds(1));
    Pass(runner);
  }
  const int reads = store.reads();
  EXPECT_EQ(reads, 1 + (kStragglerBaselinesEvery -
                        AnalysisRunner::kBaselinesRetryEvery) /
                           AnalysisRunner::kBaselinesRetryEvery);
  EXPECT_EQ(store.writes(), 1) << "written once a period passed";
  for (int i = 0; i < 20; ++i) {
    clock.Advance(absl::Seconds(1));
    Pass(runner);
  }
  EXPECT_EQ(store.reads(), reads);
}

struct Opened {
  int pass = -1;  // -1: never opened
  double intervals_held = -1;
};

// The pass, counted from the start of a PFC storm 3x past its threshold
// (60% of the time paused against 20%), in which pfc_storm opens on gpu-1,
// one report and one pass per second, and its intervals_held then.
Opened WhenAStrongStormOpens(const analysis::HysteresisConfig& gate,
                             bool sharded = false,
                             std::string* source = nullptr) {
  agent::ScopedTempDir tmp;
  FakeClock clock(absl::FromUnixSeconds(1795000000));
  auto state = StateStore::Open(tmp.path(), &clock);
  EXPECT_TRUE(state.ok()) << state.status();
  if (!state.ok()) return {};
  FileDeclaredState declared(state->get());
  LayoutRegistry registry(&declared, &clock);
  FindingsStore findings(state->get(), FindingsStoreOptions{});
  EXPECT_TRUE(findings.Load().ok());
  SeriesStore series(SeriesStore::Options{}, clock);
  std::shared_ptr<NodeSeries> node = series.OpenNode("gpu-1");
  absl::StatusOr<std::vector<uint32_t>> slots =
      StartPauseAgent(*node, clock.Now());
  EXPECT_TRUE(slots.ok()) << slots.status();
  if (!slots.ok()) return {};

  AnalysisRunner::Options options;
  // A 5 s window: the comparison below is with its mean.
  options.analysis.window_seconds = 5;
  options.analysis.hysteresis = gate;
  OneCollectorShards shards;
  OneCollector one;
  if (sharded) one.shards = &shards;
  AnalysisRunner runner(&series, &registry, &findings, &one.stats, clock,
                        one.seams(), options);
  uint64_t seq = 0;
  auto report = [&](double paused_fraction) {
    clock.Advance(absl::Seconds(1));
    const std::vector<double> rates = {paused_fraction};
    ReportView view;
    view.seq = ++seq;
    view.wall_time_unix_nanos = absl::ToUnixNanos(clock.Now());
    view.rates = rates;
    uint64_t held = 0;
    EXPECT_EQ(node->Ingest("boot-a", view, *slots, clock.Now(), &held),
              NodeSeries::Outcome::kStored);
    runner.RunOnce();
  };
  for (int i = 0; i < 10; ++i) report(0.001);  // healthy
  EXPECT_THAT(findings.Active(), ::testing::IsEmpty());
  for (int pass = 1; pass <= 10; ++pass) {
    report(0.6);
    for (const v1::Finding& f : findings.Active()) {
      if (f.kind() != "pfc_storm") continue;
      // The source that wrote it.
      for (const std::string& name :
           {std::string("rate_analyzers"),
            ShardSource(analysis::SwitchShardOf("gpu-1", {})),
            PortsSource("")}) {
        for (const v1::Finding& of : findings.ActiveOf(name)) {
          if (source != nullptr && of.id() == f.id()) *source = name;
        }
      }
      return {pass, f.evidence().at(analysis::kIntervalsHeldEvidence)};
    }
  }
  return {};
}

// Publishes only when let: a pass in progress for as long as a test
// wants.
class GatedExchange final : public FeatureExchange {
 public:
  std::string Describe() const override { return "gated"; }
  absl::Status Publish(const FeatureSlice& /*local*/,
                       absl::Time /*now*/) override {
    entered.Notify();
    release.WaitForNotification();
    return absl::OkStatus();
  }
  FeatureSlice Merged(FeatureSlice local, absl::Time /*now*/,
                      MergeScope /*scope*/) override {
    return local;
  }
  absl::Notification entered;
  absl::Notification release;
};

// A layout applied while a long rate pass runs: the layout pass waits for
// it only until the request's deadline, and answers with the findings of
// now; the next pass raises what the layout brings.
TEST_F(AnalysisRunnerStateTest,
       ALayoutPassBehindARunningPassStopsAtItsDeadline) {
  GatedExchange exchange;
  FakeRole role;
  role.term = 1;
  AnalysisStats stats;
  NoBaselinesStore no_baselines;
  AnalysisRunner runner(&series, registry_.get(), findings_.get(), &stats,
                        clock, {exchange, role, no_baselines, no_topology_},
                        {});
  v1::Layout tp16 = TpAcrossTwoNodes();

  std::thread pass([&] { runner.RunOnce(); });
  exchange.entered.WaitForNotification();
  ASSERT_TRUE(registry_->Apply(tp16).ok());
  const absl::Time start = absl::Now();
  const std::vector<v1::Finding> now =
      runner.RunLayoutPass("dense-tp16", start + absl::Milliseconds(200));
  const absl::Duration took = absl::Now() - start;
  EXPECT_THAT(now, ::testing::IsEmpty());
  EXPECT_GE(took, absl::Milliseconds(150));
  EXPECT_LT(took, absl::Seconds(2));
  exchange.release.Notify();
  pass.join();

  // With time to wait, the layout pass runs and answers with its finding.
  const std::vector<v1::Finding> found =
      runner.RunLayoutPass("dense-tp16", absl::Now() + absl::Seconds(10));
  ASSERT_THAT(found, ::testing::SizeIs(1));
  EXPECT_EQ(found[0].kind(), "tp_cross_node");
}

// The rate analysis cut into shards, on a collector that is a cluster of
// one: the storm opens in the same pass, through its switch shard (gpu-1
// is cabled to no switch: the shard its own name hashes to).
TEST(AnalysisRunnerTest, ShardedTheStormOpensAsOnTheWholeFabric) {
  for (const double recent : {1.0, 0.0}) {
    analysis::HysteresisConfig gate;
    gate.recent_seconds = recent;
    std::string whole_source;
    std::string sharded_source;
    const Opened whole = WhenAStrongStormOpens(gate, false, &whole_source);
    const Opened sharded = WhenAStrongStormOpens(gate, true, &sharded_source);
    EXPECT_GT(whole.pass, 0);
    EXPECT_EQ(sharded.pass, whole.pass) << "recent " << recent;
    EXPECT_EQ(sharded.intervals_held, whole.intervals_held);
    EXPECT_EQ(whole_source, "rate_analyzers");
    EXPECT_EQ(sharded_source,
              ShardSource(analysis::SwitchShardOf("gpu-1", {})));
  }
}

TEST(AnalysisRunnerTest, AStrongFaultOpensOnTheNewestSamples) {
  analysis::HysteresisConfig gate;  // the defaults: the newest 1 s, 2x, 2
  Opened fast = WhenAStrongStormOpens(gate);
  EXPECT_EQ(fast.pass, 2);
  // The newest sample held it from the 1st pass, the window from the 2nd.
  EXPECT_EQ(fast.intervals_held, 2);
  // Without the fast path the 5 s mean crosses 20% at the 2nd pass and
  // opens after 3 passes over it.
  gate.recent_seconds = 0;
  Opened slow = WhenAStrongStormOpens(gate);
  EXPECT_EQ(slow.pass, 4);
  EXPECT_EQ(slow.intervals_held, 3);
}

}  // namespace
}  // namespace fabricdiag::collector
