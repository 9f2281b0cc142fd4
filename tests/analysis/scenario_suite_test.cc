// The quality suite of the rate analyzers: realistic clusters (8-64 nodes,
// a MoE and a dense job, leaf switches) with healthy noise and injected
// faults, run for several passes the way the collector's analysis runner
// runs them: the window and the newest samples (the fast path for strong
// faults) through collector::RunRatePass, the hysteresis, and a findings
// store in a state directory of its own. Every fault must be found
// (recall 1), healthy clusters raise nothing (precision 1), a fault's
// finding, once open, stays open with one id while the fault holds, and no
// finding of any kind opens twice while the faults hold: the suite prints a
// table and asserts all four over all scenarios, with per
// kind the passes to open under each timing fault. The table runs three
// times with the same expectations: through RunRatePass, and through the
// sharded analysis (collector::ShardedRatePass) on a cluster of one
// collector and on one of three. Timing faults: sample jitter and stale
// reads (TrafficOptions), reports arriving late and in bursts
// (LateReports), and a collector restart (CollectorRestart). A
// second table gives, per kind, the passes to open (with and without the
// newest samples) and to resolve. The agent_down analyzer gets its own
// timelines of agents going silent and coming back.
//
// Run: build-*/tests/scenario_suite_test  (the table is on stdout).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <iomanip>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "analysis/agent_down.h"
#include "analysis/analyzer.h"
#include "analysis/analyzer_util.h"
#include "analysis/congestion.h"
#include "analysis/finding_wire.h"
#include "analysis/hot_expert_incast.h"
#include "analysis/hysteresis.h"
#include "analysis/link_degraded.h"
#include "analysis/pfc_storm.h"
#include "analysis/rate_parts.h"
#include "analysis/shard_map.h"
#include "analysis/straggler_nic.h"
#include "analysis/topology_index.h"
#include "collector/findings/findings_store.h"
#include "collector/runner/agent_liveness.h"
#include "collector/runner/analysis_shards.h"
#include "collector/runner/rate_pass.h"
#include "collector/runner/sharded_rate_pass.h"
#include "collector/state/state_store.h"
#include "common/clock.h"
#include "proto/collector.pb.h"
#include "tests/analysis/shard_findings.h"
#include "tests/testing/scenario_builder.h"
#include "tests/testing/scenario_score.h"
#include "tests/testing/temp_dir.h"

namespace fabricdiag::analysis::scenario {
namespace {

// Reports of one node that reach the collector late (a congested
// management network, an agent stalled behind a slow disk): those it takes
// for passes [from_pass, from_pass + delayed) arrive together just before
// pass from_pass + delayed. The collector builds a node's window from the
// last samples it holds (FabricViewBuilder: RecentMeans over the node's
// newest reports), so meanwhile the node's window and newest samples stay
// those of pass from_pass - 1, and at the burst they are the current ones
// again. The collector's clock sees a silence of `delayed` intervals
// (agent_down's input), and the view leaves out a node whose last report
// came more than 3 intervals before the pass (kStaleIntervals): the last
// report came just before pass from_pass - 1 and passes run a tenth of an
// interval after the reads, so a node is absent from pass from_pass + 2.
struct LateReports {
  std::string node;
  int from_pass = 0;
  int delayed = 0;
};

// The collector stops after pass `at_pass` - 1 (kill -9, an upgrade) and
// analyses again at pass at_pass + down. The new process opens the same
// state directory: its findings store loads the findings log, and the
// hysteresis and straggler baselines start over from the active findings
// (collector::SeedRateState, as AnalysisRunner does). Its series are what
// the agents replay, the reports it had not acknowledged (those from pass
// at_pass on), so its first windows hold `down` intervals until they fill
// again (TrafficOptions::first_report; the scenario turns sample_jitter on
// so that the views say so). -1: no restart.
struct CollectorRestart {
  int at_pass = -1;
  int down = 1;
};

// Timing faults besides the traffic's sampling (TrafficOptions), and how
// many passes to run (0: the suite's default).
struct Timeline {
  std::vector<LateReports> late;
  CollectorRestart restart;
  int passes = 0;
  // The faults hold in the passes before this one; -1: in every pass.
  int faults_until = -1;
};

struct Scenario {
  Scenario(std::string name_, std::string cluster_, std::vector<Fault> faults_,
           TrafficOptions traffic_, uint32_t seed_, Timeline timeline_ = {})
      : name(std::move(name_)),
        cluster(std::move(cluster_)),
        faults(std::move(faults_)),
        traffic(std::move(traffic_)),
        seed(seed_),
        timeline(std::move(timeline_)) {}

  std::string name;
  std::string cluster;  // a key of ClusterSpecs()
  std::vector<Fault> faults;
  TrafficOptions traffic;
  uint32_t seed = 1;
  Timeline timeline;
};

// Where each fault goes in the 16-node two-job cluster (MoE on gpu-000..007,
// leaves 0-1; dense on gpu-008..015, leaves 2-3), chosen so that faults of a
// multi-fault scenario sit on different nodes and leaves.
Fault At16(FaultKind kind) {
  switch (kind) {
    case FaultKind::kHotExpert:
      return {kind, "gpu-001", "mlx5_2"};
    case FaultKind::kPfcStorm:
      return {kind, "gpu-009", "mlx5_5"};
    case FaultKind::kEcmpImbalance:
      return {kind, "leaf-1", ""};
    case FaultKind::kLinkErrors:
      return {kind, "gpu-002", "mlx5_4"};
    case FaultKind::kLinkFlap:
      return {kind, "gpu-012", "mlx5_1"};
    case FaultKind::kLinkDegraded:
      return {kind, "gpu-005", "mlx5_7"};
    case FaultKind::kRetransmissions:
      return {kind, "gpu-014", "mlx5_3"};
    case FaultKind::kCongestion:
      return {kind, "gpu-010", "mlx5_6"};
    case FaultKind::kStragglerNic:
      return {kind, "gpu-006", "mlx5_0"};
  }
  return {};
}

// The clusters scenarios run on: two jobs on 8, 16 and 64 nodes, and 16
// nodes of which the last leaf (gpu-012..015) runs no job.
std::map<std::string, ClusterSpec> ClusterSpecs() {
  std::map<std::string, ClusterSpec> out;
  for (int nodes : {8, 16, 64}) {
    out[absl::StrCat(nodes, "n")] = TwoJobCluster(nodes);
  }
  ClusterSpec idle = TwoJobCluster(16);
  idle.jobs[1].num_nodes = 4;
  out["16n-idle"] = idle;
  return out;
}

TrafficOptions Bursts() {
  TrafficOptions t;
  t.dp_bursts = true;
  return t;
}

// Passes a scenario with timing faults runs: enough for its findings to
// open, its nodes to be late twice and the collector to restart after they
// opened.
constexpr int kTimelinePasses = 12;

Timeline LateBursts(std::vector<LateReports> late) {
  Timeline t;
  t.late = std::move(late);
  t.passes = kTimelinePasses;
  return t;
}

std::vector<Scenario> AllScenarios() {
  std::vector<Scenario> out;
  for (int nodes : {8, 16, 64}) {
    for (uint32_t seed : {1u, 2u, 3u}) {
      out.push_back({absl::StrCat("healthy-", nodes, "n-seed", seed),
                     absl::StrCat(nodes, "n"),
                     {},
                     {},
                     seed});
    }
  }
  for (int nodes : {16, 64}) {
    out.push_back({absl::StrCat("healthy-bursts-", nodes, "n"),
                   absl::StrCat(nodes, "n"),
                   {},
                   Bursts(),
                   11});
  }
  for (FaultKind kind : kAllFaultKinds) {
    out.push_back({FindingKindOf(kind), "16n", {At16(kind)}, {}, 21});
  }
  // Each fault alone under DP bursts too: bursts must not hide a fault.
  for (FaultKind kind : kAllFaultKinds) {
    out.push_back({absl::StrCat(FindingKindOf(kind), "+bursts"),
                   "16n",
                   {At16(kind)},
                   Bursts(),
                   22});
  }
  // Smallest and largest clusters: EP groups of 4, PP of 4 stages.
  out.push_back({"hot_expert-8n",
                 "8n",
                 {{FaultKind::kHotExpert, "gpu-002", "mlx5_6"}},
                 {},
                 31});
  out.push_back({"straggler-8n",
                 "8n",
                 {{FaultKind::kStragglerNic, "gpu-003", "mlx5_1"}},
                 {},
                 32});
  out.push_back({"hot_expert-64n",
                 "64n",
                 {{FaultKind::kHotExpert, "gpu-021", "mlx5_3"}},
                 {},
                 33});
  out.push_back({"straggler-dense-64n",
                 "64n",
                 {{FaultKind::kStragglerNic, "gpu-045", "mlx5_4"}},
                 {},
                 34});
  out.push_back({"pfc_storm-64n",
                 "64n",
                 {{FaultKind::kPfcStorm, "gpu-050", "mlx5_0"}},
                 {},
                 35});
  out.push_back({"congestion-64n",
                 "64n",
                 {{FaultKind::kCongestion, "gpu-060", "mlx5_7"}},
                 {},
                 36});
  // Realistic quiet and heterogeneous fabrics.
  for (uint32_t seed : {1u, 2u}) {
    out.push_back({absl::StrCat("healthy-idle-leaf-seed", seed),
                   "16n-idle",
                   {},
                   {},
                   seed});
  }
  TrafficOptions frames_only;
  frames_only.frames_only_pause = true;
  out.push_back({"healthy-frames-only-pause", "16n", {}, frames_only, 12});
  out.push_back({"pfc_storm-frames-only-pause",
                 "16n",
                 {At16(FaultKind::kPfcStorm)},
                 frames_only,
                 23});
  TrafficOptions dense_checkpoint;
  dense_checkpoint.checkpointing_job = "dense-train";
  out.push_back(
      {"healthy-dense-checkpointing", "16n", {}, dense_checkpoint, 13});
  TrafficOptions moe_checkpoint;
  moe_checkpoint.checkpointing_job = "moe-train";
  out.push_back(
      {"healthy-moe-checkpointing-64n", "64n", {}, moe_checkpoint, 14});
  out.push_back({"straggler+dense-checkpointing",
                 "16n",
                 {At16(FaultKind::kStragglerNic)},
                 dense_checkpoint,
                 24});
  // Hosts in VMs report traffic only: absent signals must neither hide a
  // fault elsewhere nor raise one.
  TrafficOptions vm_nodes;
  vm_nodes.bare_nodes = {"gpu-003", "gpu-011", "gpu-013"};
  out.push_back({"healthy-vm-nodes", "16n", {}, vm_nodes, 15});
  out.push_back({"congestion+vm-nodes",
                 "16n",
                 {At16(FaultKind::kCongestion)},
                 vm_nodes,
                 28});
  out.push_back({"pfc_storm+vm-victims",
                 "16n",
                 {At16(FaultKind::kPfcStorm)},
                 vm_nodes,
                 29});
  out.push_back({"hot_expert+vm-peer",
                 "16n",
                 {At16(FaultKind::kHotExpert)},
                 vm_nodes,
                 30});
  // Link faults on a node no job runs on are still faults.
  out.push_back({"link_flap-idle-node",
                 "16n-idle",
                 {{FaultKind::kLinkFlap, "gpu-013", "mlx5_4"}},
                 {},
                 25});
  out.push_back({"link_degraded-idle-node",
                 "16n-idle",
                 {{FaultKind::kLinkDegraded, "gpu-014", "mlx5_0"}},
                 {},
                 26});
  out.push_back({"link_errors-idle-node",
                 "16n-idle",
                 {{FaultKind::kLinkErrors, "gpu-015", "mlx5_7"}},
                 {},
                 27});
  // Several faults at once on different nodes.
  out.push_back({"hot_expert+link_errors+congestion",
                 "16n",
                 {At16(FaultKind::kHotExpert),
                  {FaultKind::kLinkErrors, "gpu-013", "mlx5_4"},
                  At16(FaultKind::kCongestion)},
                 {},
                 41});
  out.push_back({"pfc_storm+straggler+ecmp",
                 "16n",
                 {At16(FaultKind::kPfcStorm),
                  At16(FaultKind::kStragglerNic),
                  {FaultKind::kEcmpImbalance, "leaf-0", ""}},
                 {},
                 42});
  out.push_back({"flap+degraded+retrans-64n",
                 "64n",
                 {{FaultKind::kLinkFlap, "gpu-003", "mlx5_5"},
                  {FaultKind::kLinkDegraded, "gpu-040", "mlx5_2"},
                  {FaultKind::kRetransmissions, "gpu-017", "mlx5_6"}},
                 {},
                 43});
  // MoE routing skew that stays with each NIC (lognormal, sigma 0.3: 2x
  // between healthy NICs of one group) is not a straggler; a straggler in
  // it still is.
  TrafficOptions skew;
  skew.routing_skew_sigma = 0.3;
  for (int nodes : {16, 64}) {
    out.push_back({absl::StrCat("healthy-moe-skew-", nodes, "n"),
                   absl::StrCat(nodes, "n"),
                   {},
                   skew,
                   31});
  }
  out.push_back({"straggler+moe-skew",
                 "16n",
                 {At16(FaultKind::kStragglerNic)},
                 skew,
                 32});
  // Agents' report intervals jitter (up to 2x); a MoE and a dense host read
  // stale counters twice in a row, then catch up with a lump.
  TrafficOptions jitter;
  jitter.sample_jitter = true;
  jitter.stale_nodes = {"gpu-003", "gpu-011"};
  out.push_back({"healthy-jitter-stale-reads", "16n", {}, jitter, 33});
  out.push_back({"straggler+jitter",
                 "16n",
                 {At16(FaultKind::kStragglerNic)},
                 jitter,
                 34});
  // Reports arriving late and in bursts (LateReports), on MoE and dense
  // hosts and a leaf: healthy clusters raise nothing, and every fault is
  // found although its own node is late twice (before and after its
  // finding opens) and peers are late too.
  const Timeline late16 = LateBursts({{"gpu-003", 2, 3},
                                      {"gpu-011", 4, 2},
                                      {"leaf-2", 3, 3},
                                      {"gpu-006", 6, 3}});
  out.push_back({"healthy-late-bursts-16n", "16n", {}, {}, 51, late16});
  const Timeline late64 = LateBursts({{"gpu-010", 2, 3},
                                      {"gpu-040", 5, 2},
                                      {"gpu-063", 3, 3},
                                      {"leaf-1", 4, 3}});
  out.push_back({"healthy-late-bursts-64n", "64n", {}, {}, 52, late64});
  out.push_back({"healthy-moe-skew-late-bursts", "16n", {}, skew, 53, late16});
  out.push_back(
      {"healthy-jitter-stale-late-bursts", "16n", {}, jitter, 54, late16});
  for (FaultKind kind : kAllFaultKinds) {
    const Fault f = At16(kind);
    out.push_back({absl::StrCat(FindingKindOf(kind), "+late-bursts"),
                   "16n",
                   {f},
                   {},
                   55,
                   LateBursts({{f.node, 1, 3},
                               {f.node, 6, 3},
                               {"gpu-004", 4, 2},
                               {"gpu-013", 5, 3}})});
  }
  out.push_back(
      {"straggler+moe-skew+late-bursts",
       "16n",
       {At16(FaultKind::kStragglerNic)},
       skew,
       56,
       LateBursts({{"gpu-006", 1, 3}, {"gpu-006", 6, 3}, {"gpu-007", 3, 3}})});
  // A collector restart (CollectorRestart) once the faults' findings are
  // open: each keeps its id, and healthy clusters, MoE routing skew
  // included (straggler baselines are lost but for open stragglers), raise
  // nothing.
  TrafficOptions replay;
  replay.sample_jitter = true;
  TrafficOptions skew_replay = skew;
  skew_replay.sample_jitter = true;
  Timeline restart;
  restart.passes = kTimelinePasses + 2;
  restart.restart = {5, 1};
  Timeline long_restart = restart;
  long_restart.restart = {5, 3};
  out.push_back({"healthy-restart-16n", "16n", {}, replay, 61, restart});
  out.push_back({"healthy-restart-64n", "64n", {}, replay, 62, long_restart});
  // Long enough after the restart for every NIC's baseline to count again
  // (straggler_nic.min_history_passes): the NICs that lost theirs are
  // judged against baselines the new process learned.
  Timeline rebuilt = restart;
  rebuilt.passes = 6 + AnalysisConfig().straggler_nic.min_history_passes + 4;
  out.push_back(
      {"healthy-moe-skew-restart-16n", "16n", {}, skew_replay, 63, rebuilt});
  out.push_back({"healthy-moe-skew-restart-64n",
                 "64n",
                 {},
                 skew_replay,
                 64,
                 long_restart});
  for (FaultKind kind : kAllFaultKinds) {
    out.push_back({absl::StrCat(FindingKindOf(kind), "+restart"),
                   "16n",
                   {At16(kind)},
                   replay,
                   65,
                   restart});
  }
  out.push_back({"straggler+moe-skew+restart",
                 "16n",
                 {At16(FaultKind::kStragglerNic)},
                 skew_replay,
                 66,
                 rebuilt});
  // A restart before the faults' findings open (after one pass): they open
  // from what the new process sees. The dense job's straggler stands for
  // the kind here; the expert-parallel job's follows.
  Timeline early = restart;
  early.restart = {1, 1};
  for (FaultKind kind : kAllFaultKinds) {
    const Fault f = kind == FaultKind::kStragglerNic
                        ? Fault{kind, "gpu-013", "mlx5_2"}
                        : At16(kind);
    out.push_back({absl::StrCat(FindingKindOf(kind), "+restart-before-open"),
                   "16n",
                   {f},
                   replay,
                   69,
                   early});
  }
  // The straggler of the expert-parallel job, slow since before the
  // restart: the new process judges it against the baselines the old one
  // wrote (collector::LoadStragglerBaselines), not against its slow
  // throughput learned as normal.
  out.push_back({"straggler+moe-skew+restart-before-open",
                 "16n",
                 {At16(FaultKind::kStragglerNic)},
                 skew_replay,
                 70,
                 early});
  out.push_back({"straggler+moe-skew+long-restart",
                 "16n",
                 {At16(FaultKind::kStragglerNic)},
                 skew_replay,
                 67,
                 long_restart});
  out.push_back({"straggler-dense-64n+restart",
                 "64n",
                 {{FaultKind::kStragglerNic, "gpu-045", "mlx5_4"}},
                 replay,
                 68,
                 long_restart});
  return out;
}

// Seeds of the newest-samples views are this far from the windows' seeds.
constexpr uint32_t kNewestSeed = 500000;

constexpr char kRateSource[] = "rate_analyzers";
constexpr absl::Duration kInterval = absl::Seconds(1);
// The analysis runner writes every NIC's baselines every
// collector::kStragglerBaselinesEvery: this many passes.
const int kBaselinesEveryPasses =
    static_cast<int>(collector::kStragglerBaselinesEvery / kInterval);
// FabricViewBuilder leaves out a node whose last report is older than this
// many intervals.
constexpr int kStaleIntervals = 3;

// A finding's key in the findings store: kind, job, node, device, group.
using StoreKey =
    std::tuple<std::string, std::string, std::string, std::string, std::string>;

// How the collectors run the rate analyzers: one over the whole fabric
// (collector::RunRatePass, the unsharded analysis), or each its share of
// the analysis shards (collector::ShardedRatePass) in a cluster of one
// collector (the embedded collector's: each kind of part once over its
// whole view) or of three. Every scenario is held to the same
// expectations in each.
enum class Sharding { kNone, kOneCollector, kThreeCollectors };

std::string ShardingName(Sharding sharding) {
  switch (sharding) {
    case Sharding::kNone:
      return "Unsharded";
    case Sharding::kOneCollector:
      return "OneCollector";
    case Sharding::kThreeCollectors:
      return "ThreeCollectors";
  }
  return "";
}

// For gtest's messages.
void PrintTo(Sharding sharding, std::ostream* os) {
  *os << ShardingName(sharding);
}

int CollectorsOf(Sharding sharding) {
  switch (sharding) {
    case Sharding::kNone:
      return 0;
    case Sharding::kOneCollector:
      return 1;
    case Sharding::kThreeCollectors:
      return 3;
  }
  return 0;
}

// Few enough shards that the clusters' two jobs and their leaves spread
// over several, and most hold no port (as in a large fabric, whose owners
// still run them).
constexpr analysis::ShardCounts kShardCounts{8, 8};

// The collector of a cluster of `collectors` that holds `node` ("gpu-013",
// "leaf-1"): its number modulo `collectors`, as agents spread over the
// collectors' addresses.
int CollectorOfNode(absl::string_view node, int collectors) {
  int number = 0;
  if (!absl::SimpleAtoi(node.substr(node.rfind('-') + 1), &number)) {
    number = 0;
  }
  return number % collectors;
}

// One run of a scenario through the collector's pass.
struct RunResult {
  // Every finding open after any pass, one per key (its last version).
  std::vector<Finding> open;
  // Per key, what the findings store did with it: the ids it gave it (a
  // second one: it resolved and opened again), the first pass it was
  // active after, and whether it was active after the last pass.
  struct Track {
    Finding finding;
    std::set<std::string> ids;
    int first_pass = -1;
    int last_pass = -1;
    bool open_at_end = false;
  };
  std::map<StoreKey, Track> tracks;
};

// What a collector process holds for the rate analyzers: its state
// directory with the findings store, and in memory the hysteresis and the
// straggler baselines. Sharded, it stands for every collector of the
// cluster, which share the findings store: in memory each one's share of
// the analysis, and the news each told at its last pass (which the others
// hear at their next: cluster/part_news_exchange.h keeps none, so a
// restart loses them).
struct CollectorProcess {
  std::unique_ptr<collector::StateStore> state;
  std::unique_ptr<collector::FileBaselinesStore> baselines_store;
  std::unique_ptr<collector::FindingsStore> findings;
  std::optional<Hysteresis> gate;
  StragglerBaselines baselines;
  bool seeded = false;
  // By collector: its id is col-<index>, or "" alone (the embedded
  // collector's, OneCollectorShards).
  std::vector<std::unique_ptr<collector::ShardedRatePass>> shares;
  std::vector<PartNews> news;

  // Starts (again) on `dir`: what the process had in memory is gone.
  absl::Status Start(const std::string& dir, const Clock* clock,
                     const AnalysisConfig& config,
                     const std::vector<LayoutModel>& jobs, Sharding sharding) {
    Stop();
    absl::StatusOr<std::unique_ptr<collector::StateStore>> opened =
        collector::StateStore::Open(dir, clock);
    if (!opened.ok()) return opened.status();
    state = *std::move(opened);
    baselines_store =
        std::make_unique<collector::FileBaselinesStore>(state.get());
    findings = std::make_unique<collector::FindingsStore>(
        state.get(), collector::FindingsStoreOptions{});
    gate.emplace(config.hysteresis);
    baselines = StragglerBaselines();
    seeded = false;
    shares.clear();
    news.clear();
    const int collectors = CollectorsOf(sharding);
    for (int c = 0; c < collectors; ++c) {
      shares.push_back(std::make_unique<collector::ShardedRatePass>(
          collector::ShardedRatePass::Options{
              collectors == 1 ? "" : absl::StrCat("col-", c), config,
              kShardCounts}));
    }
    if (absl::Status st = findings->Load(); !st.ok()) return st;
    // Every NIC's baseline as the previous process last wrote it, before
    // SeedRateState (AnalysisRunner::LoadBaselines).
    std::vector<const LayoutModel*> layouts;
    layouts.reserve(jobs.size());
    for (const LayoutModel& m : jobs) layouts.push_back(&m);
    absl::StatusOr<collector::LoadedBaselines> loaded =
        collector::LoadStragglerBaselines(baselines_store.get(), clock->Now(),
                                          collector::kStragglerBaselinesMaxAge,
                                          layouts, &baselines);
    if (!loaded.ok()) return loaded.status();
    if (loaded->damaged) return absl::DataLossError(loaded->problem);
    return absl::OkStatus();
  }
  // What AnalysisRunner writes every kStragglerBaselinesEvery.
  absl::Status SaveBaselines(absl::Time now) {
    return collector::SaveStragglerBaselines(baselines_store.get(), baselines,
                                             now);
  }
  // kill -9: nothing but the state directory survives.
  void Stop() {
    findings.reset();
    baselines_store.reset();
    state.reset();
  }
};

// `fresh` with the ports of some nodes taken from older views instead, or
// left out (null).
FabricView WithOlderPorts(
    const FabricView& fresh,
    const std::map<std::string, const FabricView*>& older) {
  FabricView out;
  out.window_seconds = fresh.window_seconds;
  for (const PortView& p : fresh.ports()) {
    const PortView* port = &p;
    auto it = older.find(p.node);
    if (it != older.end()) {
      port =
          it->second == nullptr ? nullptr : it->second->Find(p.node, p.device);
    }
    if (port != nullptr) out.AddPort(p.node, p.device) = *port;
  }
  out.Finish();
  return out;
}

// The ports of `view` whose node is in `nodes`, as a view of their own.
FabricView NodesOf(const FabricView& view,
                   const absl::flat_hash_set<std::string>& nodes) {
  FabricView out;
  out.window_seconds = view.window_seconds;
  out.ReservePorts(view.ports().size());
  for (const PortView& p : view.ports()) {
    if (nodes.contains(p.node)) out.AddPort(p.node, p.device) = p;
  }
  out.Finish();
  return out;
}

// One pass of the sharded rate analysis, the way each collector's analysis
// runner does it: every collector of `process` runs its share over its own
// nodes' ports (of `window` and `newest`) and the shards it owns (every
// collector's ports of each, as cut for the shard), hearing the others'
// news of the pass before, and writes each findings source it reports into
// the shared findings store. Shard k (the job shards first) is owned by
// collector k modulo their number, all along: a shard changing hands is
// sharded_rate_pass_test's business. `nodes`: every node of the pass,
// those whose reports are late included (their collector still holds
// them). Returns every finding reported open.
absl::StatusOr<std::vector<Finding>> ShardedPass(
    const Cluster& cluster, const AnalysisConfig& config,
    const TopologyIndex& topology, const FabricView& window,
    const FabricView& newest, const absl::flat_hash_set<std::string>& nodes,
    const absl::flat_hash_set<std::string>& quiet, absl::Time now,
    CollectorProcess* process) {
  std::vector<const LayoutModel*> layouts;
  for (const LayoutModel& m : cluster.jobs()) layouts.push_back(&m);
  // Each shard's ports of either view: every collector's, as AssignShards
  // of its own view sends them to the shard's owner.
  std::map<std::string, ShardPorts> window_shards, newest_shards;
  for (ShardPorts& s : AssignShards(window, layouts, topology, kShardCounts)) {
    window_shards.emplace(s.shard, std::move(s));
  }
  for (ShardPorts& s : AssignShards(newest, layouts, topology, kShardCounts)) {
    newest_shards.emplace(s.shard, std::move(s));
  }
  static const FabricView kNoPorts;
  const int collectors = static_cast<int>(process->shares.size());
  std::vector<Finding> open;
  std::vector<PartNews> told;
  for (int c = 0; c < collectors; ++c) {
    absl::flat_hash_set<std::string> held;
    for (const std::string& node : nodes) {
      if (CollectorOfNode(node, collectors) == c) held.insert(node);
    }
    const FabricView local_window = NodesOf(window, held);
    const FabricView local_newest = NodesOf(newest, held);
    collector::ShardedRatePass::Input in;
    in.now = now;
    in.window = &local_window;
    in.recent = &local_newest;
    in.held = &held;
    // Alone, as the embedded collector runs it (collector/runner/
    // analysis_runner.h): every shard its own, each kind of part over its
    // whole view, no shard's ports copied.
    in.whole = collectors == 1;
    std::deque<FabricView> views;  // the owned shards' (stable addresses)
    for (int k = 0; k < kShardCounts.jobs + kShardCounts.switches; ++k) {
      if (k % collectors != c) continue;
      const std::string shard =
          k < kShardCounts.jobs
              ? absl::StrCat("jobs.", k)
              : absl::StrCat("switches.", k - kShardCounts.jobs);
      const uint64_t term = static_cast<uint64_t>(k) + 1;
      if (in.whole) {
        in.shards.push_back({shard, term, nullptr, nullptr});
        continue;
      }
      auto w = window_shards.find(shard);
      if (w == window_shards.end()) {
        // No port of the shard anywhere: its findings count down all the
        // same (the runner gives it an empty view).
        in.shards.push_back({shard, term, &kNoPorts, nullptr});
        continue;
      }
      views.push_back(analysis::testing::ShardView(window, w->second.ports,
                                                   w->second.kind));
      const FabricView* shard_window = &views.back();
      const FabricView* shard_newest = &kNoPorts;
      if (auto r = newest_shards.find(shard); r != newest_shards.end()) {
        views.push_back(analysis::testing::ShardView(newest, r->second.ports,
                                                     r->second.kind));
        shard_newest = &views.back();
      }
      in.shards.push_back({shard, term, shard_window, shard_newest});
    }
    in.news = process->news;
    in.base = cluster.Input(nullptr, &config);
    in.base.topology_index = &topology;
    in.quiet = &quiet;
    collector::ShardedRatePass::Output out =
        process->shares[c]->Run(in, *process->findings);
    for (collector::ShardedRatePass::SourceReport& r : out.reports) {
      const absl::Status written =
          r.within_held
              ? process->findings->UpdateWithin(r.open, now, r.source, out.held)
              : process->findings->Update(r.open, now, r.source);
      if (!written.ok()) return written;
      for (Finding& f : r.open) open.push_back(std::move(f));
    }
    told.push_back(std::move(out.news));
  }
  // Heard by the others at their next pass.
  process->news = std::move(told);
  return open;
}

// Runs `passes` passes (timeline.passes when set) with `faults` held, the
// way the collector's analysis runner does: per pass the window and the
// newest samples through collector::RunRatePass, the hysteresis, the
// findings store (a state directory of its own), and agent_down over what
// the collector knows of each agent. The faults start on a cluster the
// collector has watched for a while (Cluster::Watched), as they do in
// production: a straggler in an expert-parallel job is judged against its
// own history. Sharded (`sharding`), the rate analyzers run as each
// collector's share instead (ShardedPass), every collector of the cluster
// starting from the same stored baselines; a restart restarts them all.
absl::StatusOr<RunResult> RunPasses(const Cluster& cluster,
                                    const AnalysisConfig& config,
                                    const std::vector<Fault>& faults,
                                    const TrafficOptions& traffic,
                                    uint32_t seed, int passes,
                                    const Timeline& timeline,
                                    Sharding sharding = Sharding::kNone) {
  if (timeline.passes > 0) passes = timeline.passes;
  const CollectorRestart& restart = timeline.restart;
  const TopologyIndex topology(&cluster.topology());
  fabricdiag::testing::TempDir dir;
  FakeClock clock(PassTime(0, kInterval));
  CollectorProcess collector;
  if (absl::Status s =
          collector.Start(dir.path(), &clock, config, cluster.jobs(), sharding);
      !s.ok()) {
    return s;
  }
  collector.baselines = cluster.Watched(traffic, seed, config);
  // The watching process's latest periodic write of the baselines.
  if (absl::Status s = collector.SaveBaselines(clock.Now()); !s.ok()) {
    return s;
  }
  // The windows (and newest samples) of each pass, drawn when first
  // needed: a late node's window is one of an earlier pass.
  std::map<int, std::pair<FabricView, FabricView>> drawn;
  const std::vector<Fault> no_faults;
  auto draw = [&](int pass) -> const std::pair<FabricView, FabricView>& {
    auto it = drawn.find(pass);
    if (it != drawn.end()) return it->second;
    // Where sampling is said, pass p's window ends with report 5 + p.
    TrafficOptions window_traffic = traffic;
    window_traffic.last_report = 5 + pass;
    if (restart.at_pass >= 0 && pass >= restart.at_pass) {
      // The first replayed report (that of pass at_pass) only starts the
      // window's first interval: the collector holds no report before it
      // (FabricViewBuilder, a new node's samples).
      window_traffic.first_report = 5 + restart.at_pass + 1;
    }
    TrafficOptions newest_traffic = window_traffic;
    newest_traffic.newest_only = true;
    // The newest samples: an independent draw of the same traffic, as
    // noisy as a whole window of it (the builder's noise is per pass), so
    // the fast path for strong faults is held to the same precision.
    const std::vector<Fault>& held =
        timeline.faults_until >= 0 && pass >= timeline.faults_until ? no_faults
                                                                    : faults;
    return drawn
        .emplace(pass,
                 std::make_pair(
                     cluster.View(held, window_traffic, seed * 1000 + pass),
                     cluster.View(held, newest_traffic,
                                  seed * 1000 + pass + kNewestSeed)))
        .first->second;
  };
  // What the collector's clock sees of late reports: silences.
  std::vector<AgentOutage> silences;
  for (const LateReports& l : timeline.late) {
    silences.push_back({l.node, l.from_pass, l.delayed});
  }
  std::map<StoreKey, Finding> seen;
  RunResult result;
  for (int pass = 0; pass < passes; ++pass) {
    clock.Advance(kInterval);
    const absl::Time now = PassTime(pass, kInterval);
    if (pass == restart.at_pass) collector.Stop();
    if (restart.at_pass >= 0 && pass >= restart.at_pass &&
        pass < restart.at_pass + restart.down) {
      continue;  // down: no pass
    }
    if (restart.at_pass >= 0 && pass == restart.at_pass + restart.down) {
      if (absl::Status s = collector.Start(dir.path(), &clock, config,
                                           cluster.jobs(), sharding);
          !s.ok()) {
        return s;
      }
    }
    if (!collector.seeded) {
      if (collector.shares.empty()) {
        collector::SeedRateState(collector.findings->Active(), &*collector.gate,
                                 &collector.baselines);
      }
      // Sharded, each share starts from the stored baselines, and seeds its
      // shards' and nodes' state from the findings as it takes them.
      for (auto& share : collector.shares) {
        share->LoadBaselines(collector.baselines);
      }
      collector.seeded = true;
    }
    // Late nodes hold the window of the last pass whose report came, or
    // are left out once that is more than kStaleIntervals old.
    std::map<std::string, const FabricView*> older_window, older_newest;
    for (const LateReports& l : timeline.late) {
      if (pass < l.from_pass || pass >= l.from_pass + l.delayed ||
          l.from_pass == 0) {
        continue;
      }
      if (pass - (l.from_pass - 1) >= kStaleIntervals) {
        older_window[l.node] = nullptr;
        older_newest[l.node] = nullptr;
        continue;
      }
      const auto& [window, newest] = draw(l.from_pass - 1);
      older_window[l.node] = &window;
      older_newest[l.node] = &newest;
    }
    const auto& [fresh_window, fresh_newest] = draw(pass);
    std::optional<FabricView> late_window, late_newest;
    if (!older_window.empty()) {
      late_window = WithOlderPorts(fresh_window, older_window);
      late_newest = WithOlderPorts(fresh_newest, older_newest);
    }
    const FabricView& window = late_window ? *late_window : fresh_window;
    const FabricView& newest = late_newest ? *late_newest : fresh_newest;
    // As the runner: a node that missed its latest report but is not down
    // holds its findings.
    const std::vector<NodeLiveness> liveness =
        cluster.Liveness(silences, pass, kInterval);
    absl::flat_hash_set<std::string> quiet;
    for (const NodeLiveness& l : liveness) {
      if (IsAgentQuiet(l, now, config.agent_down)) quiet.insert(l.node);
    }
    std::vector<Finding> open;
    if (collector.shares.empty()) {
      collector::RateFindings found = collector::RunRatePass(
          cluster.Input(&window, &config), &newest, &collector.baselines,
          /*threads=*/1);
      open = collector.gate->Step(std::move(found.window),
                                  std::move(found.recent), quiet);
      if (absl::Status s = collector.findings->Update(open, now, kRateSource);
          !s.ok()) {
        return s;
      }
    } else {
      absl::flat_hash_set<std::string> nodes;
      for (const PortView& p : fresh_window.ports()) nodes.insert(p.node);
      absl::StatusOr<std::vector<Finding>> reported =
          ShardedPass(cluster, config, topology, window, newest, nodes, quiet,
                      now, &collector);
      if (!reported.ok()) return reported.status();
      open = *std::move(reported);
    }
    std::vector<Finding> down =
        AgentDownFindings(liveness, now, config.agent_down);
    if (absl::Status s = collector.findings->Update(
            down, now, collector::kAgentLivenessSource);
        !s.ok()) {
      return s;
    }
    for (std::vector<Finding>* found_now : {&open, &down}) {
      for (Finding& f : *found_now) {
        seen[{f.kind, f.job, f.node, f.device, f.group}] = std::move(f);
      }
    }
    // Sharded, the runner leaves the stored baselines alone (each shard's
    // owner keeps its own in memory): a restart loads those written before.
    if ((pass + 1) % kBaselinesEveryPasses == 0 && collector.shares.empty()) {
      if (absl::Status s = collector.SaveBaselines(now); !s.ok()) return s;
    }
    for (auto& [key, track] : result.tracks) track.open_at_end = false;
    for (const v1::Finding& f : collector.findings->Active()) {
      RunResult::Track& track =
          result.tracks[{f.kind(), f.job(), f.node(), f.device(), f.group()}];
      track.finding = FindingFromWire(f);
      track.ids.insert(f.id());
      if (track.first_pass < 0) track.first_pass = pass;
      track.last_pass = pass;
      track.open_at_end = true;
    }
    // Views no late node can go back to any more.
    for (auto it = drawn.begin(); it != drawn.end() && it->first < pass - 4;) {
      it = drawn.erase(it);
    }
  }
  result.open.reserve(seen.size());
  for (auto& [key, f] : seen) result.open.push_back(std::move(f));
  return result;
}

std::string Cell(const std::vector<std::string>& items) {
  return items.empty() ? "-" : absl::StrJoin(items, "; ");
}

// Each scenario through the unsharded analysis and through the sharded one
// on one collector and on three, held to the same expectations: sharding
// changes where the analyzers run, not what they find.
class ScenarioSuiteTest : public ::testing::TestWithParam<Sharding> {};

TEST_P(ScenarioSuiteTest, EveryFaultFoundAndHealthyClustersRaiseNothing) {
  const AnalysisConfig config;
  // Enough passes for a finding to open (open_after) and a flicker to show.
  const int passes = config.hysteresis.open_after + 2;
  const std::map<std::string, ClusterSpec> specs = ClusterSpecs();
  std::map<std::string, Cluster> clusters;
  int expected = 0, found = 0, tp_findings = 0, false_positives = 0;
  int reopened = 0;
  // Per finding kind: primaries expected / found, false positives, and
  // primaries that resolved or reopened while their fault held.
  std::map<std::string, std::tuple<int, int, int, int>> by_kind;
  // Per finding kind and timing fault ("", "late", "restart"): the passes
  // its primaries took to open (from pass 0).
  std::map<std::string, std::map<std::string, std::vector<int>>> open_passes;
  std::ostringstream table;
  table << std::left << std::setw(38) << "scenario"
        << " | expected | found | open@ | ids"
        << " | missed | false positives (secondary tolerated)\n";
  for (const Scenario& sc : AllScenarios()) {
    auto it = clusters.find(sc.cluster);
    if (it == clusters.end()) {
      ASSERT_EQ(specs.count(sc.cluster), 1u) << sc.cluster;
      absl::StatusOr<Cluster> built = Cluster::Build(specs.at(sc.cluster));
      ASSERT_TRUE(built.ok()) << built.status();
      it = clusters.emplace(sc.cluster, *std::move(built)).first;
    }
    const Cluster& cluster = it->second;
    std::vector<FaultExpectation> want;
    for (const Fault& f : sc.faults) want.push_back(cluster.Expect(f));
    absl::StatusOr<RunResult> run =
        RunPasses(cluster, config, sc.faults, sc.traffic, sc.seed, passes,
                  sc.timeline, GetParam());
    ASSERT_TRUE(run.ok()) << sc.name << ": " << run.status();
    const std::vector<Finding>& open = run->open;
    const ScenarioScore s = ScoreFindings(want, open);
    // Every fault is held to the end: its primary finding opens once,
    // keeps one id and is still open after the last pass.
    const int restart_at = sc.timeline.restart.at_pass;
    std::vector<std::string> opened_at, ids;
    for (const FaultExpectation& e : want) {
      int first = -1;
      size_t id_count = 0;
      bool steady = true;
      for (const auto& [key, track] : run->tracks) {
        if (!Matches(e.primary, track.finding)) continue;
        if (first < 0 || track.first_pass < first) first = track.first_pass;
        id_count += track.ids.size();
        if (track.ids.size() != 1 || !track.open_at_end) {
          steady = false;
          ADD_FAILURE() << sc.name << ": " << Describe(track.finding)
                        << " had ids {" << absl::StrJoin(track.ids, ", ")
                        << "} and is "
                        << (track.open_at_end ? "open" : "resolved")
                        << " at the end while its fault held";
        }
      }
      if (first >= 0) {
        opened_at.push_back(absl::StrCat(first));
        const char* timing = !sc.timeline.late.empty() ? "late"
                             : restart_at < 0          ? ""
                             : first < restart_at      ? "restart after open"
                                                       : "restart before open";
        open_passes[e.primary.kind][timing].push_back(first);
      }
      ids.push_back(absl::StrCat(id_count));
      if (!steady) {
        ++reopened;
        ++std::get<3>(by_kind[e.primary.kind]);
      }
    }
    // Every finding, of any kind, secondary effects (a storm's victims)
    // included, opens once while the faults hold: a key that resolved and
    // opened again under a new id is one fault paged twice.
    if (sc.timeline.faults_until < 0) {
      for (const auto& [key, track] : run->tracks) {
        if (track.ids.size() > 1) {
          ADD_FAILURE() << sc.name << ": " << Describe(track.finding)
                        << " opened again under ids {"
                        << absl::StrJoin(track.ids, ", ") << "}";
        }
      }
    }
    expected += s.expected;
    found += s.found;
    tp_findings += s.true_positive_findings;
    false_positives += static_cast<int>(s.false_positives.size());
    for (const FaultExpectation& e : want)
      ++std::get<0>(by_kind[e.primary.kind]);
    for (const FaultExpectation& e : want) {
      bool hit = true;
      for (const ExpectedFinding& m : s.missed) {
        hit = hit && !(m.kind == e.primary.kind && m.node == e.primary.node &&
                       m.device == e.primary.device);
      }
      if (hit) ++std::get<1>(by_kind[e.primary.kind]);
    }
    for (const Finding& f : s.false_positives) ++std::get<2>(by_kind[f.kind]);

    std::vector<std::string> missed, fps;
    for (const ExpectedFinding& m : s.missed) missed.push_back(Describe(m));
    for (const Finding& f : s.false_positives) fps.push_back(Describe(f));
    table << std::setw(38) << sc.name << " | " << std::setw(8) << s.expected
          << " | " << std::setw(5) << s.found << " | " << std::setw(5)
          << Cell(opened_at) << " | " << std::setw(3) << Cell(ids) << " | "
          << Cell(missed) << " | " << Cell(fps);
    if (!s.secondary.empty()) {
      std::vector<std::string> tolerated;
      for (const Finding& f : s.secondary) tolerated.push_back(Describe(f));
      table << " (tolerated: " << Cell(tolerated) << ")";
    }
    table << "\n";
    // Failure messages that name the finding, with its summary.
    for (const ExpectedFinding& m : s.missed) {
      ADD_FAILURE() << sc.name << ": missed " << Describe(m);
    }
    for (const Finding& f : s.false_positives) {
      ADD_FAILURE() << sc.name << ": false positive " << Describe(f) << ": "
                    << f.summary;
    }
  }
  const double recall = expected == 0 ? 1 : double(found) / expected;
  const double precision =
      tp_findings + false_positives == 0
          ? 1
          : double(tp_findings) / (tp_findings + false_positives);
  table << "\nper kind: expected / found / false positives / resolved or "
           "reopened while held\n";
  for (const auto& [kind, n] : by_kind) {
    table << "  " << std::setw(20) << kind << " " << std::get<0>(n) << " / "
          << std::get<1>(n) << " / " << std::get<2>(n) << " / "
          << std::get<3>(n) << "\n";
  }
  // Passes from pass 0 (the fault's first) to the pass after which the
  // primary finding was open: worst case, per timing fault. A restart
  // before open stops the collector after pass 0; it is back at pass 2,
  // and its windows fill again over the next passes.
  table << "\nper kind: passes to open, worst (scenarios): plain | late "
           "reports | restart after open | restart before open\n";
  for (const auto& [kind, by_timing] : open_passes) {
    table << "  " << std::setw(20) << kind;
    for (const char* timing :
         {"", "late", "restart after open", "restart before open"}) {
      auto it = by_timing.find(timing);
      if (it == by_timing.end()) {
        table << " | -";
        continue;
      }
      table << " | "
            << *std::max_element(it->second.begin(), it->second.end()) + 1
            << " (" << it->second.size() << ")";
    }
    table << "\n";
  }
  table << "\nfaults expected " << expected << ", found " << found
        << "; findings matching a fault " << tp_findings << ", false positives "
        << false_positives << ", resolved or reopened while held " << reopened
        << "\n"
        << "recall " << std::setprecision(3) << recall << ", precision "
        << precision << "\n";
  std::cout << table.str() << std::flush;
  EXPECT_EQ(recall, 1.0) << "faults the analyzers missed (table above)";
  EXPECT_EQ(precision, 1.0) << "findings no fault explains (table above)";
  EXPECT_EQ(reopened, 0) << "findings that did not stay open with one id";
}

INSTANTIATE_TEST_SUITE_P(Sharding, ScenarioSuiteTest,
                         ::testing::Values(Sharding::kNone,
                                           Sharding::kOneCollector,
                                           Sharding::kThreeCollectors),
                         [](const ::testing::TestParamInfo<Sharding>& param) {
                           return ShardingName(param.param);
                         });

// A fault that ends resolves once it has been clear for clear_after passes,
// and not before (the hysteresis keeps it open while it may come back).
class FaultResolvesTest : public ::testing::TestWithParam<FaultKind> {};

TEST_P(FaultResolvesTest, ResolvesAfterClearAfterCleanPasses) {
  const AnalysisConfig config;
  absl::StatusOr<Cluster> built = Cluster::Build(TwoJobCluster(16));
  ASSERT_TRUE(built.ok()) << built.status();
  const Cluster& cluster = *built;
  const Fault fault = At16(GetParam());
  const ExpectedFinding want = cluster.Expect(fault).primary;
  const std::vector<Fault> faulty = {fault};
  Hysteresis gate(config.hysteresis);
  StragglerBaselines baselines = cluster.Watched({}, 5, config);
  auto is_open = [&](const std::vector<Finding>& open) {
    for (const Finding& f : open) {
      if (Matches(want, f)) return true;
    }
    return false;
  };
  auto step = [&](const std::vector<Fault>& faults, uint32_t seed) {
    FabricView view = cluster.View(faults, TrafficOptions{}, seed);
    const AnalysisInput in = cluster.Input(&view, &config, &baselines);
    std::vector<Finding> open = gate.Step(RunRateAnalyzers(in));
    baselines.Update(in);
    return open;
  };
  uint32_t seed = 500;
  bool opened = false;
  for (int pass = 0; pass < config.hysteresis.open_after; ++pass) {
    opened = is_open(step(faulty, ++seed));
  }
  ASSERT_TRUE(opened) << Describe(want) << " never opened";
  for (int pass = 1; pass < config.hysteresis.clear_after; ++pass) {
    EXPECT_TRUE(is_open(step({}, ++seed)))
        << Describe(want) << " resolved after only " << pass << " clean passes";
  }
  EXPECT_FALSE(is_open(step({}, ++seed)))
      << Describe(want) << " still open after " << config.hysteresis.clear_after
      << " clean passes";
}

// Passes from a fault's start until its finding opens, and from its end
// until it resolves, over `kTimingSeeds` runs per kind: with the newest
// samples (the collector's default) and with the window mean alone. The
// faults here are at full strength from their first pass: one at least
// strong_over_threshold past its threshold opens in strong_open_after
// passes, any other in open_after, and every one resolves after
// clear_after clean passes. Prints the table.
TEST(ScenarioTimingTest, StrongFaultsOpenOnTheNewestSamples) {
  constexpr int kTimingSeeds = 10;
  constexpr int kMaxPasses = 20;
  const AnalysisConfig config;
  absl::StatusOr<Cluster> built = Cluster::Build(TwoJobCluster(16));
  ASSERT_TRUE(built.ok()) << built.status();
  const Cluster& cluster = *built;
  const StragglerBaselines watched = cluster.Watched({}, 1, config);
  // Passes until open (-1: never within kMaxPasses), until resolved, and
  // the finding's over_threshold when it opened.
  struct Timing {
    int open = -1;
    int resolve = -1;
    double over = 0;
  };
  auto run = [&](FaultKind kind, uint32_t seed, bool newest) {
    const Fault fault = At16(kind);
    const ExpectedFinding want = cluster.Expect(fault).primary;
    Hysteresis gate(config.hysteresis);
    StragglerBaselines baselines = watched;
    auto step = [&](const std::vector<Fault>& faults, uint32_t s) {
      FabricView view = cluster.View(faults, TrafficOptions{}, s);
      std::vector<Finding> recent;
      if (newest) {
        FabricView latest = cluster.View(faults, TrafficOptions{}, s + 7);
        recent = RunRateAnalyzers(cluster.Input(&latest, &config, &baselines));
      }
      const AnalysisInput in = cluster.Input(&view, &config, &baselines);
      std::vector<Finding> open = gate.Step(RunRateAnalyzers(in), recent);
      baselines.Update(in);
      for (const Finding& f : open) {
        if (Matches(want, f)) {
          auto it = f.evidence.find(kOverThresholdEvidence);
          // No threshold: an event (a flap), which opens at once.
          return it == f.evidence.end()
                     ? std::numeric_limits<double>::infinity()
                     : it->second;
        }
      }
      return -1.0;
    };
    Timing out;
    uint32_t s = seed * 100;
    for (int pass = 1; pass <= kMaxPasses && out.open < 0; ++pass) {
      const double over = step({fault}, ++s);
      if (over >= 0) {
        out.open = pass;
        out.over = over;
      }
    }
    for (int pass = 1; pass <= kMaxPasses && out.open > 0; ++pass) {
      if (step({}, ++s) < 0) {
        out.resolve = pass;
        break;
      }
    }
    return out;
  };
  std::ostringstream table;
  table << std::left << std::setw(20) << "kind"
        << "  over_threshold | open (newest) | open (window only) | resolve\n";
  for (FaultKind kind : kAllFaultKinds) {
    std::map<int, int> fast, slow, resolve;  // passes -> runs
    double min_over = std::numeric_limits<double>::infinity();
    for (uint32_t seed = 1; seed <= kTimingSeeds; ++seed) {
      const Timing t = run(kind, seed, /*newest=*/true);
      ++fast[t.open];
      ++resolve[t.resolve];
      ++slow[run(kind, seed, /*newest=*/false).open];
      min_over = std::min(min_over, t.over);
      EXPECT_GT(t.open, 0) << FindingKindOf(kind) << " never opened";
      EXPECT_LE(t.open, t.over >= config.hysteresis.strong_over_threshold
                            ? config.hysteresis.strong_open_after
                            : config.hysteresis.open_after)
          << FindingKindOf(kind) << " (seed " << seed << ", over_threshold "
          << t.over << ")";
      EXPECT_EQ(t.resolve, config.hysteresis.clear_after)
          << FindingKindOf(kind) << " (seed " << seed << ")";
    }
    auto cell = [](const std::map<int, int>& runs) {
      std::vector<std::string> parts;
      parts.reserve(runs.size());
      for (const auto& [passes, n] : runs) {
        parts.push_back(absl::StrCat(passes, " passes x", n));
      }
      return absl::StrJoin(parts, ", ");
    };
    table << std::setw(20) << FindingKindOf(kind) << "  >= " << std::setw(11)
          << (std::isinf(min_over) ? std::string("(event)")
                                   : absl::StrFormat("%.2f", min_over))
          << " | " << std::setw(14) << cell(fast) << "| " << std::setw(19)
          << cell(slow) << "| " << cell(resolve) << "\n";
  }
  std::cout << table.str() << std::flush;
}

// A fault that ends while the collector is down: its finding, open before
// the restart, resolves once, clear_after passes after the new process
// started (it seeded the finding and counts it down), and never reopens.
// Prints the passes from the fault's end to the resolve.
TEST(ScenarioTimingTest, FindingsResolveOnceAcrossARestart) {
  const AnalysisConfig config;
  absl::StatusOr<Cluster> built = Cluster::Build(TwoJobCluster(16));
  ASSERT_TRUE(built.ok()) << built.status();
  const Cluster& cluster = *built;
  Timeline timeline;
  timeline.restart = {5, 1};
  timeline.faults_until = 5;
  timeline.passes = 6 + config.hysteresis.clear_after + 3;
  TrafficOptions replay;
  replay.sample_jitter = true;
  std::ostringstream table;
  table << std::left << std::setw(20) << "kind"
        << "  passes from the fault's end to its resolve (down 1 of them)\n";
  for (FaultKind kind : kAllFaultKinds) {
    const Fault fault = At16(kind);
    const ExpectedFinding want = cluster.Expect(fault).primary;
    absl::StatusOr<RunResult> run =
        RunPasses(cluster, config, {fault}, replay, 71, 0, timeline);
    ASSERT_TRUE(run.ok()) << run.status();
    int tracks = 0;
    for (const auto& [key, track] : run->tracks) {
      if (!Matches(want, track.finding)) continue;
      ++tracks;
      EXPECT_EQ(track.ids.size(), 1u) << Describe(track.finding);
      EXPECT_LT(track.first_pass, timeline.restart.at_pass)
          << Describe(track.finding);
      EXPECT_FALSE(track.open_at_end) << Describe(track.finding);
      // Resolved in pass last_pass + 1: the passes since the fault ended,
      // that one included. Without a restart clear_after
      // (FaultResolvesTest); the passes the collector was down count too.
      const int resolved = track.last_pass + 2 - timeline.faults_until;
      EXPECT_EQ(resolved, config.hysteresis.clear_after + timeline.restart.down)
          << Describe(track.finding);
      table << std::setw(20) << FindingKindOf(kind) << "  " << resolved << "\n";
    }
    EXPECT_GE(tracks, 1) << Describe(want) << " never opened";
  }
  std::cout << table.str() << std::flush;
}

INSTANTIATE_TEST_SUITE_P(AllFaults, FaultResolvesTest,
                         ::testing::ValuesIn(kAllFaultKinds),
                         [](const ::testing::TestParamInfo<FaultKind>& param) {
                           return std::string(FindingKindOf(param.param));
                         });

}  // namespace
}  // namespace fabricdiag::analysis::scenario

namespace fabricdiag::analysis::scenario {
namespace {

// Findings of `kind` about exactly the NIC of `fault` in one pass over
// `fault` and `also` (on the same NIC).
int FindingsAbout(const Cluster& cluster, const AnalysisConfig& config,
                  const Fault& fault, const char* kind,
                  std::optional<FaultKind> also = std::nullopt) {
  std::vector<Fault> faults = {fault};
  if (also.has_value()) faults.push_back({*also, fault.node, fault.device});
  const FabricView view = cluster.View(faults, TrafficOptions{}, 77);
  const StragglerBaselines watched = cluster.Watched({}, 77, config);
  int n = 0;
  for (const Finding& f :
       RunRateAnalyzers(cluster.Input(&view, &config, &watched))) {
    if (f.kind == kind && f.node == fault.node && f.device == fault.device) {
      ++n;
    }
  }
  return n;
}

// A NIC whose RX is past half the incast ratio is on its way into or out of
// an incast: its CNPs are the incast's, not a congested fabric's, so the
// congestion finding must not open around the hot_expert_incast one.
TEST(ExplainedSymptomsTest, NearlyIncastIsNotCongestion) {
  absl::StatusOr<Cluster> built = Cluster::Build(TwoJobCluster(16));
  ASSERT_TRUE(built.ok()) << built.status();
  const Fault hot = At16(FaultKind::kHotExpert);  // 6x its group, 100k CNP/s
  AnalysisConfig strict;
  strict.hot_expert_incast.rx_over_median = 8;  // 6x is not incast ...
  EXPECT_EQ(FindingsAbout(*built, strict, hot, kHotExpertIncastKind), 0);
  // ... but more than half of it: its CNPs are explained.
  EXPECT_EQ(FindingsAbout(*built, strict, hot, kCongestionKind), 0);
  // Far from incast, the same CNPs are congestion.
  AnalysisConfig far;
  far.hot_expert_incast.rx_over_median = 20;
  EXPECT_EQ(FindingsAbout(*built, far, hot, kCongestionKind), 1);
}

// The source of a PFC storm and a link that trained slow move less than
// their group: the storm or the link is the finding, not a straggler.
TEST(ExplainedSymptomsTest, StormSourceAndSlowLinkAreNotStragglers) {
  absl::StatusOr<Cluster> built = Cluster::Build(TwoJobCluster(16));
  ASSERT_TRUE(built.ok()) << built.status();
  const AnalysisConfig config;
  // A NIC at 30% of its DP group is a straggler ...
  const Fault straggler = At16(FaultKind::kStragglerNic);
  EXPECT_EQ(FindingsAbout(*built, config, straggler, kStragglerNicKind), 1);
  // ... unless it is also the source of a PFC storm ...
  EXPECT_EQ(FindingsAbout(*built, config, straggler, kPfcStormKind,
                          FaultKind::kPfcStorm),
            1);
  EXPECT_EQ(FindingsAbout(*built, config, straggler, kStragglerNicKind,
                          FaultKind::kPfcStorm),
            0);
  // ... or its link trained at half speed.
  EXPECT_EQ(FindingsAbout(*built, config, straggler, kLinkDegradedKind,
                          FaultKind::kLinkDegraded),
            1);
  EXPECT_EQ(FindingsAbout(*built, config, straggler, kStragglerNicKind,
                          FaultKind::kLinkDegraded),
            0);
}

}  // namespace
}  // namespace fabricdiag::analysis::scenario

namespace fabricdiag::analysis::scenario {
namespace {

// agent_down over a timeline of analysis passes, one per agent interval, on
// the 16-node cluster: which silences open it and which do not.
struct OutageScenario {
  std::string name;
  std::vector<AgentOutage> outages;
  std::vector<std::string> down;  // the nodes agent_down must open for
  int missed_intervals = AgentDownConfig().missed_intervals;
};

std::vector<OutageScenario> OutageScenarios() {
  return {
      {"agents-all-reporting", {}, {}},
      {"agent-killed", {{"gpu-005", 2, -1}}, {"gpu-005"}},
      {"agent-silent-10-intervals", {{"gpu-005", 2, 10}}, {"gpu-005"}},
      // A restart: the agent misses two reports and is back.
      {"agent-restart-2-intervals", {{"gpu-009", 2, 2}}, {}},
      // A package upgrade restarting the agent on a busy node: 6 s.
      {"agent-restart-6-intervals", {{"gpu-009", 2, 6}}, {}},
      // Not deployed yet, or dead since before the collector started.
      {"agent-never-heard-from", {{"gpu-012", 0, -1}}, {}},
      {"killed+restart+never-heard-from",
       {{"gpu-001", 4, -1}, {"gpu-014", 3, 2}, {"gpu-007", 0, -1}},
       {"gpu-001"}},
      // agent_down.missed_intervals from the config.
      {"agent-silent-4-intervals-of-5", {{"gpu-003", 2, 4}}, {}, 5},
      {"agent-silent-5-intervals-of-5", {{"gpu-003", 2, 5}}, {"gpu-003"}, 5},
  };
}

TEST(AgentDownScenariosTest, LongSilencesOpenItShortGapsAndUnknownNodesDoNot) {
  absl::StatusOr<Cluster> built = Cluster::Build(TwoJobCluster(16));
  ASSERT_TRUE(built.ok()) << built.status();
  const Cluster& cluster = *built;
  const absl::Duration interval = absl::Seconds(1);
  constexpr int kPasses = 20;
  for (const OutageScenario& sc : OutageScenarios()) {
    SCOPED_TRACE(sc.name);
    AgentDownConfig config;
    config.missed_intervals = sc.missed_intervals;
    std::map<std::string, Finding> opened;  // by node, over every pass
    std::vector<Finding> last_pass;
    for (int pass = 0; pass < kPasses; ++pass) {
      last_pass =
          AgentDownFindings(cluster.Liveness(sc.outages, pass, interval),
                            PassTime(pass, interval), config);
      for (const Finding& f : last_pass) opened.emplace(f.node, f);
    }
    std::vector<FaultExpectation> want;
    want.reserve(sc.down.size());
    for (const std::string& node : sc.down) {
      FaultExpectation e;
      e.primary = {kAgentDownKind, node, "", ""};
      want.push_back(std::move(e));
    }
    std::vector<Finding> open;
    open.reserve(opened.size());
    for (const auto& [node, f] : opened) open.push_back(f);
    const ScenarioScore s = ScoreFindings(want, open);
    EXPECT_EQ(s.found, s.expected);
    for (const ExpectedFinding& m : s.missed) {
      ADD_FAILURE() << sc.name << ": missed " << Describe(m);
    }
    for (const Finding& f : s.false_positives) {
      ADD_FAILURE() << sc.name << ": false positive " << Describe(f) << ": "
                    << f.summary;
    }
    // An agent that reports again is up at once.
    for (const AgentOutage& o : sc.outages) {
      if (o.missed < 0) continue;
      for (const Finding& f : last_pass) {
        EXPECT_NE(f.node, o.node) << sc.name << ": still down after its "
                                  << "agent reported again: " << f.summary;
      }
    }
  }
}

}  // namespace
}  // namespace fabricdiag::analysis::scenario
