#include "collector/declared/layout_metrics.h"

#include "absl/strings/str_cat.h"
#include "collector/declared/layout_registry.h"
#include "common/prom_text.h"

namespace fabricdiag::collector {
namespace {

using analysis::Dim;

constexpr Dim kExportedDims[] = {Dim::kTp, Dim::kCp, Dim::kPp, Dim::kDp,
                                 Dim::kEp};

size_t CountSeries(const analysis::LayoutModel& model) {
  size_t n = 0;
  for (Dim dim : kExportedDims) {
    if (model.Degree(dim) <= 1) continue;
    for (uint32_t g = 0; g < model.NumGroups(dim); ++g) {
      for (const analysis::NicRef& ref : model.GroupNics(dim, g)) {
        if (ref.nic != analysis::kNoNic) ++n;
      }
    }
  }
  return n;
}

}  // namespace

LayoutSeries RenderLayoutSeries(const analysis::LayoutModel& model,
                                size_t max_series) {
  LayoutSeries out;
  const size_t series = CountSeries(model);
  if (series > max_series) {
    out.omitted_series = series;
    return out;
  }
  PromWriter w(&out.group_member_lines);
  w.SamplesOf("fabricdiag_layout_group_member");  // header: per scrape
  for (Dim dim : kExportedDims) {
    if (model.Degree(dim) <= 1) continue;
    for (uint32_t g = 0; g < model.NumGroups(dim); ++g) {
      const std::string group = analysis::GroupName({dim, g});
      for (const analysis::NicRef& ref : model.GroupNics(dim, g)) {
        if (ref.nic == analysis::kNoNic) continue;
        w.Sample({{"job", model.job()},
                  {"group", group},
                  {"node", model.Hosts()[ref.host]},
                  {"device", model.Nics()[ref.nic]}},
                 1);
        ++out.group_member_series;
      }
    }
  }
  return out;
}

void AppendLayoutMetrics(const RegistrySnapshot& snapshot, std::string* out) {
  PromWriter w(out);
  w.Family("fabricdiag_layout_group_member",
           "1 for each NIC a parallel group of a declared job uses (job and "
           "group as in findings; node and device as the layout names them, "
           "or as the node's agent pairs the GPU).",
           PromType::kGauge);
  for (const auto& [job, entry] : snapshot.layouts) {
    out->append(entry->series.group_member_lines);
  }
  w.Family("fabricdiag_layout_group_member_series",
           absl::StrCat("fabricdiag_layout_group_member series the job "
                        "exports; 0 when its layout has more than ",
                        kMaxGroupMemberSeries, " (then none are exported)."),
           PromType::kGauge);
  for (const auto& [job, entry] : snapshot.layouts) {
    w.Sample({{"job", job}},
             static_cast<double>(entry->series.group_member_series));
  }
}

}  // namespace fabricdiag::collector
