// The analysis lease of a collector cluster: at most one collector analyzes
// the merged fabric and writes findings; the others follow.
//
// Bucket "fabricdiag_leader" (file storage, --nats_replicas replicas, one
// version per key, every value expires `ttl` after it was written), key
// "analysis", value the holder's --collector_id: a KeyLease
// (cluster/key_lease.h) that a collector without it tries to take every
// `acquire_period` and its holder renews every `renew_period`; a clean stop
// deletes the key (when it still holds it), so a successor takes over
// within `acquire_period` instead of `ttl`.
// Term() is the revision of the acquiring write: unique across the cluster
// and larger for every later tenure, since a bucket's revisions only grow.
// The bucket is on disk so that this holds even when every NATS server
// restarts at once (a bucket in memory would start its revisions over; one
// created in memory by an older release stays so until it is deleted).
// Findings carry the term of the leader that wrote them, and a version with
// a lower term than one already seen is a deposed leader's late write
// (cluster/jetstream_findings.h).
//
//   ASSIGN_OR_RETURN(auto lease, AnalysisLease::Start(nats, "col-a", {}));
//   if (lease->Leading()) ...
//
// Thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "cluster/key_lease.h"
#include "cluster/nats_connection.h"
#include "collector/runner/analysis_role.h"

namespace fabricdiag::cluster {

inline constexpr char kLeaderBucket[] = "fabricdiag_leader";

class AnalysisLease final : public collector::AnalysisRole {
 public:
  struct Options {
    int replicas = 3;
    absl::Duration ttl = absl::Seconds(3);
    absl::Duration renew_period = absl::Seconds(1);
    absl::Duration acquire_period = absl::Milliseconds(250);
    // Given up before the key can expire on the servers.
    absl::Duration margin = absl::Milliseconds(500);
    std::string bucket = kLeaderBucket;
  };

  // Binds (or creates) the bucket and starts competing. `nats` must
  // outlive the result.
  static absl::StatusOr<std::unique_ptr<AnalysisLease>> Start(
      NatsConnection* nats, std::string id, const Options& options);
  // Stop().
  ~AnalysisLease() override;
  // Stops competing and steps down, deleting the key when it holds it and
  // a server is connected (a successor then leads within an acquire
  // period instead of the TTL). Idempotent.
  void Stop();
  AnalysisLease(const AnalysisLease&) = delete;
  AnalysisLease& operator=(const AnalysisLease&) = delete;

  bool Leading() const override;
  // The revision of the write that acquired the lease while Leading(), 0
  // otherwise (see the header comment).
  uint64_t Term() const override;
  // The holder as this collector last saw it ("" when unknown or none).
  std::string leader() const;
  // How long no collector was seen leading: zero while this one leads or
  // the latest look at the key found it held (a held key was written
  // within the TTL, so its holder is alive); otherwise the time since the
  // last such sign, or since Start(). Long after a failover would have
  // ended (a few TTLs), nobody analyses: the lease bucket does not answer.
  absl::Duration WithoutLeaderFor() const;
  // Times this collector acquired the lease.
  uint64_t acquisitions() const { return acquisitions_.load(); }

 private:
  AnalysisLease(NatsConnection* nats, std::string id, Options options,
                kvStore* kv);
  void Run();

  const Options options_;
  kvStore* const kv_;
  NatsConnection* const nats_;
  KeyLease lease_;
  std::atomic<bool> stopping_{false};
  std::atomic<bool> stopped_{false};  // Stop() ran
  std::atomic<uint64_t> acquisitions_{0};
  std::thread thread_;
};

}  // namespace fabricdiag::cluster
