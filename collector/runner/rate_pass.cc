#include "collector/runner/rate_pass.h"

#include <optional>
#include <string>
#include <system_error>
#include <thread>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "analysis/agent_down.h"
#include "analysis/agent_missing.h"
#include "analysis/finding_wire.h"
#include "analysis/tp_cross_node.h"

namespace fabricdiag::collector {

namespace {

// The findings of `active` the rate analyzers own: neither liveness's
// (agent_down, agent_missing) nor the layout analyzers' (tp_cross_node).
std::vector<analysis::Finding> RateFindingsOf(
    const std::vector<v1::Finding>& active) {
  std::vector<analysis::Finding> rate;
  for (const v1::Finding& f : active) {
    if (f.kind() == analysis::kAgentDownKind ||
        f.kind() == analysis::kAgentMissingKind ||
        f.kind() == analysis::kTpCrossNodeKind) {
      continue;
    }
    rate.push_back(analysis::FindingFromWire(f));
  }
  return rate;
}

}  // namespace

void SeedRateState(const std::vector<v1::Finding>& active,
                   analysis::Hysteresis* hysteresis,
                   analysis::StragglerBaselines* baselines) {
  const std::vector<analysis::Finding> rate = RateFindingsOf(active);
  hysteresis->Seed(rate);
  baselines->Seed(rate);
}

void SeedStragglerBaselines(const std::vector<v1::Finding>& active,
                            analysis::StragglerBaselines* baselines) {
  baselines->Seed(RateFindingsOf(active));
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

absl::Status SaveStragglerBaselines(
    BaselinesStore* store, const analysis::StragglerBaselines& baselines,
    absl::Time now) {
  return store->Write(baselines.Serialize(), now);
}

absl::StatusOr<LoadedBaselines> LoadStragglerBaselines(
    BaselinesStore* store, absl::Time now, absl::Duration max_age,
    const std::vector<const analysis::LayoutModel*>& layouts,
    analysis::StragglerBaselines* baselines) {
  LoadedBaselines out;
  absl::StatusOr<std::optional<ObjectFile>> stored = store->Read();
  if (absl::IsDataLoss(stored.status())) {
    out.problem = std::string(stored.status().message());
    out.damaged = true;
    return out;
  }
  if (!stored.ok()) return stored.status();
  if (!stored->has_value()) return out;
  const ObjectFile& f = **stored;
  if (now - f.written > max_age) {
    out.problem = absl::StrCat(
        "straggler baselines written ", absl::FormatDuration(now - f.written),
        " ago, more than ", absl::FormatDuration(max_age),
        ": not used, learning afresh");
    return out;
  }
  absl::flat_hash_map<absl::string_view, const analysis::LayoutModel*> by_job;
  for (const analysis::LayoutModel* m : layouts) {
    if (m != nullptr) by_job[m->job()] = m;
  }
  absl::StatusOr<size_t> restored = baselines->Restore(
      f.payload, [&](absl::string_view job, absl::string_view host,
                     absl::string_view nic) {
        auto it = by_job.find(job);
        const bool present = it != by_job.end() &&
                             it->second->HostIndex(host).has_value() &&
                             it->second->NicIndex(nic).has_value();
        if (!present) ++out.dropped;
        return present;
      });
  if (!restored.ok()) {
    out.damaged = true;
    out.dropped = 0;
    out.problem =
        absl::StrCat(store->Describe(), ": ", restored.status().message());
    store->Reject(restored.status().message());
    return out;
  }
  out.restored = *restored;
  return out;
}

}  // namespace fabricdiag::collector
