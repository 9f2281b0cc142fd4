#include "analysis/ecmp_imbalance.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "analysis/analyzer_util.h"
#include "analysis/nic_ports.h"

namespace fabricdiag::analysis {
namespace {

struct Uplink {
  const PortView* port = nullptr;
  double tx = 0;  // bytes/s
};

// The uplinks of `sw` that the view reports TX bytes for, in topology order.
std::vector<Uplink> ReportingUplinks(const FabricView& view,
                                     const v1::Switch& sw) {
  std::vector<Uplink> out;
  std::set<const PortView*> seen;
  for (const std::string& name : sw.uplinks()) {
    const PortView* port = view.Find(sw.name(), name);
    if (port == nullptr || !seen.insert(port).second) continue;
    const double tx = UsableOrAbsent(port->s.tx_bytes);
    if (Has(tx)) out.push_back({port, tx});
  }
  return out;
}

std::optional<Finding> SwitchFinding(const EcmpImbalanceConfig& config,
                                     const v1::Switch& sw,
                                     const std::vector<Uplink>& uplinks) {
  double sum = 0;
  size_t hot = 0;
  size_t cold = 0;
  std::vector<double> rates;
  for (size_t k = 0; k < uplinks.size(); ++k) {
    sum += uplinks[k].tx;
    if (uplinks[k].tx > uplinks[hot].tx) hot = k;
    if (uplinks[k].tx < uplinks[cold].tx) cold = k;
    const double rate = UsableOrAbsent(uplinks[k].port->s.link_rate);
    if (Has(rate) && rate > 0) rates.push_back(rate);
  }
  const double mean = sum / static_cast<double>(uplinks.size());
  // Uplinks of one ECMP group run at one speed; the median ignores one
  // port that misreports its rate.
  const double rate = Median(rates);
  const double floor = Has(rate) ? config.min_mean_utilization * rate
                                 : config.min_mean_bytes_per_second;
  if (!(mean > 0) || mean < floor) return std::nullopt;
  const double ratio = uplinks[hot].tx / mean;
  if (ratio < config.max_over_mean) return std::nullopt;

  const PortView& hottest = *uplinks[hot].port;
  const PortView& coldest = *uplinks[cold].port;
  // The hot uplinks: every one at or above the threshold, not only the
  // hottest. When polarization piles flows onto two or more uplinks, the
  // hottest of them changes from pass to pass; the fault does not.
  std::vector<std::string> hot_names;
  double hot_tx = 0;
  std::vector<std::string> each;
  each.reserve(uplinks.size());
  for (const Uplink& u : uplinks) {
    each.push_back(absl::StrCat(u.port->device, " ", FormatBytesRate(u.tx),
                                " (", FormatFraction(u.tx / sum), ")"));
    if (u.tx >= config.max_over_mean * mean) {
      hot_names.push_back(u.port->device);
      hot_tx += u.tx;
    }
  }
  const double hot_share = hot_tx / sum;
  Finding f;
  f.kind = kEcmpImbalanceKind;
  f.severity = Severity::kWarning;
  f.node = sw.name();
  f.nodes = {sw.name()};
  // One finding per switch ECMP group, whichever of its uplinks is hottest
  // now: its identity must not move while the fault lasts.
  f.device = kEcmpUplinkGroup;
  f.evidence["max_over_mean"] = ratio;
  SetOverThreshold(ratio, config.max_over_mean, &f);
  f.evidence["mean_tx_bytes_per_second"] = mean;
  f.evidence["max_tx_bytes_per_second"] = uplinks[hot].tx;
  f.evidence["min_tx_bytes_per_second"] = uplinks[cold].tx;
  f.evidence["uplinks"] = static_cast<double>(uplinks.size());
  f.evidence["hot_uplink_count"] = static_cast<double>(hot_names.size());
  f.evidence["hot_uplinks_share"] = hot_share;
  if (Has(rate)) f.evidence["link_rate_bytes_per_second"] = rate;
  f.evidence_text["uplinks"] = absl::StrJoin(each, ", ");
  f.evidence_text["hot_uplinks"] = absl::StrJoin(hot_names, ", ");
  f.evidence_text["coldest_uplink"] = coldest.device;
  const std::string which =
      hot_names.size() == 1
          ? absl::StrCat(hottest.device, " sends ",
                         FormatBytesRate(uplinks[hot].tx), ", ")
          : absl::StrCat(hot_names.size(), " of them (",
                         absl::StrJoin(hot_names, ", "), ") carry ",
                         FormatFraction(hot_share),
                         " of the traffic; the hottest, ", hottest.device,
                         ", sends ", FormatBytesRate(uplinks[hot].tx), ", ");
  f.summary = absl::StrCat(
      sw.name(), "'s ECMP uplinks are unbalanced: ", which, FormatRatio(ratio),
      " the mean of ", uplinks.size(), " uplinks (", FormatBytesRate(mean),
      "), while ", coldest.device, " sends only ",
      FormatBytesRate(uplinks[cold].tx),
      ": ECMP hashing is piling few large RDMA flows onto the same uplinks "
      "(consider more QPs per connection, a different hash seed or adaptive "
      "routing)");
  return f;
}

// Host-side variant for one job: NICs on one rail compared with each other.
void RailFindings(const AnalysisInput& in, const LayoutModel& model,
                  const LayoutPorts& ports, const TopologyIndex& topology,
                  const std::set<std::string>& switches_with_telemetry,
                  std::vector<Finding>* out) {
  const EcmpImbalanceConfig& config = in.config->ecmp_imbalance;
  auto leaf = [&topology](const PortView& p) -> std::string {
    const LinkEnd* end = topology.SwitchPortOf(p.node, p.device);
    if (end == nullptr && !p.netdev.empty()) {
      end = topology.SwitchPortOf(p.node, p.netdev);
    }
    return end == nullptr ? "" : end->node;
  };
  for (uint32_t nic = 0; nic < model.Nics().size(); ++nic) {
    const std::string& rail = model.Nics()[nic];
    std::vector<std::pair<const PortView*, double>> members;
    for (uint32_t host = 0; host < model.Hosts().size(); ++host) {
      if (model.RanksOnNic(host, nic).empty()) continue;
      const PortView* port = ports.At(host, nic);
      if (port == nullptr || port->is_switch_port) continue;
      const double cnp = UsableOrAbsent(port->s.cnp_handled);
      if (Has(cnp)) members.emplace_back(port, cnp);
    }
    if (members.size() < kMinEcmpRailNics) continue;
    std::vector<double> values;
    values.reserve(members.size());
    for (const auto& m : members) values.push_back(m.second);
    const double median = Median(values);
    for (const auto& [port, cnp] : members) {
      if (cnp < config.min_cnp_per_second ||
          cnp < config.cnp_over_median * median) {
        continue;
      }
      const std::string sw = leaf(*port);
      // With uplink telemetry the switch-side variant sees the imbalance.
      if (switches_with_telemetry.count(sw) > 0) continue;
      Finding f;
      f.kind = kEcmpImbalanceKind;
      f.severity = Severity::kWarning;
      f.job = model.job();
      f.node = port->node;
      f.nodes = {port->node};
      if (!sw.empty()) f.nodes.push_back(sw);
      f.device = port->device;
      f.evidence["cnp_handled_per_second"] = cnp;
      f.evidence["rail_median_cnp_handled_per_second"] = median;
      if (median > 0) f.evidence["ratio_to_median"] = cnp / median;
      f.evidence["rail_nics"] = static_cast<double>(members.size());
      // Both tests hold: the nearer one says how sure the finding is.
      SetOverThreshold(
          std::min(cnp / config.min_cnp_per_second,
                   median > 0 ? cnp / (config.cnp_over_median * median)
                              : kMaxOverThreshold),
          1, &f);
      const double tx = UsableOrAbsent(port->s.tx_bytes);
      if (Has(tx)) f.evidence["tx_bytes_per_second"] = tx;
      f.evidence_text["rail"] = rail;
      const std::string peers =
          absl::StrCat("the median of the ", members.size(), " ", rail,
                       " NICs of job ", model.job());
      const std::string ratio =
          median > 0 ? absl::StrCat(FormatRatio(cnp / median), " ", peers, " (",
                                    FormatPerSecond(median), ")")
                     : absl::StrCat("while ", peers, " is 0");
      f.summary = absl::StrCat(
          port->node, " ", port->device, " is slowed by CNPs at ",
          FormatPerSecond(cnp), ", ", ratio,
          ", which the layout says carry equal load: ECMP hashing may be "
          "polarizing this rail's flows onto a congested path",
          sw.empty() ? "" : absl::StrCat(" behind ", sw),
          " (no uplink telemetry to confirm)");
      out->push_back(std::move(f));
    }
  }
}

}  // namespace

std::vector<Finding> EcmpImbalanceFindings(const AnalysisInput& in) {
  return EcmpImbalanceFindings(in, nullptr);
}

std::vector<Finding> EcmpImbalanceFindings(
    const AnalysisInput& in, const ExplainedByIncast& explained_by_incast) {
  std::vector<Finding> found;
  if (in.view == nullptr || in.config == nullptr) return found;
  const EcmpImbalanceConfig& config = in.config->ecmp_imbalance;

  std::set<std::string> switches_with_telemetry;
  if (in.topology != nullptr) {
    for (const v1::Switch& sw : in.topology->switches()) {
      const std::vector<Uplink> uplinks = ReportingUplinks(*in.view, sw);
      if (uplinks.size() < 2) continue;
      switches_with_telemetry.insert(sw.name());
      if (std::optional<Finding> f = SwitchFinding(config, sw, uplinks)) {
        found.push_back(std::move(*f));
      }
    }
  }
  std::optional<TopologyIndex> local;
  const TopologyIndex& topology = IndexOf(in, &local);
  std::optional<NicPorts> local_ports;
  const NicPorts& ports = NicPortsOf(in, &local_ports);
  for (const LayoutModel* model : in.layouts) {
    if (model != nullptr) {
      RailFindings(in, *model, ports.Of(*model), topology,
                   switches_with_telemetry, &found);
    }
  }

  std::vector<Finding> out;
  for (Finding& f : found) {
    if (explained_by_incast && explained_by_incast(f)) continue;
    out.push_back(std::move(f));
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const Finding& a, const Finding& b) {
                     return std::tie(a.node, a.device, a.job) <
                            std::tie(b.node, b.device, b.job);
                   });
  return out;
}

}  // namespace fabricdiag::analysis
