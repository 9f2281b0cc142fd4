#include "analysis/traffic_model.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace fabricdiag::analysis {
namespace {

size_t Idx(Dim dim) { return static_cast<size_t>(dim); }

// Traffic of one or more groups, keyed so that groups of one dimension that
// share a NIC add up on it.
struct Loads {
  // NicKey -> bytes through that NIC.
  absl::flat_hash_map<uint64_t, NicBytes> nic;
  // rank -> bytes it sends over any link / over NVLink.
  absl::flat_hash_map<uint32_t, double> send;
  absl::flat_hash_map<uint32_t, double> nvlink;
};

constexpr uint64_t kVirtualNic = uint64_t{1} << 63;

// A rank's NIC as (host << 32 | nic); a rank without a named NIC gets a
// virtual one of its own (top bit set), timed but never reported.
uint64_t NicKey(const LayoutModel& layout, uint32_t rank) {
  const RankInfo& info = layout.Rank(rank);
  if (info.nic == kNoNic) return kVirtualNic | rank;
  return (uint64_t{info.host} << 32) | info.nic;
}

void Merge(const Loads& from, Loads& into) {
  for (const auto& [key, bytes] : from.nic) {
    NicBytes& n = into.nic[key];
    n.tx += bytes.tx;
    n.rx += bytes.rx;
  }
  for (const auto& [rank, bytes] : from.send) into.send[rank] += bytes;
  for (const auto& [rank, bytes] : from.nvlink) into.nvlink[rank] += bytes;
}

double MaxValue(const absl::flat_hash_map<uint32_t, double>& m) {
  double best = 0;
  for (const auto& kv : m) best = std::max(best, kv.second);
  return best;
}

double MaxNicBytes(const Loads& loads) {
  double best = 0;
  for (const auto& kv : loads.nic) {
    best = std::max({best, kv.second.tx, kv.second.rx});
  }
  return best;
}

// The line-rate part of the time: the busiest link sets the pace.
double BandwidthSeconds(const Loads& loads, const LinkParams& link) {
  return std::max(MaxNicBytes(loads) / link.nic_bytes_per_second,
                  MaxValue(loads.nvlink) / link.nvlink_bytes_per_second);
}

// How one dimension communicates, per group.
struct CallSpec {
  Collective collective = Collective::kAllReduce;
  double bytes = 0;   // per call, per rank
  double calls = 0;   // per step
  bool ring = false;  // send/recv: member i -> i+1 (mod D) instead of a chain
};

// Members of a group bucketed by NVLink domain: (domain, rank), sorted.
std::vector<std::pair<uint32_t, uint32_t>> ByDomain(
    const LayoutModel& layout, absl::Span<const uint32_t> members) {
  std::vector<std::pair<uint32_t, uint32_t>> out;
  out.reserve(members.size());
  for (uint32_t r : members) out.emplace_back(layout.Rank(r).domain, r);
  std::sort(out.begin(), out.end());
  return out;
}

uint32_t CountDomains(const std::vector<std::pair<uint32_t, uint32_t>>& by) {
  uint32_t n = 0;
  for (size_t i = 0; i < by.size(); ++i) {
    if (i == 0 || by[i].first != by[i - 1].first) ++n;
  }
  return n;
}

void AllReduce(const LayoutModel& layout, absl::Span<const uint32_t> members,
               const CallSpec& spec, Loads& loads) {
  const uint32_t d = static_cast<uint32_t>(members.size());
  const double per_rank = RingAllReduceSendBytes(spec.bytes, d) * spec.calls;
  if (per_rank <= 0) return;
  const auto by = ByDomain(layout, members);
  for (uint32_t r : members) loads.send[r] += per_rank;
  if (CountDomains(by) == 1) {
    for (uint32_t r : members) loads.nvlink[r] += per_rank;
    return;
  }
  // Per domain: one ring per distinct NIC, each leaving the domain once, so
  // the domain's NICs share per_rank; the members' other sends are NVLink.
  for (size_t begin = 0; begin < by.size();) {
    size_t end = begin;
    while (end < by.size() && by[end].first == by[begin].first) ++end;
    const double k = static_cast<double>(end - begin);
    std::vector<uint64_t> nics;
    for (size_t i = begin; i < end; ++i) {
      nics.push_back(NicKey(layout, by[i].second));
      loads.nvlink[by[i].second] += (k - 1) / k * per_rank;
    }
    std::sort(nics.begin(), nics.end());
    nics.erase(std::unique(nics.begin(), nics.end()), nics.end());
    const double share = per_rank / static_cast<double>(nics.size());
    for (uint64_t key : nics) {
      NicBytes& n = loads.nic[key];
      n.tx += share;
      n.rx += share;
    }
    begin = end;
  }
}

void AllToAll(const LayoutModel& layout, absl::Span<const uint32_t> members,
              const CallSpec& spec, Loads& loads) {
  const double d = static_cast<double>(members.size());
  if (members.size() <= 1) return;
  const auto by = ByDomain(layout, members);
  for (size_t begin = 0; begin < by.size();) {
    size_t end = begin;
    while (end < by.size() && by[end].first == by[begin].first) ++end;
    const double k = static_cast<double>(end - begin);
    for (size_t i = begin; i < end; ++i) {
      const uint32_t r = by[i].second;
      // Uniform routing: 1/D of the rank's data goes to each member.
      loads.send[r] += spec.bytes * (d - 1) / d * spec.calls;
      loads.nvlink[r] += spec.bytes * (k - 1) / d * spec.calls;
      if (k < d) {
        NicBytes& n = loads.nic[NicKey(layout, r)];
        n.tx += spec.bytes * (d - k) / d * spec.calls;
        n.rx += spec.bytes * (d - k) / d * spec.calls;
      }
    }
    begin = end;
  }
}

void Transfer(const LayoutModel& layout, uint32_t src, uint32_t dst,
              double bytes, Loads& loads) {
  loads.send[src] += bytes;
  if (layout.Rank(src).domain == layout.Rank(dst).domain) {
    loads.nvlink[src] += bytes;
    return;
  }
  loads.nic[NicKey(layout, src)].tx += bytes;
  loads.nic[NicKey(layout, dst)].rx += bytes;
}

void SendRecv(const LayoutModel& layout, absl::Span<const uint32_t> members,
              const CallSpec& spec, Loads& loads) {
  const size_t d = members.size();
  if (d <= 1) return;
  const double bytes = spec.bytes * spec.calls;
  if (spec.ring) {
    for (size_t i = 0; i < d; ++i) {
      Transfer(layout, members[i], members[(i + 1) % d], bytes, loads);
    }
    return;
  }
  // Pipeline chain: activations forward, their gradients backward.
  for (size_t i = 0; i + 1 < d; ++i) {
    Transfer(layout, members[i], members[i + 1], bytes, loads);
    Transfer(layout, members[i + 1], members[i], bytes, loads);
  }
}

// Alpha terms of one group per step, with `domains` NVLink domains spanned;
// `all_nvlink` prices every step at NVLink latency instead.
double LatencySeconds(const CallSpec& spec, uint32_t size, uint32_t domains,
                      const LinkParams& link, bool all_nvlink) {
  if (size <= 1) return 0;
  const bool crosses = domains > 1 && !all_nvlink;
  const double alpha = crosses ? link.alpha_nic : link.alpha_nvlink;
  switch (spec.collective) {
    case Collective::kAllReduce: {
      // NCCL tuning.cc: nsteps = 2(D-1), nInterSteps = 2(nNodes-1).
      const double n = all_nvlink ? 1.0 : static_cast<double>(domains);
      const double steps = 2.0 * (size - 1);
      const double inter = 2.0 * (n - 1);
      return spec.calls *
             ((steps - inter) * link.alpha_nvlink + inter * link.alpha_nic);
    }
    case Collective::kAllToAll:
      // All sends are posted at once (one NCCL group call).
      return spec.calls * alpha;
    case Collective::kSendRecv:
      // A chain's interior stage sends twice per micro-batch.
      return spec.calls * alpha * (spec.ring || size == 2 ? 1.0 : 2.0);
  }
  return 0;
}

// Model fields a prediction needs; "" when all are present.
std::string Missing(const v1::ModelSpec& m,
                    std::initializer_list<absl::string_view> fields) {
  std::vector<std::string> missing;
  for (absl::string_view f : fields) {
    bool has = false;
    if (f == "params") has = m.has_params();
    if (f == "hidden") has = m.has_hidden();
    if (f == "layers") has = m.has_layers();
    if (f == "seq_len") has = m.has_seq_len();
    if (f == "micro_batch") has = m.has_micro_batch();
    if (f == "micro_batches") has = m.has_micro_batches();
    if (f == "dtype_bytes") has = m.has_dtype_bytes();
    if (f == "experts") has = m.has_experts();
    if (f == "top_k") has = m.has_top_k();
    if (!has) missing.push_back(absl::StrCat("model.", f));
  }
  if (missing.empty()) return "";
  return absl::StrCat("needs ", absl::StrJoin(missing, ", "));
}

// One listed dimension before its loads are computed.
struct Plan {
  DimTraffic traffic;
  CallSpec spec;
};

// Per-rank sizes the predictions are built from, derived once from the model
// section (all zero when it is absent; such plans are unavailable anyway).
struct ModelTerms {
  double tokens = 0;        // per micro-batch and rank, after the cp split
  double act = 0;           // activation bytes of those tokens
  double layers_stage = 0;  // layers per pipeline stage, rounded up
  double mbs = 0;           // micro-batches per step
  bool moe = false;
  // Dense / expert split of params (see header).
  double dense_params = 0;
  double expert_params = 0;
};

ModelTerms DeriveTerms(const v1::Layout& l) {
  const v1::Parallelism& p = l.parallelism();
  const v1::ModelSpec& m = l.model();
  const double pp = p.pp(), cp = p.cp();
  ModelTerms t;
  t.tokens = static_cast<double>(m.micro_batch()) * m.seq_len() / cp;
  t.act = t.tokens * m.hidden() * m.dtype_bytes();
  t.layers_stage = std::ceil(m.layers() / pp);
  t.mbs = m.micro_batches();
  t.moe = m.experts() > 1 && p.ep() > 1;
  const double h = m.hidden();
  t.dense_params =
      t.moe
          ? std::min(m.params(), static_cast<double>(m.layers()) * 4.0 * h * h)
          : m.params();
  t.expert_params = t.moe ? m.params() - t.dense_params : 0;
  return t;
}

// Appends the plan of `dim` unless its degree is 1. Without a model section
// nothing is predictable, whatever `missing` says.
void AddPlan(const LayoutModel& layout, Dim dim, Collective c,
             std::string description, std::string missing, CallSpec spec,
             std::vector<Plan>& out) {
  if (layout.Degree(dim) <= 1) return;
  Plan plan;
  plan.traffic.dim = dim;
  plan.traffic.collective = c;
  plan.traffic.description = std::move(description);
  plan.traffic.group_size = layout.Degree(dim);
  plan.traffic.num_groups = layout.NumGroups(dim);
  if (!layout.layout().has_model()) {
    missing = "the layout has no model section";
  }
  plan.traffic.available = missing.empty();
  plan.traffic.unavailable_reason = std::move(missing);
  spec.collective = c;
  plan.spec = spec;
  out.push_back(std::move(plan));
}

// The gradient reduction over dp-cp (dp when cp = 1); with MoE it carries
// only the dense parameters.
void AddGradientPlan(const LayoutModel& layout, const ModelTerms& t,
                     std::vector<Plan>& out) {
  const v1::Parallelism& p = layout.layout().parallelism();
  const v1::ModelSpec& m = layout.layout().model();
  const double tp = p.tp(), pp = p.pp();
  const Dim grad_dim = p.cp() > 1 ? Dim::kDpCp : Dim::kDp;
  std::string split_missing;
  if (t.moe) {
    split_missing = Missing(m, {"params", "dtype_bytes", "hidden", "layers"});
    if (!split_missing.empty()) {
      split_missing += " (to split dense and expert parameters)";
    }
  }
  AddPlan(layout, grad_dim, Collective::kAllReduce,
          t.moe ? "dense gradient all-reduce once per step"
                : "gradient all-reduce once per step",
          t.moe ? split_missing : Missing(m, {"params", "dtype_bytes"}),
          {Collective::kAllReduce, t.dense_params / (tp * pp) * m.dtype_bytes(),
           1, false},
          out);
}

// The ep token exchange and the expert-gradient reduction over edp; a model
// without experts moves nothing on either.
void AddExpertPlans(const LayoutModel& layout, const ModelTerms& t,
                    std::vector<Plan>& out) {
  const v1::Parallelism& p = layout.layout().parallelism();
  const v1::ModelSpec& m = layout.layout().model();
  const double tp = p.tp(), pp = p.pp(), ep = p.ep();
  const double h = m.hidden();
  std::string missing =
      Missing(m, {"micro_batch", "seq_len", "hidden", "dtype_bytes",
                  "micro_batches", "layers", "experts", "top_k"});
  if (missing.empty() && m.experts() <= 1) {
    missing = "model.experts = 1: no MoE layers, ep groups move nothing";
  }
  AddPlan(
      layout, Dim::kEp, Collective::kAllToAll,
      "token all-to-all, dispatch + combine forward and backward per MoE "
      "layer and micro-batch (uniform routing)",
      std::move(missing),
      {Collective::kAllToAll, t.tokens / tp * m.top_k() * h * m.dtype_bytes(),
       4 * t.layers_stage * t.mbs, false},
      out);
  std::string edp_missing =
      Missing(m, {"params", "dtype_bytes", "hidden", "layers", "experts"});
  if (edp_missing.empty() && m.experts() <= 1) {
    edp_missing = "model.experts = 1: no expert parameters";
  }
  AddPlan(layout, Dim::kEdp, Collective::kAllReduce,
          "expert gradient all-reduce once per step", std::move(edp_missing),
          {Collective::kAllReduce,
           t.expert_params / (tp * pp * ep) * m.dtype_bytes(), 1, false},
          out);
}

// Decides, for each dimension of degree > 1, what it moves (or why that
// cannot be predicted).
std::vector<Plan> PlanDimensions(const LayoutModel& layout) {
  const v1::Parallelism& p = layout.layout().parallelism();
  const v1::ModelSpec& m = layout.layout().model();
  const double tp = p.tp(), cp = p.cp();
  const double h = m.hidden();
  const ModelTerms t = DeriveTerms(layout.layout());

  std::vector<Plan> out;
  AddPlan(layout, Dim::kTp, Collective::kAllReduce,
          "activation all-reduce, 2 forward + 2 backward per layer and "
          "micro-batch",
          Missing(m, {"micro_batch", "seq_len", "hidden", "dtype_bytes",
                      "micro_batches", "layers"}),
          {Collective::kAllReduce, t.act, 4 * t.layers_stage * t.mbs, false},
          out);
  AddPlan(layout, Dim::kCp, Collective::kSendRecv,
          "ring attention K/V exchange, cp-1 passes forward, 2(cp-1) backward "
          "per layer and micro-batch (estimate)",
          Missing(m, {"micro_batch", "seq_len", "hidden", "dtype_bytes",
                      "micro_batches", "layers"}),
          {Collective::kSendRecv, 2 * t.tokens * h / tp * m.dtype_bytes(),
           3 * (cp - 1) * t.layers_stage * t.mbs, true},
          out);
  AddPlan(layout, Dim::kPp, Collective::kSendRecv,
          "stage-boundary activations forward and gradients backward per "
          "micro-batch",
          Missing(m, {"micro_batch", "seq_len", "hidden", "dtype_bytes",
                      "micro_batches"}),
          {Collective::kSendRecv, t.act, t.mbs, false}, out);
  AddGradientPlan(layout, t, out);
  if (p.ep() > 1) AddExpertPlans(layout, t, out);
  return out;
}

void Accumulate(const LayoutModel& layout, absl::Span<const uint32_t> members,
                const CallSpec& spec, Loads& loads) {
  switch (spec.collective) {
    case Collective::kAllReduce:
      AllReduce(layout, members, spec, loads);
      return;
    case Collective::kAllToAll:
      AllToAll(layout, members, spec, loads);
      return;
    case Collective::kSendRecv:
      SendRecv(layout, members, spec, loads);
      return;
  }
}

// Every NIC a rank uses, even one predicted to carry nothing, appended to
// `nics`; returns NicKey -> index into `nics`.
absl::flat_hash_map<uint64_t, size_t> ListNics(const LayoutModel& layout,
                                               std::vector<NicTraffic>& nics) {
  absl::flat_hash_map<uint64_t, size_t> nic_slot;
  for (uint32_t r = 0; r < layout.WorldSize(); ++r) {
    const RankInfo& info = layout.Rank(r);
    if (info.nic == kNoNic) continue;
    const uint64_t key = NicKey(layout, r);
    if (nic_slot.contains(key)) continue;
    nic_slot[key] = nics.size();
    NicTraffic t;
    t.nic = {info.host, info.nic};
    t.host_name = layout.Hosts()[info.host];
    t.nic_name = layout.Nics()[info.nic];
    nics.push_back(std::move(t));
  }
  return nic_slot;
}

// What all groups of one dimension put on the links, and the slowest group's
// latency on the real links and if they were all NVLink.
struct DimLoads {
  Loads loads;
  double latency = 0;
  double latency_nvlink = 0;
};

// Sums the groups of `plan`'s dimension. A TP group that leaves its NVLink
// domain is also timed on its own and appended to `tp_crossings`.
DimLoads AccumulateGroups(const LayoutModel& layout, const Plan& plan,
                          const LinkParams& link,
                          std::vector<GroupTime>& tp_crossings) {
  const DimTraffic& t = plan.traffic;
  const Dim dim = t.dim;
  DimLoads out;
  const bool crossings = dim == Dim::kTp && t.groups_crossing > 0;
  for (uint32_t g = 0; g < layout.NumGroups(dim); ++g) {
    absl::Span<const uint32_t> members = layout.Group(dim, g);
    const uint32_t domains = layout.DomainsSpanned(dim, g);
    const double lat =
        LatencySeconds(plan.spec, t.group_size, domains, link, false);
    const double lat_nvlink =
        LatencySeconds(plan.spec, t.group_size, domains, link, true);
    out.latency = std::max(out.latency, lat);
    out.latency_nvlink = std::max(out.latency_nvlink, lat_nvlink);
    if (crossings && domains > 1) {
      // The group's own traffic, as if it had its links to itself.
      Loads own;
      Accumulate(layout, members, plan.spec, own);
      GroupTime gt;
      gt.group = g;
      gt.seconds = lat + BandwidthSeconds(own, link);
      gt.seconds_if_nvlink =
          lat_nvlink + MaxValue(own.send) / link.nvlink_bytes_per_second;
      tp_crossings.push_back(gt);
      Merge(own, out.loads);
    } else {
      Accumulate(layout, members, plan.spec, out.loads);
    }
  }
  return out;
}

// Fills the sizes and times of `plan`'s traffic from its summed loads.
void SetTimes(const DimLoads& d, const LinkParams& link, Plan& plan) {
  DimTraffic& t = plan.traffic;
  t.calls_per_step = plan.spec.calls;
  t.bytes_per_call = plan.spec.bytes;
  t.rank_send_bytes = MaxValue(d.loads.send);
  t.rank_nvlink_bytes = MaxValue(d.loads.nvlink);
  t.nic_bytes = MaxNicBytes(d.loads);
  t.latency_seconds = d.latency;
  t.seconds = d.latency + BandwidthSeconds(d.loads, link);
  t.seconds_if_nvlink =
      d.latency_nvlink + t.rank_send_bytes / link.nvlink_bytes_per_second;
}

// Adds one dimension's bytes to the named NICs; virtual NICs are timed but
// never reported.
void AddNicBytes(const Loads& loads, Dim dim,
                 const absl::flat_hash_map<uint64_t, size_t>& nic_slot,
                 std::vector<NicTraffic>& nics) {
  for (const auto& [key, bytes] : loads.nic) {
    if (key & kVirtualNic) continue;
    NicTraffic& n = nics[nic_slot.at(key)];
    n.by_dim[Idx(dim)].tx += bytes.tx;
    n.by_dim[Idx(dim)].rx += bytes.rx;
    n.total.tx += bytes.tx;
    n.total.rx += bytes.rx;
  }
}

}  // namespace

absl::Status ValidateLinkParams(const LinkParams& link) {
  const struct {
    absl::string_view name;
    double value;
    bool rate;
  } fields[] = {
      {"nvlink_bytes_per_second", link.nvlink_bytes_per_second, true},
      {"nic_bytes_per_second", link.nic_bytes_per_second, true},
      {"alpha_nvlink", link.alpha_nvlink, false},
      {"alpha_nic", link.alpha_nic, false},
  };
  for (const auto& f : fields) {
    const bool ok =
        std::isfinite(f.value) && (f.rate ? f.value > 0 : f.value >= 0);
    if (!ok) {
      return absl::InvalidArgumentError(absl::StrCat(f.name, ": ", f.value,
                                                     " must be finite and ",
                                                     f.rate ? "> 0" : ">= 0"));
    }
  }
  return absl::OkStatus();
}

absl::string_view CollectiveName(Collective collective) {
  switch (collective) {
    case Collective::kAllReduce:
      return "all-reduce";
    case Collective::kAllToAll:
      return "all-to-all";
    case Collective::kSendRecv:
      return "send/recv";
  }
  return "unknown";
}

double RingAllReduceSendBytes(double bytes, uint32_t group_size) {
  if (group_size <= 1) return 0;
  return 2.0 * (group_size - 1) / group_size * bytes;
}

absl::StatusOr<TrafficModel> TrafficModel::Predict(const LayoutModel& layout,
                                                   const LinkParams& link) {
  if (absl::Status s = ValidateLinkParams(link); !s.ok()) return s;
  TrafficModel out;
  out.link_ = link;
  out.has_model_ = layout.layout().has_model();

  const absl::flat_hash_map<uint64_t, size_t> nic_slot =
      ListNics(layout, out.nics_);
  for (Plan& plan : PlanDimensions(layout)) {
    DimTraffic& t = plan.traffic;
    const Dim dim = t.dim;
    for (uint32_t g = 0; g < layout.NumGroups(dim); ++g) {
      if (layout.DomainsSpanned(dim, g) > 1) ++t.groups_crossing;
      if (layout.HostsSpanned(dim, g) > 1) ++t.groups_multi_host;
    }
    if (!t.available) {
      out.dims_.push_back(std::move(t));
      continue;
    }
    const DimLoads summed =
        AccumulateGroups(layout, plan, link, out.tp_crossings_);
    SetTimes(summed, link, plan);
    AddNicBytes(summed.loads, dim, nic_slot, out.nics_);
    out.dims_.push_back(std::move(t));
  }

  std::sort(out.nics_.begin(), out.nics_.end(),
            [](const NicTraffic& a, const NicTraffic& b) {
              if (a.nic.host != b.nic.host) return a.nic.host < b.nic.host;
              return a.nic_name < b.nic_name;
            });
  for (size_t i = 0; i < out.nics_.size(); ++i) {
    out.nic_index_[{out.nics_[i].host_name, out.nics_[i].nic_name}] = i;
  }
  return out;
}

const DimTraffic* TrafficModel::Find(Dim dim) const {
  for (const DimTraffic& t : dims_) {
    if (t.dim == dim) return &t;
  }
  return nullptr;
}

double TrafficModel::SerialSeconds() const {
  double sum = 0;
  for (const DimTraffic& t : dims_) {
    if (t.available) sum += t.seconds;
  }
  return sum;
}

std::optional<NicBytes> TrafficModel::PredictedNicBytesPerStep(
    absl::string_view host, absl::string_view nic) const {
  auto it =
      nic_index_.find(std::make_pair(std::string(host), std::string(nic)));
  if (it == nic_index_.end()) return std::nullopt;
  return nics_[it->second].total;
}

}  // namespace fabricdiag::analysis
