// Realistic GPU clusters as FabricViews, with faults injected, for the
// scenario suite (tests/analysis/scenario_suite_test.cc) and the analysis
// benchmark (bench/analysis_bench.cc).
//
// A cluster is N GPU nodes "gpu-000".. with 8 RoCE NICs each (mlx5_0..7 on
// netdevs eth0..7, 400 Gb/s = 50e9 B/s), cabled to leaf switches "leaf-0"..
// (`nodes_per_leaf` nodes each; host ports swp1..swpK, K = 8 x
// nodes_per_leaf, and 4 ECMP uplinks swp49..52, or swpK+1..K+4 on leaves
// wider than 48 host ports). Jobs are declared as layout YAML, parsed with
// ParseLayout and built with LayoutModel::Build; the topology YAML is parsed
// with ParseTopology, so the suite exercises the real file formats.
//
// Each call to View() draws a fresh window of healthy traffic with seeded
// noise (std::mt19937), the way consecutive analysis passes see it:
// - MoE jobs: all-to-all inside each EP group, ~15 GB/s per NIC each way
//   with +-30% routing skew per NIC;
// - dense jobs: a data-parallel gradient component (common to every member
//   of a DP group: bursts raise a whole group together) plus a pipeline
//   component that is halved on the first and last stage (one neighbour);
// - CNP/ECN at 100-500/s, PFC pause under 0.3% of the time on priority 3
//   (the only lossless priority: other priorities report nothing, as mlx5
//   shows per-priority PFC counters only where PFC is enabled), pre-FEC BER
//   ~1e-9, no error, flap or retransmission events;
// - switch host ports mirror their host NIC (rx <-> tx, pause rx <-> tx),
//   uplinks carry half of the leaf's host traffic, spread evenly +-5%.
// Faults (Fault) change the signals the way the real fault does; see
// FaultKind. Expect() says which finding each fault must raise and which
// secondary findings it may legitimately raise.
//
// Agents report once per analysis pass, shortly before it; an AgentOutage
// silences one for some passes, and Liveness() says what the collector
// knows of every host's agent at a pass: the agent_down analyzer's input.
//
//   ASSIGN_OR_RETURN(Cluster c, Cluster::Build(TwoJobCluster(16)));
//   Fault f{FaultKind::kPfcStorm, c.HostName(3), "mlx5_2"};
//   FabricView view = c.View({f}, TrafficOptions{}, /*seed=*/7);
//   AnalysisInput in = c.Input(&view, &config);
//   FaultExpectation e = c.Expect(f);
//   AgentOutage killed{c.HostName(5), /*from_pass=*/2, /*missed=*/-1};
//   const absl::Duration interval = absl::Seconds(1);
//   std::vector<Finding> down = AgentDownFindings(
//       c.Liveness({killed}, 6, interval), PassTime(6, interval));
//
// A built Cluster is immutable: View(), Expect() and Liveness() are const
// and thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "analysis/agent_down.h"
#include "analysis/analysis_config.h"
#include "analysis/analyzer.h"
#include "analysis/fabric_view.h"
#include "analysis/layout_model.h"
#include "analysis/straggler_nic.h"
#include "proto/layout.pb.h"

namespace fabricdiag::analysis::scenario {

inline constexpr int kNicsPerNode = 8;
// 400 Gb/s in bytes per second.
inline constexpr double kNicRate = 50e9;
inline constexpr int kUplinksPerLeaf = 4;
// The lossless RoCE priority (the common DSCP 26 -> priority 3 mapping).
inline constexpr int kRocePriority = 3;

enum class JobKind { kMoe, kDense };

// One job on the consecutive nodes [first_node, first_node + num_nodes).
// MoE: tp=8, ep=min(nodes, 8) across nodes, dp=ep, pp=nodes/ep, 64 experts.
// Dense: tp=8, pp=2 (4 from 16 nodes on), dp=nodes/pp.
struct JobSpec {
  std::string name;
  JobKind kind = JobKind::kDense;
  int first_node = 0;
  int num_nodes = 0;
};

struct ClusterSpec {
  int nodes = 8;
  int nodes_per_leaf = 4;
  std::vector<JobSpec> jobs;
};

// The suite's cluster: a MoE job "moe-train" on the first half of the nodes
// and a dense job "dense-train" on the second half.
ClusterSpec TwoJobCluster(int nodes);
// The benchmark's cluster: min(max_jobs, nodes/8) jobs alternating MoE and
// dense, 8-64 nodes each (multiples of 8), covering every node; one leaf
// per 16 nodes. `nodes` must be a multiple of 8.
ClusterSpec ManyJobCluster(int nodes, int max_jobs);

enum class FaultKind {
  // A NIC of an EP group receives 6x the mean of the other members (whose
  // all-to-all slows to half while they wait for it), sends 100k CNP/s and
  // transmits some pause (8%).
  kHotExpert,
  // A NIC transmits pause 95% of the time on priority 3 and its receive
  // collapses; its switch port receives that pause, fills, and transmits
  // pause (40%) to every other host port of the leaf, whose NICs receive it
  // and can send only 60% of the time.
  kPfcStorm,
  // One leaf (Fault::node) sends 70/10/10/10% of its uplink traffic over
  // its 4 uplinks.
  kEcmpImbalance,
  // Symbol/CRC/receive errors, pre-FEC BER 1e-5 and uncorrected symbols on
  // the NIC's receive side.
  kLinkErrors,
  // Carrier changes and link_downed events on both ends of the cable; the
  // NIC is down for a fifth of the window.
  kLinkFlap,
  // The link trained at half its expected rate (both ends).
  kLinkDegraded,
  // 500 ACK timeouts/s (plus sequence-error NAKs) at the requester.
  kRetransmissions,
  // 50k CNP/s sent (60k ECN-marked packets/s received) at one NIC without
  // any receive asymmetry: the path to it is congested.
  kCongestion,
  // The NIC moves 30% of what the rest of its DP group moves.
  kStragglerNic,
};
inline constexpr FaultKind kAllFaultKinds[] = {
    FaultKind::kHotExpert,       FaultKind::kPfcStorm,
    FaultKind::kEcmpImbalance,   FaultKind::kLinkErrors,
    FaultKind::kLinkFlap,        FaultKind::kLinkDegraded,
    FaultKind::kRetransmissions, FaultKind::kCongestion,
    FaultKind::kStragglerNic};

// The finding kind (docs/findings.md) a fault must raise ("pfc_storm", ...).
const char* FindingKindOf(FaultKind kind);

// Where a fault is: a host NIC (node "gpu-003", device "mlx5_2"), or for
// kEcmpImbalance a leaf (node "leaf-1", device ignored).
struct Fault {
  FaultKind kind = FaultKind::kCongestion;
  std::string node;
  std::string device;
};

// A finding the analyzers must (or may) report. `device` "" matches any
// device of `node`; `group` is informational ("ep:3") and not matched,
// because an analyzer may name the DP, EP or PP group it compared against.
struct ExpectedFinding {
  std::string kind;
  std::string node;
  std::string device;
  std::string group;
};

struct FaultExpectation {
  ExpectedFinding primary;
  // Findings the fault legitimately causes besides the primary one (a PFC
  // storm makes its victims look congested and slow, a half-speed link may
  // make its NIC a straggler, ...). Anything else is a false positive.
  std::vector<ExpectedFinding> secondary;
};

// An agent that stops reporting: it misses the reports of `missed` passes
// from pass `from_pass` on (-1: it never comes back). From pass 0 and never
// back: a node the collector never heard from.
struct AgentOutage {
  std::string node;
  int from_pass = 0;
  int missed = -1;
};

// When analysis pass `pass` runs: pass 0 at a fixed time, one `interval`
// (the agents' sampling interval) apart.
absl::Time PassTime(int pass, absl::Duration interval);

struct TrafficOptions {
  // Dense jobs' gradient all-reduce bursts: each DP group's DP traffic is
  // scaled by a factor drawn per pass from [1, 1.8] instead of [0.9, 1.1].
  bool dp_bursts = false;
  // Every port reports PFC pause frames but no pause durations (bnxt_en
  // without pfc_priN_*_duration_us, switch SAIs without PFC duration
  // counters): pause must be judged from frame rates.
  bool frames_only_pause = false;
  // The job with this name is writing a checkpoint: its NICs move 1% of
  // their usual traffic (every member at once). "" for none.
  std::string checkpointing_job;
  // Hosts whose NICs report traffic and link state only, every other
  // signal absent: a VM or VF sees no physical-port, per-priority or
  // congestion counters (docs/counters.md). Their switch ports still
  // report everything.
  std::vector<std::string> bare_nodes;
  // MoE routing skew that stays with each NIC (the experts it serves):
  // every NIC of a MoE job carries a lognormal factor of this sigma, drawn
  // once per NIC from a fixed seed (the same in every pass and every
  // scenario), on top of the per-pass noise. 0.3 puts 2x between healthy
  // NICs of one group. 0: none.
  double routing_skew_sigma = 0;
  // The agents' sampling, said in every host NIC's PortView::samples:
  // report intervals jitter between 0.7 and 1.4 s (up to 2x each other),
  // the same report times in every view that holds them.
  bool sample_jitter = false;
  // Hosts whose NICs' counters read stale now and then: two reads in a row
  // that do not advance (rate 0), then a lump that catches up (reports k
  // with k % 6 of 1 and 2 stale, 3 the lump). Implies sample_jitter.
  std::vector<std::string> stale_nodes;
  // The view's reports when sampling is said (sample_jitter, stale_nodes):
  // the window ends with report `last_report` (the suite's pass p: 5 + p)
  // and holds the 5 before it, or that report alone when `newest_only`
  // (the newest-samples view).
  int last_report = 5;
  bool newest_only = false;
  // The oldest report the collector holds when sampling is said: a
  // collector that restarted holds only what the agents replayed (the
  // reports it had not acknowledged), so its window is shorter until it
  // fills again. 0: as many as the window holds.
  int first_report = 0;
};

// The number of passes Watched() runs by default.
inline constexpr int kDefaultWatchedPasses = -1;

class Cluster {
 public:
  // Builds layouts and topology through the real parsers. InvalidArgument
  // when the spec is inconsistent (a job off the cluster, jobs overlapping,
  // a size no layout fits).
  static absl::StatusOr<Cluster> Build(const ClusterSpec& spec);

  int num_nodes() const { return spec_.nodes; }
  int num_leaves() const { return num_leaves_; }
  // "gpu-003" (zero-padded to at least 3 digits).
  const std::string& HostName(int node) const { return hosts_[node]; }
  // "leaf-1".
  std::string LeafName(int leaf) const;
  // The leaf a host is cabled to, and the switch port of one of its NICs.
  int LeafOf(int node) const { return node / spec_.nodes_per_leaf; }
  std::string SwitchPortOf(int node, int nic) const;

  const std::vector<LayoutModel>& jobs() const { return jobs_; }
  const v1::Topology& topology() const { return topology_; }
  // The topology file it was parsed from (flow-style links).
  const std::string& topology_yaml() const { return topology_yaml_; }

  // One analysis window: healthy traffic with noise drawn from `seed`, then
  // `faults` applied. Finished (sorted and indexed).
  FabricView View(absl::Span<const Fault> faults, const TrafficOptions& options,
                  uint32_t seed) const;
  // The analyzers' input over `view` (which must outlive it), with the
  // straggler_nic baselines `baselines` (may be null).
  AnalysisInput Input(const FabricView* view, const AnalysisConfig* config,
                      const StragglerBaselines* baselines = nullptr) const;

  // What a collector that watched this cluster's healthy traffic for
  // `passes` passes (kDefaultWatchedPasses: straggler_nic.min_history_passes,
  // so every busy NIC has a baseline that counts) knows of each NIC's own
  // throughput. Checkpointing is left out of `options`: the job ran before
  // it checkpointed. Windows are drawn from seeds below seed * 1000.
  StragglerBaselines Watched(const TrafficOptions& options, uint32_t seed,
                             const AnalysisConfig& config,
                             int passes = kDefaultWatchedPasses) const;

  // What `fault` must raise. `fault` must name a host NIC of the cluster
  // (or a leaf for kEcmpImbalance).
  FaultExpectation Expect(const Fault& fault) const;

  // What the collector knows of every host's agent at pass `pass`: each
  // reports every `interval`, a quarter interval before each pass, except
  // during its `outages`. A host that has not reported yet is listed with
  // ever_reported false.
  std::vector<NodeLiveness> Liveness(absl::Span<const AgentOutage> outages,
                                     int pass, absl::Duration interval) const;

 private:
  // What a host NIC does in its job; one per (node, nic).
  struct NicRole {
    int job = -1;               // index in jobs_, -1 when idle
    bool moe = false;           // all-to-all traffic
    int dp_group = 0;           // dense: index of its DP group (shared burst)
    bool end_stage = false;     // dense: first or last pipeline stage
    std::vector<int> ep_peers;  // MoE: slots of the other EP group members
    std::string ep_group;       // "ep:3"
    std::string dp_group_name;  // "dp:3"
  };
  Cluster() = default;
  absl::Status BuildJobs();
  absl::Status BuildTopology();
  int Slot(absl::string_view node, absl::string_view device) const;

  ClusterSpec spec_;
  int num_leaves_ = 0;
  int host_ports_per_leaf_ = 0;
  int first_uplink_ = 49;
  std::vector<std::string> hosts_;
  absl::flat_hash_map<std::string, int> host_index_;
  std::vector<LayoutModel> jobs_;
  v1::Topology topology_;
  std::string topology_yaml_;
  std::vector<NicRole> roles_;  // node * kNicsPerNode + nic
  int max_dp_groups_ = 0;       // DP groups of all dense jobs
};

}  // namespace fabricdiag::analysis::scenario
