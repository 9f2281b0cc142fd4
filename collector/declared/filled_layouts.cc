#include "collector/declared/filled_layouts.h"

#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "collector/declared/layout_metrics.h"
#include "collector/declared/layout_nics.h"
#include "common/log.h"

namespace fabricdiag::collector {

FilledLayouts::FilledLayouts(const LayoutSnapshots* declared,
                             const NodeFactsStore* facts)
    : declared_(declared), facts_(facts) {}

uint64_t FilledLayouts::builds() const {
  absl::MutexLock lock(&mu_);
  return builds_;
}

std::shared_ptr<const RegistrySnapshot> FilledLayouts::Snapshot() const {
  // The generation first: facts newer than it are filled in now and filled
  // again at the next call, never missed.
  const uint64_t generation = facts_->Generation();
  std::shared_ptr<const RegistrySnapshot> declared = declared_->Snapshot();
  absl::MutexLock lock(&mu_);
  if (declared == seen_ && generation == seen_generation_) return served_;
  std::shared_ptr<const NodeFactsMap> facts = facts_->Snapshot();
  auto next = std::make_shared<RegistrySnapshot>(*declared);
  std::map<std::string, Filled> filled;
  for (auto& [job, entry] : next->layouts) {
    Filled& f = filled[job];
    auto previous = filled_.find(job);
    if (previous != filled_.end()) f = std::move(previous->second);
    entry = Fill(entry, *facts, generation, &f);
  }
  filled_ = std::move(filled);
  seen_ = std::move(declared);
  seen_generation_ = generation;
  served_ = std::move(next);
  return served_;
}

std::shared_ptr<const LayoutEntry> FilledLayouts::Fill(
    const std::shared_ptr<const LayoutEntry>& declared,
    const NodeFactsMap& facts, uint64_t generation, Filled* previous) const {
  if (previous->declared == declared && previous->generation == generation) {
    return previous->entry;
  }
  const std::vector<RankNic> nics = ResolveRankNics(declared->model, facts);
  std::vector<std::string> agent_nics;
  if (CountNicSources(nics).agent > 0) {
    agent_nics.reserve(nics.size());
    for (const RankNic& n : nics) {
      agent_nics.push_back(n.source == NicSource::kAgent ? n.nic : "");
    }
  }
  const bool same = previous->declared == declared &&
                    previous->agent_nics == agent_nics && previous->entry;
  previous->declared = declared;
  previous->generation = generation;
  if (same) return previous->entry;
  previous->agent_nics = std::move(agent_nics);
  previous->entry = declared;
  absl::StatusOr<std::optional<analysis::LayoutModel>> model =
      FilledModel(declared->model, nics);
  if (!model.ok()) {
    // Names and GPU indices are checked before they fill anything: a
    // failure here is a bug, and the layout is analysed as declared.
    LogError(absl::StrCat("layout ", declared->model.job(),
                          ": the NICs the agents pair could not be filled: ",
                          model.status().message()));
    return previous->entry;
  }
  if (!model->has_value()) return previous->entry;
  ++builds_;
  // Its group member series name the filled NICs too, so that dashboards
  // join them with the agents' rates (layout_metrics.h).
  LayoutSeries series = RenderLayoutSeries(**model);
  previous->entry = std::make_shared<const LayoutEntry>(
      LayoutEntry{declared->applied_layout, **std::move(model),
                  declared->applied, std::move(series), declared->revision});
  return previous->entry;
}

}  // namespace fabricdiag::collector
