// The findings lifecycle: open, update, resolve; history; watchers.
//
// Every analysis pass, each analyzer family (a `source`, e.g.
// "rate_analyzers" or "agent_liveness") reports the complete set of
// conditions it sees now, as analysis::Findings (analysis/finding.h); the
// store keeps them as wire findings (v1::Finding, analysis/finding_wire.h).
// A condition is identified by its key (kind, job, node, device, group):
// - a key not active before is OPENED with a new id "f-000042" (ids are
//   never reused, across restarts too);
// - an active key reported again has last_seen bumped; it is UPDATED (an
//   event, a log record) only when it changed materially: severity, nodes,
//   evidence_text or the set of evidence keys changed, a numeric evidence
//   value moved by more than `evidence_change` (10%) relative to the last
//   published value, the labels changed, or the summary changed in more
//   than its numbers (numbers in a summary mirror evidence, which has its
//   own threshold).
//   This keeps a steady condition at zero events per pass;
// - an active key of that source not reported any more is RESOLVED.
// A key belongs to the source that reported it last; only that source's
// passes resolve it. Two reports with the same key in one pass: the first
// wins.
//
// Debouncing is the analyzers' job, not the store's: an analyzer that wants
// "open after N bad intervals, resolve after M clean ones" keeps that state
// and reports accordingly. The store acts on every report immediately.
//
// Durability (StateStore findings log): every open and resolve is fsync'ed
// before Update returns; updates are written (so they survive kill -9 of the
// process) but only fsync'ed along with the next open/resolve, so a power
// loss may lose the latest evidence of a still-active finding, never a
// finding. last_seen alone is written at most every
// `last_seen_persist_interval`. Watchers are told after the write, so no
// watcher ever sees an id that a crash could make the store hand out again. The
// log is compacted when it exceeds the larger of `compact_log_bytes` and twice
// its size after the last compaction. Resolved findings are kept (memory and
// disk) for `resolved_retention` after they resolved, within
// `max_resolved_bytes` (docs/cli.md, "History").
//
// Watchers (collector/findings/findings_watch.h): Watch() first queues a
// SNAPSHOT event per active finding (of the job filter), then every change.
// Each watcher has a bounded queue (`watcher_queue` events beyond the
// snapshot); when a watcher falls that far behind its queue is dropped, it
// receives one kOverflow event and is closed. Update never waits for a watcher.
//
// Replication (collector/findings/findings_replication.h): ids come from
// blocks the replication reserves (in a cluster: unique across the cluster,
// whoever writes) and every version the store makes is written through it
// after the log. A store starts with the embedded replication (this
// collector's ids, nothing shared); Replicate() puts the cluster's in its
// place. ApplyReplicated() applies a version another collector's store made,
// under its id, with the same events, counters and log records as a local
// change (collector/findings/findings_replicated.cc).
//
// Usage:
//   FindingsStore findings(state_store, {});
//   RETURN_IF_ERROR(findings.Load());
//   findings.Update(reports, clock.Now(), "pfc_storm").IgnoreError();
//   std::unique_ptr<Watcher> w = findings.Watch("moe-train-42");
//   while (auto ev = w->Next(absl::Seconds(1))) { ... }
//
// Thread-safe. Update calls are serialized; List and Watch may run
// concurrently with them.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "analysis/finding.h"
#include "collector/findings/findings_replication.h"
#include "collector/findings/findings_watch.h"
#include "collector/findings/silences.h"
#include "collector/state/state_store.h"
#include "proto/collector.pb.h"

namespace fabricdiag::collector {

struct FindingsFilter {
  std::string job;   // "" = all
  std::string kind;  // "" = all
  // ACTIVE or UNSPECIFIED = active only; RESOLVED = resolved only.
  v1::FindingState state = v1::FINDING_STATE_ACTIVE;
  bool all = false;    // active and resolved (overrides state)
  uint32_t limit = 0;  // 0 = kDefaultListLimit
  // A window [since, until] (unix nanos; 0: unbounded) the finding's life
  // must overlap: first seen at or before `until`, and still active or
  // resolved at or after `since`. It does not select the state: set `all`
  // for resolved findings too.
  int64_t since_unix_nanos = 0;
  int64_t until_unix_nanos = 0;
  std::string node;    // "" = all; the node or one of `nodes`
  std::string device;  // "" = all
  v1::Severity min_severity = v1::SEVERITY_UNSPECIFIED;  // at least this
  // Only ids below this number (a page after one that ended with it);
  // 0 = no bound.
  uint64_t below_id = 0;
};
inline constexpr uint32_t kDefaultListLimit = 1000;

// One page of List: `more` when findings beyond `findings` match.
struct FindingsPage {
  std::vector<v1::Finding> findings;
  bool more = false;
};

struct FindingsStoreOptions {
  // The resolved findings kept (memory and the findings log): those
  // resolved within `resolved_retention`, at most `max_resolved_bytes` of
  // them (their serialized size; the oldest go first) and at most
  // `max_resolved` of them.
  absl::Duration resolved_retention = absl::Hours(24 * 30);
  uint64_t max_resolved_bytes = 64ull << 20;
  size_t max_resolved = SIZE_MAX;
  size_t watcher_queue = 1024;
  double evidence_change = 0.10;
  uint64_t compact_log_bytes = 16ull << 20;
  // A finding seen again without material change has its last_seen written
  // (no event) at most this often, so a restart shows it within this much.
  absl::Duration last_seen_persist_interval = absl::Minutes(1);
};

// Monotonic counters for /metrics.
struct FindingsCounters {
  std::map<std::string, uint64_t> opened_by_kind;
  std::map<std::string, uint64_t> resolved_by_kind;
  uint64_t updated = 0;
  uint64_t watcher_overflows = 0;
  uint64_t persist_errors = 0;
  size_t watchers = 0;  // currently open
};

// 42 for "f-000042"; 0 for an id not of that form.
uint64_t FindingIdNumber(const v1::Finding& finding);

class FindingsStore final : public FindingsSink {
 public:
  // `store` must outlive this object.
  FindingsStore(StateStore* store, FindingsStoreOptions options);
  ~FindingsStore() override;

  // Reads the findings log. Call once before Update.
  absl::Status Load();

  // Applies one analysis pass of `source` (see the header comment). The
  // in-memory state and watchers always see the change; the returned status
  // says whether it was persisted.
  absl::Status Update(const std::vector<analysis::Finding>& reports,
                      absl::Time now, absl::string_view source);
  // The same for a source whose findings are each of one node and that
  // sees only some nodes (a collector's own agents, which move between
  // collectors): it resolves only the unreported findings of `source`
  // whose node is in `within`. A finding of a node handed to another
  // collector stays for that collector to report (taking it over under its
  // own source, same id) or resolve.
  absl::Status UpdateWithin(const std::vector<analysis::Finding>& reports,
                            absl::Time now, absl::string_view source,
                            const absl::flat_hash_set<std::string>& within);

  // Shares every later version through `replication` and takes ids from
  // it instead of the embedded LocalFindingsReplication; ids this store
  // already handed out are never handed out by the replication. Call after
  // Load() and before the first Update; it must outlive the store. An error
  // (the replication did not answer) leaves it in place all the same: ids
  // are reserved again before the first finding opens.
  absl::Status Replicate(FindingsReplication& replication);

  // Applies a version made by another collector's store (see the header
  // comment): opened, updated or resolved under its id. A version older
  // than what the store holds for its id, or one that changes nothing but
  // last_seen, makes no event.
  absl::Status ApplyReplicated(const StoredFinding& version) override;
  // Writes every active finding through the replication again, for a
  // collector that just took over the analysis: in a cluster each then
  // carries the new leader's term, so that a deposed leader's write still
  // in flight is refused or dropped (cluster/jetstream_findings.h). It
  // marks the term first (FindingsReplication::MarkTerm), so the active
  // findings include a previous leader's versions that landed before the
  // mark. No event, no log record. Returns how many were written (0
  // without a Replicate()).
  // Only the findings of the unsharded analysis's sources (ShardOfSource
  // ""): each shard's are its owner's (ShareActiveOf).
  absl::StatusOr<size_t> ShareActive() { return ShareActiveOf(""); }
  // The same for a collector that just took analysis shard `shard` over
  // (FindingsReplication::MarkShardTerm): the active findings of the
  // shard's sources.
  absl::StatusOr<size_t> ShareActiveOf(absl::string_view shard);
  // Resolves, at `now`, every active finding the cluster does not have:
  // its id is not in `shared` (the whole shared set), or it was never
  // shared (kept from before this collector joined a cluster).
  absl::Status ResolveUnshared(const absl::flat_hash_set<std::string>& shared,
                               absl::Time now) override;

  // Sets the operator marks (acked, silenced_by) on every finding List and
  // Active return; the log, the replication and the watchers' events hold
  // findings unmarked (a mark is not a change of the finding). Call before
  // serving; `marks` must outlive the store.
  void SetMarks(const Marks* marks) { marks_ = marks; }

  // Newest first (descending id), at most filter.limit.
  std::vector<v1::Finding> List(const FindingsFilter& filter) const;
  // The same, saying whether more match beyond the page.
  FindingsPage ListPage(const FindingsFilter& filter) const;
  // Every job a finding kept here names (active or resolved), sorted.
  std::vector<std::string> Jobs() const;
  // Active findings, ascending id (for /metrics).
  std::vector<v1::Finding> Active() const;
  // The active findings `source` reported last, ascending id: what a
  // collector that takes a source over (an analysis shard) picks up.
  std::vector<v1::Finding> ActiveOf(absl::string_view source) const;

  // `job` "" = every job.
  std::unique_ptr<Watcher> Watch(absl::string_view job);

  FindingsCounters Counters() const;

 private:
  using Key = std::tuple<std::string, std::string, std::string, std::string,
                         std::string>;
  struct Entry {
    v1::Finding finding;
    std::string source;
    int64_t persisted_last_seen = 0;  // unix nanos
    // Made or applied since the store took its replication (Replicate):
    // in a cluster, the cluster has it (ResolveUnshared leaves it).
    bool shared = false;
  };

  // What one Update pass writes to the log and then tells the watchers.
  struct UpdateBatch {
    std::vector<StoredFinding> to_log;
    std::vector<std::pair<WatchEvent::Type, v1::Finding>> events;
    // An open or a resolve happened: the log write must be fsync'ed.
    bool lifecycle_change = false;
  };

  bool Material(const v1::Finding& before, const analysis::Finding& now) const;
  // The active findings `which` selects, ascending id, marked.
  std::vector<v1::Finding> ActiveIf(
      absl::FunctionRef<bool(const Entry&)> which) const;
  void Open(const analysis::Finding& report, const Key& key, int64_t now_nanos,
            absl::string_view source, UpdateBatch& batch)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Refresh(const analysis::Finding& report, int64_t now_nanos,
               absl::string_view source, Entry& entry, UpdateBatch& batch)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // `within`: only findings of these nodes (null: every finding).
  void ResolveUnreported(const absl::flat_hash_set<Key>& seen,
                         int64_t now_nanos, absl::string_view source,
                         const absl::flat_hash_set<std::string>* within,
                         UpdateBatch& batch) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status UpdateIn(const std::vector<analysis::Finding>& reports,
                        absl::Time now, absl::string_view source,
                        const absl::flat_hash_set<std::string>* within);
  void ResolveKeys(const std::vector<Key>& gone, int64_t now_nanos,
                   UpdateBatch& batch) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Drops the resolved findings beyond the retention (by time relative to
  // `now`: none when it is InfinitePast), bytes and count.
  void TrimResolved(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void KeepResolved(v1::Finding finding) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status MaybeCompact() ABSL_EXCLUSIVE_LOCKS_REQUIRED(update_mu_);
  // Ids for `count` opens reserved ahead from the replication.
  absl::Status ReserveIds(size_t count)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(update_mu_);
  // Persists the batch, tells the watchers, then (`share`) the replication.
  absl::Status Commit(UpdateBatch& batch, absl::string_view what, bool share)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(update_mu_);
  // Applies the version of a finding the store does not hold active under
  // its id.
  void ApplyResolved(const StoredFinding& version, UpdateBatch& batch)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Applies a version of the finding active under `key` (`it`, or end()
  // when none is).
  void ApplyCurrent(const StoredFinding& version, const Key& key,
                    absl::flat_hash_map<Key, Entry>::iterator it,
                    UpdateBatch& batch) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  StateStore* const store_;
  const FindingsStoreOptions options_;
  // Serializes Update and Watch registration so that log order matches
  // event order and a new watcher sees each change exactly once.
  absl::Mutex update_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  uint64_t compacted_bytes_ ABSL_GUARDED_BY(update_mu_) = 0;
  LocalFindingsReplication local_replication_;
  // local_replication_ until Replicate() (before the first Update).
  FindingsReplication* replication_ = &local_replication_;
  mutable absl::Mutex mu_;
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
  // Ids below this are reserved for this store.
  uint64_t reserved_end_ ABSL_GUARDED_BY(mu_) = 0;
  absl::flat_hash_map<Key, Entry> active_ ABSL_GUARDED_BY(mu_);
  // Ascending resolution order; oldest dropped beyond the retention.
  std::deque<v1::Finding> resolved_ ABSL_GUARDED_BY(mu_);
  uint64_t resolved_bytes_ ABSL_GUARDED_BY(mu_) = 0;  // their ByteSizeLong
  // Their ids: a replicated resolve looks itself up here, not through a
  // month of history.
  absl::flat_hash_set<std::string> resolved_ids_ ABSL_GUARDED_BY(mu_);
  WatcherSet watchers_ ABSL_GUARDED_BY(mu_);
  FindingsCounters counters_ ABSL_GUARDED_BY(mu_);
  const Marks* marks_ = nullptr;
};

}  // namespace fabricdiag::collector
