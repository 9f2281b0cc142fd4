// The other collectors' latest feature chunks (cluster/feature_wire.h), as
// JetStreamFeatures (cluster/jetstream_features.h) receives and merges them;
// no NATS in here, so tests and benchmarks drive it directly.
//
// A chunk is decoded into ports and node facts when it is received (on the
// thread that receives it, outside the cache's lock), so the analysis pass
// that merges takes ready slices instead of decoding every collector's
// slice itself. A merge moves a chunk's decoded ports out; a chunk merged
// again before a newer one replaced it is parsed and decoded again, from
// the message kept (serialized) with it. A collector that merges nodes
// only (MergeScope::kNodes: it does not analyse) turns decoding on receipt
// off (DecodeOnReceipt): then only the chunk's node facts are kept beside
// the message, and a later merge of the fabric decodes what it takes.
// A collector's liveness chunks (v1::FeatureChunkFacts: its nodes' facts
// alone, ReceivedLiveness) are kept apart from its feature chunks: a merge
// of nodes only takes a collector's nodes from its liveness chunks when
// fresh ones arrived (from its feature chunks otherwise: a collector of an
// earlier build publishes none), a merge of the fabric from its feature
// chunks alone (a node whose ports are missing is not observed, however
// fresh its liveness). Which chunks count is the same for both kinds:
//   - a chunk counts while it was received at or after the merge's
//     `cutoff` (the receiver's clock);
//   - per collector, the chunk count its newest fresh chunk names: an index
//     beyond it is left over from a larger slice;
//   - of two copies of a chunk, the one published later is kept (a late
//     copy is dropped); this collector's own chunks are not kept.
//
//   FeatureCache cache("col-a");
//   cache.Received(data, absl::Now());                     // any thread
//   FeatureSlice fabric = cache.Merged(std::move(local),   // each pass
//                                      absl::Now() - absl::Seconds(5),
//                                      collector::MergeScope::kFabric);
//
// Thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "collector/runner/feature_exchange.h"
#include "proto/cluster.pb.h"

namespace fabricdiag::cluster {

class FeatureCache {
 public:
  struct Stats {
    uint64_t received_chunks = 0;  // feature chunks
    uint64_t received_bytes = 0;
    uint64_t received_liveness_chunks = 0;
    uint64_t received_liveness_bytes = 0;
    uint64_t undecodable_chunks = 0;
    // The latest Merged(): other collectors in it, and their ports.
    uint64_t merged_members = 0;
    uint64_t merged_remote_ports = 0;
    // Chunks the latest Merged() had to decode itself (merged before a
    // newer copy replaced the one it took at its previous merge, or not
    // decoded on receipt).
    uint64_t merge_decoded_chunks = 0;
    // The latest Merged(): per other collector its Presence lists live, or
    // that has unobserved nodes, how many of its nodes are unobserved
    // (collector::NodeFacts::unobserved).
    std::map<std::string, uint64_t> unobserved_nodes;
    // The latest Merged(): the nodes unobserved because their collector
    // handed their agents to another one (collector::NodeFacts::
    // handed_off), not counted in unobserved_nodes.
    uint64_t moving_nodes = 0;
  };

  // Who is in the cluster, for the nodes of a collector whose features
  // stopped arriving.
  struct Presence {
    absl::Time now;
    // The other collectors that are live members now (ClusterMembers).
    std::vector<std::string> live;
    // How long after a collector was last live its nodes stay unobserved.
    absl::Duration left_grace = collector::kAgentReconnectGrace;
  };

  explicit FeatureCache(std::string collector_id);
  FeatureCache(const FeatureCache&) = delete;
  FeatureCache& operator=(const FeatureCache&) = delete;

  // A serialized v1::FeatureChunk received at `received`: kept as the
  // latest chunk of its collector and index unless it is undecodable,
  // this collector's own, or older than the one kept.
  void Received(absl::string_view data, absl::Time received);

  // A serialized v1::FeatureChunkFacts (a liveness chunk) received at
  // `received`: kept as the latest of its collector and index, as
  // Received() keeps a feature chunk.
  void ReceivedLiveness(absl::string_view data, absl::Time received);

  // Whether a feature chunk of `collector_id` numbered `index` that was
  // received at or after `since` is kept.
  bool HasFeatureChunk(const std::string& collector_id, uint32_t index,
                       absl::Time since) const;

  // Forgets every feature chunk (their ports): a collector that stopped
  // receiving them frees what a merge of nodes would no longer read.
  void DropFeatures();

  // The other collectors of `live` with no liveness chunk received at or
  // after `cutoff`.
  std::vector<std::string> WithoutLiveness(
      absl::Time cutoff, const std::vector<std::string>& live) const;

  // Whether chunks received from now on are decoded as they arrive (the
  // default) or only when a merge of the fabric takes them.
  void DecodeOnReceipt(bool decode);

  // `local` (this collector's slice, its nodes' collector set to this
  // collector's id) merged with every other collector's chunks received at
  // or after `cutoff` (collector::MergeFeatureSlices), and the liveness of
  // nodes seen in earlier merges whose collector left the merge (sorted by
  // name, after the merged nodes). Another collector's node is judged as
  // of its chunk's publication (liveness.observed_until). A node whose
  // collector left the merge is unobserved, its liveness kept as last
  // merged, while `presence` lists that collector or listed it within
  // `left_grace`; otherwise it is judged now (observed_until is
  // InfiniteFuture), as without `presence`. So is a node that another
  // collector lists with an older last report than the one it was last
  // merged from: that is news the move outdated (an agent handed back or
  // failed over, whose new collector's features did not arrive this
  // time), not the agent's silence. While a collector `presence` lists
  // live is missing from the merge, a node silent (two of its intervals)
  // since after that collector's last news (any time, when this one never
  // heard from it), for at most `left_grace`, is
  // unobserved too, as of its last report, and listed as that
  // collector's: its agent may stream there now. With MergeScope::kNodes, nodes
  // only (no port, not even `local`'s): the other chunks' ports stay in the
  // cache for a later merge.
  collector::FeatureSlice Merged(collector::FeatureSlice local,
                                 absl::Time cutoff,
                                 collector::MergeScope scope);
  collector::FeatureSlice Merged(collector::FeatureSlice local,
                                 absl::Time cutoff, collector::MergeScope scope,
                                 const Presence& presence);

  enum class Feed { kFeatures, kLiveness };
  // When this collector last received a chunk of `feed` from each other
  // collector.
  std::map<std::string, absl::Time> LastReceived(Feed feed) const;

  Stats stats() const;

 private:
  // A chunk decoded alone: its ports (both views, Finish()ed) and nodes.
  struct Decoded {
    collector::FeatureSlice slice;  // recent always set
    double recent_seconds = 0;      // the chunk's
  };
  struct Chunk {
    // The message as received; null when its ports are damaged (then only
    // its nodes' facts count).
    std::shared_ptr<const std::string> data;
    int64_t published_unix_nanos = 0;
    uint32_t chunks = 0;  // of the slice it is part of
    absl::Time received;  // this collector's clock
    // Null once a merge took it, or when not decoded on receipt.
    std::unique_ptr<Decoded> decoded;
    // Its nodes' liveness, for a merge of nodes only.
    std::vector<collector::NodeFacts> nodes;
  };

  // What every chunk says of itself, read before it is kept.
  struct Header {
    std::string collector_id;
    int64_t published_unix_nanos = 0;
    uint32_t chunk = 0;
    uint32_t chunks = 0;
  };
  using ChunkMap = std::map<std::pair<std::string, uint32_t>, Chunk>;

  // Null when the chunk's ports are damaged (AddChunkToSlice).
  static std::unique_ptr<Decoded> Decode(const v1::FeatureChunk& chunk);
  // Keeps `c` in `into` unless a copy published later is there; the copy
  // it replaces, to be freed after the lock.
  static Chunk Keep(Header header, Chunk c, ChunkMap* into);
  // Per other collector, its chunks of `from` that count at `cutoff`:
  // received at or after it, and within the count its newest one names.
  static std::map<std::string, std::vector<std::pair<uint32_t, Chunk*>>> Fresh(
      ChunkMap& from, absl::Time cutoff);
  // The publication of the newest chunk of either kind kept from
  // `collector_id`, fresh or not; InfinitePast when none is.
  absl::Time NewestNews(const std::string& collector_id) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string id_;
  std::atomic<bool> decode_on_receipt_{true};
  mutable absl::Mutex mu_;
  // (collector id, chunk index) -> its latest chunk.
  ChunkMap chunks_ ABSL_GUARDED_BY(mu_);
  // The same of the liveness chunks (no data, no ports).
  ChunkMap liveness_ ABSL_GUARDED_BY(mu_);
  Stats stats_ ABSL_GUARDED_BY(mu_);
  // Liveness of nodes seen in earlier merges, kept when their collector
  // leaves the merge; sorted by node, one entry each.
  std::vector<collector::NodeFacts> remembered_ ABSL_GUARDED_BY(mu_);
  // When each other collector was last listed live (Presence::now).
  std::map<std::string, absl::Time> last_live_ ABSL_GUARDED_BY(mu_);
};

}  // namespace fabricdiag::cluster
