// The discovered topology at the scale of a 200,000-GPU fabric, on one core.
//
// The fabric (tests/testing/lldp_fabric.h): 25,000 hosts x 8 NICs,
// rail-optimized onto 1,256 leaves of 160 host ports, 51 pods of 25 leaves
// and 4 spines (204 spines), 40 super-spines: 1,500 switches in 3 tiers,
// 200,000 host links and 7,064 switch links, every cable reported by both
// ends (414,128 LLDP neighbors). Building the facts is not timed.
//
// BM_DiscoverTopology: DiscoverTopology over every node's facts. Counters:
//   result_mb: the discovered topology's in-memory size
//              (Message::SpaceUsedLong);
//   rss_delta_mb: the process's resident memory grown by the first call
//                 (VmRSS after it, the result still held, minus before):
//                 what drawing it costs beyond the facts;
//   peak_rss_delta_mb: ru_maxrss grown by the first call (the transient
//                      peak, the result included).
// BM_EffectiveTopology: EffectiveTopology(nullptr, discovered) and a
//   TopologyIndex of it: what the collector does after each rebuild.
// BM_DiffTopology, BM_CablingMismatch: DiffTopology (`fabricdiag topology
//   diff`) and the cabling_mismatch analyzer (run twice in every analysis
//   pass) with a declared topology equal to the discovered one but for
//   1,000 NICs declared on another port.
// BM_NodeFactsSnapshotAfterAWrite: one node's facts written, then a
//   snapshot of every node's (as a pass, a drawing or a scrape takes one
//   while the facts move).
// Target: DiscoverTopology < 1 s. Figures in bench/RESULTS.md.
//
//   taskset -c 1 build/bench/fabricdiag_topology_bench
#include <benchmark/benchmark.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <vector>

#include "absl/strings/str_cat.h"
#include "analysis/analyzer.h"
#include "analysis/cabling_mismatch.h"
#include "analysis/lldp_topology.h"
#include "analysis/topology_index.h"
#include "collector/declared/node_facts_memory.h"
#include "tests/testing/lldp_fabric.h"
#include "tests/testing/proc_stat.h"

namespace fabricdiag {
namespace {

using analysis::DiscoveredTopology;
using analysis::DiscoverTopology;

constexpr double kMiB = 1024.0 * 1024.0;

const testing::ClosFabric& Fabric() {
  static const testing::ClosFabric* fabric = [] {
    testing::ClosShape shape;
    shape.hosts = 25000;
    shape.nics = 8;
    shape.host_ports_per_leaf = 160;
    shape.leaves_per_pod = 25;
    shape.spines_per_pod = 4;
    shape.super_spines = 40;
    return new testing::ClosFabric(testing::BuildClos(shape));
  }();
  return *fabric;
}

const DiscoveredTopology& Discovered() {
  static const DiscoveredTopology* found = new DiscoveredTopology(
      DiscoverTopology(Fabric().fabric.Facts(), nullptr));
  return *found;
}

double RssMiB() {
  absl::StatusOr<testing::ProcessMemory> m =
      testing::ReadProcessMemory(getpid());
  return m.ok() ? static_cast<double>(m->rss) / kMiB : -1;
}

double PeakRssMiB() {
  struct rusage usage {};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;  // KiB on Linux
}

void BM_DiscoverTopology(benchmark::State& state) {
  const std::vector<const v1::NodeFacts*> facts = Fabric().fabric.Facts();
  const double rss_before = RssMiB();
  const double peak_before = PeakRssMiB();
  std::vector<DiscoveredTopology> first;  // held to measure its memory
  first.push_back(DiscoverTopology(facts, nullptr));
  state.counters["rss_delta_mb"] = RssMiB() - rss_before;
  state.counters["peak_rss_delta_mb"] = PeakRssMiB() - peak_before;
  const v1::Topology& t = first[0].topology;
  state.counters["result_mb"] = static_cast<double>(t.SpaceUsedLong()) / kMiB;
  state.counters["switches"] = t.switches_size();
  state.counters["links"] = t.links_size();
  state.counters["switch_links"] = t.switch_links_size();
  state.counters["problems"] = static_cast<double>(first[0].problems.size());
  state.counters["nodes"] = static_cast<double>(facts.size());
  for (auto _ : state) {
    DiscoveredTopology found = DiscoverTopology(facts, nullptr);
    benchmark::DoNotOptimize(found.topology.links_size());
  }
}
BENCHMARK(BM_DiscoverTopology)->Unit(benchmark::kMillisecond)->Iterations(3);

void BM_EffectiveTopology(benchmark::State& state) {
  const v1::Topology& discovered = Discovered().topology;
  for (auto _ : state) {
    const v1::Topology effective =
        analysis::EffectiveTopology(nullptr, discovered);
    const analysis::TopologyIndex index(&effective);
    benchmark::DoNotOptimize(index.IsSwitch("leaf-0"));
  }
}
BENCHMARK(BM_EffectiveTopology)->Unit(benchmark::kMillisecond)->Iterations(3);

// A declared topology equal to the discovered one but for 1,000 NICs
// declared on a port LLDP does not see them on.
const v1::Topology& Declared() {
  static const v1::Topology* declared = [] {
    auto* t = new v1::Topology(Discovered().topology);
    for (int i = 0; i < 1000; ++i) {
      v1::Link* link = t->mutable_links(i * 199);
      link->set_port(absl::StrCat(link->port(), "0"));
    }
    return t;
  }();
  return *declared;
}

void BM_DiffTopology(benchmark::State& state) {
  size_t found = 0;
  for (auto _ : state) {
    found = analysis::DiffTopology(Declared(), Discovered().topology).size();
  }
  state.counters["differences"] = static_cast<double>(found);
}
BENCHMARK(BM_DiffTopology)->Unit(benchmark::kMillisecond)->Iterations(3);

void BM_CablingMismatch(benchmark::State& state) {
  analysis::AnalysisInput in;
  in.declared_topology = &Declared();
  in.discovered_topology = &Discovered().topology;
  size_t found = 0;
  for (auto _ : state) {
    found = analysis::CablingMismatchFindings(in).size();
  }
  state.counters["findings"] = static_cast<double>(found);
}
BENCHMARK(BM_CablingMismatch)->Unit(benchmark::kMillisecond)->Iterations(5);

// The same findings in a pass whose topologies were compared when they were
// drawn (TopologyViews::cabling): what each pass pays since, every host
// link's job asked of no layout (none given).
void BM_CablingMismatchCompared(benchmark::State& state) {
  const analysis::CablingMismatches compared =
      analysis::CablingMismatchesOf(Declared(), Discovered().topology);
  analysis::AnalysisInput in;
  in.declared_topology = &Declared();
  in.discovered_topology = &Discovered().topology;
  in.cabling_mismatches = &compared;
  size_t found = 0;
  for (auto _ : state) {
    found = analysis::CablingMismatchFindings(in).size();
  }
  state.counters["findings"] = static_cast<double>(found);
}
BENCHMARK(BM_CablingMismatchCompared)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(5);

// BM_NodeFactsSnapshotAfterAWrite: the collector's node facts (every node
// of the fabric, its LLDP neighbors) while they move: one node's facts
// written, then a snapshot taken (what each analysis pass, each drawing
// and each /metrics scrape asks for). While thousands of agents connect,
// the facts move between any two snapshots.
void BM_NodeFactsSnapshotAfterAWrite(benchmark::State& state) {
  collector::MemoryNodeFacts store;
  const std::vector<const v1::NodeFacts*> facts = Fabric().fabric.Facts();
  for (const v1::NodeFacts* f : facts) {
    if (!store.Put(*f).ok()) std::abort();
  }
  v1::NodeFacts moving = *facts[0];
  uint32_t gpu = 0;
  size_t nodes = 0;
  for (auto _ : state) {
    moving.clear_gpu_nics();
    moving.set_gpus_read(true);
    v1::GpuNic* pair = moving.add_gpu_nics();
    pair->set_gpu(gpu++ % 8);
    pair->set_device("mlx5_0");
    if (!store.Put(moving).ok()) std::abort();
    nodes = store.Snapshot()->size();
  }
  state.counters["nodes"] = static_cast<double>(nodes);
}
BENCHMARK(BM_NodeFactsSnapshotAfterAWrite)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(20);

}  // namespace
}  // namespace fabricdiag

BENCHMARK_MAIN();
