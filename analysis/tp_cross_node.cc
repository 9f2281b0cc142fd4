#include "analysis/tp_cross_node.h"

#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace fabricdiag::analysis {

std::vector<Finding> TpCrossNodeFindings(const LayoutModel& model) {
  std::vector<Finding> out;
  const v1::Layout& layout = model.layout();
  for (uint32_t g : model.TpGroupsCrossingNvlink()) {
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
    f.summary = absl::StrCat(
        "TP group ", f.group, " of job ", f.job, " spans ", domains,
        " NVLink domains on ", hosts, hosts == 1 ? " node (" : " nodes (",
        absl::StrJoin(f.nodes, ", "),
        "): its per-layer all-reduces leave NVLink and cross the RDMA fabric. "
        "Keep tp <= nvlink_domain (",
        nvlink, ") or place each TP group inside one NVLink domain.");
    f.evidence["tp"] = layout.parallelism().tp();
    f.evidence["nvlink_domains_spanned"] = domains;
    f.evidence["hosts_spanned"] = hosts;
    f.evidence["nvlink_domain_size"] = nvlink;
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace fabricdiag::analysis
