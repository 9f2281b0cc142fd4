// Whether the findings a collector serves are the cluster's current ones,
// as every surface that serves findings tells it (gRPC answers and watch
// events, the page, /api/v1/findings, /metrics; docs/cluster.md, "When the
// cluster is away").
//
// A collector of a cluster only mirrors the findings its analysis leader
// shares, so while it cannot see the shared bucket (NATS away, its watcher
// dead) or nobody leads the analysis, what it serves may be out of date
// although it still looks current. The cluster's backends compute it
// (cluster::ClusterMember::FindingsStaleness); a lone collector's findings
// are its own, never stale.
//
//   FindingsStalenessSource staleness = [&backends] {
//     return backends.findings_staleness();
//   };
//   if (FindingsStaleness s = staleness(); s.stale) ...
#pragma once

#include <functional>

#include "absl/time/time.h"

namespace fabricdiag::collector {

struct FindingsStaleness {
  // Not known current for longer than the limits of docs/cluster.md.
  bool stale = false;
  // How long ago this collector last knew its findings were current; zero
  // for a lone collector.
  absl::Duration age = absl::ZeroDuration();
};

// Asked at every answer; thread-safe.
using FindingsStalenessSource = std::function<FindingsStaleness()>;

// The source of a lone collector: never stale.
inline FindingsStalenessSource NeverStale() {
  return [] { return FindingsStaleness{}; };
}

}  // namespace fabricdiag::collector
