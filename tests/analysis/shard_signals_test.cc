// What a shard's owner is sent is all its analyzers read: each kind's
// analyzers find the same over ports cut down to ShardSlots(kind) as over
// whole ports, on the scenario suite's clusters with every fault and every
// traffic quirk the suite knows.
#include "analysis/shard_signals.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "analysis/analysis_config.h"
#include "analysis/analyzer.h"
#include "analysis/ecmp_imbalance.h"
#include "analysis/hot_expert_incast.h"
#include "analysis/layout_model.h"
#include "analysis/layout_parse.h"
#include "analysis/pfc_storm.h"
#include "analysis/signal_slots.h"
#include "analysis/straggler_nic.h"
#include "analysis/tp_cross_node.h"
#include "counters/meanings.h"
#include "tests/testing/scenario_builder.h"

namespace fabricdiag::analysis::scenario {
namespace {

using ::testing::IsEmpty;
using ::testing::Not;

// Every field of every finding, numbers to the last bit.
std::vector<std::string> Rendered(const std::vector<Finding>& found) {
  std::vector<std::string> out;
  for (const Finding& f : found) {
    std::string s = absl::StrCat(f.kind, " ", static_cast<int>(f.severity), " ",
                                 f.job, " ", f.node, " ", f.device, " ",
                                 f.group, " [", absl::StrJoin(f.nodes, ","),
                                 "] ", f.summary, " immediate=", f.immediate);
    for (const auto& [k, v] : f.evidence) {
      absl::StrAppendFormat(&s, " %s=%.17g", k, v);
    }
    for (const auto& [k, v] : f.evidence_text)
      absl::StrAppend(&s, " ", k, "=", v);
    out.push_back(std::move(s));
  }
  return out;
}

// `view` with every port's signals cut down to `slots`.
FabricView CutDown(const FabricView& view, absl::Span<const int> slots) {
  FabricView out;
  out.window_seconds = view.window_seconds;
  for (const PortView& p : view.ports()) {
    PortView& q = out.AddPort(p.node, p.device);
    q = p;
    KeepOnly(slots, &q.s);
  }
  out.Finish();
  return out;
}

// A tensor-parallel group of 16 across gpu-000 and gpu-001: tp_cross_node
// measures its NICs' traffic in the view.
LayoutModel CrossNodeTp() {
  absl::StatusOr<v1::Layout> layout = ParseLayout(
      "job: dense-tp16\n"
      "gpus_per_node: 8\n"
      "parallelism: {tp: 16, pp: 1, dp: 1}\n"
      "hosts: [gpu-000, gpu-001]\n"
      "rails: [mlx5_0, mlx5_1, mlx5_2, mlx5_3, mlx5_4, mlx5_5, mlx5_6, "
      "mlx5_7]\n"
      "model: {params: 7.0e9, hidden: 4096, layers: 32, seq_len: 4096, "
      "micro_batch: 1, micro_batches: 4, dtype_bytes: 2}\n");
  EXPECT_TRUE(layout.ok()) << layout.status();
  absl::StatusOr<LayoutModel> model =
      LayoutModel::Build(layout.ok() ? *layout : v1::Layout());
  EXPECT_TRUE(model.ok()) << model.status();
  return *std::move(model);
}

std::vector<Finding> JobFindings(const AnalysisInput& in,
                                 const LayoutModel& tp) {
  std::vector<Finding> out = HotExpertIncastFindings(in);
  for (Finding& f : StragglerNicFindings(in)) out.push_back(std::move(f));
  for (Finding& f : TpCrossNodeFindings(tp, in.view)) {
    out.push_back(std::move(f));
  }
  return out;
}

// tp_cross_node as the lease holder of a sharded cluster raises it: with
// the loads the job shard's owner measured in `measured_in` and told.
std::vector<Finding> ToldTpFindings(const LayoutModel& tp,
                                    const FabricView& measured_in) {
  const std::vector<TpGroupLoad> loads = MeasureTpCrossings(tp, measured_in);
  return TpCrossNodeFindings(tp, [&](uint32_t g) -> const TpGroupLoad* {
    for (const TpGroupLoad& l : loads) {
      if (l.group == g) return &l;
    }
    return nullptr;
  });
}

std::vector<Finding> SwitchFindings(const AnalysisInput& in) {
  std::vector<Finding> out = EcmpImbalanceFindings(in);
  for (Finding& f : PfcStormFindings(in)) out.push_back(std::move(f));
  return out;
}

struct Traffic {
  std::string name;
  TrafficOptions options;
};

std::vector<Traffic> Traffics() {
  std::vector<Traffic> out;
  out.push_back({"plain", {}});
  TrafficOptions bursts;
  bursts.dp_bursts = true;
  out.push_back({"bursts", bursts});
  TrafficOptions frames;
  frames.frames_only_pause = true;
  out.push_back({"frames-only-pause", frames});
  TrafficOptions stale;
  stale.stale_nodes = {"gpu-003", "gpu-010"};
  out.push_back({"jitter-and-stale-reads", stale});
  TrafficOptions bare;
  bare.bare_nodes = {"gpu-004", "gpu-011"};
  out.push_back({"vm-nodes", bare});
  TrafficOptions skew;
  skew.routing_skew_sigma = 0.3;
  out.push_back({"moe-routing-skew", skew});
  return out;
}

// Where each fault goes in the 16-node two-job cluster (MoE on
// gpu-000..007, dense on gpu-008..015).
std::vector<std::vector<Fault>> Faults() {
  return {
      {},
      {{FaultKind::kHotExpert, "gpu-001", "mlx5_2"}},
      {{FaultKind::kPfcStorm, "gpu-009", "mlx5_5"}},
      {{FaultKind::kEcmpImbalance, "leaf-1", ""}},
      {{FaultKind::kLinkErrors, "gpu-002", "mlx5_4"}},
      {{FaultKind::kLinkFlap, "gpu-012", "mlx5_1"}},
      {{FaultKind::kLinkDegraded, "gpu-005", "mlx5_7"}},
      {{FaultKind::kRetransmissions, "gpu-014", "mlx5_3"}},
      {{FaultKind::kCongestion, "gpu-010", "mlx5_6"}},
      {{FaultKind::kStragglerNic, "gpu-006", "mlx5_0"}},
      {{FaultKind::kHotExpert, "gpu-001", "mlx5_2"},
       {FaultKind::kPfcStorm, "gpu-009", "mlx5_5"},
       {FaultKind::kStragglerNic, "gpu-013", "mlx5_4"}},
  };
}

TEST(ShardSignalsTest, EachKindsAnalyzersFindTheSameOnItsSignalsAlone) {
  absl::StatusOr<Cluster> cluster = Cluster::Build(TwoJobCluster(16));
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  const AnalysisConfig config;
  const LayoutModel tp = CrossNodeTp();
  // Per finding kind, how many were compared: each must be found somewhere
  // for the comparison to mean anything.
  std::map<std::string, int> compared;
  for (const Traffic& traffic : Traffics()) {
    const StragglerBaselines baselines =
        cluster->Watched(traffic.options, 7, config);
    for (const std::vector<Fault>& faults : Faults()) {
      for (uint32_t seed : {1u, 2u}) {
        const FabricView view = cluster->View(faults, traffic.options, seed);
        SCOPED_TRACE(absl::StrCat(
            traffic.name, ", ", faults.size(), " fault(s) from ",
            faults.empty() ? "none" : faults[0].node, ", seed ", seed));
        const FabricView jobs = CutDown(view, ShardSlots(ShardKind::kJobs));
        const std::vector<Finding> whole_jobs =
            JobFindings(cluster->Input(&view, &config, &baselines), tp);
        EXPECT_EQ(Rendered(JobFindings(
                      cluster->Input(&jobs, &config, &baselines), tp)),
                  Rendered(whole_jobs));
        // Measured in the job shard's signals and told: the same words.
        const std::vector<Finding> told = ToldTpFindings(tp, jobs);
        EXPECT_EQ(Rendered(told), Rendered(TpCrossNodeFindings(tp, &view)));
        for (const Finding& f : told) {
          if (f.evidence.count("confirmed_at_runtime") != 0 &&
              f.evidence.at("confirmed_at_runtime") == 1) {
            ++compared["tp_cross_node (told, confirmed)"];
          }
        }

        const FabricView switches =
            CutDown(view, ShardSlots(ShardKind::kSwitches));
        const std::vector<Finding> whole_switches =
            SwitchFindings(cluster->Input(&view, &config, &baselines));
        EXPECT_EQ(Rendered(SwitchFindings(
                      cluster->Input(&switches, &config, &baselines))),
                  Rendered(whole_switches));

        for (const auto* found : {&whole_jobs, &whole_switches}) {
          for (const Finding& f : *found) ++compared[f.kind];
        }
      }
    }
  }
  // Switches without telemetry: ecmp_imbalance compares the CNPs each
  // NIC of a rail handles instead (gpu-003's mlx5_5, 50k/s).
  const FabricView with_switches = cluster->View({}, TrafficOptions{}, 3);
  FabricView hosts_only;
  for (const PortView& p : with_switches.ports()) {
    if (p.is_switch_port) continue;
    PortView& q = hosts_only.AddPort(p.node, p.device);
    q = p;
    if (p.node == "gpu-003" && p.device == "mlx5_5") q.s.cnp_handled = 50e3;
  }
  hosts_only.Finish();
  const StragglerBaselines none;
  const std::vector<Finding> rail =
      SwitchFindings(cluster->Input(&hosts_only, &config, &none));
  const FabricView rail_cut =
      CutDown(hosts_only, ShardSlots(ShardKind::kSwitches));
  EXPECT_EQ(Rendered(SwitchFindings(cluster->Input(&rail_cut, &config, &none))),
            Rendered(rail));
  for (const Finding& f : rail) ++compared[f.kind + " (rail)"];

  for (const char* kind :
       {"hot_expert_incast", "straggler_nic", "tp_cross_node", "ecmp_imbalance",
        "pfc_storm", "ecmp_imbalance (rail)",
        "tp_cross_node (told, confirmed)"}) {
    EXPECT_GT(compared[kind], 0) << kind << " was never found";
  }
}

// The comparison above sees a signal left out: with no slot kept, every
// kind's findings change (the faults' signals are gone).
TEST(ShardSignalsTest, LeavingSignalsOutChangesTheFindings) {
  absl::StatusOr<Cluster> cluster = Cluster::Build(TwoJobCluster(16));
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  const AnalysisConfig config;
  const StragglerBaselines baselines = cluster->Watched({}, 7, config);
  const FabricView view =
      cluster->View({{FaultKind::kHotExpert, "gpu-001", "mlx5_2"},
                     {FaultKind::kPfcStorm, "gpu-009", "mlx5_5"},
                     {FaultKind::kEcmpImbalance, "leaf-1", ""}},
                    {}, 1);
  const FabricView nothing = CutDown(view, {});
  const std::vector<Finding> jobs =
      HotExpertIncastFindings(cluster->Input(&view, &config, &baselines));
  ASSERT_THAT(jobs, Not(IsEmpty()));
  EXPECT_NE(Rendered(HotExpertIncastFindings(
                cluster->Input(&nothing, &config, &baselines))),
            Rendered(jobs));
  const std::vector<Finding> switches =
      SwitchFindings(cluster->Input(&view, &config, &baselines));
  ASSERT_THAT(switches, Not(IsEmpty()));
  EXPECT_NE(
      Rendered(SwitchFindings(cluster->Input(&nothing, &config, &baselines))),
      Rendered(switches));
}

TEST(ShardSignalsTest, KeepOnlyLeavesTheOtherSlotsAbsent) {
  PortSignals s;
  for (int slot = 0; slot < counters::kSignalSlots; ++slot) {
    SlotOf(s, slot) = slot + 1;
  }
  s.link_up = false;
  const absl::Span<const int> kept = ShardSlots(ShardKind::kJobs);
  KeepOnly(kept, &s);
  for (int slot = 0; slot < counters::kSignalSlots; ++slot) {
    SCOPED_TRACE(slot);
    if (std::find(kept.begin(), kept.end(), slot) != kept.end()) {
      EXPECT_EQ(SlotOf(s, slot), slot + 1);
    } else if (slot == static_cast<int>(counters::Signal::kLinkRate) ||
               slot == static_cast<int>(counters::Signal::kExpectedRate)) {
      EXPECT_EQ(SlotOf(s, slot), 0);
    } else {
      EXPECT_FALSE(Has(SlotOf(s, slot)));
    }
  }
  EXPECT_FALSE(s.link_up);
  // A job shard carries the pause a NIC transmits, not what it receives.
  EXPECT_EQ(s.tx_pause_fraction[3], 1 + 37 + 3);
  EXPECT_FALSE(Has(s.rx_pause_fraction[3]));
  EXPECT_LT(kept.size(), 24u);
  EXPECT_LT(ShardSlots(ShardKind::kSwitches).size(), 40u);
}

}  // namespace
}  // namespace fabricdiag::analysis::scenario
