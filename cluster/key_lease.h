// One lease: one key of a lease bucket (a KV bucket whose values expire
// `ttl` after they were written), held by at most one collector at a time.
// The analysis lease (cluster/analysis_lease.h) is one; the analysis shards
// (cluster/shard_leases.h) are one each. Driven by its owner's thread:
//   - TryAcquire() creates the key (kvStore_Create), which succeeds only when
//     it is absent: never written, deleted by a holder that let go, or
//     expired because its holder stopped renewing;
//   - Renew() updates it against the revision held (kvStore_Update), so a
//     renewal after someone else took the key fails;
//   - the lease ends at once when a renewal finds another revision (or no
//     key), and on its own when no renewal succeeded for `ttl` minus
//     `margin` counted from before the last successful request: the key
//     cannot have expired on the servers before that, so two collectors never
//     hold it at once while their clocks run at the same rate. That time is
//     kept on the monotonic clock (std::chrono::steady_clock): a step of the
//     wall clock neither stretches nor cuts a lease, and a process stopped
//     (SIGSTOP) that resumes finds its lease run out;
//   - Release() lets go and deletes the key while it is still this holder's,
//     so that another takes it within its next attempt instead of the TTL.
// Term() is the revision of the acquiring write: unique across the bucket
// and larger for every later tenure of any key of it, since a bucket's
// revisions only grow. Writes fenced by terms from one bucket therefore
// order across its keys: a shard's next owner writes with a higher term than
// its last.
//
//   KeyLease lease(kv, "analysis", "col-a",
//                  {"analysis lease", "leads the analysis"}, {ttl, margin});
//   if (!lease.Held()) lease.TryAcquire(); else lease.Renew();
//
// Thread-safe.
#pragma once

#include <nats/nats.h>

#include <chrono>
#include <cstdint>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "cluster/nats_connection.h"

namespace fabricdiag::cluster {

// Binds (or creates) a lease bucket: file storage (a bucket's revisions,
// which are the terms, must keep growing when every server restarts), one
// version per key, every value expiring `ttl` after it was written.
absl::StatusOr<kvStore*> BindLeaseBucket(const NatsConnection& nats,
                                         const std::string& bucket,
                                         int replicas, absl::Duration ttl);

class KeyLease {
 public:
  struct Timing {
    absl::Duration ttl = absl::Seconds(3);
    // Given up before the key can expire on the servers.
    absl::Duration margin = absl::Milliseconds(500);
  };
  // How the log says it: "<prefix>: <holder> <holding> (term N)" when
  // taken, "<prefix>: <holder> no longer <holding> (term N)" when it ends.
  struct Naming {
    std::string prefix;   // "analysis lease"
    std::string holding;  // "leads the analysis"
    // Whether the lease logs its tenures' starts and ends; a set of leases
    // (cluster/shard_leases.h) logs them together instead.
    bool logged = true;
  };
  // `kv` must outlive the lease.
  KeyLease(kvStore* kv, std::string key, std::string holder_id, Naming naming,
           Timing timing);
  KeyLease(const KeyLease&) = delete;
  KeyLease& operator=(const KeyLease&) = delete;

  // One attempt to take the key; true when this collector holds it now.
  // Otherwise the holder as read is remembered (holder()).
  bool TryAcquire();
  // One renewal of a held lease (nothing when not held). Ends the lease on a
  // conflict, or when it ran out without a successful renewal.
  void Renew();
  // Ends the lease if it ran out (before deciding whether to renew or to
  // acquire). True when it is still held.
  bool CheckHeld();
  // Lets go: the lease ends now, and when `delete_key` the key is deleted
  // if it still holds this tenure's revision (a successor's key stays).
  // `delete_key` false (not connected: each request would wait its whole
  // timeout) leaves the key to expire after the TTL.
  void Release(bool delete_key);

  bool Held() const;
  // The acquiring write's revision while Held(), 0 otherwise.
  uint64_t Term() const;
  // The holder as last seen ("" when unknown or none).
  std::string holder() const;
  // How long no holder was seen: zero while held here or when the latest
  // look found the key held; otherwise the time since the last such sign
  // (or since construction).
  absl::Duration WithoutHolderFor() const;
  const std::string& key() const { return key_; }

 private:
  using Clock = std::chrono::steady_clock;
  // The key's holder and revision, as read now.
  struct Read {
    natsStatus status = NATS_OK;
    std::string id;
    uint64_t revision = 0;
  };
  Read ReadKey() const;
  // Ends the tenure; `why` ("": let go on purpose) is logged.
  void EndLocked(absl::string_view why) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool HeldLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  kvStore* const kv_;
  const std::string key_;
  const std::string id_;
  const Naming naming_;
  const Timing timing_;
  mutable absl::Mutex mu_;
  uint64_t held_revision_ ABSL_GUARDED_BY(mu_) = 0;  // 0: not held
  uint64_t term_ ABSL_GUARDED_BY(mu_) = 0;
  // Held until then, when held.
  Clock::time_point until_ ABSL_GUARDED_BY(mu_) = Clock::time_point::min();
  std::string holder_ ABSL_GUARDED_BY(mu_);
  // The last sign of a holder (WithoutHolderFor).
  Clock::time_point holder_seen_ ABSL_GUARDED_BY(mu_) = Clock::now();
};

}  // namespace fabricdiag::cluster
