// The layouts as the analysis reads them: the registry's, each rank that
// declares no NIC (no `nic`, no `rails`) given the one its host's agent
// pairs with its local GPU (layout_nics.h).
//
// Why at read time and not at apply: the layout is the user's and stays as
// declared (`layout show` prints it back, a cluster replicates it), and a
// pairing may arrive long after the layout (the job is declared by the
// scheduler before its nodes' agents report, an agent restarts): filled
// here, a pass sees a pairing as soon as it is known, without the layout
// being applied again.
//
// Why cached: a pass reads the layouts every second, and a filled model is
// built again (LayoutModel::Build, O(ranks x dimensions)). Snapshot()
// returns the same snapshot while neither the registry's snapshot nor the
// facts' generation moved; when one moved, a layout is looked at again only
// if it changed or the facts did, and built again only if what the agents
// fill in for it changed.
//
//   FilledLayouts filled(&registry, &node_facts);
//   AnalysisRunner runner(&series, &filled, ...);
//
// Thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "collector/declared/layout_registry.h"
#include "collector/declared/node_facts.h"

namespace fabricdiag::collector {

class FilledLayouts final : public LayoutSnapshots {
 public:
  // Both must outlive this.
  FilledLayouts(const LayoutSnapshots* declared, const NodeFactsStore* facts);

  // The declared snapshot with the entries of the layouts the agents fill
  // NICs of replaced by entries whose model has them (applied_layout and
  // the rest as declared). The others are the registry's own entries.
  std::shared_ptr<const RegistrySnapshot> Snapshot() const override;

  // Layouts filled again since the start (built, not taken from the
  // cache); for tests and the benchmark.
  uint64_t builds() const;

 private:
  struct Filled {
    std::shared_ptr<const LayoutEntry> declared;
    uint64_t generation = 0;  // of the facts it was filled from
    // The NIC the agents gave each rank ("" where they gave none); empty
    // when they gave none at all.
    std::vector<std::string> agent_nics;
    std::shared_ptr<const LayoutEntry> entry;  // what the pass reads
  };

  // The entry for `declared` over `facts` of `generation`, from `previous`
  // when that still holds.
  std::shared_ptr<const LayoutEntry> Fill(
      const std::shared_ptr<const LayoutEntry>& declared,
      const NodeFactsMap& facts, uint64_t generation, Filled* previous) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const LayoutSnapshots* const declared_;
  const NodeFactsStore* const facts_;
  mutable absl::Mutex mu_;
  mutable std::shared_ptr<const RegistrySnapshot> seen_ ABSL_GUARDED_BY(mu_);
  mutable uint64_t seen_generation_ ABSL_GUARDED_BY(mu_) = 0;
  mutable std::shared_ptr<const RegistrySnapshot> served_ ABSL_GUARDED_BY(mu_);
  mutable std::map<std::string, Filled> filled_ ABSL_GUARDED_BY(mu_);
  mutable uint64_t builds_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace fabricdiag::collector
