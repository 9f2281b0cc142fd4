// What every NodeFactsStore backend does with the facts it is given, in one
// place: the checks and caps on what a node (or a bucket) may hold, the
// merge with what was held, and the in-memory map whose copy-on-write
// snapshot the readers get (collector/declared/node_facts.h).
//
// The embedded backend is this cache alone (node_facts_memory.h); the
// cluster backend keeps one as the local copy its bucket watcher fills.
//
//   NodeFactsCache cache;
//   absl::StatusOr<bool> changed = cache.Apply(facts);  // merged, capped
//   std::shared_ptr<const NodeFactsMap> all = cache.Snapshot();
//
// Thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "collector/declared/node_facts.h"
#include "proto/ingest.pb.h"

namespace fabricdiag::collector {

// Caps on what one node's facts hold, so that one hostile or buggy sender
// cannot make every collector of a cluster hold megabytes for it. The agent
// sends at most 4,096 neighbors (a 512-port switch with a few per port)
// with texts of at most 255 bytes (an LLDP string TLV's limit); a node has
// at most a few dozen GPUs and netdevs.
inline constexpr size_t kMaxFactsNeighbors = 4096;
inline constexpr size_t kMaxFactsGpus = 256;
inline constexpr size_t kMaxFactsNetdevs = 4096;
inline constexpr size_t kMaxFactsTextBytes = 255;

// InvalidArgument when `node` is not a node name (common/names.h).
absl::Status CheckFactsNode(absl::string_view node);

// `facts` made safe to hold: InvalidArgument when facts.node is not a node
// name (common/names.h); otherwise texts cut to kMaxFactsTextBytes, entries
// beyond the caps dropped, and neighbors without a valid local port,
// GPU pairs naming an invalid device and netdev map entries with invalid
// names dropped.
absl::StatusOr<v1::NodeFacts> SanitizeNodeFacts(v1::NodeFacts facts);

// `incoming` with what it leaves unknown taken from `held` (may be null):
// an empty lldp_source keeps the held source and neighbors, gpus_read false
// keeps the held pairs. A sender that could not read its LLDP or PCI tree
// this time does not erase what it reported before.
v1::NodeFacts MergeNodeFacts(const v1::NodeFacts* held, v1::NodeFacts incoming);

// Equal apart from reported_unix_nanos.
bool SameNodeFacts(const v1::NodeFacts& a, const v1::NodeFacts& b);

// What a NodeFactsStore backend reports on /metrics.
struct NodeFactsStats {
  size_t nodes = 0;            // nodes whose facts are held
  uint64_t writes_failed = 0;  // Puts refused, or writes the backend lost
  uint64_t queue_dropped = 0;  // writes replaced or dropped while queued
};

// The fabricdiag_node_facts_* families (docs/metrics.md), in every mode.
void AppendNodeFactsMetrics(const NodeFactsStats& stats, std::string* out);

class NodeFactsCache {
 public:
  NodeFactsCache();

  // Sanitizes `facts`, merges them with what is held for the node and holds
  // the result; true when that changed what is held (the generation moved).
  // InvalidArgument for a bad node name (nothing changes).
  absl::StatusOr<bool> Apply(const v1::NodeFacts& facts);

  // What Apply would hold for `facts`, without holding it: the merged,
  // sanitized facts, and whether they differ from what is held.
  struct Merged {
    v1::NodeFacts facts;
    bool changed = false;
  };
  absl::StatusOr<Merged> Merge(const v1::NodeFacts& facts) const;

  // Drops what is held for `node`; true when something was (the generation
  // moved).
  bool Remove(absl::string_view node);

  // The map at one moment (never null). Rebuilt at the first call after a
  // change, so a burst of Apply calls (every agent reconnecting) costs one
  // copy per reader pass, not one per Apply.
  std::shared_ptr<const NodeFactsMap> Snapshot() const;
  uint64_t Generation() const;
  size_t nodes() const;

 private:
  mutable absl::Mutex mu_;
  NodeFactsMap held_ ABSL_GUARDED_BY(mu_);
  uint64_t generation_ ABSL_GUARDED_BY(mu_) = 0;
  mutable std::shared_ptr<const NodeFactsMap> published_ ABSL_GUARDED_BY(mu_);
  mutable uint64_t published_generation_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace fabricdiag::collector
