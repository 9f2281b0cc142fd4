#include "counters/reference.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "counters/counter_table.h"

namespace fabricdiag::counters {
namespace {

const char* FamilyTitle(Family f) {
  switch (f) {
    case Family::kIbPma:
      return "IB PMA port counters: `class/infiniband/DEV/ports/N/counters/`";
    case Family::kIbPmaExt:
      return "IB PMA extended counters of kernels before 4.5: "
             "`class/infiniband/DEV/ports/N/counters_ext/`";
    case Family::kRdmaHw:
      return "RDMA driver counters: `class/infiniband/DEV/hw_counters/` and "
             "`class/infiniband/DEV/ports/N/hw_counters/`";
    case Family::kNetdevStatistics:
      return "Netdev statistics: `class/net/IF/statistics/`";
    case Family::kNetdevAttribute:
      return "Netdev counter attributes: `class/net/IF/`";
    case Family::kEthtool:
      return "ethtool statistics (`ethtool -S IF`, ETHTOOL_GSTATS)";
    case Family::kGnmiOpenConfig:
      return "gNMI, OpenConfig paths of a switch port (and vendor PFC "
             "augments)";
    case Family::kGnmiSonic:
      return "gNMI, SONiC `COUNTERS_DB` SAI statistics of a switch port";
  }
  return "";
}

std::string Width(const CounterSpec& row) {
  return row.width_bits == kPmaWidth ? "32/64" : absl::StrCat(row.width_bits);
}

std::string Scale(const CounterSpec& row) {
  if (row.scale == 1) return "";
  if (row.scale < 1) return absl::StrFormat("/ %.0f", 1 / row.scale);
  return absl::StrFormat("x %g", row.scale);
}

}  // namespace

std::string RenderCounterReference() {
  std::string out;
  for (Family family : kAllFamilies) {
    absl::StrAppend(&out, "### ", FamilyTitle(family), "\n\n",
                    "| name | driver | meaning | dir | unit | scale | bits | "
                    "what it counts |\n",
                    "|---|---|---|---|---|---|---|---|\n");
    for (const CounterSpec& row : Rows()) {
      if (row.family != family) continue;
      absl::StrAppend(
          &out, "| `", row.name, "` | ", DriverName(row.driver), " | ",
          row.meaning == Meaning::kNone
              ? std::string()
              : absl::StrCat("`", MeaningName(row.meaning), "`"),
          " | ", DirectionName(row.direction), " | ", row.unit, " | ",
          Scale(row), " | ", Width(row),
          row.kind == Kind::kGauge ? " (gauge)" : "", " | ", row.doc, " |\n");
    }
    absl::StrAppend(&out, "\n");
  }
  return out;
}

}  // namespace fabricdiag::counters
