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
// Only the collector that holds the analysis lease writes findings; an
// active finding is written at least every minute (last_seen), so `ttl`
// (7 days) drops only findings resolved that long ago.
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
//   ASSIGN_OR_RETURN(auto shared, JetStreamFindings::Open(nats, {}));
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

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "cluster/nats_connection.h"
#include "collector/findings/findings_replication.h"

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
  };

  // Binds (or creates) the bucket. `nats` must outlive the result.
  static absl::StatusOr<std::unique_ptr<JetStreamFindings>> Open(
      NatsConnection* nats, const Options& options);
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

  uint64_t write_errors() const { return write_errors_.load(); }
  uint64_t undecodable() const { return undecodable_.load(); }
  uint64_t watcher_restarts() const { return watcher_restarts_.load(); }
  // How long ago this collector last knew it held the bucket's latest
  // findings: its watcher's replay reached the bucket's newest revision, a
  // version arrived after it, or a quiet look found nothing newer; and no
  // Write() failed since (a leader that cannot share). Counted from Open()
  // before the first. Grows while NATS or the watcher is away.
  absl::Duration UnconfirmedFor() const;

 private:
  JetStreamFindings(NatsConnection* nats, Options options, kvStore* kv);
  absl::StatusOr<uint64_t> ReserveOnce(uint64_t count, uint64_t at_least);
  void WatchLoop(
      const std::function<void(const collector::StoredFinding&)>& on_version,
      const std::function<void(const absl::flat_hash_set<std::string>&)>&
          on_replayed);

  NatsConnection* const nats_;
  const Options options_;
  kvStore* const kv_;
  std::atomic<bool> stopping_{false};
  std::atomic<uint64_t> write_errors_{0};
  std::atomic<uint64_t> undecodable_{0};
  std::atomic<uint64_t> watcher_restarts_{0};
  // UnconfirmedFor(): when the watcher last caught up, and since when
  // writes fail (0: the last one succeeded), in Unix nanoseconds.
  std::atomic<int64_t> caught_up_at_{absl::ToUnixNanos(absl::Now())};
  std::atomic<int64_t> writes_failing_since_{0};
  std::thread watcher_;
};

}  // namespace fabricdiag::cluster
