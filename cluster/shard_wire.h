// One analysis shard's ports of a collector's FeatureSlice as the
// v1::ShardChunk messages it sends the shard's owner (proto/cluster.proto),
// and back.
//
// Where a FeatureChunk carries every signal of every port as doubles (~540
// bytes for a healthy RoCE NIC, 1,126 with every signal), a shard's owner
// needs only what its analyzers read (analysis/shard_signals.h: 23 slots
// for a shard of jobs, 38 for one of switches, most of them absent on a
// given port), and no analyzer's threshold is finer than a float's 7
// digits (the link rates, shown to operators as they are, travel as
// integers): a NIC of a job shard is about 100 bytes here, both views. The
// reader knows which slots a block carries from the block, not from its
// own build, so a writer that sends more or fewer slots is still read.
//
//   std::vector<v1::ShardChunk> chunks = ShardToChunks(
//       slice, ports_of_jobs_17, analysis::ShardKind::kJobs,
//       {"jobs.17", "col-a", now});
//   analysis::FabricView window, recent;  // kept from pass to pass
//   AssembleShardViews(received_chunks, &local, own_ports_of_jobs_17,
//                      &window, &recent, &damaged);
//
// Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "analysis/fabric_view.h"
#include "analysis/shard_map.h"
#include "analysis/shard_signals.h"
#include "cluster/feature_wire.h"
#include "collector/runner/feature_exchange.h"
#include "proto/cluster.pb.h"

namespace fabricdiag::cluster {

// Who sends which shard, and when.
struct ShardChunkHeader {
  absl::string_view shard;  // "jobs.17"
  absl::string_view collector_id;
  absl::Time published;
  size_t max_chunk_bytes = kDefaultChunkBytes;
};

// The ports of `slice.window` at the indexes `ports` (ascending), with the
// same ports of `slice.recent`, cut down to what `kind`'s analyzers read.
// `slice`'s views must be Finish()ed. At least one chunk (empty when
// `ports` is) of whole nodes: a chunk ends with the node that takes it to
// `max_chunk_bytes` (kDefaultChunkBytes is half the NATS servers' default
// max_payload, and a node's ports are a few KB). Indexes past the view are
// ignored.
std::vector<v1::ShardChunk> ShardToChunks(const collector::FeatureSlice& slice,
                                          absl::Span<const uint32_t> ports,
                                          analysis::ShardKind kind,
                                          const ShardChunkHeader& header);

// ShardToChunks()'s chunks serialized, written straight into buffers kept
// from one write to the next: no message is built and no buffer allocated
// once a collector has written its shards a pass or two. The bytes are
// those SerializeToString() makes of ShardToChunks()'s messages.
class ShardChunkWriter {
 public:
  ShardChunkWriter();
  ~ShardChunkWriter();
  ShardChunkWriter(ShardChunkWriter&&) noexcept;
  ShardChunkWriter& operator=(ShardChunkWriter&&) noexcept;

  // The chunks ShardToChunks() would return, serialized; valid until the
  // next write.
  absl::Span<const absl::string_view> Write(
      const collector::FeatureSlice& slice, absl::Span<const uint32_t> ports,
      analysis::ShardKind kind, const ShardChunkHeader& header);

  // Who sends a pass's shards, and when.
  struct Sender {
    absl::string_view collector_id;
    absl::Time published;
    size_t max_chunk_bytes = kDefaultChunkBytes;
  };

  // Write() for each of `shards`, in their order (chunk k of a shard is
  // its k-th; valid until the next write), in one sweep over the slice: a
  // port that several shards hold (a job's NIC is also its switch's) is
  // read once, and found once in the recent view, not once per shard. At
  // a million GPUs a slice's ports are ~100 MB read from memory: reading
  // them once per kind of shard was most of what publishing cost.
  std::vector<absl::Span<const absl::string_view>> WriteShards(
      const collector::FeatureSlice& slice,
      absl::Span<const analysis::ShardPorts* const> shards,
      const Sender& sender);

 private:
  // One shard to write.
  struct Target {
    absl::string_view shard;
    analysis::ShardKind kind;
    absl::Span<const uint32_t> ports;
  };
  std::vector<absl::Span<const absl::string_view>> WriteTargets(
      const collector::FeatureSlice& slice, absl::Span<const Target> targets,
      const Sender& sender);

  // A target's buffers (shard_wire.cc), by its position in the last write.
  struct Buffers;
  std::vector<std::unique_ptr<Buffers>> buffers_;
  // The shards of each port (CSR: port i's are at [first_[i],
  // first_[i + 1]) of of_port_), kept for their storage.
  std::vector<uint32_t> first_;
  std::vector<uint32_t> of_port_;
};

// `data` parsed as a v1::ShardChunk on an arena of its own, which the
// pointer keeps: a chunk's hundreds of node and device names are carved
// from a few blocks, not allocated one by one, and freed with them when
// the last holder lets go. Null when `data` is not a ShardChunk.
std::shared_ptr<const v1::ShardChunk> ParseShardChunk(absl::string_view data);

// Appends `chunk`'s ports to `window` and, those it has in its recent view,
// to `recent` (may be null), each view's as one run (FabricView::
// AppendSorted: Finish() merges the chunks' runs), every slot the chunk
// does not carry absent, and takes the chunk's window lengths. False, and
// nothing added, when the block is damaged (columns that do not fit
// together, a slot out of range, a count that is not one).
[[nodiscard]] bool AddShardChunk(const v1::ShardChunk& chunk,
                                 analysis::FabricView* window,
                                 analysis::FabricView* recent);

// A shard's views assembled from every collector's chunks and this
// collector's own ports of it: `window` and `recent` are built again
// (FabricView::BeginRewrite(): the ports that come back where they were
// last pass are rewritten in place, the view's index kept) with every port
// of `chunks` and `local`'s ports at `own_ports` (ascending indexes into
// local->window; local may be null), each port written once, in (node,
// device) order, then Finish()ed. A node that several sources hold (one
// changing collectors) has every source's ports. A damaged chunk
// (AddShardChunk() would refuse it) is left out whole, its index in
// `chunks` appended to *damaged (may be null). The views' window lengths
// are `local`'s, else the chunks'.
void AssembleShardViews(absl::Span<const v1::ShardChunk* const> chunks,
                        const collector::FeatureSlice* local,
                        absl::Span<const uint32_t> own_ports,
                        analysis::FabricView* window,
                        analysis::FabricView* recent,
                        std::vector<size_t>* damaged = nullptr);

}  // namespace fabricdiag::cluster
