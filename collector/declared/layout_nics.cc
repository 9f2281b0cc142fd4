#include "collector/declared/layout_nics.h"

#include <utility>

#include "common/names.h"

namespace fabricdiag::collector {
namespace {

// The pairings of one host by local GPU index (null: none), gpus_per_node
// entries; empty when the host reported no GPUs.
std::vector<const v1::GpuNic*> PairingsOf(const NodeFactsMap& facts,
                                          const std::string& host,
                                          uint32_t gpus_per_node) {
  std::vector<const v1::GpuNic*> by_gpu;
  auto it = facts.find(host);
  if (it == facts.end() || !it->second->gpus_read()) return by_gpu;
  by_gpu.assign(gpus_per_node, nullptr);
  for (const v1::GpuNic& pair : it->second->gpu_nics()) {
    if (pair.gpu() < gpus_per_node && IsValidDeviceName(pair.device())) {
      by_gpu[pair.gpu()] = &pair;
    }
  }
  return by_gpu;
}

}  // namespace

absl::string_view NicSourceName(NicSource source) {
  switch (source) {
    case NicSource::kRank:
      return "rank";
    case NicSource::kRails:
      return "rails";
    case NicSource::kAgent:
      return "agent";
    case NicSource::kUnknown:
      break;
  }
  return "unknown";
}

std::vector<RankNic> ResolveRankNics(const analysis::LayoutModel& model,
                                     const NodeFactsMap& facts) {
  const v1::Layout& layout = model.layout();
  std::vector<RankNic> nics(model.WorldSize());
  // Ranks whose placement names its own NIC; the model knows only the NIC.
  std::vector<bool> own_nic(model.WorldSize(), false);
  for (const v1::RankPlacement& p : layout.ranks()) {
    if (!p.nic().empty()) own_nic[p.rank()] = true;
  }
  // Looked up once per host, not per rank.
  std::vector<std::optional<std::vector<const v1::GpuNic*>>> pairings(
      model.Hosts().size());
  for (uint32_t r = 0; r < model.WorldSize(); ++r) {
    const analysis::RankInfo& info = model.Rank(r);
    RankNic& out = nics[r];
    if (info.nic != analysis::kNoNic) {
      out.nic = std::string(model.NicName(r));
      out.source = own_nic[r] ? NicSource::kRank : NicSource::kRails;
      continue;
    }
    std::optional<std::vector<const v1::GpuNic*>>& host = pairings[info.host];
    if (!host.has_value()) {
      host = PairingsOf(facts, model.Hosts()[info.host], model.GpusPerNode());
    }
    if (info.gpu >= host->size() || (*host)[info.gpu] == nullptr) continue;
    const v1::GpuNic& pair = *(*host)[info.gpu];
    out.nic = pair.device();
    out.source = NicSource::kAgent;
    out.distance = pair.distance();
  }
  return nics;
}

NicSourceCounts CountNicSources(const std::vector<RankNic>& nics) {
  NicSourceCounts counts;
  for (const RankNic& n : nics) {
    switch (n.source) {
      case NicSource::kRank:
        ++counts.rank;
        break;
      case NicSource::kRails:
        ++counts.rails;
        break;
      case NicSource::kAgent:
        ++counts.agent;
        break;
      case NicSource::kUnknown:
        ++counts.unknown;
        break;
    }
  }
  return counts;
}

absl::StatusOr<std::optional<analysis::LayoutModel>> FilledModel(
    const analysis::LayoutModel& declared, const std::vector<RankNic>& nics) {
  if (CountNicSources(nics).agent == 0) return std::nullopt;
  // Explicit ranks keep the host order of the declared layout: its `hosts`
  // list is kept when it has one, and without one hosts come in the order
  // of their first rank either way. Rails stay for the ranks they placed.
  v1::Layout layout = declared.layout();
  layout.clear_ranks();
  for (uint32_t r = 0; r < declared.WorldSize(); ++r) {
    v1::RankPlacement* p = layout.add_ranks();
    p->set_rank(r);
    p->set_host(declared.HostName(r));
    p->set_gpu(declared.Rank(r).gpu);
    p->set_nic(nics[r].nic);
  }
  absl::StatusOr<analysis::LayoutModel> model =
      analysis::LayoutModel::Build(layout);
  if (!model.ok()) return model.status();
  return std::optional<analysis::LayoutModel>(*std::move(model));
}

v1::Layout ResolvedLayout(const v1::Layout& applied,
                          const analysis::LayoutModel& model,
                          const std::vector<RankNic>& nics) {
  v1::Layout out = applied;
  out.clear_ranks();
  out.mutable_ranks()->Reserve(static_cast<int>(model.WorldSize()));
  for (uint32_t r = 0; r < model.WorldSize(); ++r) {
    v1::RankPlacement* p = out.add_ranks();
    p->set_rank(r);
    p->set_host(model.HostName(r));
    p->set_gpu(model.Rank(r).gpu);
    p->set_nic(nics[r].nic);
    p->set_nic_source(std::string(NicSourceName(nics[r].source)));
    p->set_nic_distance(nics[r].distance);
  }
  return out;
}

}  // namespace fabricdiag::collector
