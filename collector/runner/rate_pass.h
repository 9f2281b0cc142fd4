// The rate analyzers' two runs of an analysis pass (collector/
// analysis_runner.h), on two threads:
//   1. RunRateAnalyzers over the window view, judging straggler_nic against
//      the baselines as they were before this pass;
//   2. StragglerBaselines::Update with the window view (a NIC is measured
//      against its past, not against a baseline that already holds the
//      window it is judged on);
//   3. RunRateAnalyzers over the newest-samples view, with the baselines
//      updated.
// The findings are those of running 1, 2, 3 in turn on one thread: the
// second thread updates a copy of the baselines and runs 3 with it while
// the calling thread runs 1 with the baselines unchanged; the copy then
// replaces them. Both threads only read the views, the layouts and the
// topology (RunRateAnalyzers is pure).
//
//   analysis::AnalysisInput in = ...;  // in.view: the window view
//   RateFindings found = RunRatePass(in, recent_or_null, &baselines);
//
// Thread-compatible: the caller owns `baselines` for the call.
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "analysis/analyzer.h"
#include "analysis/fabric_view.h"
#include "analysis/finding.h"
#include "analysis/hysteresis.h"
#include "analysis/layout_model.h"
#include "analysis/straggler_nic.h"
#include "collector/state/baselines_store.h"
#include "proto/collector.pb.h"

namespace fabricdiag::collector {

struct RateFindings {
  std::vector<analysis::Finding> window;
  std::vector<analysis::Finding> recent;  // empty without a recent view
};

// `in.view` is the window view; `in.straggler_baselines` is ignored (set to
// `baselines`, then to the updated copy). `recent` may be null. With
// `threads` 1, or when no thread can be started, the three steps run in
// turn on the calling thread.
RateFindings RunRatePass(analysis::AnalysisInput in,
                         const analysis::FabricView* recent,
                         analysis::StragglerBaselines* baselines,
                         int threads = 2);

// Where a collector that starts (or takes the analysis over from another)
// picks the rate analyzers up: from the findings store's `active` findings.
// `hysteresis` (fresh) is seeded with every one that neither liveness
// (agent_down, agent_missing) nor the layout analyzers (tp_cross_node) own,
// so they stay open while the windows refill; `baselines` (fresh) with the
// baselines their stragglers were judged against (StragglerBaselines::Seed).
void SeedRateState(const std::vector<v1::Finding>& active,
                   analysis::Hysteresis* hysteresis,
                   analysis::StragglerBaselines* baselines);
// Only the second half of SeedRateState: `baselines` take those the open
// stragglers of `active` were judged against.
void SeedStragglerBaselines(const std::vector<v1::Finding>& active,
                            analysis::StragglerBaselines* baselines);

// Every NIC's straggler_nic baseline, kept where the next process to
// analyse reads it (collector/state/baselines_store.h: the state directory's
// straggler_baselines.pb, or a cluster's bucket), so that a restarted
// collector, or the collector that takes the analysis over, judges a NIC
// against the history learned before: without it, a NIC of an
// expert-parallel job that was already slow when the new process started
// would be learned as normal and never reported. The collector that
// analyses writes them every kStragglerBaselinesEvery (and when it stops)
// and reads them before its first pass.
inline constexpr absl::Duration kStragglerBaselinesEvery = absl::Minutes(1);
// Baselines older than this at load are history of another fabric state
// (the collector was down long, the jobs likely changed): dropped whole.
inline constexpr absl::Duration kStragglerBaselinesMaxAge = absl::Hours(1);

// Durably replaces the stored baselines with `baselines`.
absl::Status SaveStragglerBaselines(
    BaselinesStore* store, const analysis::StragglerBaselines& baselines,
    absl::Time now);

// What LoadStragglerBaselines did.
struct LoadedBaselines {
  size_t restored = 0;  // baselines added
  size_t dropped = 0;   // of NICs none of `layouts` has
  // Empty when all was well (or nothing was stored); otherwise why the
  // stored baselines were not used: damaged (set aside, a warning to log)
  // or stale.
  std::string problem;
  bool damaged = false;
};

// Adds the stored baselines to `baselines` (fresh, before SeedRateState,
// whose open findings then take precedence): those of NICs of `layouts`
// only, none when they are older than `max_age` at `now`. Damaged ones
// (envelope, checksum or payload) are set aside (BaselinesStore::Reject)
// and nothing is added: a fresh start. Errors only when the store cannot
// be read now (EIO, permissions, NATS unreachable).
absl::StatusOr<LoadedBaselines> LoadStragglerBaselines(
    BaselinesStore* store, absl::Time now, absl::Duration max_age,
    const std::vector<const analysis::LayoutModel*>& layouts,
    analysis::StragglerBaselines* baselines);

}  // namespace fabricdiag::collector
