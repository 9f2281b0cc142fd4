#include "analysis/tp_cross_node.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <set>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "analysis/analyzer_util.h"
#include "analysis/plan_report.h"
#include "analysis/traffic_model.h"
#include "common/fnv1a.h"

namespace fabricdiag::analysis {

namespace {

// What the traffic model predicts TP costs per step, when the layout's model
// section allows a prediction: its time as declared and if it all stayed on
// NVLink. Null otherwise.
std::optional<DimTraffic> PredictTp(const LayoutModel& model) {
  absl::StatusOr<TrafficModel> traffic =
      TrafficModel::Predict(model, LinkParams{});
  if (!traffic.ok()) return std::nullopt;
  const DimTraffic* tp = traffic->Find(Dim::kTp);
  if (tp == nullptr || !tp->available) return std::nullopt;
  return *tp;
}

// The group's NICs as the view reports them.
TpGroupLoad MeasureGroup(const LayoutModel& model, uint32_t group,
                         const FabricView& view) {
  double tx = 0, rate = 0;
  int with_tx = 0, with_rate = 0;
  for (const NicRef& ref : model.GroupNics(Dim::kTp, group)) {
    if (ref.nic == kNoNic) continue;
    const PortView* port =
        view.Find(model.Hosts()[ref.host], model.Nics()[ref.nic]);
    if (port == nullptr) continue;
    if (std::isfinite(port->s.tx_bytes) && port->s.tx_bytes >= 0) {
      tx += port->s.tx_bytes;
      ++with_tx;
    }
    if (std::isfinite(port->s.link_rate) && port->s.link_rate > 0) {
      rate += port->s.link_rate;
      ++with_rate;
    }
  }
  TpGroupLoad load;
  load.group = group;
  load.members = TpGroupMembers(model, group);
  load.nics = with_tx;
  if (with_tx > 0) load.tx = tx / with_tx;
  if (with_rate > 0) load.link_rate = rate / with_rate;
  return load;
}

// The traffic model's price of the crossing, when it could predict TP.
std::string CostWords(const std::optional<DimTraffic>& tp, Finding* f) {
  if (!tp.has_value()) return "";
  const double extra = std::max(0.0, tp->seconds - tp->seconds_if_nvlink);
  f->evidence["predicted_tp_seconds_per_step"] = tp->seconds;
  f->evidence["predicted_tp_seconds_per_step_on_nvlink"] =
      tp->seconds_if_nvlink;
  f->evidence["predicted_extra_seconds_per_step"] = extra;
  f->evidence["predicted_nic_bytes_per_step"] = tp->nic_bytes;
  return absl::StrCat(
      " The traffic model predicts ", FormatSeconds(tp->seconds),
      " of TP communication per step instead of ",
      FormatSeconds(tp->seconds_if_nvlink), " on NVLink (+",
      FormatSeconds(extra), " per step), with ", FormatBytes(tp->nic_bytes),
      " per step through the busiest NIC.");
}

// What the group's NICs send now, and whether that confirms the crossing
// carries TP traffic; "" when it does not.
std::string RuntimeWords(const TpGroupLoad& load,
                         const std::optional<DimTraffic>& tp, Finding* f) {
  std::string runtime;
  if (load.nics > 0 && std::isfinite(load.tx)) {
    const double floor = Has(load.link_rate)
                             ? kConfirmLinkFraction * load.link_rate
                             : kConfirmBytesPerSecond;
    const bool confirmed = load.tx >= floor;
    f->evidence["measured_nic_tx_bytes_per_second"] = load.tx;
    f->evidence["confirmed_at_runtime"] = confirmed ? 1 : 0;
    if (confirmed) {
      runtime =
          absl::StrCat(" Confirmed at runtime: its ", load.nics, " NICs send ",
                       FormatBytesRate(load.tx), " on average");
      if (tp.has_value() && tp->nic_bytes > 0) {
        const double seconds = tp->nic_bytes / load.tx;
        f->evidence["measured_tp_seconds_per_step"] = seconds;
        absl::StrAppend(&runtime, ", at which the model's ",
                        FormatBytes(tp->nic_bytes),
                        " of TP traffic per "
                        "step take ",
                        FormatSeconds(seconds));
      }
      runtime += ".";
    }
  }
  return runtime;
}

}  // namespace

uint64_t TpGroupMembers(const LayoutModel& model, uint32_t group) {
  // "host\0nic\0" per rank ("host\1" for a rank without a NIC).
  std::string bytes;
  for (const NicRef& ref : model.GroupNics(Dim::kTp, group)) {
    if (ref.nic == kNoNic) {
      absl::StrAppend(&bytes, model.Hosts()[ref.host],
                      absl::string_view("\1", 1));
    } else {
      absl::StrAppend(&bytes, model.Hosts()[ref.host],
                      absl::string_view("\0", 1), model.Nics()[ref.nic],
                      absl::string_view("\0", 1));
    }
  }
  const uint64_t hash = Fmix64(Fnv1a64(bytes));
  return hash != 0 ? hash : 1;
}

std::vector<TpGroupLoad> MeasureTpCrossings(const LayoutModel& model,
                                            const FabricView& view) {
  std::vector<TpGroupLoad> out;
  for (uint32_t g : model.TpGroupsCrossingNvlink()) {
    TpGroupLoad load = MeasureGroup(model, g, view);
    if (load.nics > 0) out.push_back(load);
  }
  return out;
}

std::vector<Finding> TpCrossNodeFindings(const LayoutModel& model,
                                         const FabricView* view) {
  TpGroupLoad measured;
  return TpCrossNodeFindings(model, [&](uint32_t g) -> const TpGroupLoad* {
    if (view == nullptr) return nullptr;
    measured = MeasureGroup(model, g, *view);
    return &measured;
  });
}

std::vector<Finding> TpCrossNodeFindings(
    const LayoutModel& model,
    absl::FunctionRef<const TpGroupLoad*(uint32_t group)> load_of) {
  std::vector<Finding> out;
  const v1::Layout& layout = model.layout();
  const absl::Span<const uint32_t> crossing = model.TpGroupsCrossingNvlink();
  if (crossing.empty()) return out;
  const std::optional<DimTraffic> tp = PredictTp(model);
  for (uint32_t g : crossing) {
    Finding f;
    f.kind = kTpCrossNodeKind;
    f.severity = Severity::kWarning;
    f.job = layout.job();
    f.group = GroupName({Dim::kTp, g});
    std::set<std::string> seen;
    for (uint32_t rank : model.Group(Dim::kTp, g)) {
      const std::string& host = model.HostName(rank);
      if (seen.insert(host).second) f.nodes.push_back(host);
    }
    f.node = f.nodes.empty() ? "" : f.nodes.front();
    const uint32_t domains = model.DomainsSpanned(Dim::kTp, g);
    const uint32_t hosts = model.HostsSpanned(Dim::kTp, g);
    const uint32_t nvlink = layout.has_nvlink_domain() ? layout.nvlink_domain()
                                                       : layout.gpus_per_node();
    const std::string cost = CostWords(tp, &f);
    const TpGroupLoad* load = load_of(g);
    if (load != nullptr && load->members != TpGroupMembers(model, g)) {
      load = nullptr;  // measured under another version of the layout
    }
    const std::string runtime =
        load != nullptr ? RuntimeWords(*load, tp, &f) : "";
    f.summary = absl::StrCat(
        "TP group ", f.group, " of job ", f.job, " spans ", domains,
        " NVLink domains on ", hosts, hosts == 1 ? " node (" : " nodes (",
        absl::StrJoin(f.nodes, ", "),
        "): its per-layer all-reduces leave NVLink and cross the RDMA fabric.",
        cost, runtime, " Keep tp <= nvlink_domain (", nvlink,
        ") or place each TP group inside one NVLink domain.");
    f.evidence["tp"] = layout.parallelism().tp();
    f.evidence["nvlink_domains_spanned"] = domains;
    f.evidence["hosts_spanned"] = hosts;
    f.evidence["nvlink_domain_size"] = nvlink;
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace fabricdiag::analysis
