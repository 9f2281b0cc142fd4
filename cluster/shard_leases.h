// Which collector of a cluster analyses each shard of the fabric, and under
// which term.
//
// The analysis is cut into named shards (a group of jobs, a group of
// switches: the caller names them). Each shard is a KeyLease
// (cluster/key_lease.h) in the analysis lease's bucket, key
// "shard.<name>", value its owner's --collector_id: one sequence of
// revisions gives every shard's terms and the analysis lease's, so a
// shard's next owner always writes with a higher term than its last, and
// findings fenced by term (cluster/finding_terms.h) stay ordered when a
// shard changes hands.
//
// Owners are chosen by rendezvous hashing (client/collector_list.h's
// RendezvousHash of the shard's name at each member's id, highest first)
// over the live members and this collector: each of N collectors owns about
// 1/N of the shards, and a member that comes or goes moves only the shards
// it gains or held. Every `acquire_period` a collector
//   - takes each shard it is the first choice for whose key is absent (never
//     written, let go, or expired because its owner died);
//   - renews each shard it owns every `renew_period`, while it is the first
//     choice or the first choice has not been live for `settle` yet (a
//     collector just started is not handed shards before every member sees
//     it, which would move them back and forth);
//   - hands a shard over when another member, live for `settle`, is its
//     first choice: it marks the shard handing over (Owned::handing_over)
//     and keeps it until its user says it may go (LetGo(): what it kept of
//     the shard is written for the next owner) or for `handover_wait` at
//     most, then lets go and deletes the key, and that member takes it at
//     its next attempt, within about `acquire_period`.
// A dead owner's shards are taken once its key expired (`ttl`) and the
// members' view no longer lists it (ClusterMembers: 3 announcement periods,
// 6 s by default), by the next choice, which every survivor agrees on.
//
//   ASSIGN_OR_RETURN(auto shards, ShardLeases::Start(
//       nats, "col-a", {"jobs.0", "jobs.1"}, live_members, {}));
//   for (const ShardLeases::Owned& s : shards->Owned()) ...
//
// Thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "cluster/analysis_lease.h"
#include "cluster/key_lease.h"
#include "cluster/nats_connection.h"

namespace fabricdiag::cluster {

class ShardLeases {
 public:
  struct Options {
    int replicas = 3;
    absl::Duration ttl = absl::Seconds(3);
    absl::Duration renew_period = absl::Seconds(1);
    absl::Duration acquire_period = absl::Milliseconds(250);
    absl::Duration margin = absl::Milliseconds(500);
    // How long a member must have been live before shards move to it.
    absl::Duration settle = absl::Seconds(4);
    // How long a shard to hand over is kept for LetGo() at most; zero: let
    // go at once.
    absl::Duration handover_wait = absl::Seconds(3);
    std::string bucket = kLeaderBucket;
  };
  // A live member of the cluster, as the members' view gives it.
  struct Candidate {
    std::string id;
    absl::Duration live_for;  // without a break
  };
  using Members = std::function<std::vector<Candidate>()>;
  struct Owned {
    std::string shard;
    uint64_t term = 0;
    // Another member is its first choice now: it goes at LetGo(), or
    // Options::handover_wait after it was first marked so.
    bool handing_over = false;
  };

  // Binds (or creates) the bucket and starts taking this collector's
  // shards. InvalidArgument when a shard's name cannot be a key (letters,
  // digits, '-', '_', '=' and '.' between non-empty tokens) or appears
  // twice. `nats` must outlive the result; `members` is called from the
  // leases' thread.
  static absl::StatusOr<std::unique_ptr<ShardLeases>> Start(
      NatsConnection* nats, std::string id,
      const std::vector<std::string>& shards, Members members,
      const Options& options);
  // Stop().
  ~ShardLeases();
  // Lets go of every shard (deleting their keys while connected, so that
  // their next owners take them at once) and stops. Idempotent.
  void Stop();
  ShardLeases(const ShardLeases&) = delete;
  ShardLeases& operator=(const ShardLeases&) = delete;

  // The shards this collector owns now, in the order given to Start(),
  // with their terms.
  std::vector<Owned> OwnedShards() const;
  // `shard`'s term while this collector owns it; 0 otherwise (or unknown).
  uint64_t Term(absl::string_view shard) const;
  // Who owns `shard` as this collector last saw it ("" when none or
  // unknown): itself while it owns it; another only as last read.
  std::string Owner(absl::string_view shard) const;
  // Shards this collector handed over to their first choice.
  uint64_t handovers() const { return handovers_.load(); }
  // `shard`, handing over, may go now (at the next look, within
  // Options::acquire_period). Ignored for a shard not handing over.
  void LetGo(absl::string_view shard);

  // The first choice for `shard` among `candidates` (highest rendezvous
  // hash; "" for none). Pure.
  static std::string FirstChoice(absl::string_view shard,
                                 const std::vector<Candidate>& candidates);
  // Who holds `shard` once the leases settle over `candidates`, as any
  // member can tell without reading the key: the first choice among those
  // live for `settle` (a newer first choice gets it only then), or among
  // all when none is. A member that just died is still its holder until
  // its key expires, and then the one named here. Pure.
  static std::string SettledChoice(absl::string_view shard,
                                   const std::vector<Candidate>& candidates,
                                   absl::Duration settle);

 private:
  ShardLeases(NatsConnection* nats, std::string id,
              const std::vector<std::string>& shards, Members members,
              Options options, kvStore* kv);
  void Run();
  // One look at every shard: take, renew or hand over; one log line for
  // the shards taken, one for those handed over and one for those lost.
  void Tick(std::vector<std::chrono::steady_clock::time_point>* next_renewal);

  const std::string id_;
  const Options options_;
  kvStore* const kv_;
  NatsConnection* const nats_;
  const Members members_;
  std::vector<std::unique_ptr<KeyLease>> leases_;  // one per shard
  // Per lease, its term after the last Tick() (0: not held); Run()'s.
  std::vector<uint64_t> terms_;
  // Per lease: handing over, since when (Run()'s), and let go by LetGo().
  std::unique_ptr<std::atomic<bool>[]> handing_;
  std::vector<std::chrono::steady_clock::time_point> handing_since_;
  std::unique_ptr<std::atomic<bool>[]> let_go_;
  std::atomic<bool> stopping_{false};
  std::atomic<bool> stopped_{false};
  std::atomic<uint64_t> handovers_{0};
  std::thread thread_;
};

}  // namespace fabricdiag::cluster
