// The declared layouts as Prometheus series, rendered once when a layout is
// applied (or loaded), never per scrape: a scrape only concatenates text.
//
// fabricdiag_layout_group_member{job,group,node,device} = 1 lets dashboards
// join the agents' per-NIC rates with parallel groups. It has one series per
// (group, NIC) for tp, cp, pp, dp and ep groups of more than one rank: about
// 4 per GPU, so a 2,048-GPU job gives ~8k series but a 200k-GPU one ~800k
// (80 MB of text per scrape). A layout whose series would exceed
// kMaxGroupMemberSeries exports none of them (Prometheus would choke long
// before the collector does); fabricdiag_layout_group_member_series{job}
// says how many each layout exports, 0 for the omitted ones, and the job's
// groups stay available from the CLI and the collector's API.
//
//   LayoutSeries s = RenderLayoutSeries(model);          // at apply
//   AppendLayoutMetrics(*registry.Snapshot(), &page);    // per scrape
//
// Thread-compatible; the rendering is pure.
#pragma once

#include <cstddef>
#include <string>

#include "analysis/layout_model.h"

namespace fabricdiag::collector {

struct RegistrySnapshot;

// A 8,192-GPU job with 4 parallel dimensions fits.
inline constexpr size_t kMaxGroupMemberSeries = 32768;

struct LayoutSeries {
  std::string group_member_lines;  // complete sample lines, '\n'-terminated
  size_t group_member_series = 0;  // lines in group_member_lines
  size_t omitted_series = 0;       // over the cap: not rendered
};

LayoutSeries RenderLayoutSeries(const analysis::LayoutModel& model,
                                size_t max_series = kMaxGroupMemberSeries);

// HELP, TYPE and samples of fabricdiag_layout_group_member and
// fabricdiag_layout_group_member_series for every layout of `snapshot`.
void AppendLayoutMetrics(const RegistrySnapshot& snapshot, std::string* out);

}  // namespace fabricdiag::collector
