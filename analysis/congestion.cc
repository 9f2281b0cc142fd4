#include "analysis/congestion.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "analysis/analyzer_util.h"

namespace fabricdiag::analysis {
namespace {

struct Signal {
  double value = kAbsent;
  const char* evidence_key = "";  // snake_case with unit
  const char* words = "";         // "sends CNPs", "receives ECN-marked ..."
};

// cnp_sent when the NIC counts it (one CNP answers a burst of CE marks, so
// it tracks how often the NIC was told of congestion), else ecn_marked.
Signal HostSignal(const PortSignals& s) {
  const double cnp = UsableOrAbsent(s.cnp_sent);
  if (Has(cnp)) return {cnp, "cnp_sent_per_second", "sends CNPs at"};
  return {UsableOrAbsent(s.ecn_marked), "ecn_marked_per_second",
          "receives ECN-marked packets at"};
}

Signal SwitchSignal(const PortSignals& s) {
  return {UsableOrAbsent(s.ecn_marked), "ecn_marked_per_second",
          "counts ECN-marked packets at"};
}

// The one job whose layout places ranks on this NIC, else "".
std::string JobOf(const AnalysisInput& in, const PortView& port) {
  if (port.is_switch_port) return "";
  return JobOfNic(in, port.node, port.device, port.netdev);
}

using Baseline = CongestionBaselines::Of;

// The signal of every port of one kind (host NICs or switch ports) of
// `view` that reports it.
std::vector<double> ValuesOf(const FabricView& view, bool switch_ports) {
  std::vector<double> values;
  for (const PortView& p : view.ports()) {
    if (p.is_switch_port != switch_ports) continue;
    const double v = (switch_ports ? SwitchSignal(p.s) : HostSignal(p.s)).value;
    if (Has(v)) values.push_back(v);
  }
  return values;
}

// The median of the signal over the ports of one kind of `view` that
// report it.
Baseline BaselineOf(const FabricView& view, bool switch_ports) {
  std::vector<double> values = ValuesOf(view, switch_ports);
  Baseline baseline;
  baseline.ports = values.size();
  if (!values.empty()) baseline.median = Median(std::move(values));
  return baseline;
}

// How the value compares with the median; a zero median has no ratio.
std::string MedianWords(const Baseline& baseline, double value,
                        bool switch_ports, Finding* f) {
  const char* kind = switch_ports ? "switch ports" : "NIC ports";
  if (baseline.median > 0) {
    f->evidence["ratio_to_median"] = value / baseline.median;
    return absl::StrCat(FormatRatio(value / baseline.median), " the median of ",
                        baseline.ports, " ", kind, " (",
                        FormatPerSecond(baseline.median), ")");
  }
  return absl::StrCat("where the median of ", baseline.ports, " ", kind,
                      " is 0");
}

Finding HotspotFinding(const AnalysisInput& in, const TopologyIndex& topology,
                       const PortView& p, const Signal& s,
                       const Baseline& baseline, bool switch_ports) {
  const CongestionConfig& config = in.config->congestion;
  Finding f;
  f.kind = kCongestionKind;
  f.severity = Severity::kWarning;
  f.job = JobOf(in, p);
  f.node = p.node;
  f.device = p.device;
  f.nodes = {p.node};
  f.evidence[s.evidence_key] = s.value;
  // Both tests hold: the nearer one says how sure the finding is.
  SetOverThreshold(
      std::min(s.value / config.cnp_per_second,
               baseline.median > 0
                   ? s.value / (config.over_median * baseline.median)
                   : kMaxOverThreshold),
      1, &f);
  f.evidence["fabric_median_per_second"] = baseline.median;
  f.evidence["baseline_ports"] = static_cast<double>(baseline.ports);
  const std::string ratio = MedianWords(baseline, s.value, switch_ports, &f);
  std::string path;
  if (std::optional<LinkEnd> partner = topology.Partner(p)) {
    const std::string name = absl::StrCat(partner->node, " ", partner->device);
    f.evidence_text["link_partner"] = name;
    if (partner->node != p.node) f.nodes.push_back(partner->node);
    path = absl::StrCat(" (link partner ", name, ")");
  }
  std::string load;
  const double rx = UsableOrAbsent(switch_ports ? p.s.tx_bytes : p.s.rx_bytes);
  if (Has(rx)) {
    f.evidence[switch_ports ? "tx_bytes_per_second" : "rx_bytes_per_second"] =
        rx;
    load = absl::StrCat(switch_ports ? " while sending " : " while receiving ",
                        FormatBytesRate(rx));
  }
  const char* verdict =
      switch_ports
          ? ": a queue of this port is congested far beyond the rest of the "
            "fabric (a hot receiver behind it, or an ECN threshold set too "
            "low)"
          : ": traffic towards it is being ECN-marked far more than "
            "anywhere else (a congested switch queue on its path, or a "
            "receiver that drains slowly)";
  f.summary =
      absl::StrCat(p.node, " ", p.device, path, " ", s.words, " ",
                   FormatPerSecond(s.value), ", ", ratio, load, verdict);
  return f;
}

// Hotspots among the ports of one kind (host NICs or switch ports).
void FindHotspots(const AnalysisInput& in, const TopologyIndex& topology,
                  bool switch_ports, std::vector<Finding>* out) {
  const CongestionConfig& config = in.config->congestion;
  auto signal = [switch_ports](const PortView& p) {
    return switch_ports ? SwitchSignal(p.s) : HostSignal(p.s);
  };
  const Baseline baseline =
      in.congestion_baselines == nullptr
          ? BaselineOf(*in.view, switch_ports)
          : (switch_ports ? in.congestion_baselines->switches
                          : in.congestion_baselines->hosts);
  if (baseline.ports < kMinCongestionBaseline) return;

  for (const PortView& p : JudgedPorts(in)) {
    if (p.is_switch_port != switch_ports) continue;
    const Signal s = signal(p);
    if (!Has(s.value) || s.value < config.cnp_per_second ||
        s.value < config.over_median * baseline.median) {
      continue;
    }
    out->push_back(HotspotFinding(in, topology, p, s, baseline, switch_ports));
  }
}

}  // namespace

void CongestionHistogram::Add(double value) {
  if (!std::isfinite(value) || value < 0) return;
  if (value == 0) {
    ++zeros_;
    return;
  }
  // Subnormals and the largest doubles stay within int32's range.
  const double index = std::floor(std::log(value) / std::log(kBucketRatio));
  AddToBucket(static_cast<int32_t>(index), 1);
}

void CongestionHistogram::AddToBucket(int32_t bucket, uint64_t count) {
  if (count == 0) return;
  buckets_[bucket] += count;
  count_ += count;
}

void CongestionHistogram::Merge(const CongestionHistogram& other) {
  zeros_ += other.zeros_;
  for (const auto& [bucket, n] : other.buckets_) AddToBucket(bucket, n);
}

double CongestionHistogram::ValueAt(uint64_t rank) const {
  if (rank < zeros_) return 0;
  rank -= zeros_;
  for (const auto& [bucket, n] : buckets_) {
    if (rank < n) return std::pow(kBucketRatio, bucket + 0.5);
    rank -= n;
  }
  return kAbsent;  // rank past count(): not reached
}

CongestionBaselines::Of CongestionHistogram::Baseline() const {
  CongestionBaselines::Of out;
  out.ports = count();
  if (out.ports == 0) return out;
  const uint64_t mid = out.ports / 2;
  out.median =
      out.ports % 2 == 1 ? ValueAt(mid) : (ValueAt(mid - 1) + ValueAt(mid)) / 2;
  return out;
}

CongestionHistograms CongestionHistogramsOf(const FabricView& view) {
  CongestionHistograms out;
  for (double v : ValuesOf(view, /*switch_ports=*/false)) out.hosts.Add(v);
  for (double v : ValuesOf(view, /*switch_ports=*/true)) out.switches.Add(v);
  return out;
}

CongestionBaselines CongestionBaselinesOf(const FabricView& view) {
  CongestionBaselines out;
  out.hosts = BaselineOf(view, /*switch_ports=*/false);
  out.switches = BaselineOf(view, /*switch_ports=*/true);
  return out;
}

std::vector<Finding> CongestionFindings(const AnalysisInput& in) {
  std::vector<Finding> out;
  if (in.view == nullptr || in.config == nullptr) return out;
  std::optional<TopologyIndex> local;
  const TopologyIndex& topology = IndexOf(in, &local);
  FindHotspots(in, topology, /*switch_ports=*/false, &out);
  FindHotspots(in, topology, /*switch_ports=*/true, &out);
  std::stable_sort(
      out.begin(), out.end(), [](const Finding& a, const Finding& b) {
        return std::tie(a.node, a.device) < std::tie(b.node, b.device);
      });
  return out;
}

}  // namespace fabricdiag::analysis
