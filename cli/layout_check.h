// What `fabricdiag layout check JOB` reports (docs/cli.md): the hosts and
// NICs a job's layout names that no agent reports, each with the reported
// names that look alike (common/similar_names.h). The collector warns of
// the same names when the layout is declared; this says what was meant.
// And where the ranks' NICs come from (declared, rails, paired by the
// host's agent), which ranks have none known: what `layout show` and
// `layout check` print of the collector's resolved layout.
//
//   std::vector<ReportedNode> nodes = ReportedNodes(list_nodes_response);
//   LayoutCheck check = CheckLayoutNames(layout, nodes);
//   if (!check.unmatched.empty()) ...
//   NicSources sources = CountNicSources(resolved_layout);
//
// Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "proto/collector.pb.h"
#include "proto/layout.pb.h"

namespace fabricdiag::cli {

// A node an agent reports, with its RDMA devices.
struct ReportedNode {
  std::string name;
  std::vector<std::string> nics;
  // False for a node that streams to another collector of the cluster: this
  // one knows its name but not its devices, so its NICs are not checked.
  bool nics_known = true;
};

std::vector<ReportedNode> ReportedNodes(const v1::ListNodesResponse& nodes);

struct UnmatchedName {
  // "host": no agent reports `host`. "nic": `host` is reported, but not
  // with `nic`.
  std::string kind;
  std::string host;
  std::string nic;
  size_t ranks = 0;  // the layout's ranks placed on it
  // Reported names that look alike (hosts, or NICs of `host`).
  std::vector<std::string> alike;
};

struct LayoutCheck {
  size_t hosts = 0;  // distinct hosts the layout names
  size_t nics = 0;   // distinct (host, NIC) pairs it names
  // NIC pairs not checked: their host's devices are unknown here.
  size_t nics_unchecked = 0;
  std::vector<UnmatchedName> unmatched;  // in the layout's order
};

// The layout's hosts and (host, NIC) pairs (through ranks, or hosts and
// rails) against `reported`.
LayoutCheck CheckLayoutNames(const v1::Layout& layout,
                             const std::vector<ReportedNode>& reported);

// How many ranks of a resolved layout (CollectorClient::GetResolvedLayout)
// have each RankPlacement.nic_source.
struct NicSources {
  // False when the collector did not say (an older one answers the layout
  // as applied): nothing else is set.
  bool known = false;
  size_t rank = 0;
  size_t rails = 0;
  size_t agent = 0;
  size_t unknown = 0;
  // The first kNamedUnknownRanks ranks without a NIC, by rank.
  std::vector<v1::RankPlacement> unknown_ranks;
};
inline constexpr size_t kNamedUnknownRanks = 5;

NicSources CountNicSources(const v1::Layout& resolved);

}  // namespace fabricdiag::cli
