#include "collector/runner/collector_metrics.h"

#include <string>

#include "collector/runner/agent_liveness.h"
#include "common/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "prometheus/text_serializer.h"

namespace fabricdiag::collector {
namespace {

using ::testing::HasSubstr;

// Every pass is in the histogram, not only the last one a scrape sees.
TEST(CollectorMetricsTest, EveryAnalysisPassIsInTheHistogram) {
  FakeClock clock;
  SeriesStore store(SeriesStore::Options{}, clock);
  IngestCounters counters;
  AnalysisStats stats;
  stats.RecordPass(3'000'000);       // 3 ms
  stats.RecordPass(1'000'000'000);   // 1 s: on the bound, in its bucket
  stats.RecordPass(1'500'000'000);   // 1.5 s
  stats.RecordPass(12'000'000'000);  // over every bound
  stats.RecordPass(500'000'000);     // the last one
  CollectorMetrics metrics(&store, &counters, &stats,
                           AgentUpRule(analysis::AgentDownConfig{}));
  const std::string text =
      prometheus::TextSerializer().Serialize(metrics.Collect());
  EXPECT_THAT(text, HasSubstr("fabricdiag_analysis_passes_total 5\n"));
  EXPECT_THAT(text,
              HasSubstr("fabricdiag_analysis_pass_duration_seconds 0.5\n"));
  EXPECT_THAT(text, HasSubstr("# TYPE fabricdiag_analysis_pass_seconds "
                              "histogram\n"));
  EXPECT_THAT(text, HasSubstr("fabricdiag_analysis_pass_seconds_bucket{"
                              "le=\"0.01\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("fabricdiag_analysis_pass_seconds_bucket{"
                              "le=\"0.5\"} 2\n"));
  EXPECT_THAT(text, HasSubstr("fabricdiag_analysis_pass_seconds_bucket{"
                              "le=\"1\"} 3\n"));
  EXPECT_THAT(text, HasSubstr("fabricdiag_analysis_pass_seconds_bucket{"
                              "le=\"2.5\"} 4\n"));
  EXPECT_THAT(text, HasSubstr("fabricdiag_analysis_pass_seconds_bucket{"
                              "le=\"10\"} 4\n"));
  EXPECT_THAT(text, HasSubstr("fabricdiag_analysis_pass_seconds_bucket{"
                              "le=\"+Inf\"} 5\n"));
  EXPECT_THAT(text, HasSubstr("fabricdiag_analysis_pass_seconds_count 5\n"));
  EXPECT_THAT(text, HasSubstr("fabricdiag_analysis_pass_seconds_sum 15.003\n"));
}

}  // namespace
}  // namespace fabricdiag::collector
