// A collector's FeatureSlice (collector/runner/feature_exchange.h) as the
// v1::FeatureChunk messages it publishes (proto/cluster.proto), and back.
//
// A slice is cut into chunks of whole nodes (every node it has liveness or
// ports of, ascending name) of at most `max_chunk_bytes` each (but for a
// single node larger than that), so that no message outgrows the NATS
// servers' max_payload (1 MiB by default).
// A node's ports are written as one v1::PortBlock (columns of packed
// values: about half the bytes of a message per port, and parsed without
// one); chunks whose nodes carry `ports` as messages (collectors of an
// earlier build) are read too. Absent signals (NaN) stay absent.
//
//   std::vector<v1::FeatureChunk> chunks =
//       SliceToChunks(slice, "col-a", now);
//   FeatureSlice back;
//   for (const v1::FeatureChunk& c : chunks) {
//     if (!AddChunkToSlice(c, &back)) return Damaged();
//   }
//   FinishSlice(&back);
//
// Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "collector/runner/feature_exchange.h"
#include "proto/cluster.pb.h"
#include "proto/cluster_facts.pb.h"

namespace fabricdiag::cluster {

// Half the NATS servers' default max_payload: a node of 8 ports with every
// signal in both views is ~10 KB (docs/cluster.md), so a chunk never ends
// far past its budget.
inline constexpr size_t kDefaultChunkBytes = 512 << 10;

// `slice`'s views must be Finish()ed. At least one chunk, empty when the
// slice is.
std::vector<v1::FeatureChunk> SliceToChunks(
    const collector::FeatureSlice& slice, absl::string_view collector_id,
    absl::Time published, size_t max_chunk_bytes = kDefaultChunkBytes);

// Appends the nodes and ports of `chunk` to `slice` (views unfinished) and
// takes its window lengths. False when a node's ports are damaged (their
// columns do not fit together, a count is not a count): `slice` then holds
// part of the chunk and is to be dropped.
[[nodiscard]] bool AddChunkToSlice(const v1::FeatureChunk& chunk,
                                   collector::FeatureSlice* slice);

// The liveness facts alone of `slice`'s nodes (those with facts, ascending
// name), as the messages a collector publishes on its liveness subject
// (cluster/jetstream_features.h): cut as SliceToChunks cuts, at least one
// (empty when the slice has no nodes). A node is ~80 bytes here against
// ~4-10 KB with its ports.
std::vector<v1::FeatureChunkFacts> SliceToLivenessChunks(
    const collector::FeatureSlice& slice, absl::string_view collector_id,
    absl::Time published, size_t max_chunk_bytes = kDefaultChunkBytes);

// The liveness facts of `chunk`'s nodes (what AddChunkToSlice appends to
// a slice's nodes), without its ports.
std::vector<collector::NodeFacts> NodesOfChunk(const v1::FeatureChunk& chunk);
// The same from the chunk's header and facts alone (its ports unparsed).
std::vector<collector::NodeFacts> NodesOfChunk(
    const v1::FeatureChunkFacts& chunk);

// Sorts and indexes the views after the last AddChunkToSlice.
void FinishSlice(collector::FeatureSlice* slice);

}  // namespace fabricdiag::cluster
