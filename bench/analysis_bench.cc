// The collector's analysis pass at cluster scale, on one core.
//
// BM_AnalysisPass: RunRateAnalyzers() over a FabricView of every NIC and
// switch port, then Hysteresis::Step(). Clusters of 512-4096 GPU nodes x 8
// NICs (one leaf per 16 nodes, 128 host ports + 4 uplinks each) with up to
// 100 MoE and dense jobs of 8-64 nodes covering every node
// (min(100, nodes/8) jobs: 512 nodes hold only 64 jobs of 8 nodes), and a
// few faults so that analyzers build findings too. Building the view
// (tests/testing/scenario_builder.h) is not timed. Target: < 50 ms per pass
// at 4096 nodes, growing linearly with the nodes (the complexity fit
// printed as BM_AnalysisPass_BigO should say N).
//
// BM_AnalysisPassAtScale: the same at 12,500 nodes (100k GPUs, 782 leaves)
// and 25,000 nodes (200k GPUs, 1,563 leaves), 200 jobs.
//
// BM_LeaderPassAtScale/<threads>: what the analysis leader of a
// 3-collector cluster does each pass at 25,000 nodes x 8 NICs + 1,563
// leaves, 200 jobs, fed with the features in the format the feature stream
// carries: the fabric's nodes are dealt to 3 collectors; the 2 remote
// slices arrive as serialized v1::FeatureChunks (cluster/feature_wire.h,
// every signal the scenario sets, window and recent views) that a
// cluster::FeatureCache receives as JetStreamFeatures does (parsed and
// decoded on the receiving thread: not timed, printed per pass as
// receive_ms), and a pass times
//   merge_ms:   FeatureCache::Merged (JetStreamFeatures::Merged): takes the
//               decoded chunks and MergeFeatureSlices them with the local
//               slice (the recent view on a second thread);
//   analyze_ms: collector::RunRatePass (as
//   collector/runner/analysis_runner.cc):
//               RunRateAnalyzers over the window, StragglerBaselines::
//               Update, RunRateAnalyzers over the recent view, on <threads>
//               threads (straggler baselines watched beforehand);
//   step_ms:    Hysteresis::Step; free_ms: freeing the merged views;
//   fastest_pass_ms, slowest_pass_ms: the wall time of one whole pass.
// Each phase in CPU time of every thread, and as *_wall. Not timed:
// building the leader's own slice from its series store, agent_down, the
// layout analyzers and the findings store's update. Target: the pass
// within the 1 s analysis interval. pass_decoded counts the chunks the
// pass had to decode itself (0: all were ready).
//
// BM_CollectorInterval/<nodes>/<collectors>:
// one collector's CPU per interval in an N-collector cluster with today's
// single analysis leader, as a follower and as the leader (publishing its
// slice, receiving and merging the others', the leader's pass on one
// thread), and the bytes it publishes and receives per interval: the
// baseline for sharding the analysis (docs/cluster.md#measured). Measured
// at 25,000 nodes, one pinned core (2026-11-30), N = 1 / 3 / 10: leader
// 733 / 997 / 1,106 ms, follower 118 / 124 / 100 ms, publish 616 / 193 /
// 57 ms; each collector receives 0 / 145 / 196 MB per interval. At
// 125,000 nodes (1M GPUs, 1,000 jobs), N = 3 / 10: leader 6,290 / 7,660
// ms, follower 715 / 833 ms, publish 1,353 / 380 ms; receives 727 / 982
// MB, publishes 364 / 109 MB per interval. Since liveness has its own
// subject (same run, the earlier follower beside it): a follower receives
// 1.2 / 1.6 MB at 200k (146 / 197 before) and 6.2 / 8.4 MB at 1M (730 /
// 986), and spends 72 / 75 ms (121 / 126) and 383 / 310 ms (692 / 510).
//
// BM_FollowerInterval/<nodes>/<collectors>: the follower's liveness work
// alone (received and merged; its own ports not counted), to profile:
// 41 ms at 25,000 nodes and 10 collectors, 32-38 ms once the merge
// reserved its tables.
//
// BM_ParseTopology: ParseTopology (analysis/layout_parse.h) of the 25,000
// node fabric's topology YAML (200,000 links, 1,563 switches); its memory
// is measured on the CLI process by bench/topology_scale.py.
//
// Measured on a 2-core machine shared with other builds
// (docs/cluster.md#measured): BM_AnalysisPassAtScale/25000 294 ms of CPU
// on one pinned core; BM_LeaderPassAtScale/1 1.39-1.42 s of CPU on one
// pinned core (3.18 s before chunks were decoded on receipt and the merge
// moved each port once), BM_LeaderPassAtScale/2 864 ms wall with both
// cores (merge 253 ms, analyze 568 ms): within the 1 s interval, plus
// 0.15-0.2 s of CPU per interval decoding the chunks on the NATS thread
// (145.4 MB of them; 0.5 s for 257.6 MB before a node's ports became one
// block of packed columns);
// BM_ParseTopology 5.5 s of CPU. On 2026-11-27, a slower day for this VM
// (BM_AnalysisPassAtScale/25000 456-647 ms): BM_LeaderPassAtScale/1 merge
// 1,016 ms before the views' port storage was kept between passes,
// 508-658 ms after; BM_LeaderPassAtScale/2 1,867 ms wall before, 1,753-
// 1,806 ms after. Later that day, straggler baselines kept per job by the
// layout's indexes (before / after, one after the other): analyze_ms on
// one core 1,549-1,691 / 1,048 ms; BM_LeaderPassAtScale/2 1,333-1,387 /
// 956-1,094 ms wall. Then PFC victims found in one sweep of the ports, not
// one per priority (before / after, alternating): BM_AnalysisPassAtScale/
// 25000 416-534 / 290-344 ms, analyze_ms on one core 770-983 / 620-632 ms.
// Then FabricView::Find by names' first bytes kept side by side:
// analyze_ms on one core 675-936 / 623-659 ms. That evening, a replaced
// view's storage kept, the merge's order check in the move and layout
// NICs resolved once per view (analysis/nic_ports.h):
// BM_LeaderPassAtScale/2 514-637 / 701-720 ms wall (alternating). Later
// that night, NICs of a host found with one lookup, quiet ports skipped by
// pfc_storm and the merged view indexed as the merge moves the ports:
// 507-610 / 686-814 ms wall against the morning's build (alternating).
//
//   build/bench/fabricdiag_analysis_bench --benchmark_filter=BM_AnalysisPass
//   taskset -c 1 build/bench/fabricdiag_analysis_bench
//       --benchmark_filter='AtScale|ParseTopology'   (one line)
//   build/bench/fabricdiag_analysis_bench --benchmark_filter=LeaderPass
//       (both cores: the wall time of the threaded pass)
//   taskset -c 1 build/bench/fabricdiag_analysis_bench
//       --benchmark_filter=CollectorInterval
//
// BM_ShardedInterval and BM_RunnerInterval: the analysis sharded
// (--analysis_shards); see their comments, and bench/RESULTS.md for the
// figures.
#include <benchmark/benchmark.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/random/random.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "analysis/analysis_config.h"
#include "analysis/analyzer.h"
#include "analysis/congestion.h"
#include "analysis/fabric_view.h"
#include "analysis/hysteresis.h"
#include "analysis/layout_parse.h"
#include "analysis/nic_ports.h"
#include "analysis/rate_parts.h"
#include "analysis/shard_map.h"
#include "analysis/shard_signals.h"
#include "analysis/straggler_nic.h"
#include "bench/feature_slices.h"
#include "cluster/feature_cache.h"
#include "cluster/feature_wire.h"
#include "cluster/part_news.h"
#include "cluster/shard_leases.h"
#include "cluster/shard_wire.h"
#include "collector/declared/layout_registry.h"
#include "collector/declared/node_facts_memory.h"
#include "collector/findings/findings_store.h"
#include "collector/ingest/ingest_placement.h"
#include "collector/ingest/ingest_session.h"
#include "collector/ingest/node_facts_intake.h"
#include "collector/runner/analysis_role.h"
#include "collector/runner/analysis_runner.h"
#include "collector/runner/analysis_shards.h"
#include "collector/runner/collector_metrics.h"
#include "collector/runner/feature_exchange.h"
#include "collector/runner/rate_pass.h"
#include "collector/state/baselines_store.h"
#include "collector/state/state_store.h"
#include "collector/store/series_store.h"
#include "common/clock.h"
#include "proto/cluster.pb.h"
#include "proto/cluster_facts.pb.h"
#include "proto/ingest.pb.h"
#include "sim/virtual_node.h"
#include "tests/testing/fixed_topology.h"
#include "tests/testing/scenario_builder.h"
#include "tests/testing/temp_dir.h"

namespace fabricdiag::analysis::scenario {
namespace {

constexpr int kMaxJobs = 100;
constexpr int kJobsAtScale = 200;
// 200k GPUs.
constexpr int kNodesAtScale = 25000;
// Collectors of the cluster the leader pass is part of.
constexpr int kCollectors = 3;

struct Fixture {
  int nodes = 0;
  int jobs = 0;
  std::unique_ptr<Cluster> cluster;
  std::vector<Fault> faults;
  FabricView view;
  AnalysisConfig config;
};

// The cluster of the last size asked for (benchmarks run size by size; one
// 4096-node view is ~70k ports, so sizes are not all kept).
const Fixture& FixtureFor(int nodes, int jobs = kMaxJobs) {
  static Fixture* fixture = new Fixture;
  if (fixture->nodes == nodes && fixture->jobs == jobs) return *fixture;
  absl::StatusOr<Cluster> built = Cluster::Build(ManyJobCluster(nodes, jobs));
  if (!built.ok()) {
    std::fprintf(stderr, "scenario: %s\n", built.status().ToString().c_str());
    std::abort();
  }
  fixture->nodes = nodes;
  fixture->jobs = jobs;
  fixture->cluster = std::make_unique<Cluster>(*std::move(built));
  const Cluster& c = *fixture->cluster;
  // job-000 (MoE) and job-001 (dense) start at gpu-0000 and gpu-0008 or
  // later; faults on their first hosts, and one skewed leaf.
  fixture->faults = {
      {FaultKind::kHotExpert, c.HostName(1), "mlx5_0"},
      {FaultKind::kCongestion, c.HostName(nodes - 1), "mlx5_3"},
      {FaultKind::kLinkErrors, c.HostName(nodes / 2), "mlx5_5"},
      {FaultKind::kPfcStorm, c.HostName(nodes / 4), "mlx5_2"},
      {FaultKind::kEcmpImbalance, c.LeafName(c.num_leaves() - 1), ""},
  };
  fixture->view = c.View(fixture->faults, TrafficOptions{}, 1);
  return *fixture;
}

void RunPasses(benchmark::State& state, int nodes, int jobs) {
  const Fixture& fx = FixtureFor(nodes, jobs);
  AnalysisInput in = fx.cluster->Input(&fx.view, &fx.config);
  // As in the collector: the topology is indexed once, when it is applied.
  const TopologyIndex topology(in.topology);
  in.topology_index = &topology;
  // Steady state, as in the collector: the faults' findings are already
  // open (not timed).
  Hysteresis gate(fx.config.hysteresis);
  for (int i = 0; i < fx.config.hysteresis.open_after; ++i) {
    gate.Step(RunRateAnalyzers(in));
  }
  size_t candidates = 0, open = 0;
  for (auto _ : state) {
    std::vector<Finding> found = RunRateAnalyzers(in);
    candidates = found.size();
    std::vector<Finding> now = gate.Step(std::move(found));
    open = now.size();
    benchmark::DoNotOptimize(now.data());
  }
  state.SetComplexityN(nodes);
  state.counters["ports"] = static_cast<double>(fx.view.ports().size());
  state.counters["jobs"] = static_cast<double>(fx.cluster->jobs().size());
  state.counters["candidates"] = static_cast<double>(candidates);
  state.counters["open"] = static_cast<double>(open);
}

void BM_AnalysisPass(benchmark::State& state) {
  RunPasses(state, static_cast<int>(state.range(0)), kMaxJobs);
}
BENCHMARK(BM_AnalysisPass)
    ->Arg(512)
    ->Arg(1024)
    ->Arg(2048)
    ->Arg(4096)
    ->Unit(benchmark::kMillisecond)
    ->Complexity(benchmark::oAuto);

// BM_PortPart/<nodes>/<ports per run>: the port part (RunPortPart) over
// the view of a collector's own nodes at 1M GPUs and 10 collectors (12,500
// nodes of 8 NICs, and their leaves), its ports judged in runs of whole
// nodes of about that many ports; 0 is one run of every port, each
// analyzer reading the whole view in turn (as before runs).
void BM_PortPart(benchmark::State& state) {
  const Fixture& fx =
      FixtureFor(static_cast<int>(state.range(0)), kJobsAtScale);
  const size_t run = state.range(1) == 0 ? std::numeric_limits<size_t>::max()
                                         : static_cast<size_t>(state.range(1));
  AnalysisInput in = fx.cluster->Input(&fx.view, &fx.config);
  const TopologyIndex topology(in.topology);
  in.topology_index = &topology;
  const CongestionBaselines medians = CongestionBaselinesOf(fx.view);
  in.congestion_baselines = &medians;
  size_t findings = 0;
  for (auto _ : state) {
    RatePart part = RunPortPart(in, run);
    findings = part.findings.size();
    benchmark::DoNotOptimize(part.findings.data());
  }
  state.counters["ports"] = static_cast<double>(fx.view.ports().size());
  state.counters["findings"] = static_cast<double>(findings);
}
BENCHMARK(BM_PortPart)
    ->ArgsProduct({{12500}, {0, 128, 256, 512, 1024, 4096}})
    ->Unit(benchmark::kMillisecond)
    ->MinTime(2);

void BM_AnalysisPassAtScale(benchmark::State& state) {
  RunPasses(state, static_cast<int>(state.range(0)), kJobsAtScale);
}
BENCHMARK(BM_AnalysisPassAtScale)
    ->Arg(12500)
    ->Arg(kNodesAtScale)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(5);

// CPU time in ms of this thread, and of the process (every thread).
double CpuMs(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 +
         static_cast<double>(ts.tv_nsec) / 1e6;
}
double ThreadCpuMs() { return CpuMs(CLOCK_THREAD_CPUTIME_ID); }
double ProcessCpuMs() { return CpuMs(CLOCK_PROCESS_CPUTIME_ID); }
double WallMs() {
  return absl::ToDoubleMilliseconds(absl::Now() - absl::UnixEpoch());
}
// The process's resident memory in MB (/proc/self/statm), 0 when unread.
double ResidentMb() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return 0;
  unsigned long size = 0, resident = 0;  // NOLINT(runtime/int): scanf's
  const int read = std::fscanf(f, "%lu %lu", &size, &resident);
  std::fclose(f);
  if (read != 2) return 0;
  return static_cast<double>(resident) *
         static_cast<double>(sysconf(_SC_PAGESIZE)) / 1e6;
}

// Profiles of the timed passes alone, whatever the fixture took: with
// FABRICDIAG_PERF_CTL naming perf's control FIFO (mkfifo /tmp/ctl, then
// FABRICDIAG_PERF_CTL=/tmp/ctl perf record -D -1 --control=fifo:/tmp/ctl
// -g fabricdiag_analysis_bench ...) perf samples between ProfileTimed(true) and
// ProfileTimed(false) (the benches that call it: BM_RunnerInterval and
// BM_RunnerIntervalWatched).
void ProfileTimed(bool on) {
  const char* fifo = std::getenv("FABRICDIAG_PERF_CTL");
  if (fifo == nullptr || *fifo == '\0') return;
  std::FILE* f = std::fopen(fifo, "w");
  if (f == nullptr) {
    std::fprintf(stderr, "FABRICDIAG_PERF_CTL=%s: cannot open\n", fifo);
    return;
  }
  std::fputs(on ? "enable\n" : "disable\n", f);
  std::fclose(f);
}

// CPU ms (every thread: the machine is shared, so phases are measured in
// CPU time) and wall ms per phase of a pass, summed over passes.
struct Phases {
  struct Phase {
    const char* name;
    double cpu = 0;
    double wall = 0;
  };
  double last_cpu = ProcessCpuMs();
  double last_wall = WallMs();
  std::vector<Phase> ms;
  void Mark(const char* phase) {
    const double cpu = ProcessCpuMs();
    const double wall = WallMs();
    Phase* p = nullptr;
    for (Phase& q : ms) {
      if (std::string(q.name) == phase) p = &q;
    }
    if (p == nullptr) p = &ms.emplace_back(Phase{phase});
    p->cpu += cpu - last_cpu;
    p->wall += wall - last_wall;
    last_cpu = cpu;
    last_wall = wall;
  }
  // Restarts the clocks (after a part of the loop that is not timed).
  void Skip() {
    last_cpu = ProcessCpuMs();
    last_wall = WallMs();
  }
};

// The fabric's nodes dealt to N collectors, as collector 0 sees them: its
// own slice, and the others' as the messages the feature stream delivers
// (BM_LeaderPassAtScale with N = 3; BM_CollectorInterval).
struct IntervalFixture {
  int nodes = 0;
  int collectors = 0;
  collector::FeatureSlice local;    // collector 0's slice
  std::vector<std::string> remote;  // the others' chunks, serialized
  size_t remote_bytes = 0;
  // The others' liveness chunks, serialized (what a follower receives).
  std::vector<std::string> remote_liveness;
  size_t remote_liveness_bytes = 0;
  FabricView recent;
  StragglerBaselines baselines;
};

const IntervalFixture& IntervalFixtureFor(const Fixture& fx, int collectors) {
  static IntervalFixture* f = new IntervalFixture;
  if (f->nodes == fx.nodes && f->collectors == collectors) return *f;
  *f = IntervalFixture();
  f->nodes = fx.nodes;
  f->collectors = collectors;
  const Cluster& c = *fx.cluster;
  f->recent = c.View(fx.faults, TrafficOptions{}, 2);
  f->recent.window_seconds = fx.config.hysteresis.recent_seconds;
  f->baselines = c.Watched(TrafficOptions{}, 3, fx.config);
  const absl::Time now = absl::Now();
  std::vector<collector::FeatureSlice> slices =
      bench::DealSlices(fx.view, f->recent, collectors, now);
  f->local = std::move(slices[0]);
  for (int k = 1; k < collectors; ++k) {
    for (const v1::FeatureChunk& chunk :
         cluster::SliceToChunks(slices[k], "col-" + std::to_string(k), now)) {
      f->remote.push_back(chunk.SerializeAsString());
      f->remote_bytes += f->remote.back().size();
    }
    for (const v1::FeatureChunkFacts& chunk : cluster::SliceToLivenessChunks(
             slices[k], "col-" + std::to_string(k), now)) {
      f->remote_liveness.push_back(chunk.SerializeAsString());
      f->remote_liveness_bytes += f->remote_liveness.back().size();
    }
  }
  return *f;
}

void BM_LeaderPassAtScale(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  const Fixture& fx = FixtureFor(kNodesAtScale, kJobsAtScale);
  const IntervalFixture& leader = IntervalFixtureFor(fx, kCollectors);
  const TopologyIndex topology(&fx.cluster->topology());
  StragglerBaselines baselines = leader.baselines;
  Hysteresis gate(fx.config.hysteresis);
  cluster::FeatureCache cache("col-0");
  Phases phases;
  double receive_ms = 0;
  size_t ports = 0, open = 0, decoded_in_pass = 0;
  int passes = 0;
  double fastest_ms = 0, slowest_ms = 0;  // one pass, wall
  for (auto _ : state) {
    // Not timed: the leader's own slice, which a collector builds afresh
    // each pass, and what the NATS thread does as each chunk arrives
    // (decoded into the cache: receive_ms).
    state.PauseTiming();
    collector::FeatureSlice local = leader.local;
    const double receive_start = ThreadCpuMs();
    for (const std::string& data : leader.remote) {
      cache.Received(data, absl::Now());
    }
    receive_ms += ThreadCpuMs() - receive_start;
    state.ResumeTiming();
    phases.Skip();
    const double pass_start = WallMs();
    // The pass: JetStreamFeatures::Merged, then as
    // AnalysisRunner::RunRateAnalyzers.
    collector::FeatureSlice fabric =
        cache.Merged(std::move(local), absl::Now() - absl::Seconds(5),
                     collector::MergeScope::kFabric);
    phases.Mark("merge_ms");
    AnalysisInput in = fx.cluster->Input(&fabric.window, &fx.config);
    in.topology_index = &topology;
    // As the runner gives the rate analyzers only layouts that report.
    in.layouts = LayoutsReportingIn(fabric.window, in.layouts);
    collector::RateFindings found =
        collector::RunRatePass(in, &*fabric.recent, &baselines, threads);
    phases.Mark("analyze_ms");
    std::vector<Finding> now =
        gate.Step(std::move(found.window), std::move(found.recent));
    benchmark::DoNotOptimize(now.data());
    phases.Mark("step_ms");
    ports = fabric.window.ports().size();
    open = now.size();
    decoded_in_pass += cache.stats().merge_decoded_chunks;
    ++passes;
    // The collector frees it in its pass too (the previous pass's view
    // when this one replaces it).
    fabric = collector::FeatureSlice();
    phases.Mark("free_ms");
    const double pass_ms = WallMs() - pass_start;
    fastest_ms = passes == 1 ? pass_ms : std::min(fastest_ms, pass_ms);
    slowest_ms = std::max(slowest_ms, pass_ms);
  }
  state.counters["ports"] = static_cast<double>(ports);
  state.counters["chunk_MB"] = static_cast<double>(leader.remote_bytes) / 1e6;
  state.counters["receive_ms"] = receive_ms / passes;
  // Chunks the pass had to decode (0: every one decoded on receipt).
  state.counters["pass_decoded"] =
      static_cast<double>(decoded_in_pass) / passes;
  for (const Phases::Phase& p : phases.ms) {
    state.counters[p.name] = p.cpu / passes;
    state.counters[std::string(p.name) + "_wall"] = p.wall / passes;
  }
  state.counters["open"] = static_cast<double>(open);
  state.counters["fastest_pass_ms"] = fastest_ms;
  state.counters["slowest_pass_ms"] = slowest_ms;
}
// Arg: threads of the rate pass (collector/runner/rate_pass.h); 2 as the
// collector runs it.
BENCHMARK(BM_LeaderPassAtScale)
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMillisecond)
    ->MeasureProcessCPUTime()
    ->UseRealTime()
    ->Iterations(5);

// BM_FollowerInterval/<nodes>/<collectors>: what a collector that does not
// analyse does each interval with the others' liveness (received and
// merged for the nodes), alone: to profile (perf record) what
// BM_CollectorInterval's follower_ms holds.
void BM_FollowerInterval(benchmark::State& state) {
  const int nodes = static_cast<int>(state.range(0));
  const Fixture& fx =
      FixtureFor(nodes, std::max(1, nodes / kNodesAtScale) * kJobsAtScale);
  const IntervalFixture& f =
      IntervalFixtureFor(fx, static_cast<int>(state.range(1)));
  std::optional<cluster::FeatureCache> follower;
  collector::FeatureSlice nodes_only;
  for (auto _ : state) {
    state.PauseTiming();
    follower.reset();
    nodes_only = collector::FeatureSlice();
    follower.emplace("col-0");
    // Its own ports are dropped unmerged (BM_CollectorInterval counts
    // their freeing): its nodes alone.
    collector::FeatureSlice local;
    local.nodes = f.local.nodes;
    state.ResumeTiming();
    const absl::Time now = absl::Now();
    for (const std::string& data : f.remote_liveness) {
      follower->ReceivedLiveness(data, now);
    }
    nodes_only = follower->Merged(std::move(local), now - absl::Seconds(5),
                                  collector::MergeScope::kNodes);
    benchmark::DoNotOptimize(nodes_only.nodes.data());
  }
}
BENCHMARK(BM_FollowerInterval)
    ->Args({kNodesAtScale, 10})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(10);

// BM_FollowerSteadyInterval/<nodes>/<collectors>: the same for a follower
// that merged before (every interval but its first): the nodes it
// remembers from its last merge are updated, not added.
void BM_FollowerSteadyInterval(benchmark::State& state) {
  const int nodes = static_cast<int>(state.range(0));
  const Fixture& fx =
      FixtureFor(nodes, std::max(1, nodes / kNodesAtScale) * kJobsAtScale);
  const IntervalFixture& f =
      IntervalFixtureFor(fx, static_cast<int>(state.range(1)));
  cluster::FeatureCache follower("col-0");
  absl::Time now = absl::Now();
  auto interval = [&] {
    collector::FeatureSlice local;
    local.nodes = f.local.nodes;
    for (const std::string& data : f.remote_liveness) {
      follower.ReceivedLiveness(data, now);
    }
    return follower.Merged(std::move(local), now - absl::Seconds(5),
                           collector::MergeScope::kNodes);
  };
  collector::FeatureSlice nodes_only = interval();
  for (auto _ : state) {
    state.PauseTiming();
    nodes_only = collector::FeatureSlice();
    now += absl::Seconds(1);
    state.ResumeTiming();
    nodes_only = interval();
    benchmark::DoNotOptimize(nodes_only.nodes.data());
  }
}
// At 200k and 1M GPUs; the 1M fixture takes minutes and GBs to build (see
// BM_CollectorInterval/125000).
BENCHMARK(BM_FollowerSteadyInterval)
    ->Args({kNodesAtScale, 10})
    ->Args({5 * kNodesAtScale, 10})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(20);

// BM_CollectorInterval/<nodes>/<collectors>: collector 0's CPU per
// interval on one thread (the machine is shared: CPU time, not wall), as
//   publish_ms:  its slice to chunks and its liveness chunks, serialized
//                (what JetStreamFeatures publishes; the NATS round trips
//                are not included);
//   follower_ms: a collector that does not analyse: every other
//                collector's liveness chunks received and merged for the
//                nodes (MergeScope::kNodes), by a follower that merged
//                before;
//   follower_chunks_ms: the same as a follower that receives the feature
//                chunks instead (before liveness had its own subject, and
//                still for a collector whose liveness does not arrive):
//                every chunk received (node facts only, not decoded), at
//                its first merge;
//   leader_ms:   the analysis leader: every other collector's chunks
//                received and decoded, merged with its own slice, the rate
//                analyzers (one thread) and the hysteresis;
// and the bytes each collector publishes and receives per interval
// (publish_MB: features, the stream stores each byte on 3 servers, and
// liveness; receive_MB: the leader's, the others' feature chunks;
// follower_receive_MB: the others' liveness). Not included: building the
// slice from the series store, agent_down, the layout analyzers, the
// findings writes.
void BM_CollectorInterval(benchmark::State& state) {
  const int nodes = static_cast<int>(state.range(0));
  const int collectors = static_cast<int>(state.range(1));
  // 200 jobs per 200,000 GPUs: 1,000 at 1M.
  const Fixture& fx =
      FixtureFor(nodes, std::max(1, nodes / kNodesAtScale) * kJobsAtScale);
  const IntervalFixture& f = IntervalFixtureFor(fx, collectors);
  const TopologyIndex topology(&fx.cluster->topology());
  StragglerBaselines baselines = f.baselines;
  Hysteresis gate(fx.config.hysteresis);
  double publish_ms = 0, follower_ms = 0, follower_chunks_ms = 0, leader_ms = 0;
  size_t publish_bytes = 0;
  int passes = 0;
  // A follower that merged before, as every interval but its first finds
  // it (its first merge also adds every node to what it remembers).
  cluster::FeatureCache follower("col-0");
  follower.DecodeOnReceipt(false);
  {
    collector::FeatureSlice local = f.local;
    for (const std::string& data : f.remote_liveness) {
      follower.ReceivedLiveness(data, absl::Now());
    }
    follower.Merged(std::move(local), absl::Now() - absl::Seconds(5),
                    collector::MergeScope::kNodes);
  }
  for (auto _ : state) {
    const absl::Time now = absl::Now();
    double start = ThreadCpuMs();
    publish_bytes = 0;
    for (const v1::FeatureChunk& chunk :
         cluster::SliceToChunks(f.local, "col-0", now)) {
      publish_bytes += chunk.SerializeAsString().size();
    }
    for (const v1::FeatureChunkFacts& chunk :
         cluster::SliceToLivenessChunks(f.local, "col-0", now)) {
      publish_bytes += chunk.SerializeAsString().size();
    }
    publish_ms += ThreadCpuMs() - start;

    {
      collector::FeatureSlice local = f.local;
      start = ThreadCpuMs();
      for (const std::string& data : f.remote_liveness) {
        follower.ReceivedLiveness(data, now);
      }
      collector::FeatureSlice nodes_only =
          follower.Merged(std::move(local), now - absl::Seconds(5),
                          collector::MergeScope::kNodes);
      benchmark::DoNotOptimize(nodes_only.nodes.data());
      follower_ms += ThreadCpuMs() - start;
    }
    {
      cluster::FeatureCache first_merge("col-0");
      first_merge.DecodeOnReceipt(false);
      collector::FeatureSlice local = f.local;
      start = ThreadCpuMs();
      for (const std::string& data : f.remote) first_merge.Received(data, now);
      collector::FeatureSlice nodes_only =
          first_merge.Merged(std::move(local), now - absl::Seconds(5),
                             collector::MergeScope::kNodes);
      benchmark::DoNotOptimize(nodes_only.nodes.data());
      follower_chunks_ms += ThreadCpuMs() - start;
    }

    cluster::FeatureCache leader("col-0");
    collector::FeatureSlice local = f.local;
    start = ThreadCpuMs();
    for (const std::string& data : f.remote) leader.Received(data, now);
    collector::FeatureSlice fabric =
        leader.Merged(std::move(local), now - absl::Seconds(5),
                      collector::MergeScope::kFabric);
    AnalysisInput in = fx.cluster->Input(&fabric.window, &fx.config);
    in.topology_index = &topology;
    in.layouts = LayoutsReportingIn(fabric.window, in.layouts);
    const FabricView* recent =
        fabric.recent.has_value() ? &*fabric.recent : nullptr;
    collector::RateFindings found =
        collector::RunRatePass(in, recent, &baselines, /*threads=*/1);
    std::vector<Finding> open =
        gate.Step(std::move(found.window), std::move(found.recent));
    benchmark::DoNotOptimize(open.data());
    leader_ms += ThreadCpuMs() - start;
    ++passes;
  }
  state.counters["collectors"] = collectors;
  state.counters["gpus"] = 8.0 * nodes;
  state.counters["publish_ms"] = publish_ms / passes;
  state.counters["follower_ms"] = follower_ms / passes;
  state.counters["follower_chunks_ms"] = follower_chunks_ms / passes;
  state.counters["leader_ms"] = leader_ms / passes;
  state.counters["publish_MB"] = static_cast<double>(publish_bytes) / 1e6;
  state.counters["receive_MB"] = static_cast<double>(f.remote_bytes) / 1e6;
  state.counters["follower_receive_MB"] =
      static_cast<double>(f.remote_liveness_bytes) / 1e6;
}
// 200k GPUs with 1, 3 and 10 collectors.
BENCHMARK(BM_CollectorInterval)
    ->Args({kNodesAtScale, 1})
    ->Args({kNodesAtScale, 3})
    ->Args({kNodesAtScale, 10})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3);
// 1M GPUs (125,000 nodes x 8 NICs, 7,813 leaves, 1,000 jobs), the goal's
// size; its topology is past what a declared one may hold, so the fixture
// builds it as the proto. Minutes and GBs to build: run it on its own
// (--benchmark_filter=BM_CollectorInterval/125000).
BENCHMARK(BM_CollectorInterval)
    ->Args({5 * kNodesAtScale, 3})
    ->Args({5 * kNodesAtScale, 10})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(2);

// BM_ShardedInterval/<nodes>/<collectors>: collector 0's CPU per interval
// with the cross-node analysis cut into shards (analysis/shard_map.h: 64
// of jobs, 64 of switches), each owned by one collector (rendezvous
// hashing, as cluster/shard_leases.h picks), on one thread:
//   publish_ms: its slice's ports assigned to shards, and the ports of the
//               shards it does not own encoded for their owners
//               (cluster/shard_wire.h's ShardChunkWriter, in one sweep
//               over the slice, as the exchange publishes) and
//               serialized;
//   receive_ms: the chunks of the shards it owns from every other
//               collector parsed (receive_parse_ms: done as they arrive)
//               and assembled, with its own ports of them, into a window
//               and a recent view per shard (AssembleShardViews, over the
//               views of the pass before);
//   shards_ms:  the passes of the shards it owns: their kind's part
//               (analysis/rate_parts.h; jobs: hot_expert_incast,
//               straggler_nic; switches: ecmp_imbalance, pfc_storm) over
//               both views;
//   news_ms:    its news (cluster/part_news.h: its parts' excuses, its
//               ports' congestion histograms) built and serialized, and
//               every other collector's parsed and merged;
//   local_ms:   the port part (link_errors, link_flap, link_degraded,
//               retransmissions, congestion against the merged medians,
//               cabling_mismatch) over its own slice, both views, and
//               every part's findings excused;
// and the bytes of shard features it publishes and receives per interval,
// and of the news it sends (news_kB; it receives as much from each other
// collector). With one collector, it owns every shard: nothing is
// published or received, and its own ports fill every shard's views.
// Not included: building the slice from the series store, liveness
// (BM_FollowerSteadyInterval), tp_cross_node, the hysteresis and the
// findings writes; BM_RunnerInterval counts them.
struct ShardViews {
  ShardKind kind = ShardKind::kJobs;
  FabricView window;
  FabricView recent;
};

struct ShardedFixture {
  int nodes = 0;
  int collectors = 0;
  collector::FeatureSlice local;
  absl::flat_hash_set<std::string> owned;  // by collector 0
  // The chunks of collector 0's shards from the others, serialized.
  std::vector<std::string> remote;
  size_t remote_bytes = 0;
  // The other collectors' nodes, and the bytes of their liveness chunks.
  std::vector<std::vector<collector::NodeFacts>> remote_nodes;
  size_t remote_liveness_bytes = 0;
  // Each job shard's layouts.
  absl::flat_hash_map<std::string, std::vector<const LayoutModel*>> layouts;
  StragglerBaselines baselines;
};

const ShardedFixture& ShardedFixtureFor(const Fixture& fx, int collectors) {
  static ShardedFixture* f = new ShardedFixture;
  if (f->nodes == fx.nodes && f->collectors == collectors) return *f;
  *f = ShardedFixture();
  f->nodes = fx.nodes;
  f->collectors = collectors;
  const Cluster& c = *fx.cluster;
  FabricView recent = c.View(fx.faults, TrafficOptions{}, 2);
  recent.window_seconds = fx.config.hysteresis.recent_seconds;
  f->baselines = c.Watched(TrafficOptions{}, 3, fx.config);
  const absl::Time now = absl::Now();
  std::vector<collector::FeatureSlice> slices =
      bench::DealSlices(fx.view, recent, collectors, now);
  std::vector<cluster::ShardLeases::Candidate> members;
  members.reserve(static_cast<size_t>(collectors));
  for (int k = 0; k < collectors; ++k) {
    members.push_back({absl::StrCat("col-", k), absl::Minutes(1)});
  }
  const TopologyIndex topology(&c.topology());
  std::vector<const LayoutModel*> layouts;
  for (const LayoutModel& m : c.jobs()) {
    layouts.push_back(&m);
    f->layouts[JobShardOf(m.job(), ShardCounts{})].push_back(&m);
  }
  for (int k = 1; k < collectors; ++k) {
    f->remote_nodes.push_back(slices[k].nodes);
    for (const v1::FeatureChunkFacts& chunk :
         cluster::SliceToLivenessChunks(slices[k], members[k].id, now)) {
      f->remote_liveness_bytes += chunk.ByteSizeLong();
    }
  }
  for (int k = 0; k < collectors; ++k) {
    for (const ShardPorts& s :
         AssignShards(slices[k].window, layouts, topology, ShardCounts{})) {
      if (cluster::ShardLeases::FirstChoice(s.shard, members) != "col-0") {
        continue;
      }
      f->owned.insert(s.shard);
      if (k == 0) continue;
      for (const v1::ShardChunk& chunk : cluster::ShardToChunks(
               slices[k], s.ports, s.kind, {s.shard, members[k].id, now})) {
        f->remote.push_back(chunk.SerializeAsString());
        f->remote_bytes += f->remote.back().size();
      }
    }
  }
  f->local = std::move(slices[0]);
  return *f;
}

void BM_ShardedInterval(benchmark::State& state) {
  const int nodes = static_cast<int>(state.range(0));
  const int collectors = static_cast<int>(state.range(1));
  const Fixture& fx =
      FixtureFor(nodes, std::max(1, nodes / kNodesAtScale) * kJobsAtScale);
  const ShardedFixture& f = ShardedFixtureFor(fx, collectors);
  const TopologyIndex topology(&fx.cluster->topology());
  std::vector<const LayoutModel*> all_layouts;
  for (const LayoutModel& m : fx.cluster->jobs()) all_layouts.push_back(&m);
  double publish_ms = 0, receive_ms = 0, parse_ms = 0, shards_ms = 0,
         news_ms = 0, local_ms = 0;
  size_t publish_bytes = 0, news_out_bytes = 0, findings = 0;
  int passes = 0;
  // Each owned shard's views, kept from pass to pass as the runner keeps
  // them.
  absl::flat_hash_map<std::string, ShardViews> views;
  // The chunks' buffers publishing reuses, as the exchange.
  cluster::ShardChunkWriter writer;
  const auto interval = [&] {
    const absl::Time now = absl::Now();
    double start = ThreadCpuMs();
    const std::vector<ShardPorts> mine =
        AssignShards(f.local.window, all_layouts, topology, ShardCounts{});
    publish_bytes = 0;
    std::vector<const ShardPorts*> others;
    for (const ShardPorts& s : mine) {
      if (!f.owned.contains(s.shard)) others.push_back(&s);
    }
    for (absl::Span<const absl::string_view> chunks :
         writer.WriteShards(f.local, others, {"col-0", now})) {
      for (absl::string_view chunk : chunks) publish_bytes += chunk.size();
    }
    publish_ms += ThreadCpuMs() - start;

    start = ThreadCpuMs();
    // As the exchange: each chunk parsed as it arrives, then each owned
    // shard's views assembled from its chunks and its own ports, over the
    // views of the pass before.
    std::map<std::string, std::vector<v1::ShardChunk>> chunks;
    for (const std::string& data : f.remote) {
      v1::ShardChunk chunk;
      if (!chunk.ParseFromString(data)) std::abort();
      std::string shard = chunk.shard();
      chunks[std::move(shard)].push_back(std::move(chunk));
    }
    parse_ms += ThreadCpuMs() - start;
    for (const std::string& name : f.owned) {
      std::vector<const v1::ShardChunk*> of;
      for (const v1::ShardChunk& c : chunks[name]) of.push_back(&c);
      auto own =
          std::find_if(mine.begin(), mine.end(),
                       [&](const ShardPorts& s) { return s.shard == name; });
      ShardViews& v = views[name];
      v.kind = absl::StartsWith(name, "jobs.") ? ShardKind::kJobs
                                               : ShardKind::kSwitches;
      std::vector<size_t> damaged;
      cluster::AssembleShardViews(
          of, &f.local,
          own == mine.end() ? absl::Span<const uint32_t>() : own->ports,
          &v.window, &v.recent, &damaged);
      if (!damaged.empty()) std::abort();
    }
    receive_ms += ThreadCpuMs() - start;

    // The parts of each view (analysis/rate_parts.h): index 0 the window,
    // 1 the newest samples.
    std::vector<RatePart> parts[2];
    start = ThreadCpuMs();
    const LayoutsByHost by_host(all_layouts);
    for (const auto& [name, v] : views) {
      int k = 0;
      for (const FabricView* view : {&v.window, &v.recent}) {
        AnalysisInput in = fx.cluster->Input(view, &fx.config, &f.baselines);
        in.topology_index = &topology;
        if (v.kind == ShardKind::kJobs) {
          auto it = f.layouts.find(name);
          in.layouts = it == f.layouts.end() ? std::vector<const LayoutModel*>()
                                             : it->second;
          parts[k++].push_back(RunJobPart(in));
        } else {
          in.layouts = by_host.ReportingIn(*view);
          parts[k++].push_back(RunSwitchPart(in));
        }
      }
    }
    shards_ms += ThreadCpuMs() - start;

    // Its news: what its shards' parts excuse, and its own ports'
    // congestion histograms; the others' news parsed and merged (stand-ins
    // of the same size: its own).
    start = ThreadCpuMs();
    const FabricView* local_views[] = {&f.local.window, &*f.local.recent};
    cluster::PartNews mine_news;
    mine_news.collector_id = "col-0";
    mine_news.published = now;
    mine_news.recent.emplace();
    cluster::ViewNews* news_of[] = {&mine_news.window, &*mine_news.recent};
    for (int k = 0; k < 2; ++k) {
      for (const RatePart& p : parts[k]) {
        news_of[k]->excuses.Merge(p.excuses);
      }
      news_of[k]->congestion = CongestionHistogramsOf(*local_views[k]);
    }
    const std::string news_bytes =
        cluster::ToProto(mine_news).SerializeAsString();
    news_out_bytes = news_bytes.size();
    cluster::ViewNews merged[2] = {mine_news.window, *mine_news.recent};
    for (int other = 1; other < collectors; ++other) {
      v1::PartNews wire;
      if (!wire.ParseFromString(news_bytes)) std::abort();
      absl::StatusOr<cluster::PartNews> read = cluster::FromProto(wire);
      if (!read.ok() || !read->recent.has_value()) std::abort();
      for (int k = 0; k < 2; ++k) {
        const cluster::ViewNews& n = k == 0 ? read->window : *read->recent;
        merged[k].excuses.Merge(n.excuses);
        merged[k].congestion.Merge(n.congestion);
      }
    }
    news_ms += ThreadCpuMs() - start;

    // The port part over its own slice, against the fabric's congestion
    // medians; then every part's findings excused.
    start = ThreadCpuMs();
    findings = 0;
    for (int k = 0; k < 2; ++k) {
      const CongestionBaselines medians = merged[k].congestion.Baselines();
      AnalysisInput in =
          fx.cluster->Input(local_views[k], &fx.config, &f.baselines);
      in.topology_index = &topology;
      in.layouts = by_host.ReportingIn(*local_views[k]);
      in.congestion_baselines = &medians;
      parts[k].push_back(RunPortPart(in));
      for (RatePart& p : parts[k]) {
        Excuse(merged[k].excuses, &p.findings);
        findings += p.findings.size();
      }
    }
    local_ms += ThreadCpuMs() - start;
    ++passes;
  };
  // The first pass builds every view (and the writer's messages) anew, as
  // a collector's first pass after it took its shards: measured apart
  // (first_pass_ms). The other counters are of the passes after it.
  const double first = ThreadCpuMs();
  interval();
  const double first_pass_ms = ThreadCpuMs() - first;
  publish_ms = receive_ms = parse_ms = shards_ms = news_ms = local_ms = 0;
  passes = 0;
  for (auto _ : state) interval();
  state.counters["first_pass_ms"] = first_pass_ms;
  state.counters["collectors"] = collectors;
  state.counters["gpus"] = 8.0 * nodes;
  state.counters["owned_shards"] = static_cast<double>(f.owned.size());
  state.counters["publish_ms"] = publish_ms / passes;
  state.counters["receive_ms"] = receive_ms / passes;
  state.counters["receive_parse_ms"] = parse_ms / passes;
  state.counters["shards_ms"] = shards_ms / passes;
  state.counters["news_ms"] = news_ms / passes;
  state.counters["local_ms"] = local_ms / passes;
  state.counters["total_ms"] =
      (publish_ms + receive_ms + shards_ms + news_ms + local_ms) / passes;
  state.counters["news_kB"] = static_cast<double>(news_out_bytes) / 1e3;
  state.counters["publish_MB"] = static_cast<double>(publish_bytes) / 1e6;
  state.counters["receive_MB"] = static_cast<double>(f.remote_bytes) / 1e6;
  state.counters["findings"] = static_cast<double>(findings);
}
BENCHMARK(BM_ShardedInterval)
    ->Args({kNodesAtScale, 1})
    ->Args({kNodesAtScale, 3})
    ->Args({kNodesAtScale, 10})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3);
// 1M GPUs: minutes and GBs to build the fixture; run it on its own
// (--benchmark_filter=BM_ShardedInterval/125000).
BENCHMARK(BM_ShardedInterval)
    ->Args({5 * kNodesAtScale, 10})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(2);

// BM_RunnerInterval/<nodes>/<collectors>: everything collector 0 spends on
// an interval of the sharded analysis, measured around the real
// collector::AnalysisRunner::RunOnce() with --analysis_shards, in CPU time
// of every thread of the process:
//   ingest_ms:  its agents' reports of the interval, parsed and stored
//               (IngestSession into the SeriesStore, one per node);
//   receive_ms: what its NATS thread does as the others' messages arrive:
//               their chunks of the shards it owns and their news parsed,
//               their liveness kept (FeatureCache::ReceivedLiveness);
//   pass_ms:    RunOnce(): its window and recent views built from the
//               series store, its liveness published (serialized) and
//               merged with the others', agent_down and tp_cross_node (it
//               holds the analysis lease: the worst case), its shards'
//               ports sent (encoded and serialized, as cluster::
//               ShardExchange::Publish) and its owned shards' views
//               assembled, the shard and port parts, its news, the
//               hysteresis and the findings store's writes (a FindingsStore
//               on a state directory, as embedded: a cluster writes the
//               same changes to NATS);
//   interval_ms = ingest_ms + receive_ms + pass_ms, with first_pass_ms
//   the first pass apart (every view built anew) and slowest_pass_ms.
// The bench stands in for NATS only: the chunks the others send are those
// of BM_ShardedInterval (the scenario fabric's traffic, with its faults),
// their liveness is made again each interval (not timed), and what collector
// 0 publishes is serialized but sent nowhere (the socket writes are not
// counted). Its own nodes report as sim/virtual_node.h's mlx5 nodes of 8
// NICs (1,272 series each, steady traffic) under the scenario's host names;
// the switches dealt to it report nothing here (their ports are missing
// from its slice, a few percent of its nodes but half of its ports).
class BenchFeatures final : public collector::FeatureExchange {
 public:
  std::string Describe() const override { return "bench"; }
  absl::Status Publish(const collector::FeatureSlice& /*local*/,
                       absl::Time /*now*/) override {
    // Sharded, a collector publishes its liveness alone.
    std::abort();
  }
  absl::Status PublishLiveness(const collector::FeatureSlice& local,
                               absl::Time now) override {
    published_bytes = 0;
    for (const v1::FeatureChunkFacts& chunk :
         cluster::SliceToLivenessChunks(local, "col-0", now)) {
      chunk.SerializeToString(&buffer_);
      published_bytes += buffer_.size();
    }
    return absl::OkStatus();
  }
  // As the NATS thread does on receipt.
  void Received(absl::Span<const std::string> liveness, absl::Time now) {
    for (const std::string& data : liveness) {
      cache_.ReceivedLiveness(data, now);
    }
  }
  collector::FeatureSlice Merged(collector::FeatureSlice local, absl::Time now,
                                 collector::MergeScope scope) override {
    // JetStreamFeatures' freshness.
    return cache_.Merged(std::move(local), now - absl::Seconds(5), scope);
  }

  size_t published_bytes = 0;

 private:
  cluster::FeatureCache cache_{"col-0"};
  std::string buffer_;
};

class BenchShards final : public collector::AnalysisShards {
 public:
  explicit BenchShards(const absl::flat_hash_set<std::string>& owned) {
    for (const std::string& shard : owned) owned_.push_back({shard, 1});
    std::sort(owned_.begin(), owned_.end(),
              [](const Owned& a, const Owned& b) { return a.shard < b.shard; });
  }
  std::string Id() const override { return "col-0"; }
  ShardCounts Counts() const override { return ShardCounts{}; }
  std::vector<Owned> OwnedShards() const override { return owned_; }
  absl::Status Exchange(const collector::FeatureSlice& local,
                        absl::Span<const ShardPorts> shards,
                        absl::Span<const Owned> owned,
                        absl::Time now) override {
    std::vector<const ShardPorts*> others;
    for (const ShardPorts& s : shards) {
      if (std::none_of(owned.begin(), owned.end(),
                       [&](const Owned& o) { return o.shard == s.shard; })) {
        others.push_back(&s);
      }
    }
    published_bytes = 0;
    for (absl::Span<const absl::string_view> chunks :
         writer_.WriteShards(local, others, {"col-0", now})) {
      for (absl::string_view chunk : chunks) published_bytes += chunk.size();
    }
    return absl::OkStatus();
  }
  void Receive(absl::string_view shard, absl::Time /*now*/,
               const collector::FeatureSlice& local,
               absl::Span<const uint32_t> own_ports, Received* views) override {
    std::vector<const v1::ShardChunk*> of;
    auto it = chunks_.find(shard);
    if (it != chunks_.end()) {
      for (const auto& c : it->second) of.push_back(c.get());
    }
    std::vector<size_t> damaged;
    cluster::AssembleShardViews(of, &local, own_ports, &views->window,
                                &views->recent, &damaged);
    if (!damaged.empty()) std::abort();
  }
  absl::Status PublishNews(const analysis::PartNews& news) override {
    analysis::PartNews mine = news;
    mine.collector_id = "col-0";
    news_ = cluster::ToProto(mine).SerializeAsString();
    return absl::OkStatus();
  }
  std::vector<analysis::PartNews> News(absl::Time /*now*/) override {
    return heard_;
  }
  // As the NATS thread does on receipt: the others' chunks of the owned
  // shards, and their news (stand-ins: this collector's own of the last
  // pass, once per other collector).
  void Received(absl::Span<const std::string> chunks, int collectors) {
    for (auto& [shard, held] : chunks_) held.clear();
    for (const std::string& data : chunks) {
      // As ShardExchange does on receipt.
      std::shared_ptr<const v1::ShardChunk> chunk =
          cluster::ParseShardChunk(data);
      if (chunk == nullptr) std::abort();
      chunks_[chunk->shard()].push_back(std::move(chunk));
    }
    heard_.clear();
    if (news_.empty()) return;
    for (int other = 1; other < collectors; ++other) {
      v1::PartNews wire;
      if (!wire.ParseFromString(news_)) std::abort();
      absl::StatusOr<analysis::PartNews> read = cluster::FromProto(wire);
      if (!read.ok()) std::abort();
      read->collector_id = absl::StrCat("col-", other);
      heard_.push_back(*std::move(read));
    }
  }

  size_t published_bytes = 0;

 private:
  std::vector<Owned> owned_;
  cluster::ShardChunkWriter writer_;
  std::map<std::string, std::vector<std::shared_ptr<const v1::ShardChunk>>,
           std::less<>>
      chunks_;
  std::string news_;
  std::vector<analysis::PartNews> heard_;
};

// The layouts of the scenario's jobs, as the registry serves them.
class BenchLayouts final : public collector::LayoutSnapshots {
 public:
  BenchLayouts(const std::vector<LayoutModel>& jobs, absl::Time applied) {
    auto snapshot = std::make_shared<collector::RegistrySnapshot>();
    for (const LayoutModel& m : jobs) {
      snapshot->layouts.emplace(
          m.job(), std::make_shared<collector::LayoutEntry>(
                       collector::LayoutEntry{m.layout(), m, applied, {}, 0}));
    }
    snapshot_ = std::move(snapshot);
  }
  std::shared_ptr<const collector::RegistrySnapshot> Snapshot() const override {
    return snapshot_;
  }

 private:
  std::shared_ptr<const collector::RegistrySnapshot> snapshot_;
};

// `watched`: how many jobs of its shards have their page open (the runner
// copies each one's ports out of its shard's view every pass:
// AnalysisRunner::LatestJobView()). Not `sharded`: a lone collector without
// --analysis_shards (the default), which analyses its fabric in one pass;
// `collectors` must then be 1.
void RunnerInterval(benchmark::State& state, int watched, bool sharded = true) {
  const int nodes = static_cast<int>(state.range(0));
  const int collectors = static_cast<int>(state.range(1));
  const Fixture& fx =
      FixtureFor(nodes, std::max(1, nodes / kNodesAtScale) * kJobsAtScale);
  const ShardedFixture& f = ShardedFixtureFor(fx, collectors);
  const Cluster& c = *fx.cluster;

  // What the collector holds grows the process from here: its series
  // store, views, shard views and messages (the fixture's are built).
  const double resident_before_mb = ResidentMb();
  FakeClock clock(absl::Now());
  collector::SeriesStore series(collector::SeriesStore::Options{}, clock);
  collector::IngestCounters counters;
  collector::KeepEveryAgent placement;
  collector::MemoryNodeFacts facts;
  collector::NoDeclaredSwitches no_switches;
  absl::StatusOr<sim::VirtualNode> agent = sim::BuildVirtualNode(8);
  if (!agent.ok()) std::abort();
  absl::flat_hash_set<std::string> hosts;
  for (int n = 0; n < nodes; ++n) hosts.insert(c.HostName(n));
  std::vector<std::unique_ptr<collector::IngestSession>> sessions;
  for (const collector::NodeFacts& node : f.local.nodes) {
    if (!hosts.contains(node.liveness.node)) continue;
    sessions.push_back(std::make_unique<collector::IngestSession>(
        &series, &counters, placement,
        collector::NodeFactsIntake{facts, no_switches}));
    v1::AgentMessage hello;
    hello.mutable_hello()->set_node(node.liveness.node);
    // As long as a real one (/proc/sys/kernel/random/boot_id).
    hello.mutable_hello()->set_boot_id(
        absl::StrCat(absl::Hex(sessions.size(), absl::kZeroPad8),
                     "-5c1e-4f00-9a3b-000000000000"));
    hello.mutable_hello()->set_interval_ms(1000);
    sessions.back()->Handle(hello);
    sessions.back()->Handle(agent->inventory);
    sessions.back()->Handle(agent->schema);
  }
  // A few reports' worth of variants, serialized afresh each interval (its
  // sequence number), parsed by each session as gRPC hands them over.
  constexpr int kVariants = 16;
  std::vector<v1::AgentMessage> variants;
  absl::BitGen gen;
  for (int v = 0; v < kVariants; ++v) {
    v1::AgentMessage m = agent->report;
    for (uint32_t i : agent->moving) {
      const int k = static_cast<int>(i);
      m.mutable_report()->set_rate(
          k, m.report().rate(k) * (1 + absl::Uniform<double>(gen, 0, 0.06)));
    }
    variants.push_back(std::move(m));
  }
  uint64_t seq = 0;
  std::vector<std::string> wire(kVariants);
  v1::AgentMessage msg;
  const auto ingest = [&] {
    ++seq;
    for (int v = 0; v < kVariants; ++v) {
      v1::Report* r = variants[v].mutable_report();
      r->set_seq(seq);
      for (int i = 0; i < r->raw_size(); ++i) {
        r->set_raw(i, seq * static_cast<uint64_t>(i));
      }
      variants[v].SerializeToString(&wire[v]);
    }
    for (size_t s = 0; s < sessions.size(); ++s) {
      msg.ParseFromString(wire[s % kVariants]);
      if (sessions[s]->Handle(msg).reject.has_value()) std::abort();
    }
  };

  testing::TempDir dir;
  absl::StatusOr<std::unique_ptr<collector::StateStore>> state_store =
      collector::StateStore::Open(dir.path(), &clock);
  if (!state_store.ok()) std::abort();
  collector::FindingsStore findings(state_store->get(),
                                    collector::FindingsStoreOptions{});
  if (!findings.Load().ok()) std::abort();
  BenchLayouts layouts(c.jobs(), clock.Now());
  const testing::FixedTopology topology =
      testing::FixedTopology::Declared(c.topology());
  BenchFeatures features;
  collector::EmbeddedFeatureExchange alone;
  BenchShards shards(f.owned);
  // One collector alone is the embedded one: a cluster of one, which
  // exchanges nothing.
  collector::OneCollectorShards one;
  const bool exchanging = sharded && collectors > 1;
  collector::AlwaysLeading role;
  collector::NoBaselinesStore no_baselines;
  collector::AnalysisStats stats;
  if (!sharded && collectors != 1) std::abort();
  collector::AnalysisRunner runner(
      &series, &layouts, &findings, &stats, clock,
      collector::AnalysisRunner::Seams{
          exchanging ? static_cast<collector::FeatureExchange&>(features)
                     : alone,
          role, no_baselines, topology,
          !sharded     ? nullptr
          : exchanging ? static_cast<collector::AnalysisShards*>(&shards)
                       : &one},
      collector::AnalysisRunner::Options{});

  // The jobs whose page is open: the first `watched` of its job shards'.
  std::vector<std::string> open_pages;
  for (const LayoutModel& m : c.jobs()) {
    if (static_cast<int>(open_pages.size()) == watched) break;
    if (f.owned.contains(analysis::JobShardOf(m.job(), shards.Counts()))) {
      open_pages.push_back(m.job());
    }
  }
  size_t watched_ports = 0;

  // The others' liveness of this interval (their work: not timed).
  std::vector<std::vector<collector::NodeFacts>> others = f.remote_nodes;
  std::vector<std::string> liveness;
  double ingest_ms = 0, receive_ms = 0, pass_ms = 0, slowest_ms = 0;
  int passes = 0;
  const auto interval = [&](bool timed) {
    clock.Advance(absl::Seconds(1));
    const absl::Time now = clock.Now();
    liveness.clear();
    for (size_t k = 0; k < others.size(); ++k) {
      collector::FeatureSlice slice;
      for (collector::NodeFacts& n : others[k]) n.liveness.last_report = now;
      slice.nodes = others[k];
      for (const v1::FeatureChunkFacts& chunk : cluster::SliceToLivenessChunks(
               slice, absl::StrCat("col-", k + 1), now)) {
        liveness.push_back(chunk.SerializeAsString());
      }
    }
    double start = ProcessCpuMs();
    ingest();
    const double ingested = ProcessCpuMs() - start;
    start = ProcessCpuMs();
    if (exchanging) {
      features.Received(liveness, now);
      shards.Received(f.remote, collectors);
    }
    const double received = ProcessCpuMs() - start;
    // The pages ask as a browser polls them (the readers' work: not timed).
    watched_ports = 0;
    for (const std::string& job : open_pages) {
      std::shared_ptr<const analysis::FabricView> view =
          runner.LatestJobView(job);
      if (view != nullptr) watched_ports += view->ports().size();
    }
    start = ProcessCpuMs();
    runner.RunOnce();
    const double pass = ProcessCpuMs() - start;
    if (!timed) return pass;
    ingest_ms += ingested;
    receive_ms += received;
    pass_ms += pass;
    slowest_ms = std::max(slowest_ms, pass);
    ++passes;
    return pass;
  };
  // The window fills (reports before the first pass), then the first pass
  // builds every view anew; a few passes open the faults' findings.
  for (int i = 0; i < 6; ++i) {
    clock.Advance(absl::Seconds(1));
    ingest();
  }
  const double first_pass_ms = interval(false);
  for (int i = 0; i < fx.config.hysteresis.open_after + 2; ++i) {
    interval(false);
  }
  ProfileTimed(true);
  for (auto _ : state) interval(true);
  ProfileTimed(false);
  state.counters["collectors"] = collectors;
  state.counters["gpus"] = 8.0 * nodes;
  state.counters["own_nodes"] = static_cast<double>(sessions.size());
  state.counters["owned_shards"] = static_cast<double>(f.owned.size());
  state.counters["first_pass_ms"] = first_pass_ms;
  state.counters["ingest_ms"] = ingest_ms / passes;
  state.counters["receive_ms"] = receive_ms / passes;
  state.counters["pass_ms"] = pass_ms / passes;
  state.counters["slowest_pass_ms"] = slowest_ms;
  state.counters["interval_ms"] = (ingest_ms + receive_ms + pass_ms) / passes;
  state.counters["publish_MB"] =
      static_cast<double>(shards.published_bytes + features.published_bytes) /
      1e6;
  state.counters["receive_MB"] =
      static_cast<double>(f.remote_bytes + f.remote_liveness_bytes) / 1e6;
  state.counters["findings"] = static_cast<double>(findings.Active().size());
  if (watched > 0) {
    state.counters["open_pages"] = static_cast<double>(open_pages.size());
    state.counters["open_pages_ports"] = static_cast<double>(watched_ports);
  }
  // With glibc's trim threshold raised (as the figures are taken) the heap
  // is not given back: the collector's peak, its 10 minutes of history
  // not yet full; the series store's own estimate apart, the rest is the
  // views, shard views and messages a pass keeps.
  const double collector_mb = ResidentMb() - resident_before_mb;
  const double series_mb = static_cast<double>(series.Memory().bytes) / 1e6;
  state.counters["collector_MB"] = collector_mb;
  state.counters["series_store_MB"] = series_mb;
  state.counters["besides_series_MB"] = collector_mb - series_mb;
}
void BM_RunnerInterval(benchmark::State& state) { RunnerInterval(state, 0); }
BENCHMARK(BM_RunnerInterval)
    ->Args({kNodesAtScale, 1})
    ->Args({kNodesAtScale, 3})
    ->Args({kNodesAtScale, 10})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(5);
// 1M GPUs: run it on its own (--benchmark_filter=BM_RunnerInterval/125000).
BENCHMARK(BM_RunnerInterval)
    ->Args({5 * kNodesAtScale, 10})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3);

// BM_RunnerIntervalAlone/<nodes>: the same of a lone collector without
// --analysis_shards (the default), its whole fabric analysed in one pass
// (every analyzer over one view: AnalysisRunner::RunRateAnalyzers()).
void BM_RunnerIntervalAlone(benchmark::State& state) {
  RunnerInterval(state, 0, /*sharded=*/false);
}
BENCHMARK(BM_RunnerIntervalAlone)
    ->Args({kNodesAtScale / 8, 1})
    ->Args({kNodesAtScale, 1})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(10);

// BM_RunnerIntervalWatched/<nodes>/<collectors>/<pages>: the same with
// <pages> jobs of collector 0's shards open in a browser (their views
// copied each pass); 1M GPUs, run on its own.
void BM_RunnerIntervalWatched(benchmark::State& state) {
  RunnerInterval(state, static_cast<int>(state.range(2)));
}
BENCHMARK(BM_RunnerIntervalWatched)
    ->Args({5 * kNodesAtScale, 10, 0})
    ->Args({5 * kNodesAtScale, 10, 1})
    ->Args({5 * kNodesAtScale, 10, 1000})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(10);

void BM_ParseTopology(benchmark::State& state) {
  const Fixture& fx = FixtureFor(kNodesAtScale, kJobsAtScale);
  const std::string& text = fx.cluster->topology_yaml();
  int links = 0;
  for (auto _ : state) {
    absl::StatusOr<v1::Topology> topology = ParseTopology(text);
    if (!topology.ok()) {
      state.SkipWithError(std::string(topology.status().message()).c_str());
      return;
    }
    links = topology->links_size();
  }
  state.counters["links"] = links;
  state.counters["yaml_MB"] = static_cast<double>(text.size()) / 1e6;
  state.counters["proto_MB"] =
      static_cast<double>(fx.cluster->topology().ByteSizeLong()) / 1e6;
}
BENCHMARK(BM_ParseTopology)->Unit(benchmark::kMillisecond)->Iterations(3);

}  // namespace
}  // namespace fabricdiag::analysis::scenario

int main(int argc, char** argv) {
  // As fabricdiag-collector runs (server/collector_main.cc): Debian's
  // Abseil checks every Mutex lock against a global lock graph.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
