// Who holds each analysis shard, as the lease bucket says: a watcher of the
// bucket's shard keys (cluster/shard_leases.h: key "shard.<name>", value
// its holder's --collector_id, rewritten at every renewal).
//
// A collector that does not own a shard cannot tell its owner from the
// members' view alone: during a hand-over the old owner keeps it until it
// let go, and a dead owner's shards move only once its key expired. What
// the keys say is the truth of the moment. A key's value is its holder's
// while it is renewed: one not rewritten for `ttl` has expired on the
// servers (a JetStream bucket tells no watcher of a value that aged out),
// so it reads as lapsed, not held. Each value counts from when it arrived
// here (clocks need not agree): one first read when the watcher starts may
// be up to `ttl` old already, so a holder that died just before reads as
// holding for up to twice the TTL. A recreated watcher replays every key's
// latest value; a value already read (HolderKeys) keeps the time it first
// arrived. A value that is no collector id (a hostile writer to the
// bucket) names no holder: the shard reads as never written.
//
//   ASSIGN_OR_RETURN(auto holders, ShardHolders::Start(nats, {}));
//   ShardHolders::Seen seen = holders->Of("jobs.17");
//   if (seen.held) ... seen.holder ...
//
// Thread-safe.
#pragma once

#include <nats/nats.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "cluster/analysis_lease.h"
#include "cluster/nats_connection.h"

namespace fabricdiag::cluster {

// The shard keys as a watcher read them, each value timed from when it
// first arrived. A value arrives again when a recreated watcher replays the
// bucket (its NATS server died, it missed a revision): the same revision of
// the same holder is the value already read, and keeps its first arrival,
// so a holder that died before the watcher was recreated lapses on time
// rather than a TTL after the replay. (A bucket made anew numbers its
// revisions from 1 again: a holder's value that happens to have a revision
// and holder already read then counts from that earlier arrival, and reads
// as lapsed until its holder's next renewal, a second or less.)
//
// Not thread-safe.
class HolderKeys {
 public:
  struct Key {
    std::string holder;
    uint64_t revision = 0;
    absl::Time arrived;  // this collector's clock
  };
  // `holder`'s value of `shard`'s key, revision `revision`, read at `now`.
  void Put(absl::string_view shard, absl::string_view holder, uint64_t revision,
           absl::Time now);
  // The key deleted (let go), or written with no holder anyone can name.
  void Erase(absl::string_view shard);
  // Null when the shard's key was never read or is erased.
  const Key* Find(absl::string_view shard) const;

 private:
  absl::flat_hash_map<std::string, Key> keys_;  // by shard
};

class ShardHolders {
 public:
  struct Options {
    // The lease bucket and its keys' time to live (ShardLeases::Options).
    std::string bucket = kLeaderBucket;
    int replicas = 3;
    absl::Duration ttl = absl::Seconds(3);
  };
  // What the bucket says of one shard.
  struct Seen {
    // The collector that wrote its key last; "" when it was never written
    // or was let go (deleted) since.
    std::string holder;
    // `holder` renewed it within the TTL: it holds the shard now. False
    // with a holder: it stopped renewing (died, or cut off from NATS), and
    // the shard goes to the next choice.
    bool held = false;
  };

  // Binds (or creates) the bucket and watches it; returns once the watcher
  // read every key (Unavailable when it could not in time). `nats` must
  // outlive the result.
  static absl::StatusOr<std::unique_ptr<ShardHolders>> Start(
      NatsConnection* nats, const Options& options);
  // Stop().
  ~ShardHolders();
  // Stops watching. Idempotent.
  void Stop();
  ShardHolders(const ShardHolders&) = delete;
  ShardHolders& operator=(const ShardHolders&) = delete;

  Seen Of(absl::string_view shard) const;
  // How many of `shards` no collector holds now (Of().held false).
  size_t Unheld(absl::Span<const std::string> shards) const;
  // Whether the watcher read any write to the bucket within the TTL. Its
  // owners renew every shard each second, so a watcher that read none
  // has fallen behind (its NATS server died; it is being recreated), and
  // every shard reads as lapsed though none may be: ask again later.
  bool Current() const;

 private:
  ShardHolders(NatsConnection* nats, Options options, kvStore* kv)
      : nats_(nats), options_(std::move(options)), kv_(kv) {}
  void Watch();
  // One entry of the bucket, in order.
  void Apply(kvEntry* entry);

  NatsConnection* const nats_;
  const Options options_;
  kvStore* const kv_;
  mutable absl::Mutex mu_;
  HolderKeys keys_ ABSL_GUARDED_BY(mu_);
  absl::Time last_write_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  absl::Notification replayed_;
  std::atomic<bool> stopping_{false};
  std::thread watcher_;
};

}  // namespace fabricdiag::cluster
