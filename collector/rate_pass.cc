#include "collector/rate_pass.h"

#include <system_error>
#include <thread>
#include <utility>

#include "analysis/agent_down.h"
#include "analysis/finding_wire.h"
#include "analysis/tp_cross_node.h"

namespace fabricdiag::collector {

void SeedRateState(const std::vector<v1::Finding>& active,
                   analysis::Hysteresis* hysteresis,
                   analysis::StragglerBaselines* baselines) {
  std::vector<analysis::Finding> rate;
  for (const v1::Finding& f : active) {
    if (f.kind() == analysis::kAgentDownKind ||
        f.kind() == analysis::kTpCrossNodeKind) {
      continue;
    }
    rate.push_back(analysis::FindingFromWire(f));
  }
  hysteresis->Seed(rate);
  baselines->Seed(rate);
}

RateFindings RunRatePass(analysis::AnalysisInput in,
                         const analysis::FabricView* recent,
                         analysis::StragglerBaselines* baselines, int threads) {
  RateFindings found;
  auto in_turn = [&] {
    in.straggler_baselines = baselines;
    found.window = analysis::RunRateAnalyzers(in);
    baselines->Update(in);
    if (recent != nullptr) {
      in.view = recent;
      found.recent = analysis::RunRateAnalyzers(in);
    }
    return found;
  };
  if (threads <= 1) return in_turn();
  analysis::StragglerBaselines updated;
  std::thread second;
  try {
    second = std::thread([&in, recent, baselines, &updated, &found] {
      // Reads `baselines`, as the calling thread does meanwhile; writes only
      // its own copy and found.recent.
      updated = *baselines;
      analysis::AnalysisInput next = in;
      next.straggler_baselines = &updated;
      updated.Update(next);
      if (recent != nullptr) {
        next.view = recent;
        found.recent = analysis::RunRateAnalyzers(next);
      }
    });
  } catch (const std::system_error&) {
    return in_turn();  // the process is out of threads: one after the other
  }
  analysis::AnalysisInput window = in;
  window.straggler_baselines = baselines;
  found.window = analysis::RunRateAnalyzers(window);
  second.join();
  *baselines = std::move(updated);
  return found;
}

}  // namespace fabricdiag::collector
