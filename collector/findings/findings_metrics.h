// Findings, layouts and state-directory health as Prometheus metrics.
//
// Exported on every scrape (values are read at Collect time):
//   fabricdiag_finding_active{kind,severity,job,node,device,silenced,acked,
//                             id,label_<key>...}
//       1 per active finding (docs/findings.md), with the labels of its
//       job's layout prefixed by kJobLabelPrefix (docs/metrics.md)
//   fabricdiag_finding_info{id,summary}   1 per active finding
//   fabricdiag_findings_opened_total{kind},
//   fabricdiag_findings_resolved_total{kind}
//       (every kind of docs/findings.md present from the start, at 0)
//   fabricdiag_findings_updated_total, fabricdiag_finding_watchers,
//   fabricdiag_finding_watcher_overflows_total,
//   fabricdiag_findings_persist_errors_total
//   fabricdiag_layouts                    layouts currently applied
//   fabricdiag_state_write_errors_total   failed writes to --state_dir
//   fabricdiag_state_damaged_files        files moved aside at load
// and, in a collector cluster only (AppendFindingsStalenessMetrics, with the
// other fabricdiag_cluster_* families):
//   fabricdiag_cluster_findings_stale{collector_id}        0 or 1
//   fabricdiag_cluster_findings_age_seconds{collector_id}
//
// Usage:
//   auto metrics = std::make_shared<FindingsMetrics>(&findings, &registry,
//                                                    state_store.get());
//   exposer.RegisterCollectable(metrics);
//
// Thread-safe: Collect() only reads through the stores' thread-safe APIs.
#pragma once

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "collector/declared/layout_registry.h"
#include "collector/findings/findings_staleness.h"
#include "collector/findings/findings_store.h"
#include "collector/state/state_store.h"
#include "prometheus/collectable.h"
#include "prometheus/metric_family.h"

namespace fabricdiag::collector {

// What a layout label's key is exported behind on fabricdiag_finding_active
// (`team` as `label_team`), as kube-state-metrics exports Kubernetes labels.
inline constexpr char kJobLabelPrefix[] = "label_";

class FindingsMetrics final : public prometheus::Collectable {
 public:
  // `registry` and `state` may be null (their metrics are then omitted);
  // all must outlive this object.
  FindingsMetrics(const FindingsStore* findings, const LayoutRegistry* registry,
                  const StateStore* state);

  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  const FindingsStore* const findings_;
  const LayoutRegistry* const registry_;
  const StateStore* const state_;
};

// Appends, in the text exposition format, whether the findings collector
// `collector_id` of a cluster serves are stale and how long ago it last
// knew them current (docs/cluster.md, "When the cluster is away").
void AppendFindingsStalenessMetrics(const FindingsStaleness& staleness,
                                    absl::string_view collector_id,
                                    std::string* out);

}  // namespace fabricdiag::collector
