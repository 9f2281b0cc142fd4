#include "collector/runner/collector_metrics.h"

#include <limits>
#include <string>
#include <utility>

#include "common/metric_family.h"

namespace fabricdiag::collector {
namespace {

using prometheus::MetricFamily;
using prometheus::MetricType;

MetricFamily Family(std::string name, std::string help, MetricType type) {
  return MakeFamily(std::move(name), std::move(help), type);
}

// Per node: whether its agent reports, when it last did and what it dropped;
// and the series of all nodes together.
void AppendNodeFamilies(const SeriesStore& store, const NodeUpRule& node_up,
                        std::vector<MetricFamily>* out) {
  MetricFamily up = Family("fabricdiag_agent_up",
                           "1 while the node's agent reports to this "
                           "collector, 0 once agent_down holds for it "
                           "(agent_down.missed_intervals of its intervals).",
                           MetricType::Gauge);
  MetricFamily last =
      Family("fabricdiag_agent_last_report_timestamp_seconds",
             "When the node's agent last reported.", MetricType::Gauge);
  MetricFamily gaps = Family("fabricdiag_agent_missing_reports_total",
                             "Reports the agent dropped before the collector "
                             "got them (its buffer overflowed in an outage).",
                             MetricType::Counter);
  double series = 0;
  for (const NodeStatus& n : store.ListNodes(node_up)) {
    AddValue(&up, {{"node", n.info.node}}, n.up ? 1 : 0);
    if (n.info.last_report != absl::InfinitePast()) {
      AddValue(&last, {{"node", n.info.node}},
               absl::ToDoubleSeconds(n.info.last_report - absl::UnixEpoch()));
    }
    AddValue(&gaps, {{"node", n.info.node}},
             static_cast<double>(n.info.missing_reports));
    series += static_cast<double>(n.info.series);
  }
  out->push_back(std::move(up));
  out->push_back(std::move(last));
  out->push_back(std::move(gaps));

  MetricFamily series_family =
      Family("fabricdiag_collector_series", "Series held in memory.",
             MetricType::Gauge);
  AddValue(&series_family, {}, series);
  out->push_back(std::move(series_family));
}

void AppendIngestFamilies(const IngestCounters& counters,
                          std::vector<MetricFamily>* out) {
  struct Named {
    const char* name;
    const char* help;
    const std::atomic<uint64_t>* value;
  };
  const Named named[] = {
      {"fabricdiag_ingest_streams_total", "Agent streams accepted.",
       &counters.streams},
      {"fabricdiag_ingest_reports_total", "Agent reports stored.",
       &counters.reports},
      {"fabricdiag_ingest_values_total", "Counter values stored.",
       &counters.values},
      {"fabricdiag_ingest_duplicate_reports_total",
       "Replayed reports the collector already held.", &counters.duplicates},
      {"fabricdiag_ingest_schemas_total", "Schemas accepted.",
       &counters.schemas},
      {"fabricdiag_ingest_handed_off_streams_total",
       "Agent streams handed to another collector (in a cluster: back to "
       "the live collector the agent prefers, or the analysis leader's "
       "share of agents without a collector list).",
       &counters.handoffs},
      {"fabricdiag_ingest_handed_back_streams_total",
       "Agent streams handed back to the live collector the agent ranks "
       "first (a cluster's placement).",
       &counters.handbacks},
  };
  for (const Named& n : named) {
    MetricFamily f = Family(n.name, n.help, MetricType::Counter);
    AddValue(&f, {}, static_cast<double>(n.value->load()));
    out->push_back(std::move(f));
  }
  MetricFamily open = Family("fabricdiag_ingest_connected_streams",
                             "Agent streams connected to this collector now.",
                             MetricType::Gauge);
  AddValue(&open, {}, static_cast<double>(counters.open_streams.load()));
  out->push_back(std::move(open));
  MetricFamily buffers = Family(
      "fabricdiag_ingest_read_buffer_bytes",
      "Bytes the connected agent streams keep to read their next message "
      "into (each its last report's arrays; a schema's are given back).",
      MetricType::Gauge);
  AddValue(&buffers, {},
           static_cast<double>(counters.read_buffer_bytes.load()));
  out->push_back(std::move(buffers));
  MetricFamily rejects =
      Family("fabricdiag_ingest_rejected_streams_total",
             "Agent streams refused, by reason (hostile or broken input).",
             MetricType::Counter);
  for (size_t i = 0; i < kRejectReasonCount; ++i) {
    const auto reason = static_cast<RejectReason>(i);
    AddValue(&rejects, {{"reason", RejectReasonName(reason)}},
             static_cast<double>(counters.rejects(reason)));
  }
  out->push_back(std::move(rejects));
  MetricFamily refused =
      Family("fabricdiag_ingest_refused_streams_total",
             "Agent streams this collector handed off because it takes no "
             "agent now, by reason (nats_disconnected: cut off from its "
             "cluster's NATS servers; the agent moves to another collector).",
             MetricType::Counter);
  AddValue(&refused, {{"reason", "nats_disconnected"}},
           static_cast<double>(counters.refused_nats_disconnected.load()));
  out->push_back(std::move(refused));
}

void AppendAnalysisFamilies(const AnalysisStats& stats,
                            std::vector<MetricFamily>* out) {
  MetricFamily passes = Family("fabricdiag_analysis_passes_total",
                               "Analysis passes run.", MetricType::Counter);
  AddValue(&passes, {}, static_cast<double>(stats.passes.load()));
  out->push_back(std::move(passes));
  MetricFamily pass_time =
      Family("fabricdiag_analysis_pass_duration_seconds",
             "Time the last analysis pass took.", MetricType::Gauge);
  AddValue(&pass_time, {},
           static_cast<double>(stats.last_pass_nanos.load()) * 1e-9);
  out->push_back(std::move(pass_time));
  // Every pass, not only the last one a scrape happens to see.
  MetricFamily passes_by_time =
      Family("fabricdiag_analysis_pass_seconds",
             "Time each analysis pass took.", MetricType::Histogram);
  prometheus::ClientMetric histogram;
  uint64_t cumulative = 0;
  for (size_t b = 0; b < AnalysisStats::kPassBuckets.size(); ++b) {
    cumulative += stats.pass_buckets[b].load();
    histogram.histogram.bucket.push_back(
        {cumulative, AnalysisStats::kPassBuckets[b]});
  }
  cumulative += stats.pass_buckets.back().load();
  histogram.histogram.bucket.push_back(
      {cumulative, std::numeric_limits<double>::infinity()});
  histogram.histogram.sample_count = cumulative;
  histogram.histogram.sample_sum =
      static_cast<double>(stats.pass_nanos_sum.load()) * 1e-9;
  passes_by_time.metric.push_back(std::move(histogram));
  out->push_back(std::move(passes_by_time));
  MetricFamily persist =
      Family("fabricdiag_analysis_persist_errors_total",
             "Analysis passes whose findings could not be written to "
             "--state_dir.",
             MetricType::Counter);
  AddValue(&persist, {}, static_cast<double>(stats.persist_errors.load()));
  out->push_back(std::move(persist));
}

}  // namespace

void AnalysisStats::RecordPass(int64_t nanos) {
  const double seconds = static_cast<double>(nanos) * 1e-9;
  size_t b = 0;
  while (b < kPassBuckets.size() && seconds > kPassBuckets[b]) ++b;
  pass_buckets[b].fetch_add(1);
  pass_nanos_sum.fetch_add(nanos);
  last_pass_nanos.store(nanos);
  passes.fetch_add(1);
}

CollectorMetrics::CollectorMetrics(const SeriesStore* store,
                                   const IngestCounters* counters,
                                   const AnalysisStats* analysis,
                                   NodeUpRule node_up)
    : store_(store),
      counters_(counters),
      analysis_(analysis),
      node_up_(std::move(node_up)) {}

std::vector<MetricFamily> CollectorMetrics::Collect() const {
  std::vector<MetricFamily> out;
  AppendNodeFamilies(*store_, node_up_, &out);
  AppendIngestFamilies(*counters_, &out);
  AppendAnalysisFamilies(*analysis_, &out);
  return out;
}

}  // namespace fabricdiag::collector
