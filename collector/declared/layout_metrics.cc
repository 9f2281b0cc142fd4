#include "collector/declared/layout_metrics.h"

#include "absl/strings/str_cat.h"
#include "collector/declared/layout_registry.h"

namespace fabricdiag::collector {
namespace {

using analysis::Dim;

constexpr Dim kExportedDims[] = {Dim::kTp, Dim::kCp, Dim::kPp, Dim::kDp,
                                 Dim::kEp};

// A label value in the text format: backslash, quote and newline escaped.
// Names are validated ([A-Za-z0-9._/-]), so this rarely does anything.
void AppendLabelValue(absl::string_view value, std::string* out) {
  for (char c : value) {
    switch (c) {
      case '\\':
        out->append("\\\\");
        break;
      case '"':
        out->append("\\\"");
        break;
      case '\n':
        out->append("\\n");
        break;
      default:
        out->push_back(c);
    }
  }
}

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
  std::string job;
  AppendLabelValue(model.job(), &job);
  for (Dim dim : kExportedDims) {
    if (model.Degree(dim) <= 1) continue;
    for (uint32_t g = 0; g < model.NumGroups(dim); ++g) {
      const std::string group = analysis::GroupName({dim, g});
      for (const analysis::NicRef& ref : model.GroupNics(dim, g)) {
        if (ref.nic == analysis::kNoNic) continue;
        std::string& s = out.group_member_lines;
        absl::StrAppend(&s, "fabricdiag_layout_group_member{job=\"", job,
                        "\",group=\"", group, "\",node=\"");
        AppendLabelValue(model.Hosts()[ref.host], &s);
        s.append("\",device=\"");
        AppendLabelValue(model.Nics()[ref.nic], &s);
        s.append("\"} 1\n");
        ++out.group_member_series;
      }
    }
  }
  return out;
}

void AppendLayoutMetrics(const RegistrySnapshot& snapshot, std::string* out) {
  absl::StrAppend(
      out,
      "# HELP fabricdiag_layout_group_member 1 for each NIC a parallel group "
      "of a declared job uses (job and group as in findings; node and device "
      "as the layout names them).\n"
      "# TYPE fabricdiag_layout_group_member gauge\n");
  for (const auto& [job, entry] : snapshot.layouts) {
    out->append(entry->series.group_member_lines);
  }
  absl::StrAppend(
      out,
      "# HELP fabricdiag_layout_group_member_series "
      "fabricdiag_layout_group_member series the job exports; 0 when its "
      "layout has more than ",
      kMaxGroupMemberSeries, " (then none are exported).\n",
      "# TYPE fabricdiag_layout_group_member_series gauge\n");
  for (const auto& [job, entry] : snapshot.layouts) {
    out->append("fabricdiag_layout_group_member_series{job=\"");
    AppendLabelValue(job, out);
    absl::StrAppend(out, "\"} ", entry->series.group_member_series, "\n");
  }
}

}  // namespace fabricdiag::collector
