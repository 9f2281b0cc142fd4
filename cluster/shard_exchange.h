// Analysis shards' features between the collectors of a cluster: each pass
// a collector sends the ports it holds of every shard it does not own to
// that shard's owner, and the owner of a shard receives every collector's
// ports of it (analysis/shard_map.h says which ports a shard holds,
// cluster/shard_wire.h how they travel, cluster/shard_leases.h who owns a
// shard).
//
// Core NATS, no stream: subject <subject>.<shard>.<collector_id>.<chunk>
// (fabricdiag.shard.jobs.17.col-a.0) carries chunk <chunk> of that
// collector's latest ports of the shard. Like the liveness subject
// (cluster/jetstream_features.h) these are news of one pass, sent again
// the next: not stored and not replicated (no JetStream acknowledgement,
// no Raft log, no copy on three servers). A lost message costs the owner
// one pass of that collector's ports of the shard; an owner that takes a
// shard over has its features from the next pass on.
//
// An owner subscribes to <subject>.<shard>.> for each shard it owns
// (Own()), keeps each collector's newest complete publication of each (all
// its chunks; a newer one replaces it once complete), and Received()
// decodes those that arrived within `freshness` of this collector's clock.
//
//   ASSIGN_OR_RETURN(auto shards, ShardExchange::Open(nats, "col-a", {}));
//   shards->Own({"jobs.3", "switches.9"});
//   shards->Publish(local, analysis::AssignShards(...), now).IgnoreError();
//   ShardExchange::ShardInput in = shards->Received("jobs.3", now);
//
// Thread-safe.
#pragma once

#include <nats/nats.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "analysis/fabric_view.h"
#include "analysis/shard_map.h"
#include "cluster/feature_wire.h"
#include "cluster/nats_connection.h"
#include "cluster/nats_subscription.h"
#include "cluster/shard_wire.h"
#include "collector/runner/feature_exchange.h"
#include "proto/cluster.pb.h"

namespace fabricdiag::cluster {

inline constexpr char kShardSubject[] = "fabricdiag.shard";

class ShardExchange {
 public:
  struct Options {
    std::string subject = kShardSubject;
    // A collector's publication of a shard counts while it arrived within
    // this long: one that stops publishing leaves the shard's input.
    absl::Duration freshness = absl::Seconds(5);
    size_t max_chunk_bytes = kDefaultChunkBytes;
  };

  struct Stats {
    uint64_t published_chunks = 0;
    uint64_t last_published_bytes = 0;  // of the latest Publish()
    uint64_t publish_errors = 0;
    uint64_t received_chunks = 0;
    // Messages that were not a chunk of a shard owned here from another
    // collector (garbage, a shard no longer owned, an impossible chunk
    // number, this collector's own), or that did not decode: dropped.
    uint64_t refused_chunks = 0;
  };

  // `nats` must outlive the result.
  static absl::StatusOr<std::unique_ptr<ShardExchange>> Open(
      NatsConnection* nats, std::string collector_id, Options options);
  ~ShardExchange();
  ShardExchange(const ShardExchange&) = delete;
  ShardExchange& operator=(const ShardExchange&) = delete;

  // Receives the shards `owned` from now on, and no other: subscribes to
  // those new here, unsubscribes from the others and forgets what they
  // received. Unavailable (the shards it could subscribe to are owned all
  // the same) when a subscription failed; the next call tries again.
  absl::Status Own(const std::vector<std::string>& owned);

  // Sends `local`'s ports of each of `shards` (analysis::AssignShards of
  // `local.window`) but those owned here to their owners. Unavailable when
  // NATS is not connected or a publish failed (counted); the next pass
  // sends them again.
  absl::Status Publish(const collector::FeatureSlice& local,
                       absl::Span<const analysis::ShardPorts> shards,
                       absl::Time now);

  // What the other collectors sent of `shard` (owned here), decoded: each
  // view Finish()ed, and the collectors it came from, sorted. Empty when
  // the shard is not owned here or nothing fresh arrived.
  struct ShardInput {
    analysis::FabricView window;
    analysis::FabricView recent;
    std::vector<std::string> collectors;
  };
  ShardInput Received(absl::string_view shard, absl::Time now) const;

  // The views of `shard` (owned here) for a pass: what the other
  // collectors sent of it that is fresh, with `local`'s ports at
  // `own_ports` (cluster/shard_wire.h's AssembleShardViews: `window` and
  // `recent`, kept by the caller from pass to pass, are rebuilt over
  // their storage). The collectors heard go to *collectors (may be null),
  // sorted; a damaged chunk is counted as refused.
  void Assemble(absl::string_view shard, absl::Time now,
                const collector::FeatureSlice* local,
                absl::Span<const uint32_t> own_ports,
                analysis::FabricView* window, analysis::FabricView* recent,
                std::vector<std::string>* collectors = nullptr) const;

  Stats stats() const;

 private:
  // One collector's publication of one shard: its chunks as they arrive.
  struct Publication {
    int64_t published_nanos = 0;
    std::vector<std::shared_ptr<const v1::ShardChunk>> chunks;
    size_t have = 0;
    absl::Time received = absl::InfinitePast();  // its last chunk's
  };
  struct FromCollector {
    Publication complete;  // chunks all there (none yet: published 0)
    Publication pending;
  };
  struct Shard {
    std::unique_ptr<NatsSubscription> subscription;
    std::map<std::string, FromCollector> from;  // by collector id
  };

  ShardExchange(NatsConnection* nats, std::string collector_id,
                Options options);
  static void OnChunk(natsConnection* nc, natsSubscription* sub, natsMsg* msg,
                      void* closure);
  void Take(absl::string_view data, absl::Time now);

  NatsConnection* const nats_;
  const std::string id_;
  const Options options_;

  // Publish() at a time, with the messages and the buffer it reuses.
  absl::Mutex publish_mu_;
  ShardChunkWriter writer_ ABSL_GUARDED_BY(publish_mu_);
  // Own() at a time.
  absl::Mutex own_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  mutable absl::Mutex mu_;
  std::map<std::string, Shard, std::less<>> shards_ ABSL_GUARDED_BY(mu_);

  std::atomic<uint64_t> published_chunks_{0};
  std::atomic<uint64_t> last_published_bytes_{0};
  std::atomic<uint64_t> publish_errors_{0};
  std::atomic<uint64_t> received_chunks_{0};
  mutable std::atomic<uint64_t> refused_chunks_{0};  // Received() too
};

}  // namespace fabricdiag::cluster
