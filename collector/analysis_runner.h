// Runs the analyzers continuously and feeds their findings to the
// FindingsStore.
//
// Every pass (default every second) takes a snapshot of the layouts and the
// nodes and runs each analyzer as its own "source": the store opens,
// updates and resolves findings per source. Today: agent liveness
// (agent_down) and the layout analyzers (tp_cross_node); the rate
// analyzers of issue #4 plug in here.
//
//   AnalysisRunner runner(&series, &registry, &findings, &stats, clock, {});
//   runner.Start();          // background thread
//   runner.RunLayoutPass();  // at once, after ApplyLayout
//   runner.Stop();
//
// Thread-safe: passes are serialized by a mutex.
#pragma once

#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/time/time.h"
#include "collector/agent_liveness.h"
#include "collector/collector_metrics.h"
#include "collector/findings_store.h"
#include "collector/layout_registry.h"
#include "collector/series_store.h"
#include "common/clock.h"

namespace fabricdiag::collector {

class AnalysisRunner {
 public:
  struct Options {
    absl::Duration interval = absl::Seconds(1);
    LivenessOptions liveness;
  };

  // Pointers must outlive the runner.
  AnalysisRunner(const SeriesStore* series, const LayoutRegistry* registry,
                 FindingsStore* findings, AnalysisStats* stats,
                 const Clock& clock, Options options);
  ~AnalysisRunner();

  void Start();
  void Stop();

  // One full pass (all analyzers).
  void RunOnce();
  // The layout analyzers only; returns the active findings of `job` after
  // the pass (what ApplyLayout answers with).
  std::vector<v1::Finding> RunLayoutPass(const std::string& job);

 private:
  void RunLiveness(absl::Time now);
  void RunLayoutAnalyzers(absl::Time now);
  void Persisted(const absl::Status& status);

  const SeriesStore* const series_;
  const LayoutRegistry* const registry_;
  FindingsStore* const findings_;
  AnalysisStats* const stats_;
  const Clock& clock_;
  const Options options_;

  std::mutex pass_mu_;  // one pass at a time
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace fabricdiag::collector
