// What `fabricdiag plan FILE [--json]` prints: a layout's groups, the TP
// groups that leave their NVLink domain (with the time that costs), and the
// predicted bytes and time per training step of each parallel dimension
// (traffic_model.h). The report is plain data; RenderPlanText and
// RenderPlanJson turn it into the human and the machine form.
//
// Without a model section (or with fields missing), the report still holds
// groups and TP crossings, and lists each prediction it cannot make and why.
//
// Usage:
//   ASSIGN_OR_RETURN(LayoutModel layout, LayoutModel::Build(proto));
//   ASSIGN_OR_RETURN(PlanReport report, BuildPlanReport(layout, LinkParams{}));
//   std::cout << (json ? RenderPlanJson(report) : RenderPlanText(report));
//
// Sizes are bounded whatever the layout: at most kPlanGroupsShown groups per
// dimension, kPlanMembersShown members per group, kPlanCrossingsShown TP
// crossings and kPlanNicsShown NICs, each with the full count beside it.
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "analysis/layout_model.h"
#include "analysis/traffic_model.h"

namespace fabricdiag::analysis {

inline constexpr uint32_t kPlanGroupsShown = 3;
inline constexpr uint32_t kPlanMembersShown = 8;
inline constexpr uint32_t kPlanCrossingsShown = 20;
inline constexpr uint32_t kPlanNicsShown = 5;

struct PlanMember {
  uint32_t rank = 0;
  std::string host;
  uint32_t gpu = 0;
  std::string nic;  // empty when the layout names none
};

struct PlanGroup {
  std::string name;  // "tp:0"
  uint32_t size = 0;
  std::vector<PlanMember> members;  // the first kPlanMembersShown
};

struct PlanDimension {
  std::string dim;  // "tp", "cp", "pp", "dp", "dp-cp", "ep", "edp"
  uint32_t size = 0;
  uint32_t count = 0;
  std::vector<PlanGroup> groups;  // the first kPlanGroupsShown
};

struct PlanTpCrossing {
  std::string group;  // "tp:3"
  uint32_t domains = 0;
  std::vector<std::string> hosts;
  // Predicted time per step above what the group would take inside one
  // NVLink domain; nullopt when the TP traffic cannot be predicted.
  std::optional<double> extra_seconds_per_step;
};

// One dimension's prediction (see DimTraffic; bytes and seconds per step).
struct PlanTraffic {
  std::string dim;
  std::string collective;
  std::string description;
  bool available = false;
  std::string unavailable_reason;
  uint32_t groups = 0;
  uint32_t groups_crossing = 0;    // spanning > 1 NVLink domain
  uint32_t groups_multi_host = 0;  // spanning > 1 host
  double calls_per_step = 0;
  double bytes_per_call = 0;
  double bytes_per_rank = 0;
  double nvlink_bytes_per_rank = 0;
  double busiest_nic_bytes = 0;
  double seconds = 0;
  double seconds_if_nvlink = 0;
};

struct PlanNic {
  std::string host;
  std::string nic;
  double tx_bytes = 0;
  double rx_bytes = 0;
};

struct PlanReport {
  std::string job;
  uint32_t ranks = 0;
  uint32_t hosts = 0;
  uint32_t gpus_per_node = 0;
  uint32_t nvlink_domain = 0;
  uint32_t nvlink_domains = 0;
  uint32_t tp = 1, pp = 1, dp = 1, cp = 1, ep = 1;
  std::string order;
  LinkParams link;

  std::vector<PlanDimension> dimensions;
  uint32_t tp_groups = 0;
  uint32_t tp_groups_crossing = 0;
  std::vector<PlanTpCrossing> tp_crossings;  // the first kPlanCrossingsShown

  bool has_model = false;
  std::vector<PlanTraffic> traffic;
  // "ep: needs model.top_k", one line per prediction not made.
  std::vector<std::string> unavailable;
  // Sum of the available dimensions' times (nothing overlapped); nullopt
  // when no prediction is available.
  std::optional<double> serial_seconds;
  // The busiest NICs by max(tx, rx), at most kPlanNicsShown; empty without
  // predictions or NIC names.
  std::vector<PlanNic> busiest_nics;
  uint32_t nics = 0;  // NICs the layout uses
};

// InvalidArgument when `link` is invalid (ValidateLinkParams).
absl::StatusOr<PlanReport> BuildPlanReport(const LayoutModel& layout,
                                           const LinkParams& link);

// Human-readable, several sections, ends with a newline.
std::string RenderPlanText(const PlanReport& report);
// One pretty-printed JSON object (field names as in PlanReport; bytes and
// seconds as numbers), ends with a newline.
std::string RenderPlanJson(const PlanReport& report);

// "352.3 MB", "1.40 TB", "512 B" (decimal units, as link rates are quoted).
std::string FormatBytes(double bytes);
// "139.7 ms", "1.12 s", "12.0 us", "0 s".
std::string FormatSeconds(double seconds);

}  // namespace fabricdiag::analysis
