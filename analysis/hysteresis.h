// Opens a finding only after its condition held for several passes and
// resolves it only after it was clear for several, so a single noisy sample
// never pages anyone and a flickering condition does not open and resolve
// every second.
//
//   Hysteresis gate(config.hysteresis);
//   gate.Seed(active_findings_after_restart);     // optional
//   every pass:
//     std::vector<Finding> open = gate.Step(RunRateAnalyzers(in));
//     store.Update(open);   // what is not in `open` resolves
//
// Findings are identified by (kind, job, node, device, group), the same key
// the collector's FindingsStore uses. While a finding counts down to
// resolution it stays open with its last evidence. A candidate naming a
// fault (kFaultEvidence) that a tracked finding of its kind and group names
// takes that finding's job, node and device: one fault keeps one key even
// where the port an analyzer names for it moves.
//
// Step() may also take what the analyzers see in the newest samples alone
// (HysteresisConfig::recent_seconds), and then:
//  - a condition there at least strong_over_threshold times past its
//    threshold (kOverThresholdEvidence) in strong_open_after consecutive
//    passes opens without waiting for the window mean, and keeps an open
//    finding from counting down;
//  - any condition there in open_after of the last open_within passes
//    opens as soon as the window mean has it too (k of n, confirmed by the
//    window), instead of after open_after consecutive window means.
// HysteresisConfig (analysis/analysis_config.h) has the interval budget
// these statistics meet and why they were chosen. Every open finding
// carries kIntervalsHeldEvidence: the passes its condition has been seen
// (in the window or the newest samples) since it was first seen.
//
// Thread-compatible: one owner calls Step().
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/functional/function_ref.h"
#include "absl/strings/string_view.h"
#include "analysis/analysis_config.h"
#include "analysis/finding.h"

namespace fabricdiag::analysis {

class Hysteresis {
 public:
  explicit Hysteresis(HysteresisConfig config);

  // Marks findings as already open (they were active before a restart), so
  // they stay open while the new process re-establishes the condition, and
  // resolve after `clear_after` passes if it is gone.
  void Seed(const std::vector<Finding>& open);

  // One analysis pass: `candidates` is what the analyzers see over the
  // window, `recent` what they see in the newest samples (empty when the
  // fast path is off). `quiet`: nodes whose agents missed their latest
  // report but are not down (IsAgentQuiet): a condition of such a node
  // (the finding's `node`) absent from this pass neither counts down nor
  // up, so an agent restart mid-fault neither resolves its finding nor
  // reopens it under a new id; it counts again once the node reports, or
  // once agent_down finds it down. `quiet_groups`: (job, group) pairs of
  // which a member is quiet in that sense (or not heard from yet): a
  // condition of that group, judged against its members (a hot expert
  // against the group's median), is held the same way. Returns every
  // finding open after this pass, sorted by key.
  std::vector<Finding> Step(
      std::vector<Finding> candidates, std::vector<Finding> recent = {},
      const absl::flat_hash_set<std::string>& quiet = {},
      const absl::flat_hash_set<std::pair<std::string, std::string>>&
          quiet_groups = {});

  // Stops tracking every condition of a node `keep` refuses (the finding's
  // `node`): one no longer seen here, whose conditions another owner now
  // tracks. Returns how many were dropped.
  size_t KeepNodes(absl::FunctionRef<bool(absl::string_view node)> keep);

  // Conditions being tracked (open or counting up).
  size_t tracked() const { return states_.size(); }

 private:
  using Key = std::tuple<std::string, std::string, std::string, std::string,
                         std::string>;
  struct State {
    int held = 0;    // consecutive passes with the condition over the window
    int strong = 0;  // consecutive passes strong in the newest samples
    int clear = 0;   // consecutive passes without either
    int seen = 0;    // passes with the condition since it was first seen
    // Bit i: the newest samples had the condition i passes ago (the last
    // open_within passes).
    uint32_t recent = 0;
    bool open = false;
    Finding last;
  };
  static Key KeyOf(const Finding& f);
  // Gives each candidate naming a tracked fault (kFaultEvidence) the key of
  // the finding that tracks it.
  void KeepFaultKeys(std::vector<Finding>* candidates) const;
  // One finding per key; the more severe where an analyzer repeats a key.
  static std::map<Key, Finding> ByKey(std::vector<Finding> findings);
  bool Strong(const Finding& f) const;
  // The bits of State::recent that count: the last open_within passes.
  uint32_t RecentMask() const;

  const HysteresisConfig config_;
  std::map<Key, State> states_;
};

}  // namespace fabricdiag::analysis
