// The NIC each rank of a layout uses, and where it comes from: the rank's
// own `nic`, the layout's `rails`, else the NIC the host's agent pairs with
// the rank's local GPU (v1::NodeFacts.gpu_nics), else unknown
// (docs/layout-format.md, "Where a rank's NIC comes from").
//
// The layout as declared is never changed: the fill is computed over it
// and the nodes' facts when they are read (filled_layouts.h caches it for
// the analysis passes; GetLayout's resolved answer computes it on demand).
//
//   std::vector<RankNic> nics = ResolveRankNics(entry->model, *facts);
//   ASSIGN_OR_RETURN(std::optional<analysis::LayoutModel> filled,
//                    FilledModel(entry->model, nics));
//   v1::Layout shown = ResolvedLayout(entry->applied_layout, entry->model,
//                                     nics);
//
// Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "analysis/layout_model.h"
#include "collector/declared/node_facts.h"
#include "proto/layout.pb.h"

namespace fabricdiag::collector {

enum class NicSource : uint8_t {
  kUnknown = 0,
  kRank,   // the rank's own `nic` in `ranks`
  kRails,  // rails[gpu]
  kAgent,  // paired with the GPU by the host's agent
};

// "unknown", "rank", "rails", "agent" (RankPlacement.nic_source).
absl::string_view NicSourceName(NicSource source);

struct RankNic {
  std::string nic;  // "" when unknown
  NicSource source = NicSource::kUnknown;
  // kAgent: the PCIe distance of the pairing ("pcie_switch", "root_port",
  // "numa"); empty otherwise.
  std::string distance;
};

// Every rank's NIC (index: rank). A pairing fills only a rank the layout
// names no NIC for, from a node that read its GPUs and paired the rank's
// local GPU index with a device (a GPU with no NIC near has device "" and
// fills nothing; a device name that is not one is ignored). O(ranks).
std::vector<RankNic> ResolveRankNics(const analysis::LayoutModel& model,
                                     const NodeFactsMap& facts);

// How many ranks have each source.
struct NicSourceCounts {
  size_t rank = 0;
  size_t rails = 0;
  size_t agent = 0;
  size_t unknown = 0;
};
NicSourceCounts CountNicSources(const std::vector<RankNic>& nics);

// The model with the agent-paired NICs of `nics` filled in, built from the
// declared layout with every rank placed explicitly (same hosts in the same
// order, so the same groups and NVLink domains); nullopt when `nics` fills
// nothing (use `declared` itself). `nics` comes from ResolveRankNics over
// `declared`.
absl::StatusOr<std::optional<analysis::LayoutModel>> FilledModel(
    const analysis::LayoutModel& declared, const std::vector<RankNic>& nics);

// What GetLayout answers when asked for the resolved layout: `applied` with
// `ranks` listing every rank in rank order, each with the NIC of `nics` and
// its source (RankPlacement.nic_source, nic_distance). `model` is the one
// built from `applied`.
v1::Layout ResolvedLayout(const v1::Layout& applied,
                          const analysis::LayoutModel& model,
                          const std::vector<RankNic>& nics);

}  // namespace fabricdiag::collector
