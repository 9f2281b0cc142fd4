#include "tests/testing/scenario_builder.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "analysis/layout_parse.h"
#include "common/status_macros.h"

namespace fabricdiag::analysis::scenario {
namespace {

// --- healthy levels -------------------------------------------------------
// MoE dispatch+combine all-to-all per NIC and direction.
constexpr double kMoeBytesPerSecond = 15e9;
// Router skew of a load-balanced MoE router: within +-30% of the mean.
constexpr double kMoeSkew = 0.3;
// Dense jobs: gradient all-reduce per NIC (per direction) and pipeline
// activations of a middle stage (end stages have one neighbour: half).
constexpr double kDenseDpBytesPerSecond = 8e9;
constexpr double kDensePpBytesPerSecond = 4e9;
// A job writing a checkpoint barely uses the fabric.
constexpr double kCheckpointTrafficLeft = 0.01;
// A NIC of a node no job runs on: management traffic only.
constexpr double kIdleBytesPerSecond = 2e6;
// Pause frames per second that keep a 400 Gb/s port paused all the time:
// one max-quanta frame pauses 65535 x 512 bit times = 83.9 us (IEEE 802.1Qbb).
constexpr double kPauseFramesWhenStalled = 1.0 / (65535.0 * 512.0 / 400e9);
// Healthy PFC pause: under 0.3% of the time on the lossless priority.
constexpr double kHealthyPauseFraction = 0.003;
// Healthy DCQCN background: 100-500 CNP/s.
constexpr double kHealthyCnpLow = 100;
constexpr double kHealthyCnpHigh = 500;
// rx_bits_phy counts line bits: ~75% of the line rate with idles excluded
// (3e11 bits/s at 400 Gb/s); pre-FEC BER 1e-9 (~300 corrected bits/s).
constexpr double kReceivedBitsPerByteOfRate = 8 * 0.75;
constexpr double kHealthyPreFecBer = 1e-9;
// Half of a leaf's host traffic leaves it through the uplinks; each uplink
// (a bundle) carries 1/8 of the host capacity, so the leaf is 2:1
// oversubscribed and its uplinks run at ~30% in a healthy pass.
constexpr double kCrossLeafFraction = 0.5;
constexpr double kUplinkSpread = 0.05;

// --- fault levels (signatures from docs/counters.md) ----------------------
constexpr double kHotExpertRxOverMean = 6.0;
constexpr double kHotExpertPeerSlowdown = 0.5;
constexpr double kHotExpertCnpSent = 100e3;
constexpr double kHotExpertTxPause = 0.08;
constexpr double kStormTxPause = 0.95;
constexpr double kStormRxLeft = 0.05;
constexpr double kStormVictimRxPause = 0.4;
constexpr double kEcmpShares[kUplinksPerLeaf] = {0.7, 0.1, 0.1, 0.1};
constexpr double kFaultyPreFecBer = 1e-5;
constexpr double kFlapDownFraction = 0.2;
constexpr double kAckTimeoutsPerSecond = 500;
constexpr double kCongestionCnpSent = 50e3;
constexpr double kStragglerFraction = 0.3;

constexpr char kKindHotExpert[] = "hot_expert_incast";
constexpr char kKindPfcStorm[] = "pfc_storm";
constexpr char kKindEcmp[] = "ecmp_imbalance";
constexpr char kKindLinkErrors[] = "link_errors";
constexpr char kKindLinkFlap[] = "link_flap";
constexpr char kKindLinkDegraded[] = "link_degraded";
constexpr char kKindRetrans[] = "retransmissions";
constexpr char kKindCongestion[] = "congestion";
constexpr char kKindStraggler[] = "straggler_nic";

std::string NicName(int nic) { return absl::StrCat("mlx5_", nic); }
std::string NetdevName(int nic) { return absl::StrCat("eth", nic); }

// Noise source of one pass.
class Noise {
 public:
  explicit Noise(uint32_t seed) : rng_(seed) {}
  double Uniform(double lo, double hi) {
    return std::uniform_real_distribution<double>(lo, hi)(rng_);
  }
  // 1 + N(0, sd), clamped to [1 - limit, 1 + limit].
  double Factor(double sd, double limit) {
    const double f = 1 + std::normal_distribution<double>(0, sd)(rng_);
    return std::clamp(f, 1 - limit, 1 + limit);
  }

 private:
  std::mt19937 rng_;
};

// Reports per window (5 s at the agents' 1 s interval).
constexpr int kWindowReports = 5;

// When report `k` of host `node` was taken, in seconds: intervals of 0.7
// to 1.4 s, the same for a report in every view (a hash of node and k, not
// the pass's noise).
double ReportTime(int node, int k) {
  double t = 0;
  for (int i = 1; i <= k; ++i) {
    // splitmix64 of (node, i): seeding a std::mt19937 per interval cost
    // more than the rest of the suite.
    uint64_t z = static_cast<uint64_t>(node) * 1000003 +
                 static_cast<uint64_t>(i) + 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    t += 0.7 + 0.7 * static_cast<double>(z >> 11) * 0x1.0p-53;
  }
  return t;
}

// TrafficOptions::stale_nodes: reports k % 6 of 1 and 2 did not advance,
// 3 catches up.
bool StaleRead(int k) { return k > 0 && (k % 6 == 1 || k % 6 == 2); }

// A stale host NIC's window: its sample evidence, and the mean of its
// per-report rates over the mean rate it really moved (zeros, then a lump
// that covers the stale intervals too).
struct SampledWindow {
  SampleEvidence evidence;
  double mean_factor = 1;
};

SampledWindow Sample(int node, bool stale, int last, bool newest_only,
                     int first_report) {
  const int first =
      newest_only
          ? last
          : std::min(last, std::max(last - kWindowReports + 1, first_report));
  std::vector<double> times;
  std::vector<bool> moved;
  for (int k = first - 1; k <= last; ++k) times.push_back(ReportTime(node, k));
  double rates = 0;
  for (int k = first; k <= last; ++k) {
    const bool read = !(stale && StaleRead(k));
    moved.push_back(read);
    if (!read) continue;
    // The rate a report carries: the bytes since the last read that moved,
    // over its own interval.
    int since = k - 1;
    while (stale && StaleRead(since)) --since;
    rates += (ReportTime(node, k) - ReportTime(node, since)) /
             (ReportTime(node, k) - ReportTime(node, k - 1));
  }
  SampledWindow w;
  w.evidence = SummarizeSamples(times, moved);
  w.mean_factor = rates / (last - first + 1);
  return w;
}

// TrafficOptions::routing_skew_sigma: the factor of host NIC `slot`,
// drawn from a seed of its own so it never changes.
double RoutingSkew(size_t slot, double sigma) {
  std::mt19937 rng(static_cast<uint32_t>(0x5eed0000u + slot));
  return std::lognormal_distribution<double>(0, sigma)(rng);
}

void SetPause(PerPriority* fraction, PerPriority* frames, double value) {
  (*fraction)[kRocePriority] = value;
  (*frames)[kRocePriority] = value * kPauseFramesWhenStalled;
}

// A driver without pause-duration counters reports frames only.
void DropPauseDurations(PortSignals* s) {
  s->rx_pause_fraction = AbsentPerPriority();
  s->tx_pause_fraction = AbsentPerPriority();
}

// What a NIC without counter access reports: traffic and link state.
PortSignals TrafficOnly(const PortSignals& full) {
  PortSignals s;
  s.rx_bytes = full.rx_bytes;
  s.tx_bytes = full.tx_bytes;
  s.link_rate = full.link_rate;
  s.expected_rate = full.expected_rate;
  s.link_up = full.link_up;
  return s;
}

// Counters every healthy host NIC reports besides traffic.
void FillHealthyCounters(Noise* noise, PortSignals* s) {
  s->link_rate = kNicRate;
  s->expected_rate = kNicRate;
  SetPause(&s->tx_pause_fraction, &s->tx_pause_frames,
           noise->Uniform(0, kHealthyPauseFraction));
  SetPause(&s->rx_pause_fraction, &s->rx_pause_frames,
           noise->Uniform(0, kHealthyPauseFraction));
  s->pause_storm_warnings = 0;
  s->pause_storm_errors = 0;
  s->cnp_sent = noise->Uniform(kHealthyCnpLow, kHealthyCnpHigh);
  s->cnp_handled = noise->Uniform(kHealthyCnpLow, kHealthyCnpHigh);
  s->ecn_marked = s->cnp_sent * noise->Uniform(1.0, 1.3);
  s->rx_discards = 0;
  s->rx_out_of_buffer = 0;
  s->symbol_errors = 0;
  s->rx_errors = 0;
  s->crc_errors = 0;
  s->pcs_symbol_errors = 0;
  s->received_bits =
      kNicRate * kReceivedBitsPerByteOfRate * noise->Uniform(0.95, 1.05);
  s->corrected_bits =
      s->received_bits * kHealthyPreFecBer * noise->Uniform(0.5, 1.5);
  s->link_downed = 0;
  s->link_error_recovery = 0;
  s->carrier_changes = 0;
  s->link_down_events = 0;
  s->out_of_sequence = 0;
  s->packet_seq_err = 0;
  s->local_ack_timeout_err = 0;
  s->rnr_nak_retry_err = 0;
  s->retries_exceeded = 0;
  s->duplicate_request = 0;
  s->implied_nak_seq_err = 0;
  s->adaptive_retrans = 0;
}

// A switch front-panel port (SONiC netdev): what its host NIC sends it
// receives, pause the NIC transmits it receives, and the cable's state and
// flaps are the same at both ends. Switches have no RoCE congestion-control
// or transport counters (absent).
PortSignals MirrorOf(const PortSignals& host, Noise* noise) {
  PortSignals s;
  // Both ends sample a few ms apart: +-0.5%.
  s.rx_bytes = host.tx_bytes * noise->Factor(0.002, 0.005);
  s.tx_bytes = host.rx_bytes * noise->Factor(0.002, 0.005);
  s.link_rate = host.link_rate;
  s.expected_rate = kNicRate;
  s.link_up = host.link_up;
  s.rx_pause_fraction = host.tx_pause_fraction;
  s.rx_pause_frames = host.tx_pause_frames;
  s.tx_pause_fraction = host.rx_pause_fraction;
  s.tx_pause_frames = host.rx_pause_frames;
  s.rx_discards = 0;
  s.rx_errors = 0;
  s.crc_errors = 0;
  s.pcs_symbol_errors = 0;
  s.received_bits =
      host.link_rate * kReceivedBitsPerByteOfRate * noise->Uniform(0.95, 1.05);
  s.corrected_bits =
      s.received_bits * kHealthyPreFecBer * noise->Uniform(0.5, 1.5);
  s.carrier_changes = host.carrier_changes;
  s.link_down_events = host.link_down_events;
  return s;
}

std::string LayoutYaml(const JobSpec& job, absl::Span<const std::string> hosts,
                       int pp, int dp, int ep) {
  std::vector<std::string> rails;
  rails.reserve(kNicsPerNode);
  for (int k = 0; k < kNicsPerNode; ++k) rails.push_back(NicName(k));
  std::string yaml = absl::StrCat(
      "job: ", job.name, "\ngpus_per_node: ", kNicsPerNode,
      "\nparallelism:\n  tp: ", kNicsPerNode, "\n  pp: ", pp, "\n  dp: ", dp,
      "\n  ep: ", ep, "\nhosts: [", absl::StrJoin(hosts, ", "), "]\nrails: [",
      absl::StrJoin(rails, ", "), "]\n");
  if (job.kind == JobKind::kMoe) {
    absl::StrAppend(&yaml, "model:\n  experts: 64\n  top_k: 2\n");
  }
  return yaml;
}

}  // namespace

const char* FindingKindOf(FaultKind kind) {
  switch (kind) {
    case FaultKind::kHotExpert:
      return kKindHotExpert;
    case FaultKind::kPfcStorm:
      return kKindPfcStorm;
    case FaultKind::kEcmpImbalance:
      return kKindEcmp;
    case FaultKind::kLinkErrors:
      return kKindLinkErrors;
    case FaultKind::kLinkFlap:
      return kKindLinkFlap;
    case FaultKind::kLinkDegraded:
      return kKindLinkDegraded;
    case FaultKind::kRetransmissions:
      return kKindRetrans;
    case FaultKind::kCongestion:
      return kKindCongestion;
    case FaultKind::kStragglerNic:
      return kKindStraggler;
  }
  return "";
}

ClusterSpec TwoJobCluster(int nodes) {
  ClusterSpec spec;
  spec.nodes = nodes;
  spec.nodes_per_leaf = 4;
  spec.jobs.push_back({"moe-train", JobKind::kMoe, 0, nodes / 2});
  spec.jobs.push_back({"dense-train", JobKind::kDense, nodes / 2, nodes / 2});
  return spec;
}

ClusterSpec ManyJobCluster(int nodes, int max_jobs) {
  ClusterSpec spec;
  spec.nodes = nodes;
  spec.nodes_per_leaf = 16;
  // Blocks of 8 nodes dealt out so that every job gets 1-8 blocks.
  const int blocks = nodes / 8;
  const int jobs = std::max(1, std::min(max_jobs, blocks));
  int first = 0;
  for (int j = 0; j < jobs; ++j) {
    const int size = 8 * (blocks / jobs + (j < blocks % jobs ? 1 : 0));
    spec.jobs.push_back({absl::StrFormat("job-%03d", j),
                         j % 2 == 0 ? JobKind::kMoe : JobKind::kDense, first,
                         size});
    first += size;
  }
  return spec;
}

absl::StatusOr<Cluster> Cluster::Build(const ClusterSpec& spec) {
  if (spec.nodes < 1 || spec.nodes_per_leaf < 1) {
    return absl::InvalidArgumentError("nodes and nodes_per_leaf must be > 0");
  }
  Cluster c;
  c.spec_ = spec;
  const int digits = std::max<int>(3, absl::StrCat(spec.nodes - 1).size());
  for (int n = 0; n < spec.nodes; ++n) {
    c.hosts_.push_back(absl::StrFormat("gpu-%0*d", digits, n));
    c.host_index_[c.hosts_.back()] = n;
  }
  c.num_leaves_ = (spec.nodes + spec.nodes_per_leaf - 1) / spec.nodes_per_leaf;
  c.host_ports_per_leaf_ = spec.nodes_per_leaf * kNicsPerNode;
  c.first_uplink_ = std::max(49, c.host_ports_per_leaf_ + 1);
  RETURN_IF_ERROR(c.BuildJobs());
  RETURN_IF_ERROR(c.BuildTopology());
  return c;
}

std::string Cluster::LeafName(int leaf) const {
  return absl::StrCat("leaf-", leaf);
}

std::string Cluster::SwitchPortOf(int node, int nic) const {
  const int local = node % spec_.nodes_per_leaf;
  return absl::StrCat("swp", local * kNicsPerNode + nic + 1);
}

absl::Status Cluster::BuildJobs() {
  roles_.assign(static_cast<size_t>(spec_.nodes) * kNicsPerNode, NicRole{});
  std::vector<bool> taken(spec_.nodes, false);
  for (const JobSpec& job : spec_.jobs) {
    const int n = job.num_nodes;
    if (n < 1 || job.first_node < 0 || job.first_node + n > spec_.nodes) {
      return absl::InvalidArgumentError(
          absl::StrCat("job ", job.name, " does not fit the cluster"));
    }
    int pp = 1, dp = 1, ep = 1;
    if (job.kind == JobKind::kMoe) {
      ep = std::min(n, 8);
      pp = n / ep;
      dp = ep;
    } else {
      pp = n >= 16 ? 4 : 2;
      dp = n / pp;
    }
    if (pp * dp != n) {
      return absl::InvalidArgumentError(
          absl::StrCat("job ", job.name, ": ", n, " nodes fit no layout"));
    }
    std::vector<std::string> hosts;
    for (int i = job.first_node; i < job.first_node + n; ++i) {
      if (taken[i]) {
        return absl::InvalidArgumentError(
            absl::StrCat("job ", job.name, " overlaps another job"));
      }
      taken[i] = true;
      hosts.push_back(hosts_[i]);
    }
    ASSIGN_OR_RETURN(v1::Layout layout,
                     ParseLayout(LayoutYaml(job, hosts, pp, dp, ep)));
    ASSIGN_OR_RETURN(LayoutModel model, LayoutModel::Build(layout));
    jobs_.push_back(std::move(model));
  }
  // Roles once every model sits at its final address.
  for (size_t j = 0; j < jobs_.size(); ++j) {
    const LayoutModel& m = jobs_[j];
    const bool moe = spec_.jobs[j].kind == JobKind::kMoe;
    for (uint32_t r = 0; r < m.WorldSize(); ++r) {
      const int slot = Slot(m.HostName(r), m.NicName(r));
      if (slot < 0) return absl::InternalError("layout host off the cluster");
      NicRole& role = roles_[slot];
      role.job = static_cast<int>(j);
      role.moe = moe;
      const uint32_t dp_group = m.GroupOf(Dim::kDp, r);
      role.dp_group = max_dp_groups_ + static_cast<int>(dp_group);
      role.dp_group_name = GroupName({Dim::kDp, dp_group});
      const uint32_t stage = m.RankIn(Dim::kPp, r);
      role.end_stage = stage == 0 || stage + 1 == m.Degree(Dim::kPp);
      if (moe) {
        const uint32_t g = m.GroupOf(Dim::kEp, r);
        role.ep_group = GroupName({Dim::kEp, g});
        for (uint32_t peer : m.Group(Dim::kEp, g)) {
          if (peer != r) {
            role.ep_peers.push_back(Slot(m.HostName(peer), m.NicName(peer)));
          }
        }
      }
    }
    max_dp_groups_ += static_cast<int>(m.NumGroups(Dim::kDp));
  }
  return absl::OkStatus();
}

absl::Status Cluster::BuildTopology() {
  std::vector<std::string> uplinks;
  uplinks.reserve(kUplinksPerLeaf);
  for (int u = 0; u < kUplinksPerLeaf; ++u) {
    uplinks.push_back(absl::StrCat("swp", first_uplink_ + u));
  }
  const std::string uplink_list = absl::StrJoin(uplinks, ", ");
  std::string yaml = "switches:\n";
  for (int l = 0; l < num_leaves_; ++l) {
    absl::StrAppend(&yaml, "  - name: ", LeafName(l), "\n    uplinks: [",
                    uplink_list, "]\n");
  }
  yaml += "links:\n";
  for (int n = 0; n < spec_.nodes; ++n) {
    for (int k = 0; k < kNicsPerNode; ++k) {
      absl::StrAppend(&yaml, "  - {host: ", hosts_[n], ", nic: ", NicName(k),
                      ", switch: ", LeafName(LeafOf(n)),
                      ", port: ", SwitchPortOf(n, k), "}\n");
    }
  }
  if (yaml.size() <= kMaxTopologyBytes &&
      static_cast<uint64_t>(spec_.nodes) * kNicsPerNode <= kMaxTopologyLinks) {
    ASSIGN_OR_RETURN(topology_, ParseTopology(yaml));
    topology_yaml_ = std::move(yaml);
    return absl::OkStatus();
  }
  // Past what a declared topology may hold (1M GPUs: 1M links, 68 MB of
  // YAML): the same topology built as the proto, for benchmarks of
  // fabrics that would be discovered rather than declared. Its YAML is
  // kept, though no parser would take it.
  for (int l = 0; l < num_leaves_; ++l) {
    v1::Switch* sw = topology_.add_switches();
    sw->set_name(LeafName(l));
    for (const std::string& u : uplinks) sw->add_uplinks(u);
  }
  topology_.mutable_links()->Reserve(spec_.nodes * kNicsPerNode);
  for (int n = 0; n < spec_.nodes; ++n) {
    for (int k = 0; k < kNicsPerNode; ++k) {
      v1::Link* link = topology_.add_links();
      link->set_host(hosts_[n]);
      link->set_nic(NicName(k));
      link->set_switch_(LeafName(LeafOf(n)));
      link->set_port(SwitchPortOf(n, k));
    }
  }
  topology_yaml_ = std::move(yaml);
  return absl::OkStatus();
}

int Cluster::Slot(absl::string_view node, absl::string_view device) const {
  auto it = host_index_.find(node);
  int nic = -1;
  if (it == host_index_.end() || !absl::ConsumePrefix(&device, "mlx5_") ||
      !absl::SimpleAtoi(device, &nic) || nic < 0 || nic >= kNicsPerNode) {
    return -1;
  }
  return it->second * kNicsPerNode + nic;
}

FabricView Cluster::View(absl::Span<const Fault> faults,
                         const TrafficOptions& options, uint32_t seed) const {
  Noise noise(seed);
  // Gradient bursts: one factor per DP group, shared by its members.
  std::vector<double> burst(max_dp_groups_);
  for (double& b : burst) {
    b = options.dp_bursts ? noise.Uniform(1.0, 1.8) : noise.Uniform(0.9, 1.1);
  }
  int checkpointing = -1;
  for (size_t j = 0; j < spec_.jobs.size(); ++j) {
    if (spec_.jobs[j].name == options.checkpointing_job) {
      checkpointing = static_cast<int>(j);
    }
  }
  std::vector<PortSignals> nics(roles_.size());
  for (size_t i = 0; i < nics.size(); ++i) {
    const NicRole& role = roles_[i];
    PortSignals& s = nics[i];
    FillHealthyCounters(&noise, &s);
    if (role.job < 0) {
      s.rx_bytes = kIdleBytesPerSecond * noise.Uniform(0.5, 1.5);
      s.tx_bytes = kIdleBytesPerSecond * noise.Uniform(0.5, 1.5);
    } else if (role.moe) {
      s.rx_bytes = kMoeBytesPerSecond * noise.Factor(kMoeSkew / 2, kMoeSkew);
      s.tx_bytes = kMoeBytesPerSecond * noise.Factor(kMoeSkew / 2, kMoeSkew);
    } else {
      const double pp = kDensePpBytesPerSecond * (role.end_stage ? 0.5 : 1);
      const double base = kDenseDpBytesPerSecond * burst[role.dp_group] + pp;
      s.rx_bytes = base * noise.Factor(0.03, 0.1);
      s.tx_bytes = base * noise.Factor(0.03, 0.1);
    }
    if (role.moe && options.routing_skew_sigma > 0) {
      const double skew = RoutingSkew(i, options.routing_skew_sigma);
      s.rx_bytes *= skew;
      s.tx_bytes *= skew;
    }
    if (role.job >= 0 && role.job == checkpointing) {
      s.rx_bytes *= kCheckpointTrafficLeft;
      s.tx_bytes *= kCheckpointTrafficLeft;
    }
  }

  // Host-side signatures. Hot experts first: they slow their EP peers,
  // which the other faults then see as their baseline.
  std::vector<int> storm_leaves;
  std::vector<int> ecmp_leaves;
  for (int pass = 0; pass < 2; ++pass) {
    for (const Fault& f : faults) {
      if ((f.kind == FaultKind::kHotExpert) != (pass == 0)) continue;
      if (f.kind == FaultKind::kEcmpImbalance) {
        for (int l = 0; l < num_leaves_; ++l) {
          if (LeafName(l) == f.node) ecmp_leaves.push_back(l);
        }
        continue;
      }
      const int slot = Slot(f.node, f.device);
      if (slot < 0) continue;
      PortSignals& s = nics[slot];
      switch (f.kind) {
        case FaultKind::kHotExpert: {
          double sum = 0;
          for (int peer : roles_[slot].ep_peers) {
            nics[peer].rx_bytes *= kHotExpertPeerSlowdown;
            sum += nics[peer].rx_bytes;
          }
          const size_t peers = roles_[slot].ep_peers.size();
          const double mean = peers > 0 ? sum / peers : s.rx_bytes;
          s.rx_bytes =
              std::min(kHotExpertRxOverMean * mean, 0.97 * s.link_rate);
          s.cnp_sent = kHotExpertCnpSent * noise.Factor(0.05, 0.1);
          s.ecn_marked = s.cnp_sent * 1.2;
          SetPause(&s.tx_pause_fraction, &s.tx_pause_frames,
                   kHotExpertTxPause * noise.Factor(0.05, 0.1));
          break;
        }
        case FaultKind::kPfcStorm: {
          SetPause(&s.tx_pause_fraction, &s.tx_pause_frames, kStormTxPause);
          s.pause_storm_warnings = 0.2;
          s.rx_bytes *= kStormRxLeft;
          // Its switch port's buffer fills and the leaf pauses every other
          // host port it could not drain towards it.
          const int node = slot / kNicsPerNode;
          const int leaf = LeafOf(node);
          storm_leaves.push_back(leaf);
          const int first = leaf * spec_.nodes_per_leaf * kNicsPerNode;
          const int last =
              std::min<int>(static_cast<int>(nics.size()),
                            first + spec_.nodes_per_leaf * kNicsPerNode);
          for (int v = first; v < last; ++v) {
            if (v == slot) continue;
            SetPause(&nics[v].rx_pause_fraction, &nics[v].rx_pause_frames,
                     kStormVictimRxPause * noise.Factor(0.03, 0.1));
            nics[v].tx_bytes *= 1 - nics[v].rx_pause_fraction[kRocePriority];
          }
          break;
        }
        case FaultKind::kLinkErrors:
          s.symbol_errors = 50;
          s.crc_errors = 20;
          s.rx_errors = 20;
          s.corrected_bits = s.received_bits * kFaultyPreFecBer;
          s.pcs_symbol_errors = 10;
          break;
        case FaultKind::kLinkFlap:
          // Two carrier changes (down, up) and one link_downed per window.
          s.carrier_changes = 2 / 5.0;
          s.link_downed = 1 / 5.0;
          s.link_down_events = 1 / 5.0;
          s.link_error_recovery = 1 / 5.0;
          s.rx_bytes *= 1 - kFlapDownFraction;
          s.tx_bytes *= 1 - kFlapDownFraction;
          break;
        case FaultKind::kLinkDegraded:
          s.link_rate = kNicRate / 2;
          s.received_bits /= 2;
          s.corrected_bits /= 2;
          s.rx_bytes = std::min(s.rx_bytes, 0.95 * s.link_rate);
          s.tx_bytes = std::min(s.tx_bytes, 0.95 * s.link_rate);
          break;
        case FaultKind::kRetransmissions:
          s.local_ack_timeout_err =
              kAckTimeoutsPerSecond * noise.Factor(0.05, 0.1);
          s.packet_seq_err = 20;
          break;
        case FaultKind::kCongestion:
          s.cnp_sent = kCongestionCnpSent * noise.Factor(0.05, 0.1);
          s.ecn_marked = s.cnp_sent * 1.2;
          break;
        case FaultKind::kStragglerNic:
          s.rx_bytes *= kStragglerFraction;
          s.tx_bytes *= kStragglerFraction;
          break;
        case FaultKind::kEcmpImbalance:
          break;
      }
    }
  }

  FabricView view;
  view.window_seconds = 5;
  for (size_t i = 0; i < nics.size(); ++i) {
    const int node = static_cast<int>(i) / kNicsPerNode;
    const int nic = static_cast<int>(i) % kNicsPerNode;
    PortView& p = view.AddPort(hosts_[node], NicName(nic));
    p.netdev = NetdevName(nic);
    p.s = nics[i];
    if (options.frames_only_pause) DropPauseDurations(&p.s);
    if (std::find(options.bare_nodes.begin(), options.bare_nodes.end(),
                  hosts_[node]) != options.bare_nodes.end()) {
      p.s = TrafficOnly(p.s);
    }
    const bool stale =
        std::find(options.stale_nodes.begin(), options.stale_nodes.end(),
                  hosts_[node]) != options.stale_nodes.end();
    if (options.sample_jitter || stale) {
      const SampledWindow w = Sample(node, stale, options.last_report,
                                     options.newest_only, options.first_report);
      p.samples = w.evidence;
      // What the agent's rates average to, as the collector's view takes
      // them; the switch port mirrors the wire (it is read fresh).
      p.s.rx_bytes *= w.mean_factor;
      p.s.tx_bytes *= w.mean_factor;
    }
  }
  // Uplinks: 2:1 oversubscribed bundles (see kCrossLeafFraction).
  const double uplink_rate = host_ports_per_leaf_ * kNicRate / 8;
  for (int l = 0; l < num_leaves_; ++l) {
    const std::string leaf = LeafName(l);
    double to_leaf = 0, from_leaf = 0;
    const int first_node = l * spec_.nodes_per_leaf;
    const int last_node =
        std::min(spec_.nodes, first_node + spec_.nodes_per_leaf);
    for (int n = first_node; n < last_node; ++n) {
      for (int k = 0; k < kNicsPerNode; ++k) {
        const PortSignals& host = nics[n * kNicsPerNode + k];
        to_leaf += host.tx_bytes;
        from_leaf += host.rx_bytes;
        PortView& p = view.AddPort(leaf, SwitchPortOf(n, k));
        p.netdev = p.device;
        p.is_switch_port = true;
        p.s = MirrorOf(host, &noise);
        if (options.frames_only_pause) DropPauseDurations(&p.s);
      }
    }
    const bool skewed = std::find(ecmp_leaves.begin(), ecmp_leaves.end(), l) !=
                        ecmp_leaves.end();
    for (int u = 0; u < kUplinksPerLeaf; ++u) {
      PortView& p = view.AddPort(leaf, absl::StrCat("swp", first_uplink_ + u));
      p.netdev = p.device;
      p.is_switch_port = true;
      PortSignals& s = p.s;
      const double share = skewed ? kEcmpShares[u] : 1.0 / kUplinksPerLeaf;
      const double spread = skewed ? 1.0 : noise.Factor(0.02, kUplinkSpread);
      s.tx_bytes = kCrossLeafFraction * to_leaf * share * spread;
      s.rx_bytes = kCrossLeafFraction * from_leaf / kUplinksPerLeaf *
                   noise.Factor(0.02, kUplinkSpread);
      s.link_rate = uplink_rate;
      s.expected_rate = uplink_rate;
      SetPause(&s.tx_pause_fraction, &s.tx_pause_frames,
               noise.Uniform(0, kHealthyPauseFraction));
      SetPause(&s.rx_pause_fraction, &s.rx_pause_frames,
               noise.Uniform(0, kHealthyPauseFraction));
      s.rx_discards = 0;
      s.rx_errors = 0;
      s.crc_errors = 0;
      s.pcs_symbol_errors = 0;
      s.received_bits =
          uplink_rate * kReceivedBitsPerByteOfRate * noise.Uniform(0.95, 1.05);
      s.corrected_bits =
          s.received_bits * kHealthyPreFecBer * noise.Uniform(0.5, 1.5);
      s.carrier_changes = 0;
      s.link_down_events = 0;
      if (options.frames_only_pause) DropPauseDurations(&s);
    }
  }
  view.Finish();
  return view;
}

AnalysisInput Cluster::Input(const FabricView* view,
                             const AnalysisConfig* config,
                             const StragglerBaselines* baselines) const {
  AnalysisInput in;
  in.view = view;
  for (const LayoutModel& m : jobs_) in.layouts.push_back(&m);
  in.topology = &topology_;
  in.config = config;
  in.straggler_baselines = baselines;
  return in;
}

StragglerBaselines Cluster::Watched(const TrafficOptions& options,
                                    uint32_t seed, const AnalysisConfig& config,
                                    int passes) const {
  if (passes < 0) passes = config.straggler_nic.min_history_passes;
  TrafficOptions usual = options;
  usual.checkpointing_job.clear();
  StragglerBaselines baselines;
  for (int pass = 0; pass < passes; ++pass) {
    const FabricView view =
        View({}, usual, seed * 1000 - static_cast<uint32_t>(passes - pass));
    baselines.Update(Input(&view, &config, &baselines));
  }
  return baselines;
}

FaultExpectation Cluster::Expect(const Fault& fault) const {
  FaultExpectation e;
  const char* kind = FindingKindOf(fault.kind);
  if (fault.kind == FaultKind::kEcmpImbalance) {
    // Reported on the leaf; which uplink (or none) names it is the
    // analyzer's choice.
    e.primary = {kind, fault.node, "", ""};
    return e;
  }
  const int slot = Slot(fault.node, fault.device);
  if (slot < 0) {
    e.primary = {kind, fault.node, fault.device, ""};
    return e;
  }
  const int node = slot / kNicsPerNode;
  const int nic = slot % kNicsPerNode;
  const NicRole& role = roles_[slot];
  const std::string leaf = LeafName(LeafOf(node));
  const std::string partner = SwitchPortOf(node, nic);
  e.primary = {kind, fault.node, fault.device, ""};
  auto also = [&](const char* k, const std::string& n, const std::string& d) {
    e.secondary.push_back({k, n, d, ""});
  };
  switch (fault.kind) {
    case FaultKind::kHotExpert:
      e.primary.group = role.ep_group;
      // The incast makes the hot NIC the notification point of ECN marks.
      also(kKindCongestion, fault.node, fault.device);
      break;
    case FaultKind::kPfcStorm: {
      // The storm's partner port and every port of its leaf carry pause;
      // the leaf's other hosts are paused 40% of the time: they may be
      // named as victims, as congested, or as slow.
      for (const char* k : {kKindPfcStorm, kKindCongestion, kKindStraggler}) {
        also(k, fault.node, "");
        also(k, leaf, "");
        const int first = LeafOf(node) * spec_.nodes_per_leaf;
        const int last = std::min(spec_.nodes, first + spec_.nodes_per_leaf);
        for (int n = first; n < last; ++n) {
          if (n != node) also(k, hosts_[n], "");
        }
      }
      break;
    }
    case FaultKind::kLinkErrors:
      also(kKindLinkErrors, leaf, partner);
      also(kKindRetrans, fault.node, fault.device);
      break;
    case FaultKind::kLinkFlap:
      also(kKindLinkFlap, leaf, partner);
      also(kKindStraggler, fault.node, fault.device);
      also(kKindRetrans, fault.node, fault.device);
      break;
    case FaultKind::kLinkDegraded:
      also(kKindLinkDegraded, leaf, partner);
      also(kKindStraggler, fault.node, fault.device);
      break;
    case FaultKind::kStragglerNic:
      e.primary.group = role.dp_group_name;
      break;
    case FaultKind::kRetransmissions:
    case FaultKind::kCongestion:
    case FaultKind::kEcmpImbalance:
      break;
  }
  return e;
}

absl::Time PassTime(int pass, absl::Duration interval) {
  return absl::FromUnixSeconds(1795000000) + pass * interval;
}

std::vector<NodeLiveness> Cluster::Liveness(
    absl::Span<const AgentOutage> outages, int pass,
    absl::Duration interval) const {
  std::vector<NodeLiveness> out;
  out.reserve(hosts_.size());
  for (const std::string& host : hosts_) {
    // The last pass before which this agent reported.
    int last = pass;
    for (const AgentOutage& o : outages) {
      if (o.node != host || pass < o.from_pass) continue;
      if (o.missed < 0 || pass < o.from_pass + o.missed) {
        last = std::min(last, o.from_pass - 1);
      }
    }
    NodeLiveness l;
    l.node = host;
    l.interval = interval;
    l.ever_reported = last >= 0;
    if (l.ever_reported)
      l.last_report = PassTime(last, interval) - interval / 4;
    out.push_back(std::move(l));
  }
  return out;
}

}  // namespace fabricdiag::analysis::scenario
