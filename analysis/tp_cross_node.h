// tp_cross_node: tensor-parallel groups whose ranks span more than one
// NVLink domain.
//
// Megatron-style TP runs two all-reduces per transformer layer forward and
// two backward; inside an NVLink domain they take microseconds, across the
// RDMA fabric they take one to two orders of magnitude longer and put the
// heaviest traffic of the job on the NICs. The condition is a property of
// the declared layout, so it is raised as soon as the layout is applied.
// With the model section, the finding carries the traffic model's cost; with
// a view of the fabric's rates, it is confirmed at runtime when the group's
// NICs carry real traffic (on average >= kConfirmLinkFraction of their
// links), and says how long the predicted TP bytes take at that rate.
//
//   for (const Finding& f : TpCrossNodeFindings(model, &view)) { ... }
//
// In a sharded collector cluster no collector holds the whole fabric's
// rates: the owner of the job's shard measures the crossing groups
// (MeasureTpCrossings) and tells the others, and whoever raises the
// finding confirms it with those measurements:
//
//   std::vector<TpGroupLoad> loads = MeasureTpCrossings(model, shard_view);
//   ... travels ...
//   TpCrossNodeFindings(model, [&](uint32_t g) { return LoadOf(g); });
//
// Pure: same layout, same findings.
#pragma once

#include <cstdint>
#include <vector>

#include "absl/functional/function_ref.h"
#include "analysis/fabric_view.h"
#include "analysis/finding.h"
#include "analysis/layout_model.h"

namespace fabricdiag::analysis {

inline constexpr char kTpCrossNodeKind[] = "tp_cross_node";

// The group's NICs must send at least this share of their link rate (on
// average; or kConfirmBytesPerSecond when link rates are unknown) for the
// crossing to count as confirmed: a job that is not running, or is between
// steps for the whole window, confirms nothing.
inline constexpr double kConfirmLinkFraction = 0.1;
inline constexpr double kConfirmBytesPerSecond = 1.25e9;

// What a TP group's NICs send: their mean transmit rate and their links'
// mean rate (kAbsent when none reports it), over the `nics` that report a
// transmit rate.
struct TpGroupLoad {
  uint32_t group = 0;  // the group's index in the layout's TP dimension
  double tx = kAbsent;
  double link_rate = kAbsent;
  int nics = 0;
  // TpGroupMembers() of the group measured: a load measured under another
  // version of the layout (a group of the same index on other NICs)
  // confirms nothing. 0: unknown, confirms nothing either.
  uint64_t members = 0;
};

// A hash of the group's NICs, (host, NIC) names in rank order, the same in
// every process (FNV-1a, mixed); never 0.
uint64_t TpGroupMembers(const LayoutModel& model, uint32_t group);

// Each TP group of `model` that leaves its NVLink domain and of whose NICs
// `view` reports at least one, in group order.
std::vector<TpGroupLoad> MeasureTpCrossings(const LayoutModel& model,
                                            const FabricView& view);

// One finding per TP group that leaves its NVLink domain. `view` (may be
// null) holds the latest window of rates.
std::vector<Finding> TpCrossNodeFindings(const LayoutModel& model,
                                         const FabricView* view = nullptr);
// The same, each group confirmed (or not) by the load `load_of` gives of it
// (measured elsewhere); null, or measured over other members: not
// measured, no runtime words.
std::vector<Finding> TpCrossNodeFindings(
    const LayoutModel& model,
    absl::FunctionRef<const TpGroupLoad*(uint32_t group)> load_of);

}  // namespace fabricdiag::analysis
