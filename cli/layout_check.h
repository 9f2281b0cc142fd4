// What `fabricdiag layout check JOB` reports (docs/cli.md): the hosts and
// NICs a job's layout names that no agent reports, each with the reported
// names that look alike (common/similar_names.h). The collector warns of
// the same names when the layout is declared; this says what was meant.
//
//   std::vector<ReportedNode> nodes = ReportedNodes(list_nodes_response);
//   LayoutCheck check = CheckLayoutNames(layout, nodes);
//   if (!check.unmatched.empty()) ...
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

}  // namespace fabricdiag::cli
