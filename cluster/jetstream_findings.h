// The cluster backend of shared findings
// (collector/findings/findings_replication.h): one set of findings, with the
// same ids, on every collector of a cluster.
//
// Bucket "fabricdiag_findings" (file storage, --nats_replicas replicas, one
// version per key, a key not written for `ttl` dropped):
//   f-000123  the latest version of that finding: the findings log's own
//             format (collector/state/findings_log.h: header, one checksummed
//             record holding the analyzer that owns it and the
//             v1::Finding), so damage is caught
//   next_id   the smallest id number nobody was given yet (decimal)
//   term      the latest term that wrote here (decimal), put by a leader
//             before its first write: its place in the bucket's order
//             tells a deposed leader's later first version of a finding
// Only the collector that holds the analysis lease writes findings; an
// active finding is written at least every minute (last_seen), so `ttl`
// (7 days) drops only findings resolved that long ago.
//
// Fencing: every version written carries the writer's lease term
// (StoredFinding::term, cluster/analysis_lease.h), and a write
//   - is attempted only while the lease is held with its margin by the
//     monotonic clock (AnalysisRole::Term() is not 0), checked again before
//     every attempt, all attempts within `deadline`;
//   - is refused when this collector has seen a higher term write that
//     finding;
//   - is a compare-and-set against the revision this collector last saw
//     for the key (kvStore_Update; kvStore_Create for a key it never saw).
//     When it fails the key is read back: a higher term there means a newer
//     leader wrote it, and the write stops (fenced_writes()); otherwise
//     (this collector's own earlier write landed late, or the key expired)
//     it is tried again against what is there now.
// The watcher drops the versions a deposed leader wrote late
// (cluster/finding_terms.h: a term lower than one already seen), so they
// never reach a store, `watch` or /metrics (stale_versions_dropped()).
// A new leader's MarkTerm() waits, at most `mark_wait`, until its watcher
// has delivered the mark: a deposed leader's version that landed before it
// (a finding the new leader never saw) is then in its store, and its
// rewrite of the active findings takes it over under the new term.
//
// Ids: ReserveIds() moves next_id up by a block with compare-and-set, so two
// collectors that both believe they lead (one about to learn it lost the
// lease) can never hand out the same id; a collector keeps the rest of its
// block for later.
//
// Watch() runs one thread over a watcher of the bucket: every finding's
// latest version, the ids of all of them, then each new version. A watcher that
// dies or goes quiet while the bucket moves on (its NATS server died) is
// recreated; its replay re-delivers the latest versions, which the store takes
// without events when it already holds them.
//
// Test-only: FABRICDIAG_TEST_FINDINGS_WRITE_DELAY=<duration> in the
// environment holds every finding write that long after its lease check
// (logged), so that a test can stop a leader with a write in flight.
//
//   ASSIGN_OR_RETURN(auto shared, JetStreamFindings::Open(nats, lease, {}));
//   findings_store.Replicate(shared.get());
//
// Thread-safe.
#pragma once

#include <nats/nats.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "cluster/finding_terms.h"
#include "cluster/nats_connection.h"
#include "collector/findings/findings_replication.h"
#include "collector/runner/analysis_role.h"

namespace fabricdiag::cluster {

inline constexpr char kFindingsBucket[] = "fabricdiag_findings";

class JetStreamFindings final : public collector::FindingsReplication {
 public:
  struct Options {
    int replicas = 3;
    absl::Duration ttl = absl::Hours(24 * 7);
    // How long a write or a reservation retries while the cluster does not
    // answer (short: the analysis pass waits for it).
    absl::Duration deadline = absl::Seconds(3);
    std::string bucket = kFindingsBucket;
    // Each write waits this long after its lease check (tests only; see
    // the header comment).
    absl::Duration test_write_delay = absl::ZeroDuration();
    // How long MarkTerm() waits for the watcher to deliver the mark.
    absl::Duration mark_wait = absl::Seconds(2);
  };

  // Binds (or creates) the bucket. Writes carry `role`'s term and are made
  // only while it leads. `nats` and `role` must outlive the result.
  static absl::StatusOr<std::unique_ptr<JetStreamFindings>> Open(
      NatsConnection* nats, const collector::AnalysisRole* role,
      const Options& options);
  // The test hook's delay from the environment (zero when unset or not a
  // duration).
  static absl::Duration TestWriteDelayFromEnv();
  ~JetStreamFindings() override;
  JetStreamFindings(const JetStreamFindings&) = delete;
  JetStreamFindings& operator=(const JetStreamFindings&) = delete;

  std::string Describe() const override;
  absl::StatusOr<uint64_t> ReserveIds(uint64_t count,
                                      uint64_t at_least) override;
  absl::Status Write(
      absl::Span<const collector::StoredFinding> versions) override;
  void Watch(std::function<void(const collector::StoredFinding&)> on_version,
             std::function<void(const absl::flat_hash_set<std::string>&)>
                 on_replayed) override;
  void StopWatching() override;
  // Puts the term key once per term held and waits (at most
  // Options::mark_wait) until the watcher delivered it; logs when it did
  // not in time (a version that landed before the mark may then be missed
  // until the watcher catches up).
  void MarkTerm() override;
  // The same for analysis shard `shard`: its term key, "term.<shard>".
  void MarkShardTerm(absl::string_view shard) override;

  uint64_t write_errors() const { return write_errors_.load(); }
  uint64_t undecodable() const { return undecodable_.load(); }
  uint64_t watcher_restarts() const { return watcher_restarts_.load(); }
  // Writes not made because this collector no longer led: its lease had
  // run out, or a leader with a higher term had written the finding.
  uint64_t fenced_writes() const { return fenced_writes_.load(); }
  // Versions the watcher dropped because a higher term wrote before them.
  uint64_t stale_versions_dropped() const {
    return stale_versions_dropped_.load();
  }
  // How long ago this collector last knew it held the bucket's latest
  // findings: its watcher's replay reached the bucket's newest revision, a
  // version arrived after it, or a quiet look found nothing newer; and,
  // while this collector leads, no Write() of its term failed since (a
  // leader that cannot share). Counted from Open() before the first. Grows
  // while NATS or the watcher is away.
  absl::Duration UnconfirmedFor() const;

 private:
  JetStreamFindings(NatsConnection* nats, const collector::AnalysisRole* role,
                    Options options, kvStore* kv);
  // Writes one version with compare-and-set (see the header comment).
  absl::Status WriteOne(const collector::StoredFinding& version,
                        absl::Time deadline);
  // The term this collector writes `shard`'s findings under now ("": the
  // analysis lease's); 0 when it does not lead or own it.
  uint64_t TermOf(absl::string_view shard) const;
  // Puts `shard`'s term key once per term held (see the header comment);
  // the revision of the mark when it put one now, else 0.
  uint64_t PutTermMark(absl::string_view shard);
  // MarkTerm() and MarkShardTerm(): puts the mark and waits for it.
  void MarkAndWait(absl::string_view shard);
  // Records that the watcher handed over everything up to `revision`.
  void Delivered(uint64_t revision);
  // Counts and returns a refused write.
  absl::Status Fenced(const collector::StoredFinding& version,
                      const std::string& why);
  absl::StatusOr<uint64_t> ReserveOnce(uint64_t count, uint64_t at_least);
  void WatchLoop(
      const std::function<void(const collector::StoredFinding&)>& on_version,
      const std::function<void(const absl::flat_hash_set<std::string>&)>&
          on_replayed);

  NatsConnection* const nats_;
  const collector::AnalysisRole* const role_;
  const Options options_;
  kvStore* const kv_;
  mutable absl::Mutex mu_;
  FindingTerms terms_ ABSL_GUARDED_BY(mu_);
  // Per shard ("": the analysis lease), the term last marked.
  absl::Mutex marked_mu_;
  absl::flat_hash_map<std::string, uint64_t> marked_
      ABSL_GUARDED_BY(marked_mu_);
  std::atomic<uint64_t> fenced_writes_{0};
  std::atomic<uint64_t> stale_versions_dropped_{0};
  std::atomic<bool> stopping_{false};
  std::atomic<uint64_t> write_errors_{0};
  std::atomic<uint64_t> undecodable_{0};
  std::atomic<uint64_t> watcher_restarts_{0};
  std::atomic<bool> watching_{false};
  // The newest revision the watcher handed over (or dropped), for
  // MarkTerm().
  absl::Mutex delivered_mu_;
  uint64_t delivered_ ABSL_GUARDED_BY(delivered_mu_) = 0;
  // UnconfirmedFor(): when the watcher last caught up (Unix nanoseconds),
  // and since when writes fail (InfiniteFuture: the last one succeeded),
  // of which shard under which term.
  std::atomic<int64_t> caught_up_at_{absl::ToUnixNanos(absl::Now())};
  struct Failing {
    absl::Time since = absl::InfiniteFuture();
    uint64_t term = 0;
    std::string shard;
  };
  mutable absl::Mutex failing_mu_;
  Failing failing_ ABSL_GUARDED_BY(failing_mu_);
  std::thread watcher_;
};

}  // namespace fabricdiag::cluster
