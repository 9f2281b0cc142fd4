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
// Pure: same layout, same findings.
#pragma once

#include <vector>

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

// One finding per TP group that leaves its NVLink domain. `view` (may be
// null) holds the latest window of rates.
std::vector<Finding> TpCrossNodeFindings(const LayoutModel& model,
                                         const FabricView* view = nullptr);

}  // namespace fabricdiag::analysis
