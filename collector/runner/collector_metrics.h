// The collector's own metrics: agents up, ingest counters, rejected
// streams by reason, analysis pass cost.
//
//   auto metrics = std::make_shared<CollectorMetrics>(
//       &store, &counters, &stats, AgentUpRule(config.agent_down));
//   http = HttpServer::Start(listen, {metrics, findings_metrics}, ...);
//
// Thread-safe.
#pragma once

#include <array>
#include <atomic>
#include <vector>

#include "absl/time/time.h"
#include "collector/ingest/ingest_session.h"
#include "collector/store/series_store.h"
#include "prometheus/collectable.h"
#include "prometheus/metric_family.h"

namespace fabricdiag::collector {

// Filled in by the analysis runner after every pass.
struct AnalysisStats {
  // Upper bounds (seconds) of fabricdiag_analysis_pass_seconds' buckets:
  // around the 1 s interval a pass must fit.
  static constexpr std::array<double, 9> kPassBuckets = {
      0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};

  // Counts one pass that took `nanos`.
  void RecordPass(int64_t nanos);

  std::atomic<uint64_t> passes{0};
  std::atomic<int64_t> last_pass_nanos{0};
  std::atomic<int64_t> pass_nanos_sum{0};
  // Passes per bucket (not cumulative), the last one over every bound.
  std::array<std::atomic<uint64_t>, kPassBuckets.size() + 1> pass_buckets{};
  std::atomic<uint64_t> persist_errors{0};
};

class CollectorMetrics final : public prometheus::Collectable {
 public:
  // Pointers must outlive this object.
  CollectorMetrics(const SeriesStore* store, const IngestCounters* counters,
                   const AnalysisStats* analysis, NodeUpRule node_up);

  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  const SeriesStore* const store_;
  const IngestCounters* const counters_;
  const AnalysisStats* const analysis_;
  const NodeUpRule node_up_;
};

}  // namespace fabricdiag::collector
