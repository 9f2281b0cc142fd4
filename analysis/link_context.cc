#include "analysis/link_context.h"

#include <algorithm>
#include <set>
#include <tuple>

#include "absl/strings/str_cat.h"

namespace fabricdiag::analysis {

std::string JobOfLink(const AnalysisInput& in, const PortView& port,
                      const std::optional<LinkEnd>& partner) {
  // Layouts name host NICs; a switch port serves the job of the host NIC
  // cabled to it.
  if (partner.has_value() && !partner->is_switch) {
    return JobOfNic(in, partner->node, partner->device, "");
  }
  return JobOfNic(in, port.node, port.device, port.netdev);
}

std::string PartnerText(const std::optional<LinkEnd>& partner) {
  if (!partner.has_value()) return "";
  return absl::StrCat(" (", partner->is_switch ? "switch " : "host ",
                      partner->node, " ", partner->device, " per topology)");
}

Finding NewLinkFinding(const char* kind, const AnalysisInput& in,
                       const PortView& port,
                       const std::optional<LinkEnd>& partner) {
  Finding f;
  f.kind = kind;
  f.severity = Severity::kWarning;
  f.job = JobOfLink(in, port, partner);
  f.node = port.node;
  f.nodes = {port.node};
  f.device = port.device;
  if (partner.has_value()) {
    if (partner->node != port.node) f.nodes.push_back(partner->node);
    f.evidence_text["link_partner"] =
        absl::StrCat(partner->node, " ", partner->device);
  }
  return f;
}

void SortLinkFindings(std::vector<Finding>* findings) {
  std::sort(findings->begin(), findings->end(),
            [](const Finding& a, const Finding& b) {
              return std::tie(a.node, a.device, a.kind) <
                     std::tie(b.node, b.device, b.kind);
            });
}

}  // namespace fabricdiag::analysis
