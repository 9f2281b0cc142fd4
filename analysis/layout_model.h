// The validated parallelism layout of one job: rank -> host, GPU, NIC,
// NVLink domain and parallel groups, and the reverse lookups the analyzers
// need (host or NIC -> ranks, group -> ranks -> NICs).
//
// Groups follow Megatron-LM's RankGenerator (see rank_generator.h):
// - dense groups tp, cp, dp, pp and dp-cp (the gradient all-reduce group when
//   cp > 1) come from the order string with ep = 1;
// - expert groups ep and edp (expert data parallel) come from the same order
//   with cp folded away (cp = 1) and edp = dp * cp / ep.
// Group k of dimension d is named "d:k" ("tp:5", "ep:3", "edp:0", "dp-cp:1"),
// k being its position in Megatron-LM's list, so names match the job's own.
//
// NVLink domains: nvlink_domain (default gpus_per_node) must divide
// gpus_per_node or be a multiple of it.
// - nvlink_domain <= gpus_per_node: a host holds gpus_per_node/nvlink_domain
//   domains; local GPU g is in the host's domain g / nvlink_domain.
// - nvlink_domain > gpus_per_node (NVL72: 18 trays of 4 GPUs): consecutive
//   hosts in the hosts list form one domain, nvlink_domain/gpus_per_node hosts
//   each; so list hosts rack by rack. A trailing partial rack is its own
//   domain.
// With explicit `ranks`, host order is the `hosts` list when given, otherwise
// the order in which hosts first appear by increasing rank.
//
// Usage:
//   ASSIGN_OR_RETURN(v1::Layout layout, ParseLayout(text));
//   ASSIGN_OR_RETURN(LayoutModel model, LayoutModel::Build(layout));
//   for (uint32_t g : model.TpGroupsCrossingNvlink()) {
//     std::string name = GroupName({Dim::kTp, g});   // "tp:5"
//     for (uint32_t r : model.Group(Dim::kTp, g)) ... model.HostName(r) ...
//   }
//
// Build() is O(ranks x dimensions); memory is about 100 bytes per rank, so a
// 100,000-rank job takes ~10 MB. A built model is immutable: thread-safe for
// concurrent readers.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "analysis/rank_generator.h"
#include "proto/layout.pb.h"

namespace fabricdiag::analysis {

// Parallel dimensions whose groups the model computes.
enum class Dim : uint8_t {
  kTp = 0,
  kCp,
  kDp,
  kPp,
  kDpCp,  // dense data parallel including cp: gradients are reduced here
  kEp,
  kEdp,  // expert data parallel: the dp*cp/ep replicas of each expert shard
};
inline constexpr int kNumDims = 7;
inline constexpr Dim kAllDims[kNumDims] = {
    Dim::kTp, Dim::kCp, Dim::kDp, Dim::kPp, Dim::kDpCp, Dim::kEp, Dim::kEdp};

// "tp", "cp", "dp", "pp", "dp-cp", "ep", "edp".
absl::string_view DimName(Dim dim);
std::optional<Dim> DimFromName(absl::string_view name);

struct GroupId {
  Dim dim;
  uint32_t index;
  friend bool operator==(const GroupId& a, const GroupId& b) {
    return a.dim == b.dim && a.index == b.index;
  }
};

// "tp:5".
std::string GroupName(GroupId id);
// Inverse of GroupName; InvalidArgument on anything else. Does not check the
// index against a model (use LayoutModel::NumGroups).
absl::StatusOr<GroupId> ParseGroupName(absl::string_view name);

// Limits that keep a hostile or mistaken layout from exhausting memory or
// the collector's time: a 256k-GPU job (above today's largest, 200k GPUs on
// 25,000 hosts) builds in well under a second.
inline constexpr uint32_t kMaxRanks = 262144;
inline constexpr uint32_t kMaxHosts = 32768;
inline constexpr uint32_t kMaxGpusPerNode = 1024;

// Marks "no NIC known" in RankInfo::nic (no rails, no nic in `ranks`).
inline constexpr uint32_t kNoNic = UINT32_MAX;

// Where one rank runs. Indices refer to LayoutModel::Hosts() / Nics().
struct RankInfo {
  uint32_t host = 0;
  uint32_t gpu = 0;
  uint32_t nic = kNoNic;
  uint32_t domain = 0;  // NVLink domain id, dense from 0
};

// One NIC of one host, as indices into Hosts() / Nics().
struct NicRef {
  uint32_t host = 0;
  uint32_t nic = kNoNic;
  friend bool operator==(const NicRef& a, const NicRef& b) {
    return a.host == b.host && a.nic == b.nic;
  }
};

// Experts [begin, end) of one MoE layer that an EP rank holds.
struct ExpertRange {
  uint32_t begin = 0;
  uint32_t end = 0;
};

class LayoutModel {
 public:
  // Validates `layout` completely and computes everything. InvalidArgument
  // with a message that starts with the offending field ("parallelism.ep: 3
  // does not divide dp*cp = 8", "ranks[7].gpu: ...").
  static absl::StatusOr<LayoutModel> Build(const v1::Layout& layout);

  // The layout with defaults filled in (cp, ep, order, nvlink_domain).
  const v1::Layout& layout() const { return layout_; }
  const std::string& job() const { return layout_.job(); }
  uint32_t WorldSize() const { return world_size_; }
  uint32_t GpusPerNode() const { return layout_.gpus_per_node(); }
  uint32_t NvlinkDomainSize() const { return layout_.nvlink_domain(); }
  uint32_t NumNvlinkDomains() const { return num_domains_; }

  // Group size of `dim` (its degree: tp, cp, dp, pp, dp*cp, ep, dp*cp/ep).
  uint32_t Degree(Dim dim) const { return groups(dim).group_size; }
  uint32_t NumGroups(Dim dim) const { return groups(dim).num_groups; }
  // Member ranks of group `index` (< NumGroups(dim)), in Megatron-LM order:
  // the i-th member has rank i inside the group.
  absl::Span<const uint32_t> Group(Dim dim, uint32_t index) const {
    return groups(dim).group(index);
  }
  // Index of the `dim` group holding `rank` (< WorldSize()).
  uint32_t GroupOf(Dim dim, uint32_t rank) const {
    return group_of_[Idx(dim)][rank];
  }
  // Position of `rank` inside that group: tp_rank, pp_rank, dp_rank, ...
  uint32_t RankIn(Dim dim, uint32_t rank) const {
    return rank_in_[Idx(dim)][rank];
  }

  const RankInfo& Rank(uint32_t rank) const { return ranks_[rank]; }
  absl::Span<const std::string> Hosts() const { return hosts_; }
  // Distinct NIC names (a NIC name is per host: mlx5_0 exists on every host).
  absl::Span<const std::string> Nics() const { return nics_; }
  const std::string& HostName(uint32_t rank) const {
    return hosts_[ranks_[rank].host];
  }
  // Empty when the layout names no NIC for this rank.
  absl::string_view NicName(uint32_t rank) const;

  std::optional<uint32_t> HostIndex(absl::string_view host) const;
  std::optional<uint32_t> NicIndex(absl::string_view nic) const;
  // Ranks on a host, ascending. Empty for an unknown index.
  absl::Span<const uint32_t> RanksOnHost(uint32_t host) const;
  // Ranks using NIC `nic` of host `host`, ascending; empty when none.
  absl::Span<const uint32_t> RanksOnNic(uint32_t host, uint32_t nic) const;
  absl::Span<const uint32_t> RanksOnNic(absl::string_view host,
                                        absl::string_view nic) const;
  // The (host, NIC) pairs that ranks run on, numbered 0..HostNicCount() by
  // host, then NIC ascending: host h's are [HostNicsBegin(h),
  // HostNicsBegin(h + 1)), and pair i is on NIC HostNicAt(i). A table kept
  // per pair (analysis/nic_ports.h) is indexed by these numbers.
  uint32_t HostNicCount() const {
    return static_cast<uint32_t>(nic_ranges_.size());
  }
  uint32_t HostNicsBegin(uint32_t host) const {
    return nic_range_offsets_[host];
  }
  uint32_t HostNicAt(uint32_t i) const { return nic_ranges_[i].nic; }

  // Distinct (host, NIC) pairs of a group's members, in member order.
  // Computed once by Build: analysis passes ask for every group every pass.
  absl::Span<const NicRef> GroupNics(Dim dim, uint32_t index) const {
    const std::vector<uint32_t>& offsets = group_nic_offsets_[Idx(dim)];
    return absl::MakeConstSpan(group_nics_[Idx(dim)])
        .subspan(offsets[index], offsets[index + 1] - offsets[index]);
  }
  // Number of distinct hosts / NVLink domains a group spans.
  uint32_t HostsSpanned(Dim dim, uint32_t index) const;
  uint32_t DomainsSpanned(Dim dim, uint32_t index) const;
  // TP groups spanning more than one NVLink domain, ascending.
  absl::Span<const uint32_t> TpGroupsCrossingNvlink() const {
    return tp_crossing_;
  }

  // Experts of one MoE layer held by `rank` ([k*E/ep, (k+1)*E/ep) for EP
  // rank k); nullopt when the layout gives no model.experts.
  std::optional<ExpertRange> ExpertsOf(uint32_t rank) const;

 private:
  LayoutModel() = default;
  static size_t Idx(Dim dim) { return static_cast<size_t>(dim); }
  const RankGroups& groups(Dim dim) const { return groups_[Idx(dim)]; }
  // Fills ranks_, hosts_, nics_ and the NVLink domains from `layout`.
  absl::Status Place(const v1::Layout& layout);
  // The pieces of Place, in the order it runs them.
  absl::Status AddHosts(const v1::Layout& layout);
  // The NIC of each GPU index from `rails`; empty when none are given.
  absl::StatusOr<std::vector<uint32_t>> InternRails(const v1::Layout& layout);
  // Without a ranks list: rank r on host r / gpus_per_node.
  absl::Status PlaceInHostOrder(const v1::Layout& layout,
                                const std::vector<uint32_t>& rail_nics);
  absl::Status PlaceListedRanks(const v1::Layout& layout,
                                const std::vector<uint32_t>& rail_nics);
  // For each rank, the index in layout.ranks that places it.
  absl::StatusOr<std::vector<uint32_t>> IndexPlacements(
      const v1::Layout& layout) const;
  // The host index of a listed placement's (valid) host name, added to
  // hosts_ when no hosts list was given; `field` names it in errors.
  absl::StatusOr<uint32_t> PlacementHost(const std::string& host,
                                         const std::string& field,
                                         bool hosts_given);
  // The NIC of a listed placement: its own, else its GPU's rail, else none.
  absl::StatusOr<uint32_t> PlacementNic(const v1::RankPlacement& p,
                                        const std::string& field,
                                        const std::vector<uint32_t>& rail_nics);
  void AssignNvlinkDomains(const v1::Layout& layout);
  absl::Status ComputeGroups(const std::vector<std::string>& order);
  void ComputeIndexes();

  v1::Layout layout_;
  uint32_t world_size_ = 0;
  uint32_t num_domains_ = 0;
  std::vector<RankInfo> ranks_;
  std::vector<std::string> hosts_;
  std::vector<std::string> nics_;
  absl::flat_hash_map<std::string, uint32_t> host_index_;
  absl::flat_hash_map<std::string, uint32_t> nic_index_;
  // CSR: ranks of host h are host_ranks_[host_offsets_[h], [h + 1]).
  std::vector<uint32_t> host_offsets_;
  std::vector<uint32_t> host_ranks_;
  // Ranks with a NIC, by (host, nic).
  std::vector<uint32_t> nic_ranks_;
  // A host's NIC that ranks run on: its ranks are nic_ranks_[begin, end).
  struct NicRange {
    uint32_t nic;
    uint32_t begin;
    uint32_t end;
  };
  // CSR: host h's NICs, ascending, are
  // nic_ranges_[nic_range_offsets_[h], [h + 1]). An analyzer asks about
  // every port of a view: a host's few NICs sit in one cache line, where a
  // hash of every (host, nic) cost a miss or two each.
  std::vector<uint32_t> nic_range_offsets_;
  std::vector<NicRange> nic_ranges_;
  RankGroups groups_[kNumDims];
  std::vector<uint32_t> group_of_[kNumDims];
  std::vector<uint32_t> rank_in_[kNumDims];
  std::vector<uint32_t> tp_crossing_;
  // CSR per dim: the NICs of group g are group_nics_[d][offsets[g], [g+1]).
  std::vector<uint32_t> group_nic_offsets_[kNumDims];
  std::vector<NicRef> group_nics_[kNumDims];
};

}  // namespace fabricdiag::analysis
