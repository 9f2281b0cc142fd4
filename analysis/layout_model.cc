#include "analysis/layout_model.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "analysis/layout_labels.h"
#include "common/names.h"
#include "common/status_macros.h"

namespace fabricdiag::analysis {
namespace {

constexpr absl::string_view kDimNames[kNumDims] = {"tp",    "cp", "dp", "pp",
                                                   "dp-cp", "ep", "edp"};
// Megatron-LM token sets of each Dim, and whether it comes from the expert
// generator.
constexpr absl::string_view kDimTokens[kNumDims] = {"tp",    "cp", "dp", "pp",
                                                    "dp-cp", "ep", "dp"};
constexpr bool kDimIsExpert[kNumDims] = {false, false, false, false,
                                         false, true,  true};

// A degree larger than this is a typo, not a cluster.
constexpr uint32_t kMaxDegree = kMaxRanks;

absl::Status FieldError(absl::string_view field, absl::string_view message) {
  return absl::InvalidArgumentError(absl::StrCat(field, ": ", message));
}

absl::Status CheckDegree(absl::string_view field, uint32_t value) {
  if (value < 1) return FieldError(field, "must be at least 1, got 0");
  if (value > kMaxDegree) {
    return FieldError(
        field, absl::StrCat(value, " exceeds the limit of ", kMaxDegree));
  }
  return absl::OkStatus();
}

// Fills defaults and checks the fields that stand on their own.
absl::Status NormalizeScalars(v1::Layout& layout) {
  if (!IsValidJobName(layout.job())) {
    return FieldError("job", absl::StrCat(QuoteForMessage(layout.job()),
                                          " must match ", kJobNamePattern));
  }
  RETURN_IF_ERROR(ValidateLayoutLabels(layout.labels()));
  if (layout.gpus_per_node() < 1 || layout.gpus_per_node() > kMaxGpusPerNode) {
    return FieldError("gpus_per_node", absl::StrCat(layout.gpus_per_node(),
                                                    " is out of range [1, ",
                                                    kMaxGpusPerNode, "]"));
  }
  if (!layout.has_nvlink_domain()) {
    layout.set_nvlink_domain(layout.gpus_per_node());
  }
  const uint32_t nvl = layout.nvlink_domain();
  RETURN_IF_ERROR(CheckDegree("nvlink_domain", nvl));
  const uint32_t gpn = layout.gpus_per_node();
  if (gpn % nvl != 0 && nvl % gpn != 0) {
    return FieldError("nvlink_domain",
                      absl::StrCat(nvl,
                                   " is neither a divisor nor a multiple of "
                                   "gpus_per_node = ",
                                   gpn));
  }
  v1::Parallelism& par = *layout.mutable_parallelism();
  if (!par.has_cp()) par.set_cp(1);
  if (!par.has_ep()) par.set_ep(1);
  if (!par.has_order()) par.set_order(std::string(kDefaultOrder));
  RETURN_IF_ERROR(CheckDegree("parallelism.tp", par.tp()));
  RETURN_IF_ERROR(CheckDegree("parallelism.pp", par.pp()));
  RETURN_IF_ERROR(CheckDegree("parallelism.dp", par.dp()));
  RETURN_IF_ERROR(CheckDegree("parallelism.cp", par.cp()));
  RETURN_IF_ERROR(CheckDegree("parallelism.ep", par.ep()));
  return absl::OkStatus();
}

absl::Status CheckModel(const v1::ModelSpec& model, uint32_t ep) {
  if (model.has_params() && !(std::isfinite(model.params()) &&
                              model.params() >= 1 && model.params() <= 1e16)) {
    return FieldError(
        "model.params",
        absl::StrCat(model.params(), " is out of range [1, 1e16]"));
  }
  struct Field {
    absl::string_view name;
    bool has;
    uint32_t value;
    uint32_t max;
  };
  const Field fields[] = {
      {"model.hidden", model.has_hidden(), model.hidden(), 10000000},
      {"model.layers", model.has_layers(), model.layers(), 100000},
      {"model.seq_len", model.has_seq_len(), model.seq_len(), 1000000000},
      {"model.micro_batch", model.has_micro_batch(), model.micro_batch(),
       10000000},
      {"model.micro_batches", model.has_micro_batches(), model.micro_batches(),
       10000000},
      {"model.dtype_bytes", model.has_dtype_bytes(), model.dtype_bytes(), 8},
      {"model.experts", model.has_experts(), model.experts(), 1000000},
      {"model.top_k", model.has_top_k(), model.top_k(), 1000000},
  };
  for (const Field& f : fields) {
    if (f.has && (f.value < 1 || f.value > f.max)) {
      return FieldError(
          f.name, absl::StrCat(f.value, " is out of range [1, ", f.max, "]"));
    }
  }
  if (model.has_experts() && model.experts() % ep != 0) {
    return FieldError(
        "model.experts",
        absl::StrCat(model.experts(),
                     " is not divisible by parallelism.ep = ", ep));
  }
  if (model.has_top_k() && model.has_experts() &&
      model.top_k() > model.experts()) {
    return FieldError("model.top_k",
                      absl::StrCat(model.top_k(), " exceeds model.experts = ",
                                   model.experts()));
  }
  return absl::OkStatus();
}

// Interns `name` into names/index and returns its index.
uint32_t Intern(const std::string& name, std::vector<std::string>& names,
                absl::flat_hash_map<std::string, uint32_t>& index) {
  auto [it, inserted] =
      index.emplace(name, static_cast<uint32_t>(names.size()));
  if (inserted) names.push_back(name);
  return it->second;
}

}  // namespace

absl::string_view DimName(Dim dim) {
  return kDimNames[static_cast<size_t>(dim)];
}

std::optional<Dim> DimFromName(absl::string_view name) {
  for (int i = 0; i < kNumDims; ++i) {
    if (kDimNames[i] == name) return kAllDims[i];
  }
  return std::nullopt;
}

std::string GroupName(GroupId id) {
  return absl::StrCat(DimName(id.dim), ":", id.index);
}

absl::StatusOr<GroupId> ParseGroupName(absl::string_view name) {
  size_t colon = name.rfind(':');
  uint32_t index = 0;
  std::optional<Dim> dim;
  if (colon != absl::string_view::npos) {
    dim = DimFromName(name.substr(0, colon));
  }
  absl::string_view digits =
      colon == absl::string_view::npos ? "" : name.substr(colon + 1);
  if (!dim.has_value() || digits.empty() ||
      !std::all_of(digits.begin(), digits.end(),
                   [](char c) { return c >= '0' && c <= '9'; }) ||
      !absl::SimpleAtoi(digits, &index)) {
    return absl::InvalidArgumentError(
        absl::StrCat("group ", QuoteForMessage(name),
                     " is not of the form DIM:INDEX (DIM one of tp, cp, dp, "
                     "pp, dp-cp, ep, edp)"));
  }
  return GroupId{*dim, index};
}

absl::StatusOr<LayoutModel> LayoutModel::Build(const v1::Layout& input) {
  LayoutModel m;
  m.layout_ = input;
  v1::Layout& layout = m.layout_;
  RETURN_IF_ERROR(NormalizeScalars(layout));
  const v1::Parallelism& par = layout.parallelism();

  // Checked product: each degree is <= kMaxDegree, so stop as soon as it is
  // big.
  uint64_t world = 1;
  for (uint32_t d : {par.tp(), par.cp(), par.pp(), par.dp()}) {
    world *= d;
    if (world > kMaxRanks) {
      return FieldError(
          "parallelism",
          absl::StrCat("tp*cp*pp*dp exceeds the limit of ", kMaxRanks,
                       " ranks (tp=", par.tp(), " cp=", par.cp(),
                       " pp=", par.pp(), " dp=", par.dp(), ")"));
    }
  }
  m.world_size_ = static_cast<uint32_t>(world);
  const uint64_t dp_cp = static_cast<uint64_t>(par.dp()) * par.cp();
  if (dp_cp % par.ep() != 0) {
    return FieldError(
        "parallelism.ep",
        absl::StrCat(par.ep(), " does not divide dp*cp = ", dp_cp));
  }
  if (layout.has_model()) RETURN_IF_ERROR(CheckModel(layout.model(), par.ep()));

  auto order = ParseOrder(par.order());
  if (!order.ok())
    return FieldError("parallelism.order", order.status().message());
  RETURN_IF_ERROR(m.Place(layout));
  RETURN_IF_ERROR(m.ComputeGroups(*order));
  m.ComputeIndexes();
  return m;
}

absl::Status LayoutModel::Place(const v1::Layout& layout) {
  ranks_.assign(world_size_, RankInfo{});
  RETURN_IF_ERROR(AddHosts(layout));
  ASSIGN_OR_RETURN(std::vector<uint32_t> rail_nics, InternRails(layout));
  if (layout.ranks_size() == 0) {
    RETURN_IF_ERROR(PlaceInHostOrder(layout, rail_nics));
  } else {
    RETURN_IF_ERROR(PlaceListedRanks(layout, rail_nics));
  }
  AssignNvlinkDomains(layout);
  return absl::OkStatus();
}

absl::Status LayoutModel::AddHosts(const v1::Layout& layout) {
  // Checked for validity and duplicates whatever the placement mode.
  if (static_cast<uint32_t>(layout.hosts_size()) > kMaxHosts) {
    return FieldError("hosts",
                      absl::StrCat(layout.hosts_size(),
                                   " hosts exceed the limit of ", kMaxHosts));
  }
  for (int i = 0; i < layout.hosts_size(); ++i) {
    const std::string& host = layout.hosts(i);
    const std::string field = absl::StrCat("hosts[", i, "]");
    if (!IsValidNodeName(host)) {
      return FieldError(field, absl::StrCat(QuoteForMessage(host),
                                            " is not a valid host name (",
                                            kNodeNamePattern, ")"));
    }
    auto [it, inserted] = host_index_.emplace(host, static_cast<uint32_t>(i));
    if (!inserted) {
      return FieldError(field, absl::StrCat(QuoteForMessage(host),
                                            " is listed twice (also hosts[",
                                            it->second, "])"));
    }
    hosts_.push_back(host);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<uint32_t>> LayoutModel::InternRails(
    const v1::Layout& layout) {
  std::vector<uint32_t> rail_nics;
  if (layout.rails_size() == 0) return rail_nics;
  const uint32_t gpn = layout.gpus_per_node();
  if (static_cast<uint32_t>(layout.rails_size()) != gpn) {
    return FieldError("rails",
                      absl::StrCat(layout.rails_size(),
                                   " NICs given, but gpus_per_node = ", gpn));
  }
  for (int i = 0; i < layout.rails_size(); ++i) {
    if (!IsValidDeviceName(layout.rails(i))) {
      return FieldError(
          absl::StrCat("rails[", i, "]"),
          absl::StrCat(QuoteForMessage(layout.rails(i)),
                       " is not a valid NIC name (", kDeviceNamePattern, ")"));
    }
    rail_nics.push_back(Intern(layout.rails(i), nics_, nic_index_));
  }
  return rail_nics;
}

absl::Status LayoutModel::PlaceInHostOrder(
    const v1::Layout& layout, const std::vector<uint32_t>& rail_nics) {
  const uint32_t gpn = layout.gpus_per_node();
  const uint32_t world = world_size_;
  if (layout.hosts_size() == 0) {
    return FieldError("hosts", "required when ranks is not given");
  }
  const uint64_t placed = static_cast<uint64_t>(layout.hosts_size()) * gpn;
  if (placed != world) {
    return FieldError(
        "hosts", absl::StrCat(layout.hosts_size(), " hosts x ", gpn, " gpus = ",
                              placed, " ranks, but tp*cp*pp*dp = ", world));
  }
  for (uint32_t r = 0; r < world; ++r) {
    RankInfo& info = ranks_[r];
    info.host = r / gpn;
    info.gpu = r % gpn;
    info.nic = rail_nics.empty() ? kNoNic : rail_nics[info.gpu];
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<uint32_t>> LayoutModel::IndexPlacements(
    const v1::Layout& layout) const {
  const uint32_t world = world_size_;
  if (static_cast<uint64_t>(layout.ranks_size()) != world) {
    return FieldError(
        "ranks", absl::StrCat(layout.ranks_size(),
                              " placements given, but tp*cp*pp*dp = ", world));
  }
  // Where each rank was placed (index into layout.ranks), to name both
  // entries of a duplicate.
  std::vector<uint32_t> placed_by(world, UINT32_MAX);
  for (int i = 0; i < layout.ranks_size(); ++i) {
    const v1::RankPlacement& p = layout.ranks(i);
    const std::string field = absl::StrCat("ranks[", i, "].rank");
    if (p.rank() >= world) {
      return FieldError(
          field, absl::StrCat(p.rank(), " is out of range [0, ", world, ")"));
    }
    if (placed_by[p.rank()] != UINT32_MAX) {
      return FieldError(field, absl::StrCat("rank ", p.rank(),
                                            " is placed twice (also ranks[",
                                            placed_by[p.rank()], "])"));
    }
    placed_by[p.rank()] = static_cast<uint32_t>(i);
  }
  // Count and uniqueness make every rank present exactly once.
  return placed_by;
}

absl::Status LayoutModel::PlaceListedRanks(
    const v1::Layout& layout, const std::vector<uint32_t>& rail_nics) {
  // Visit placements by increasing rank so that, without a hosts list, host
  // indices follow the first appearance by rank. Sorting needs the ranks to
  // be valid first.
  ASSIGN_OR_RETURN(const std::vector<uint32_t> placed_by,
                   IndexPlacements(layout));
  const uint32_t gpn = layout.gpus_per_node();
  const bool hosts_given = layout.hosts_size() > 0;
  // (host, gpu) -> rank, to catch two ranks on one GPU.
  absl::flat_hash_map<uint64_t, uint32_t> gpu_owner;
  gpu_owner.reserve(world_size_);
  for (uint32_t r = 0; r < world_size_; ++r) {
    const uint32_t i = placed_by[r];
    const v1::RankPlacement& p = layout.ranks(static_cast<int>(i));
    const std::string field = absl::StrCat("ranks[", i, "]");
    if (!IsValidNodeName(p.host())) {
      return FieldError(
          absl::StrCat(field, ".host"),
          absl::StrCat(QuoteForMessage(p.host()), " is not a valid host name (",
                       kNodeNamePattern, ")"));
    }
    if (p.gpu() >= gpn) {
      return FieldError(
          absl::StrCat(field, ".gpu"),
          absl::StrCat(p.gpu(), " is out of range for gpus_per_node = ", gpn));
    }
    RankInfo& info = ranks_[r];
    ASSIGN_OR_RETURN(info.host, PlacementHost(p.host(), field, hosts_given));
    info.gpu = p.gpu();
    const uint64_t key = (static_cast<uint64_t>(info.host) << 32) | info.gpu;
    auto [owner, fresh] = gpu_owner.emplace(key, r);
    if (!fresh) {
      return FieldError(
          field, absl::StrCat(p.host(), " gpu ", p.gpu(),
                              " is already used by rank ", owner->second));
    }
    ASSIGN_OR_RETURN(info.nic, PlacementNic(p, field, rail_nics));
  }
  return absl::OkStatus();
}

absl::StatusOr<uint32_t> LayoutModel::PlacementHost(const std::string& host,
                                                    const std::string& field,
                                                    bool hosts_given) {
  auto it = host_index_.find(host);
  if (it != host_index_.end()) return it->second;
  if (hosts_given) {
    return FieldError(absl::StrCat(field, ".host"),
                      absl::StrCat(QuoteForMessage(host), " is not in hosts"));
  }
  const uint32_t index = Intern(host, hosts_, host_index_);
  if (hosts_.size() > kMaxHosts) {
    return FieldError(
        absl::StrCat(field, ".host"),
        absl::StrCat("more than ", kMaxHosts, " distinct hosts (the limit)"));
  }
  return index;
}

absl::StatusOr<uint32_t> LayoutModel::PlacementNic(
    const v1::RankPlacement& p, const std::string& field,
    const std::vector<uint32_t>& rail_nics) {
  if (!p.nic().empty()) {
    if (!IsValidDeviceName(p.nic())) {
      return FieldError(
          absl::StrCat(field, ".nic"),
          absl::StrCat(QuoteForMessage(p.nic()), " is not a valid NIC name (",
                       kDeviceNamePattern, ")"));
    }
    return Intern(p.nic(), nics_, nic_index_);
  }
  return rail_nics.empty() ? kNoNic : rail_nics[p.gpu()];
}

void LayoutModel::AssignNvlinkDomains(const v1::Layout& layout) {
  // See the header comment.
  const uint32_t gpn = layout.gpus_per_node();
  const uint32_t nvl = layout.nvlink_domain();
  const uint64_t num_hosts = hosts_.size();
  if (nvl <= gpn) {
    const uint32_t per_host = gpn / nvl;
    for (RankInfo& info : ranks_) {
      info.domain = info.host * per_host + info.gpu / nvl;
    }
    num_domains_ = static_cast<uint32_t>(num_hosts * per_host);
  } else {
    const uint32_t hosts_per_domain = nvl / gpn;
    for (RankInfo& info : ranks_) info.domain = info.host / hosts_per_domain;
    num_domains_ = static_cast<uint32_t>((num_hosts + hosts_per_domain - 1) /
                                         hosts_per_domain);
  }
}

absl::Status LayoutModel::ComputeGroups(const std::vector<std::string>& order) {
  const v1::Parallelism& par = layout_.parallelism();
  Degrees dense;
  dense.tp = par.tp();
  dense.cp = par.cp();
  dense.ep = 1;
  dense.dp = par.dp();
  dense.pp = par.pp();
  Degrees expert = dense;
  expert.cp = 1;
  expert.ep = par.ep();
  expert.dp = par.dp() * par.cp() / par.ep();

  auto dense_gen = RankGenerator::Create(dense, order);
  if (!dense_gen.ok()) {
    return FieldError("parallelism.order", dense_gen.status().message());
  }
  auto expert_gen = RankGenerator::Create(expert, order);
  if (!expert_gen.ok()) {
    return FieldError(
        "parallelism.order",
        absl::StrCat(expert_gen.status().message(),
                     " in the expert layout (ep = ", expert.ep,
                     ", expert-dp = dp*cp/ep = ", expert.dp, ")"));
  }
  for (int i = 0; i < kNumDims; ++i) {
    const RankGenerator& gen = kDimIsExpert[i] ? *expert_gen : *dense_gen;
    ASSIGN_OR_RETURN(groups_[i], gen.GetRanks(kDimTokens[i]));
  }
  // Megatron-LM requires the expert layers to see the same pipeline
  // stages as the dense ones (parallel_state.py asserts it); otherwise the
  // job refuses to start, so the layout is wrong.
  ASSIGN_OR_RETURN(RankGroups expert_pp, expert_gen->GetRanks("pp"));
  if (expert_pp.members != groups_[Idx(Dim::kPp)].members) {
    return FieldError(
        "parallelism.order",
        absl::StrCat("\"", par.order(),
                     "\" puts pp before other dimensions, "
                     "so the dense and expert layers would get different "
                     "pipeline groups (Megatron-LM requires order to end "
                     "with pp, or dp*cp/ep = ",
                     expert.dp, " to equal dp = ", par.dp(), ")"));
  }
  return absl::OkStatus();
}

void LayoutModel::ComputeIndexes() {
  const uint32_t world = world_size_;
  for (int d = 0; d < kNumDims; ++d) {
    const RankGroups& g = groups_[d];
    group_of_[d].assign(world, 0);
    rank_in_[d].assign(world, 0);
    for (uint32_t gi = 0; gi < g.num_groups; ++gi) {
      absl::Span<const uint32_t> members = g.group(gi);
      for (uint32_t k = 0; k < g.group_size; ++k) {
        group_of_[d][members[k]] = gi;
        rank_in_[d][members[k]] = k;
      }
    }
  }

  // Host -> ranks (CSR), ranks ascending because r runs ascending.
  const uint32_t num_hosts = static_cast<uint32_t>(hosts_.size());
  host_offsets_.assign(num_hosts + 1, 0);
  for (const RankInfo& info : ranks_) ++host_offsets_[info.host + 1];
  for (uint32_t h = 0; h < num_hosts; ++h) {
    host_offsets_[h + 1] += host_offsets_[h];
  }
  host_ranks_.resize(world);
  std::vector<uint32_t> fill(host_offsets_.begin(), host_offsets_.end() - 1);
  for (uint32_t r = 0; r < world; ++r) host_ranks_[fill[ranks_[r].host]++] = r;

  // (host, nic) -> ranks: sort rank ids by key, then record ranges.
  nic_ranks_.clear();
  for (uint32_t r = 0; r < world; ++r) {
    if (ranks_[r].nic != kNoNic) nic_ranks_.push_back(r);
  }
  auto key_of = [this](uint32_t r) {
    return (static_cast<uint64_t>(ranks_[r].host) << 32) | ranks_[r].nic;
  };
  std::stable_sort(
      nic_ranks_.begin(), nic_ranks_.end(),
      [&](uint32_t a, uint32_t b) { return key_of(a) < key_of(b); });
  nic_ranges_.clear();
  nic_range_offsets_.assign(num_hosts + 1, 0);
  for (uint32_t i = 0; i < nic_ranks_.size();) {
    uint32_t j = i;
    const uint64_t key = key_of(nic_ranks_[i]);
    while (j < nic_ranks_.size() && key_of(nic_ranks_[j]) == key) ++j;
    const RankInfo& info = ranks_[nic_ranks_[i]];
    nic_ranges_.push_back({info.nic, i, j});
    ++nic_range_offsets_[info.host + 1];
    i = j;
  }
  for (uint32_t h = 0; h < num_hosts; ++h) {
    nic_range_offsets_[h + 1] += nic_range_offsets_[h];
  }

  const uint32_t num_tp = NumGroups(Dim::kTp);
  for (uint32_t g = 0; g < num_tp; ++g) {
    if (DomainsSpanned(Dim::kTp, g) > 1) tp_crossing_.push_back(g);
  }

  // Each group's distinct (host, NIC) pairs, in member order.
  absl::flat_hash_set<uint64_t> seen;
  for (int d = 0; d < kNumDims; ++d) {
    const RankGroups& g = groups_[d];
    group_nic_offsets_[d].assign(1, 0);
    group_nic_offsets_[d].reserve(g.num_groups + 1);
    group_nics_[d].clear();
    for (uint32_t gi = 0; gi < g.num_groups; ++gi) {
      seen.clear();
      for (uint32_t r : g.group(gi)) {
        const NicRef ref{ranks_[r].host, ranks_[r].nic};
        if (seen.insert((static_cast<uint64_t>(ref.host) << 32) | ref.nic)
                .second) {
          group_nics_[d].push_back(ref);
        }
      }
      group_nic_offsets_[d].push_back(
          static_cast<uint32_t>(group_nics_[d].size()));
    }
  }
}

absl::string_view LayoutModel::NicName(uint32_t rank) const {
  const uint32_t nic = ranks_[rank].nic;
  return nic == kNoNic ? absl::string_view() : absl::string_view(nics_[nic]);
}

std::optional<uint32_t> LayoutModel::HostIndex(absl::string_view host) const {
  auto it = host_index_.find(host);
  if (it == host_index_.end()) return std::nullopt;
  return it->second;
}

std::optional<uint32_t> LayoutModel::NicIndex(absl::string_view nic) const {
  auto it = nic_index_.find(nic);
  if (it == nic_index_.end()) return std::nullopt;
  return it->second;
}

absl::Span<const uint32_t> LayoutModel::RanksOnHost(uint32_t host) const {
  if (host >= hosts_.size()) return {};
  return absl::MakeConstSpan(host_ranks_)
      .subspan(host_offsets_[host],
               host_offsets_[host + 1] - host_offsets_[host]);
}

absl::Span<const uint32_t> LayoutModel::RanksOnNic(uint32_t host,
                                                   uint32_t nic) const {
  if (host >= hosts_.size()) return {};
  const NicRange* const begin = nic_ranges_.data() + nic_range_offsets_[host];
  const NicRange* const end = nic_ranges_.data() + nic_range_offsets_[host + 1];
  const NicRange* it = std::lower_bound(
      begin, end, nic, [](const NicRange& r, uint32_t n) { return r.nic < n; });
  if (it == end || it->nic != nic) return {};
  return absl::MakeConstSpan(nic_ranks_)
      .subspan(it->begin, it->end - it->begin);
}

absl::Span<const uint32_t> LayoutModel::RanksOnNic(
    absl::string_view host, absl::string_view nic) const {
  std::optional<uint32_t> h = HostIndex(host);
  std::optional<uint32_t> n = NicIndex(nic);
  if (!h.has_value() || !n.has_value()) return {};
  return RanksOnNic(*h, *n);
}

namespace {
template <typename KeyFn>
uint32_t CountDistinct(absl::Span<const uint32_t> members, KeyFn key) {
  std::vector<uint32_t> keys;
  keys.reserve(members.size());
  for (uint32_t r : members) keys.push_back(key(r));
  std::sort(keys.begin(), keys.end());
  return static_cast<uint32_t>(std::unique(keys.begin(), keys.end()) -
                               keys.begin());
}
}  // namespace

uint32_t LayoutModel::HostsSpanned(Dim dim, uint32_t index) const {
  return CountDistinct(Group(dim, index),
                       [this](uint32_t r) { return ranks_[r].host; });
}

uint32_t LayoutModel::DomainsSpanned(Dim dim, uint32_t index) const {
  return CountDistinct(Group(dim, index),
                       [this](uint32_t r) { return ranks_[r].domain; });
}

std::optional<ExpertRange> LayoutModel::ExpertsOf(uint32_t rank) const {
  if (!layout_.has_model() || !layout_.model().has_experts()) {
    return std::nullopt;
  }
  const uint64_t experts = layout_.model().experts();
  const uint64_t ep = layout_.parallelism().ep();
  const uint64_t k = RankIn(Dim::kEp, rank);
  return ExpertRange{static_cast<uint32_t>(k * experts / ep),
                     static_cast<uint32_t>((k + 1) * experts / ep)};
}

}  // namespace fabricdiag::analysis
