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
// resolution it stays open with its last evidence.
//
// Thread-compatible: one owner calls Step().
#pragma once

#include <map>
#include <string>
#include <tuple>
#include <vector>

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

  // One analysis pass: `candidates` is what the analyzers see now. Returns
  // every finding open after this pass, sorted by key.
  std::vector<Finding> Step(std::vector<Finding> candidates);

  // Conditions being tracked (open or counting up).
  size_t tracked() const { return states_.size(); }

 private:
  using Key = std::tuple<std::string, std::string, std::string, std::string,
                         std::string>;
  struct State {
    int held = 0;   // consecutive passes with the condition
    int clear = 0;  // consecutive passes without it
    bool open = false;
    Finding last;
  };
  static Key KeyOf(const Finding& f);

  const HysteresisConfig config_;
  std::map<Key, State> states_;
};

}  // namespace fabricdiag::analysis
