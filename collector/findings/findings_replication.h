// Where findings are shared: the seam between the FindingsStore and a
// collector cluster's one set of findings.
//
//   - Embedded: nothing is shared; the store's findings are this
//     collector's, ids from its own --state_dir (LocalFindingsReplication
//     below, what a FindingsStore starts with).
//   - Cluster (--nats): the collector that holds the analysis lease writes
//     every version of every finding to a shared bucket, ids reserved from
//     that bucket so that no two leaders ever hand out the same one; every
//     other collector applies what the bucket delivers to its own store
//     (FindingsStore::ApplyReplicated), so all of them list, watch and
//     export the same findings with the same ids
//     (cluster/jetstream_findings.h).
//
//   store.Replicate(replication);                  // before the first Update
//   replication.Watch(
//       [&](const StoredFinding& v) {
//         if (!role.Leading()) sink.ApplyReplicated(v).IgnoreError();
//       },
//       [&](const absl::flat_hash_set<std::string>& shared) {
//         if (!role.Leading()) sink.ResolveUnshared(shared, now);
//       });
//
// FindingsSink is what a mirror applies the shared findings to (the
// FindingsStore), so that the cluster's code needs no concrete store.
//
// Implementations are thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "collector/state/findings_log.h"

namespace fabricdiag::collector {

// The analysis shard a findings source belongs to: what follows the last
// '@' of "<family>@<shard>"; "" for a source of the unsharded analysis
// (collector/runner/analysis_role.h). Its findings are written under that
// shard's term.
inline absl::string_view ShardOfSource(absl::string_view source) {
  const size_t at = source.rfind('@');
  return at == absl::string_view::npos ? absl::string_view()
                                       : source.substr(at + 1);
}

class FindingsReplication {
 public:
  virtual ~FindingsReplication() = default;

  // "NATS bucket fabricdiag_findings".
  virtual std::string Describe() const = 0;

  // Reserves `count` consecutive finding id numbers, none below
  // `at_least`, that no caller anywhere is ever given again; returns the
  // first. Unavailable when the backend cannot answer in time.
  virtual absl::StatusOr<uint64_t> ReserveIds(uint64_t count,
                                              uint64_t at_least) = 0;

  // Shares the versions a store just made (opened, updated, resolved, or
  // seen again), in order.
  virtual absl::Status Write(absl::Span<const StoredFinding> versions) = 0;

  // For a collector that just took over the analysis, before it takes its
  // active findings over: marks its term where every collector sees it,
  // and waits (bounded) until on_version was called for everything shared
  // before that mark, so that a previous leader's version that landed
  // before it is in the store. Versions landing after the mark are
  // dropped. Nothing to do where nothing is shared.
  virtual void MarkTerm() {}
  // The same for a collector that just took analysis shard `shard` over
  // (collector/runner/analysis_role.h): its shard's term, before it takes
  // that shard's findings over.
  virtual void MarkShardTerm(absl::string_view /*shard*/) {}

  // Calls `on_version` for the latest version of every shared finding, then
  // `on_replayed` with the ids of all of them (the shared set as it is
  // now; again after the backend had to start over), then `on_version` for
  // every version written after (this collector's own included), from one
  // backend thread, until StopWatching().
  virtual void Watch(
      std::function<void(const StoredFinding&)> on_version,
      std::function<void(const absl::flat_hash_set<std::string>&)>
          on_replayed) = 0;
  // When it returns, `on_version` is not running and will not be called.
  virtual void StopWatching() = 0;
};

// The embedded replication: one collector, nothing shared. Ids are this
// store's own (the block starts at `at_least`), writes go nowhere and no
// other collector's version ever arrives.
class LocalFindingsReplication final : public FindingsReplication {
 public:
  std::string Describe() const override { return "this collector alone"; }
  absl::StatusOr<uint64_t> ReserveIds(uint64_t /*count*/,
                                      uint64_t at_least) override {
    return at_least;
  }
  absl::Status Write(absl::Span<const StoredFinding> /*versions*/) override {
    return absl::OkStatus();
  }
  void Watch(std::function<void(const StoredFinding&)> /*on_version*/,
             std::function<void(const absl::flat_hash_set<std::string>&)>
             /*on_replayed*/) override {}
  void StopWatching() override {}
};

// Where a collector that does not lead applies the findings the leader
// shares (FindingsStore implements it; collector/findings/findings_store.h
// says what each call does).
class FindingsSink {
 public:
  virtual ~FindingsSink() = default;
  // One version another collector's store made.
  virtual absl::Status ApplyReplicated(const StoredFinding& version) = 0;
  // Resolves, at `now`, every active finding not in `shared`.
  virtual absl::Status ResolveUnshared(
      const absl::flat_hash_set<std::string>& shared, absl::Time now) = 0;
};

}  // namespace fabricdiag::collector
