#include "collector/declared/node_facts_memory.h"

namespace fabricdiag::collector {

absl::Status MemoryNodeFacts::Put(const v1::NodeFacts& facts) {
  absl::StatusOr<bool> applied = cache_.Apply(facts);
  if (!applied.ok()) {
    rejected_.fetch_add(1);
    return applied.status();
  }
  return absl::OkStatus();
}

}  // namespace fabricdiag::collector
