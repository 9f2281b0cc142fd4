#include "analysis/link_degraded.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/types/span.h"
#include "analysis/analyzer_util.h"
#include "analysis/link_context.h"

namespace fabricdiag::analysis {
namespace {

// Ports compared with each other: same node, same kind.
enum class PortKind { kRdma, kNetdev, kSwitchDownlink, kSwitchUplink };

PortKind KindOf(const TopologyIndex& topology, const PortView& port) {
  if (port.is_switch_port) {
    return topology.IsUplink(port) ? PortKind::kSwitchUplink
                                   : PortKind::kSwitchDownlink;
  }
  // fabric_view.h: a plain netdev port has netdev == device.
  return port.netdev == port.device ? PortKind::kNetdev : PortKind::kRdma;
}

bool RateUsable(double rate) { return Usable(rate) && rate > 0; }

// Words for how far below the link trained: the usual ratios are lanes
// lost (4X -> 2X, 4X -> 1X) or a generation lower.
const char* Cause(double fraction) {
  if (std::fabs(fraction - 0.5) < 0.02)
    return "half its lanes or a lower speed";
  if (std::fabs(fraction - 0.25) < 0.02) {
    return "a quarter of its lanes or a lower speed";
  }
  return "fewer lanes or a lower speed";
}

}  // namespace

std::string FormatLinkRate(double bytes_per_second) {
  if (!std::isfinite(bytes_per_second)) return "n/a";
  const double gbits = bytes_per_second * 8 / 1e9;
  // %g switches to exponents at 1000; links are 1..1600 Gb/s.
  if (std::fabs(gbits) >= 100) return absl::StrFormat("%.0f Gb/s", gbits);
  return absl::StrFormat("%.3g Gb/s", gbits);
}

std::vector<Finding> LinkDegradedFindings(const AnalysisInput& in) {
  std::vector<Finding> out;
  if (in.view == nullptr) return out;
  const AnalysisConfig defaults;
  const double min_fraction = (in.config != nullptr ? *in.config : defaults)
                                  .link_degraded.min_rate_fraction;

  std::optional<TopologyIndex> local;
  const TopologyIndex& topology = IndexOf(in, &local);
  // Each port's kind, asked once: a switch compares every port with its
  // dozens of peers.
  const absl::Span<const PortView> ports = JudgedPorts(in);
  std::vector<PortKind> kinds;
  kinds.reserve(ports.size());
  for (const PortView& port : ports) kinds.push_back(KindOf(topology, port));
  auto kind_of = [&](const PortView& p) { return kinds[&p - ports.data()]; };

  // The ports of the node being walked: ports() keeps a node's together,
  // so its peers are found without asking the view per port. Their usable
  // rates, by kind and ascending, are sorted once per node: a port's peer
  // median is the median of its kind's run without one of its own rate.
  absl::Span<const PortView> node_ports;
  std::vector<std::pair<PortKind, double>> usable;
  for (const PortView& port : ports) {
    if (node_ports.empty() || node_ports.front().node != port.node) {
      const size_t begin = static_cast<size_t>(&port - ports.data());
      size_t end = begin + 1;
      while (end < ports.size() && ports[end].node == port.node) ++end;
      node_ports = ports.subspan(begin, end - begin);
      usable.clear();
      for (const PortView& peer : node_ports) {
        if (peer.s.link_up && RateUsable(peer.s.link_rate)) {
          usable.emplace_back(kind_of(peer), peer.s.link_rate);
        }
      }
      std::sort(usable.begin(), usable.end());
    }
    const PortSignals& s = port.s;
    if (!s.link_up || !RateUsable(s.link_rate)) continue;

    double reference = kAbsent;
    int peers = 0;
    const bool expected_known = RateUsable(s.expected_rate);
    if (expected_known) {
      reference = s.expected_rate;
    } else {
      const std::pair<PortKind, double> self(kind_of(port), s.link_rate);
      const auto kind_begin = std::lower_bound(
          usable.begin(), usable.end(),
          std::make_pair(self.first, -std::numeric_limits<double>::infinity()));
      const auto kind_end = std::lower_bound(
          kind_begin, usable.end(),
          std::make_pair(self.first, std::numeric_limits<double>::infinity()));
      // The kind's rates with one of this port's own left out.
      const size_t own = static_cast<size_t>(
          std::lower_bound(kind_begin, kind_end, self) - kind_begin);
      const size_t n = static_cast<size_t>(kind_end - kind_begin) - 1;
      const auto peer = [&](size_t i) {
        return kind_begin[static_cast<ptrdiff_t>(i < own ? i : i + 1)].second;
      };
      peers = static_cast<int>(n);
      if (peers < kMinPeers) continue;
      reference =
          n % 2 == 1 ? peer(n / 2) : (peer(n / 2 - 1) + peer(n / 2)) / 2;
    }
    if (!RateUsable(reference) || !(s.link_rate < min_fraction * reference)) {
      continue;
    }

    const double fraction = s.link_rate / reference;
    const std::optional<LinkEnd> partner = topology.Partner(port);
    Finding f = NewLinkFinding(kLinkDegradedKind, in, port, partner);
    f.severity = Severity::kWarning;
    f.evidence["link_rate_bytes_per_second"] = s.link_rate;
    f.evidence["rate_fraction"] = fraction;
    SetUnderThreshold(s.link_rate, min_fraction * reference, &f);
    const std::string where = absl::StrCat(port.node, " ", port.device);
    std::string compared;
    if (expected_known) {
      f.evidence["expected_rate_bytes_per_second"] = reference;
      compared = absl::StrCat("instead of ", FormatLinkRate(reference));
    } else {
      f.evidence["peer_median_link_rate_bytes_per_second"] = reference;
      f.evidence["peer_ports"] = peers;
      compared =
          absl::StrCat("while the median of its ", peers, " peer ports on ",
                       port.node, " is ", FormatLinkRate(reference));
    }
    f.summary = absl::StrCat(where, " trained at ", FormatLinkRate(s.link_rate),
                             " ", compared, " (", Cause(fraction),
                             "): reseat or replace the cable",
                             PartnerText(partner), ".");
    out.push_back(std::move(f));
  }
  SortLinkFindings(&out);
  return out;
}

}  // namespace fabricdiag::analysis
