// The FindingsStore's side of replication (collector/findings/
// findings_replication.h): ids reserved from the replication, and the
// versions another collector's store made applied to this one.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "collector/findings/findings_store.h"
#include "google/protobuf/util/message_differencer.h"

namespace fabricdiag::collector {

absl::Status FindingsStore::ResolveUnshared(
    const absl::flat_hash_set<std::string>& shared, absl::Time now) {
  absl::MutexLock update_lock(&update_mu_);
  UpdateBatch batch;
  {
    absl::MutexLock lock(&mu_);
    watchers_.RemoveClosed();
    std::vector<Key> gone;
    for (const auto& [key, entry] : active_) {
      if (!entry.shared || !shared.contains(entry.finding.id())) {
        gone.push_back(key);
      }
    }
    ResolveKeys(gone, absl::ToUnixNanos(now), batch);
    TrimResolved(now);
  }
  return Commit(batch, "findings the cluster does not share", false);
}

absl::StatusOr<size_t> FindingsStore::ShareActiveOf(absl::string_view shard) {
  FindingsReplication* replication = nullptr;
  {
    absl::MutexLock update_lock(&update_mu_);
    replication = replication_;
  }
  if (replication == &local_replication_) return 0;  // shared nowhere
  // Outside the lock: the versions it waits for are applied under it.
  if (shard.empty()) {
    replication->MarkTerm();
  } else {
    replication->MarkShardTerm(shard);
  }
  absl::MutexLock update_lock(&update_mu_);
  std::vector<StoredFinding> active;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [key, entry] : active_) {
      if (ShardOfSource(entry.source) == shard) {
        active.push_back(StoredFinding{entry.finding, entry.source});
      }
    }
  }
  std::sort(active.begin(), active.end(),
            [](const StoredFinding& a, const StoredFinding& b) {
              return FindingIdNumber(a.finding) < FindingIdNumber(b.finding);
            });
  if (absl::Status written = replication_->Write(active); !written.ok()) {
    return written;
  }
  return active.size();
}

absl::Status FindingsStore::Replicate(FindingsReplication& replication) {
  absl::MutexLock update_lock(&update_mu_);
  replication_ = &replication;
  uint64_t next = 0;
  {
    absl::MutexLock lock(&mu_);
    next = next_id_;
    // What the store made before holds nowhere else (ResolveUnshared
    // resolves it).
    for (auto& [key, entry] : active_) entry.shared = false;
  }
  // No id this store handed out (before it joined a cluster) is handed out
  // again by another collector: the shared next id moves past it.
  return replication.ReserveIds(0, next).status();
}

absl::Status FindingsStore::ReserveIds(size_t count) {
  uint64_t next = 0;
  {
    absl::MutexLock lock(&mu_);
    if (reserved_end_ >= next_id_ && reserved_end_ - next_id_ >= count) {
      return absl::OkStatus();
    }
    next = next_id_;
  }
  // Blocks of 100: one round trip per 100 findings opened.
  const uint64_t block = std::max<uint64_t>(count, 100);
  absl::StatusOr<uint64_t> first = replication_->ReserveIds(block, next);
  if (!first.ok()) return first.status();
  absl::MutexLock lock(&mu_);
  next_id_ = *first;
  reserved_end_ = *first + block;
  return absl::OkStatus();
}

void FindingsStore::ApplyResolved(const StoredFinding& version,
                                  UpdateBatch& batch) {
  const v1::Finding& f = version.finding;
  if (resolved_ids_.contains(f.id())) return;  // already held
  ++counters_.resolved_by_kind[f.kind()];
  batch.lifecycle_change = true;
  batch.events.emplace_back(WatchEvent::Type::kResolved, f);
  batch.to_log.push_back(version);
  KeepResolved(f);
}

void FindingsStore::ApplyCurrent(const StoredFinding& version, const Key& key,
                                 absl::flat_hash_map<Key, Entry>::iterator it,
                                 UpdateBatch& batch) {
  const v1::Finding& f = version.finding;
  if (f.state() != v1::FINDING_STATE_ACTIVE) {
    if (it != active_.end()) active_.erase(it);
    ApplyResolved(version, batch);
  } else if (it == active_.end()) {
    ++counters_.opened_by_kind[f.kind()];
    batch.lifecycle_change = true;
    batch.events.emplace_back(WatchEvent::Type::kOpened, f);
    batch.to_log.push_back(version);
    active_.emplace(key,
                    Entry{f, version.source, f.last_seen_unix_nanos(), true});
  } else if (f.last_seen_unix_nanos() >=
             it->second.finding.last_seen_unix_nanos()) {
    Entry& entry = it->second;
    // What a watcher would be told about: more than last_seen and the
    // count of passes the condition held (as in Refresh).
    v1::Finding before = entry.finding;
    v1::Finding after = f;
    for (v1::Finding* v : {&before, &after}) {
      v->set_last_seen_unix_nanos(0);
      v->mutable_evidence()->erase(analysis::kIntervalsHeldEvidence);
    }
    const bool changed =
        !google::protobuf::util::MessageDifferencer::Equals(before, after);
    entry.finding = f;
    entry.source = version.source;
    entry.shared = true;
    entry.persisted_last_seen = f.last_seen_unix_nanos();
    batch.to_log.push_back(version);
    if (changed) {
      ++counters_.updated;
      batch.events.emplace_back(WatchEvent::Type::kUpdated, f);
    }
  } else {
    // This store holds a newer version (its last write to the cluster
    // failed): the cluster has the finding all the same.
    it->second.shared = true;
  }
}

absl::Status FindingsStore::ApplyReplicated(const StoredFinding& version) {
  absl::MutexLock update_lock(&update_mu_);
  UpdateBatch batch;
  {
    absl::MutexLock lock(&mu_);
    watchers_.RemoveClosed();
    const v1::Finding& f = version.finding;
    next_id_ = std::max(next_id_, FindingIdNumber(f) + 1);
    const Key key{f.kind(), f.job(), f.node(), f.device(), f.group()};
    auto it = active_.find(key);
    if (it != active_.end() && it->second.finding.id() != f.id() &&
        FindingIdNumber(it->second.finding) > FindingIdNumber(f)) {
      // An older finding of a condition that reopened since: history.
      if (f.state() != v1::FINDING_STATE_ACTIVE) ApplyResolved(version, batch);
    } else {
      if (it != active_.end() && it->second.finding.id() != f.id()) {
        // Superseded here without its resolve (it was missed): resolve it.
        v1::Finding old = std::move(it->second.finding);
        old.set_state(v1::FINDING_STATE_RESOLVED);
        old.set_resolved_unix_nanos(f.first_seen_unix_nanos());
        const std::string source = std::move(it->second.source);
        active_.erase(it);
        ApplyResolved(StoredFinding{std::move(old), source}, batch);
        it = active_.end();
      }
      ApplyCurrent(version, key, it, batch);
    }
    // A follower runs no pass of its own: the leader's latest version says
    // what time it is.
    TrimResolved(absl::FromUnixNanos(
        std::max(f.last_seen_unix_nanos(), f.resolved_unix_nanos())));
  }
  return Commit(batch, "replicated findings", false);
}

}  // namespace fabricdiag::collector
