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

absl::Status MemoryNodeFacts::Delete(absl::string_view node) {
  if (absl::Status s = CheckFactsNode(node); !s.ok()) {
    rejected_.fetch_add(1);
    return s;
  }
  cache_.Remove(node);
  return absl::OkStatus();
}

}  // namespace fabricdiag::collector
