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
// BM_LeaderPassAtScale: what the analysis leader of a 3-collector cluster
// does each pass at 25,000 nodes x 8 NICs + 1,563 leaves, 200 jobs, fed
// with the features in the format the feature stream carries: the fabric's
// nodes are dealt to 3 collectors; the 2 remote slices arrive as decoded
// v1::FeatureChunks (cluster/feature_wire.h, every signal the scenario
// sets, window and recent views), and a pass times
//   merge:   AddChunkToSlice + FinishSlice of each remote slice, then
//            MergeFeatureSlices with the local one (as
//            JetStreamFeatures::Merged);
//   analyze: RunRateAnalyzers over the window, StragglerBaselines::Update,
//            RunRateAnalyzers over the recent view, Hysteresis::Step (as
//            collector/analysis_runner.cc, with straggler baselines
//            watched beforehand).
// Not timed: building the leader's own slice from its series store,
// agent_down, the layout analyzers and the findings store's update, and the
// protobuf decode of each chunk (done as it is received, on the NATS
// thread; printed once as receive_ms). Target: the pass within the 1 s
// analysis interval.
//
// BM_ParseTopology: ParseTopology (analysis/layout_parse.h) of the 25,000
// node fabric's topology YAML (200,000 links, 1,563 switches); its memory
// is measured on the CLI process by bench/topology_scale.py.
//
// Measured on one pinned core of a 2-core machine shared with other builds
// (docs/cluster.md#measured): BM_AnalysisPassAtScale/25000 294 ms of CPU;
// BM_LeaderPassAtScale 3.7 s of CPU, 2.6 s of it the merge: over the 1 s
// interval; BM_ParseTopology 5.5 s of CPU.
//
//   build/bench/fabricdiag_analysis_bench --benchmark_filter=BM_AnalysisPass
//   taskset -c 1 build/bench/fabricdiag_analysis_bench
//       --benchmark_filter='AtScale|ParseTopology'   (one line)
#include <benchmark/benchmark.h>
#include <time.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "analysis/analysis_config.h"
#include "analysis/analyzer.h"
#include "analysis/fabric_view.h"
#include "analysis/hysteresis.h"
#include "analysis/layout_parse.h"
#include "analysis/straggler_nic.h"
#include "bench/feature_slices.h"
#include "cluster/feature_wire.h"
#include "collector/feature_exchange.h"
#include "proto/cluster.pb.h"
#include "tests/testing/scenario_builder.h"

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

void BM_AnalysisPassAtScale(benchmark::State& state) {
  RunPasses(state, static_cast<int>(state.range(0)), kJobsAtScale);
}
BENCHMARK(BM_AnalysisPassAtScale)
    ->Arg(12500)
    ->Arg(kNodesAtScale)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(5);

// This thread's CPU time in ms: the machine is shared, so phases are
// measured in CPU time rather than wall time.
double ThreadCpuMs() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 +
         static_cast<double>(ts.tv_nsec) / 1e6;
}

// CPU ms per phase of a pass, summed over passes.
struct Phases {
  double last = ThreadCpuMs();
  std::vector<std::pair<const char*, double>> ms;
  void Mark(const char* phase) {
    const double now = ThreadCpuMs();
    for (auto& [name, total] : ms) {
      if (name == phase) {
        total += now - last;
        last = now;
        return;
      }
    }
    ms.emplace_back(phase, now - last);
    last = now;
  }
};

// The leader's pass (see the top of the file): one local slice, the others
// as the chunks the feature stream delivered.
struct LeaderFixture {
  collector::FeatureSlice local;
  std::vector<std::vector<v1::FeatureChunk>> remote;
  FabricView recent;
  StragglerBaselines baselines;
  size_t chunk_bytes = 0;
  double receive_ms = 0;  // decoding every remote chunk once
};

const LeaderFixture& LeaderFixtureFor(const Fixture& fx) {
  static LeaderFixture* leader = nullptr;
  if (leader != nullptr) return *leader;
  leader = new LeaderFixture;
  const Cluster& c = *fx.cluster;
  leader->recent = c.View(fx.faults, TrafficOptions{}, 2);
  leader->recent.window_seconds = fx.config.hysteresis.recent_seconds;
  leader->baselines = c.Watched(TrafficOptions{}, 3, fx.config);
  const absl::Time now = absl::Now();
  std::vector<collector::FeatureSlice> slices =
      bench::DealSlices(fx.view, leader->recent, kCollectors, now);
  leader->local = std::move(slices[0]);
  for (int k = 1; k < kCollectors; ++k) {
    const collector::FeatureSlice& slice = slices[k];
    std::vector<v1::FeatureChunk> chunks =
        cluster::SliceToChunks(slice, "col-" + std::to_string(k), now);
    std::vector<std::string> wire;
    for (const v1::FeatureChunk& chunk : chunks) {
      wire.push_back(chunk.SerializeAsString());
      leader->chunk_bytes += wire.back().size();
    }
    const double start = ThreadCpuMs();
    for (size_t i = 0; i < wire.size(); ++i) {
      (void)chunks[i].ParseFromString(wire[i]);
    }
    leader->receive_ms += ThreadCpuMs() - start;
    leader->remote.push_back(std::move(chunks));
  }
  return *leader;
}

void BM_LeaderPassAtScale(benchmark::State& state) {
  const Fixture& fx = FixtureFor(kNodesAtScale, kJobsAtScale);
  const LeaderFixture& leader = LeaderFixtureFor(fx);
  const TopologyIndex topology(&fx.cluster->topology());
  StragglerBaselines baselines = leader.baselines;
  Hysteresis gate(fx.config.hysteresis);
  Phases phases;
  size_t ports = 0, open = 0;
  int passes = 0;
  for (auto _ : state) {
    // The merge moves the slices' ports out: the leader's own slice, which
    // a collector builds afresh each pass, is copied outside the phases.
    state.PauseTiming();
    collector::FeatureSlice local = leader.local;
    state.ResumeTiming();
    phases.Mark("other_ms");
    std::vector<collector::FeatureSlice> remote(leader.remote.size());
    std::vector<collector::FeatureSlice*> slices = {&local};
    for (size_t r = 0; r < leader.remote.size(); ++r) {
      for (const v1::FeatureChunk& chunk : leader.remote[r]) {
        cluster::AddChunkToSlice(chunk, &remote[r]);
      }
      phases.Mark("add_chunks_ms");
      cluster::FinishSlice(&remote[r]);
      phases.Mark("finish_ms");
      slices.push_back(&remote[r]);
    }
    collector::FeatureSlice fabric = collector::MergeFeatureSlices(slices);
    phases.Mark("merge_slices_ms");
    AnalysisInput in = fx.cluster->Input(&fabric.window, &fx.config);
    in.topology_index = &topology;
    in.straggler_baselines = &baselines;
    std::vector<Finding> window = RunRateAnalyzers(in);
    phases.Mark("analyze_window_ms");
    baselines.Update(in);
    phases.Mark("baselines_ms");
    in.view = &*fabric.recent;
    std::vector<Finding> recent = RunRateAnalyzers(in);
    phases.Mark("analyze_recent_ms");
    std::vector<Finding> now = gate.Step(std::move(window), std::move(recent));
    benchmark::DoNotOptimize(now.data());
    phases.Mark("step_ms");
    ports = fabric.window.ports().size();
    open = now.size();
    ++passes;
    // The collector frees them in its pass too (the previous pass's view
    // when this one replaces it).
    fabric = collector::FeatureSlice();
    remote.clear();
    phases.Mark("free_ms");
  }
  phases.Mark("other_ms");
  state.counters["ports"] = static_cast<double>(ports);
  state.counters["chunk_MB"] = static_cast<double>(leader.chunk_bytes) / 1e6;
  state.counters["receive_ms"] = leader.receive_ms;
  for (const auto& [name, ms] : phases.ms) {
    if (std::string(name) != "other_ms") state.counters[name] = ms / passes;
  }
  state.counters["open"] = static_cast<double>(open);
}
BENCHMARK(BM_LeaderPassAtScale)->Unit(benchmark::kMillisecond)->Iterations(5);

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

BENCHMARK_MAIN();
