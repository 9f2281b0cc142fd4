// The quality suite of the rate analyzers: realistic clusters (8-64 nodes,
// a MoE and a dense job, leaf switches) with healthy noise and injected
// faults, run through RunRateAnalyzers() and the hysteresis for several
// passes the way the collector runs them, with the newest samples beside
// each window (the fast path for strong faults). Every fault must be found
// (recall 1) and healthy clusters raise nothing (precision 1): the suite
// prints a table and asserts both over all scenarios. A second table gives,
// per kind, the passes to open (with and without the newest samples) and
// to resolve. The agent_down analyzer gets its own timelines of agents
// going silent and coming back.
//
// Run: build-*/tests/scenario_suite_test  (the table is on stdout).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <iostream>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "analysis/agent_down.h"
#include "analysis/analyzer.h"
#include "analysis/analyzer_util.h"
#include "analysis/congestion.h"
#include "analysis/hot_expert_incast.h"
#include "analysis/hysteresis.h"
#include "analysis/link_degraded.h"
#include "analysis/pfc_storm.h"
#include "analysis/straggler_nic.h"
#include "tests/testing/scenario_builder.h"
#include "tests/testing/scenario_score.h"

namespace fabricdiag::analysis::scenario {
namespace {

struct Scenario {
  std::string name;
  std::string cluster = "16n";  // a key of ClusterSpecs()
  std::vector<Fault> faults;
  TrafficOptions traffic;
  uint32_t seed = 1;
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
  return out;
}

// Seeds of the newest-samples views are this far from the windows' seeds.
constexpr uint32_t kNewestSeed = 500000;

// Every finding open after any pass of `passes` windows with `faults` held,
// deduplicated by key. The faults start on a cluster the collector has
// watched for a while (Cluster::Watched), as they do in production: a
// straggler in an expert-parallel job is judged against its own history.
std::vector<Finding> RunPasses(const Cluster& cluster,
                               const AnalysisConfig& config,
                               const std::vector<Fault>& faults,
                               const TrafficOptions& traffic, uint32_t seed,
                               int passes) {
  Hysteresis gate(config.hysteresis);
  StragglerBaselines baselines = cluster.Watched(traffic, seed, config);
  std::map<std::tuple<std::string, std::string, std::string, std::string>,
           Finding>
      seen;
  for (int pass = 0; pass < passes; ++pass) {
    // Where sampling is said, pass p's window ends with report 5 + p.
    TrafficOptions window_traffic = traffic;
    window_traffic.last_report = 5 + pass;
    TrafficOptions newest_traffic = window_traffic;
    newest_traffic.newest_only = true;
    FabricView view = cluster.View(faults, window_traffic, seed * 1000 + pass);
    // The newest samples: an independent draw of the same traffic, as
    // noisy as a whole window of it (the builder's noise is per pass), so
    // the fast path for strong faults is held to the same precision.
    FabricView newest =
        cluster.View(faults, newest_traffic, seed * 1000 + pass + kNewestSeed);
    const AnalysisInput window = cluster.Input(&view, &config, &baselines);
    for (Finding& f : gate.Step(
             RunRateAnalyzers(window),
             RunRateAnalyzers(cluster.Input(&newest, &config, &baselines)))) {
      seen[{f.kind, f.node, f.device, f.group}] = std::move(f);
    }
    baselines.Update(window);
  }
  std::vector<Finding> out;
  out.reserve(seen.size());
  for (auto& [key, f] : seen) out.push_back(std::move(f));
  return out;
}

std::string Cell(const std::vector<std::string>& items) {
  return items.empty() ? "-" : absl::StrJoin(items, "; ");
}

TEST(ScenarioSuiteTest, EveryFaultFoundAndHealthyClustersRaiseNothing) {
  const AnalysisConfig config;
  // Enough passes for a finding to open (open_after) and a flicker to show.
  const int passes = config.hysteresis.open_after + 2;
  const std::map<std::string, ClusterSpec> specs = ClusterSpecs();
  std::map<std::string, Cluster> clusters;
  int expected = 0, found = 0, tp_findings = 0, false_positives = 0;
  // Per finding kind: primaries expected / found, and false positives.
  std::map<std::string, std::tuple<int, int, int>> by_kind;
  std::ostringstream table;
  table << std::left << std::setw(36) << "scenario"
        << " | expected | found"
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
    const std::vector<Finding> open =
        RunPasses(cluster, config, sc.faults, sc.traffic, sc.seed, passes);
    const ScenarioScore s = ScoreFindings(want, open);
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
    table << std::setw(36) << sc.name << " | " << std::setw(8) << s.expected
          << " | " << std::setw(5) << s.found << " | " << Cell(missed) << " | "
          << Cell(fps);
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
  table << "\nper kind: expected / found / false positives\n";
  for (const auto& [kind, n] : by_kind) {
    table << "  " << std::setw(20) << kind << " " << std::get<0>(n) << " / "
          << std::get<1>(n) << " / " << std::get<2>(n) << "\n";
  }
  table << "\nfaults expected " << expected << ", found " << found
        << "; findings matching a fault " << tp_findings << ", false positives "
        << false_positives << "\n"
        << "recall " << std::setprecision(3) << recall << ", precision "
        << precision << "\n";
  std::cout << table.str() << std::flush;
  EXPECT_EQ(recall, 1.0) << "faults the analyzers missed (table above)";
  EXPECT_EQ(precision, 1.0) << "findings no fault explains (table above)";
}

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
