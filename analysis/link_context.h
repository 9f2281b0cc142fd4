// What the link analyzers (link_errors, link_flap, link_degraded,
// retransmissions) need to know about a port beyond its own counters: the
// other end of its cable from the topology, the job that uses it, and which
// signal values can be trusted.
//
// A cable joins a host NIC to a switch port (docs/topology-format.md),
// so the partner of "gpu-003 mlx5_2" is "leaf-0 swp3" and the partner of
// "leaf-0 swp3" is "gpu-003 mlx5_2". Naming the partner lets the ops
// engineer walk to the right end of the right cable.
//
//   std::optional<TopologyIndex> local;
//   const TopologyIndex& topo = IndexOf(in, &local);
//   std::optional<LinkEnd> peer = topo.Partner(port);
//   Finding f = NewLinkFinding(kLinkErrorsKind, in, port, peer);
//   f.summary = absl::StrCat(..., PartnerText(peer));
//
// Pure functions; thread-safe.
#pragma once

#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "analysis/analyzer.h"
#include "analysis/fabric_view.h"
#include "analysis/finding.h"
#include "analysis/topology_index.h"
#include "proto/layout.pb.h"

namespace fabricdiag::analysis {

// The job whose layout places ranks on the host NIC of this link (the port
// itself, or for a switch port the host NIC at the other end), when exactly
// one job does; "" otherwise (no job, or a NIC shared by several jobs).
std::string JobOfLink(const AnalysisInput& in, const PortView& port,
                      const std::optional<LinkEnd>& partner);

// " (switch leaf-0 swp3 per topology)", " (host gpu-003 mlx5_2 per
// topology)" or "" without a partner.
std::string PartnerText(const std::optional<LinkEnd>& partner);

// A finding of `kind` about `port` with job, node, nodes (the port's node,
// then the partner's), device and the partner as evidence_text
// "link_partner"; group "", severity warning.
Finding NewLinkFinding(const char* kind, const AnalysisInput& in,
                       const PortView& port,
                       const std::optional<LinkEnd>& partner);

// Sorts findings by (node, device, kind) so output never depends on the
// order ports were added.
void SortLinkFindings(std::vector<Finding>* findings);

}  // namespace fabricdiag::analysis
