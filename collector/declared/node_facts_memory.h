// The embedded backend of the node facts (collector/declared/node_facts.h):
// held in this collector's memory only. Its agents resend their inventory
// on every new stream, so a restarted collector relearns every node's facts
// within seconds and nothing needs to be persisted.
//
//   MemoryNodeFacts facts;
//   IngestService ingest(&series, &counters, auth, placement,
//                        {facts, switches});
//   std::shared_ptr<const NodeFactsMap> all = facts.Snapshot();
//
// Thread-safe. Put never blocks on anything but the map's lock.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "absl/status/status.h"
#include "collector/declared/node_facts.h"
#include "collector/declared/node_facts_cache.h"

namespace fabricdiag::collector {

class MemoryNodeFacts final : public NodeFactsStore {
 public:
  // InvalidArgument for a bad node name (counted in rejected()).
  absl::Status Put(const v1::NodeFacts& facts) override;
  // InvalidArgument for a bad node name (counted in rejected()).
  absl::Status Delete(absl::string_view node) override;
  std::shared_ptr<const NodeFactsMap> Snapshot() const override {
    return cache_.Snapshot();
  }
  uint64_t Generation() const override { return cache_.Generation(); }

  size_t nodes() const { return cache_.nodes(); }
  // Puts refused (a node name no node can have).
  uint64_t rejected() const { return rejected_.load(); }

 private:
  NodeFactsCache cache_;
  std::atomic<uint64_t> rejected_{0};
};

}  // namespace fabricdiag::collector
