#include "collector/findings/findings_metrics.h"

#include <map>
#include <set>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "analysis/finding.h"
#include "analysis/finding_wire.h"
#include "common/prom_text.h"
#include "prometheus/client_metric.h"
#include "prometheus/metric_type.h"

namespace fabricdiag::collector {
namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

MetricFamily Family(std::string name, std::string help, MetricType type) {
  MetricFamily family;
  family.name = std::move(name);
  family.help = std::move(help);
  family.type = type;
  return family;
}

ClientMetric Value(MetricType type, double value,
                   std::vector<ClientMetric::Label> labels = {}) {
  ClientMetric metric;
  metric.label = std::move(labels);
  if (type == MetricType::Counter) {
    metric.counter.value = value;
  } else {
    metric.gauge.value = value;
  }
  return metric;
}

MetricFamily PerKind(std::string name, std::string help,
                     const std::map<std::string, uint64_t>& counts) {
  std::map<std::string, uint64_t> all(counts);
  for (const char* kind : analysis::kKnownFindingKinds) all.emplace(kind, 0);
  MetricFamily family =
      Family(std::move(name), std::move(help), MetricType::Counter);
  for (const auto& [kind, n] : all) {
    family.metric.push_back(
        Value(MetricType::Counter, static_cast<double>(n), {{"kind", kind}}));
  }
  return family;
}

MetricFamily Single(std::string name, std::string help, MetricType type,
                    double value) {
  MetricFamily family = Family(std::move(name), std::move(help), type);
  family.metric.push_back(Value(type, value));
  return family;
}

// The topology's ECMP uplinks, for the switch dashboard's balance panels.
MetricFamily Uplinks(const RegistrySnapshot& snapshot) {
  MetricFamily family =
      Family("fabricdiag_topology_uplink",
             "1 for each ECMP uplink of a switch in the declared topology "
             "(node: the switch, netdev: the port).",
             MetricType::Gauge);
  if (snapshot.topology == nullptr) return family;
  std::set<std::pair<std::string, std::string>> seen;
  for (const v1::Switch& sw : snapshot.topology->switches()) {
    for (const std::string& port : sw.uplinks()) {
      if (!seen.emplace(sw.name(), port).second) continue;
      family.metric.push_back(
          Value(MetricType::Gauge, 1, {{"node", sw.name()}, {"netdev", port}}));
    }
  }
  return family;
}

}  // namespace

FindingsMetrics::FindingsMetrics(const FindingsStore* findings,
                                 const LayoutRegistry* registry,
                                 const StateStore* state)
    : findings_(findings), registry_(registry), state_(state) {}

std::vector<MetricFamily> FindingsMetrics::Collect() const {
  std::vector<MetricFamily> out;

  MetricFamily active =
      Family("fabricdiag_finding_active",
             "1 while a finding is active (kind, severity, job, node, device, "
             "id as in fabricdiag findings; silenced, acked \"true\" while "
             "an operator's silence or acknowledgement applies; label_<key> "
             "for each label of the finding's job).",
             MetricType::Gauge);
  MetricFamily info =
      Family("fabricdiag_finding_info",
             "1 per active finding, with its summary in words (id as on "
             "fabricdiag_finding_active); the alert rules read the summary "
             "from here by id.",
             MetricType::Gauge);
  // One series per finding: its id exists only while it is active, so the
  // series count is the active findings'. The summary, whose numbers move
  // as the evidence does, is kept off the alerting series: a changed label
  // would start a new series, and a new alert.
  for (const v1::Finding& f : findings_->Active()) {
    std::vector<ClientMetric::Label> labels = {
        {"kind", f.kind()},
        {"severity",
         std::string(analysis::SeverityName(f.severity(), "unspecified"))},
        {"job", f.job()},
        {"node", f.node()},
        {"device", f.device()},
        {"silenced", f.silenced_by().empty() ? "false" : "true"},
        {"acked", f.has_acked() ? "true" : "false"},
        {"id", f.id()}};
    // Prefixed, as kube-state-metrics does, so that a job's label never
    // clashes with the ones above; sorted for a stable exposition.
    const std::map<std::string, std::string> job_labels(f.labels().begin(),
                                                        f.labels().end());
    for (const auto& [key, value] : job_labels) {
      labels.push_back({absl::StrCat(kJobLabelPrefix, key), value});
    }
    active.metric.push_back(Value(MetricType::Gauge, 1, std::move(labels)));
    info.metric.push_back(Value(MetricType::Gauge, 1,
                                {{"id", f.id()}, {"summary", f.summary()}}));
  }
  out.push_back(std::move(active));
  out.push_back(std::move(info));

  FindingsCounters counters = findings_->Counters();
  out.push_back(PerKind("fabricdiag_findings_opened_total",
                        "Findings opened since the collector started.",
                        counters.opened_by_kind));
  out.push_back(PerKind("fabricdiag_findings_resolved_total",
                        "Findings resolved since the collector started.",
                        counters.resolved_by_kind));
  out.push_back(Single("fabricdiag_findings_updated_total",
                       "Material changes to active findings (severity, "
                       "summary, evidence beyond the threshold).",
                       MetricType::Counter,
                       static_cast<double>(counters.updated)));
  out.push_back(Single("fabricdiag_findings_persist_errors_total",
                       "Analysis passes whose finding changes could not be "
                       "written to the state directory.",
                       MetricType::Counter,
                       static_cast<double>(counters.persist_errors)));
  out.push_back(Single("fabricdiag_finding_watchers",
                       "Open WatchFindings streams.", MetricType::Gauge,
                       static_cast<double>(counters.watchers)));
  out.push_back(Single("fabricdiag_finding_watcher_overflows_total",
                       "Watch streams closed because the client fell too "
                       "far behind.",
                       MetricType::Counter,
                       static_cast<double>(counters.watcher_overflows)));
  if (registry_ != nullptr) {
    out.push_back(Single("fabricdiag_layouts", "Job layouts applied.",
                         MetricType::Gauge,
                         static_cast<double>(registry_->NumLayouts())));
    const std::shared_ptr<const RegistrySnapshot> snapshot =
        registry_->Snapshot();
    out.push_back(Uplinks(*snapshot));
  }
  if (state_ != nullptr) {
    out.push_back(Single("fabricdiag_state_write_errors_total",
                         "Failed writes to the state directory (layouts, "
                         "topology, findings log, operator marks).",
                         MetricType::Counter,
                         static_cast<double>(state_->write_errors())));
    out.push_back(Single("fabricdiag_state_damaged_files",
                         "Damaged files found in the state directory at "
                         "startup and moved aside (see the log).",
                         MetricType::Gauge,
                         static_cast<double>(state_->problems().size())));
  }
  return out;
}

void AppendFindingsStalenessMetrics(const FindingsStaleness& staleness,
                                    absl::string_view collector_id,
                                    std::string* out) {
  const PromLabel id[] = {{"collector_id", collector_id}};
  PromWriter w(out);
  w.Family("fabricdiag_cluster_findings_stale",
           "1 while the findings this collector serves may be out of date: "
           "it has not seen the cluster's findings bucket catch up, or no "
           "collector led the analysis, for too long (docs/cluster.md).",
           PromType::kGauge);
  w.Sample(id, staleness.stale ? 1.0 : 0.0);
  w.Family("fabricdiag_cluster_findings_age_seconds",
           "How long ago this collector last knew its findings were the "
           "cluster's current ones (below a second while NATS answers and a "
           "collector leads).",
           PromType::kGauge);
  w.Sample(id, absl::ToDoubleSeconds(staleness.age));
}

}  // namespace fabricdiag::collector
