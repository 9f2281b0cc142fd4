// What the nodes reported about themselves that changes rarely: the LLDP
// neighbors of their ports and the GPU-NIC pairs (v1::NodeFacts, derived
// from each node's Inventory). The discovered topology is drawn from it and
// a layout's missing NICs are filled from it.
//
// The seam between the ingest that learns the facts and their readers, with
// two backends as for the declared state (declared_state.h):
//   - Embedded: held in memory by the one collector (its agents resend their
//     inventory on every new stream, so a restart relearns it in seconds).
//   - Cluster (--nats): a JetStream key-value bucket, so that every collector
//     holds the facts of every node, whichever collector its agent streams
//     to, and draws the same topology.
//
//   store->Put(facts);                         // the ingest, on an Inventory
//   store->Delete("gpu-007");                  // `fabricdiag nodes forget`
//   std::shared_ptr<const NodeFactsMap> all = store->Snapshot();
//   if (store->Generation() != seen) ...       // rebuild what depends on it
//
// Implementations are thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "proto/ingest.pb.h"

namespace fabricdiag::collector {

// node name -> what it last reported. Each node's facts are shared by the
// snapshots that hold them, never changed: a write replaces the node's
// pointer, so a snapshot costs a pointer per node, not a copy of every
// node's neighbors and pairings (while thousands of agents connect, the
// facts move between any two snapshots).
using NodeFactsMap =
    absl::flat_hash_map<std::string, std::shared_ptr<const v1::NodeFacts>>;

class NodeFactsStore {
 public:
  virtual ~NodeFactsStore() = default;

  // Records what `facts.node` reported, merged with what was held for it
  // (node_facts_cache.h, MergeNodeFacts): an empty lldp_source keeps the
  // held source and neighbors, gpus_read false keeps the held GPU-NIC pairs,
  // so a node that could not read its LLDP or PCI tree this time erases
  // nothing; every other field is replaced. Facts that merge to those held
  // (reported_unix_nanos aside) change nothing: agents resend their
  // inventory on every stream. InvalidArgument for a bad node name. Never
  // waits for the network: in a cluster the write is queued, Snapshot()
  // shows it once it is in the bucket, and a write NATS refuses is counted
  // (fabricdiag_node_facts_writes_failed_total).
  virtual absl::Status Put(const v1::NodeFacts& facts) = 0;

  // Drops what is held for `node` (`fabricdiag nodes forget`): its LLDP
  // neighbors leave the discovered topology and its GPU-NIC pairs the
  // filled layouts until its agent reports an inventory again (it does on
  // every new stream); a Put after the Delete starts from nothing, not
  // merged with what was dropped. This store's Snapshot() drops the node at
  // once; in a cluster every other collector drops it once the delete is in
  // the bucket (queued as Put is: never waits for the network, a delete
  // NATS refuses is counted in fabricdiag_node_facts_writes_failed_total).
  // Dropping a node held nowhere changes nothing. InvalidArgument for a bad
  // node name.
  virtual absl::Status Delete(absl::string_view node) = 0;

  // Every node's facts at one moment (never null). A copy-on-write
  // snapshot: holding it never blocks Put.
  virtual std::shared_ptr<const NodeFactsMap> Snapshot() const = 0;

  // Increases at every change of the snapshot, so that a reader rebuilds
  // what it derives only when the facts moved.
  virtual uint64_t Generation() const = 0;
};

}  // namespace fabricdiag::collector
