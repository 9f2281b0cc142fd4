// tp_cross_node: tensor-parallel groups whose ranks span more than one
// NVLink domain.
//
// Megatron-style TP runs two all-reduces per transformer layer forward and
// two backward; inside an NVLink domain they take microseconds, across the
// RDMA fabric they take one to two orders of magnitude longer and put the
// heaviest traffic of the job on the NICs. The condition is a property of
// the declared layout, so it is raised as soon as the layout is applied.
//
//   for (const Finding& f : TpCrossNodeFindings(model)) { ... }
//
// Pure: same layout, same findings.
#pragma once

#include <vector>

#include "analysis/finding.h"
#include "analysis/layout_model.h"

namespace fabricdiag::analysis {

inline constexpr char kTpCrossNodeKind[] = "tp_cross_node";

// One finding per TP group that leaves its NVLink domain.
std::vector<Finding> TpCrossNodeFindings(const LayoutModel& model);

}  // namespace fabricdiag::analysis
