#include "cluster/jetstream_findings.h"

#include <stdlib.h>

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cluster/kv_watch.h"
#include "cluster/nats_subscription.h"
#include "common/log.h"
#include "common/status_macros.h"

namespace fabricdiag::cluster {
namespace {

constexpr char kNextIdKey[] = "next_id";
constexpr char kTermKey[] = "term";
// "term.<shard>": the term mark of a shard's owner.
constexpr char kShardTermKeyPrefix[] = "term.";
constexpr absl::Duration kRetryPause = absl::Milliseconds(100);
// Half-seconds a replay may bring nothing before it is read again.
constexpr int kQuietReplayLimit = 20;

// The version a value holds; nullopt when it is not one intact finding.
std::optional<collector::StoredFinding> Decode(absl::string_view value) {
  collector::FindingsReplay replay = collector::ReplayFindingsLog(value);
  if (!replay.damage.empty() || replay.loaded.dropped_torn_record ||
      replay.loaded.findings.size() != 1) {
    return std::nullopt;
  }
  return std::move(replay.loaded.findings[0]);
}

}  // namespace

absl::Duration JetStreamFindings::TestWriteDelayFromEnv() {
  const char* value = getenv("FABRICDIAG_TEST_FINDINGS_WRITE_DELAY");
  absl::Duration delay;
  if (value == nullptr || !absl::ParseDuration(value, &delay) ||
      delay < absl::ZeroDuration()) {
    return absl::ZeroDuration();
  }
  return delay;
}

absl::StatusOr<std::unique_ptr<JetStreamFindings>> JetStreamFindings::Open(
    NatsConnection* nats, const collector::AnalysisRole* role,
    const Options& options) {
  kvConfig config;
  kvConfig_Init(&config);
  config.Bucket = options.bucket.c_str();
  config.Description = "fabricdiag findings of the cluster";
  config.History = 1;
  config.StorageType = js_FileStorage;
  config.Replicas = options.replicas;
  config.TTL = absl::ToInt64Nanoseconds(options.ttl);
  ASSIGN_OR_RETURN(kvStore * kv, BindOrCreateBucket(*nats, config));
  if (options.test_write_delay > absl::ZeroDuration()) {
    LogWarning(absl::StrCat("test hook: every findings write waits ",
                            absl::FormatDuration(options.test_write_delay),
                            " after its lease check"));
  }
  return std::unique_ptr<JetStreamFindings>(
      new JetStreamFindings(nats, role, options, kv));
}

JetStreamFindings::JetStreamFindings(NatsConnection* nats,
                                     const collector::AnalysisRole* role,
                                     Options options, kvStore* kv)
    : nats_(nats), role_(role), options_(std::move(options)), kv_(kv) {}

JetStreamFindings::~JetStreamFindings() {
  StopWatching();
  kvStore_Destroy(kv_);
}

std::string JetStreamFindings::Describe() const {
  return absl::StrCat("NATS bucket ", options_.bucket, " (",
                      absl::StrJoin(nats_->urls(), ","), ")");
}

absl::StatusOr<uint64_t> JetStreamFindings::ReserveOnce(uint64_t count,
                                                        uint64_t at_least) {
  kvEntry* entry = nullptr;
  natsStatus s = kvStore_Get(&entry, kv_, kNextIdKey);
  uint64_t next = 1;
  uint64_t revision = 0;
  if (s == NATS_OK) {
    const char* value = kvEntry_ValueString(entry);
    revision = kvEntry_Revision(entry);
    const bool parsed =
        value != nullptr && absl::SimpleAtoi(value, &next) && next > 0;
    kvEntry_Destroy(entry);
    if (!parsed) {
      return absl::DataLossError(absl::StrCat(
          "bucket ", options_.bucket, " key ", kNextIdKey,
          " is not a number: put the largest finding id + 1 there"));
    }
  } else if (s != NATS_NOT_FOUND) {
    return NatsError(s, "reading the next finding id");
  }
  const uint64_t first = std::max(next, at_least);
  const std::string value = absl::StrCat(first + count);
  uint64_t written = 0;
  s = revision == 0
          ? kvStore_CreateString(&written, kv_, kNextIdKey, value.c_str())
          : kvStore_UpdateString(&written, kv_, kNextIdKey, value.c_str(),
                                 revision);
  if (s != NATS_OK) {
    // Most likely another collector reserved meanwhile: read again.
    return absl::AbortedError(NatsError(s, "reserving finding ids").message());
  }
  return first;
}

absl::StatusOr<uint64_t> JetStreamFindings::ReserveIds(uint64_t count,
                                                       uint64_t at_least) {
  const absl::Time deadline = absl::Now() + options_.deadline;
  while (true) {
    absl::StatusOr<uint64_t> first = ReserveOnce(count, at_least);
    if (first.ok() || absl::IsDataLoss(first.status()) ||
        !PauseBeforeRetry(*nats_, kRetryPause, deadline)) {
      return first;
    }
  }
}

uint64_t JetStreamFindings::TermOf(absl::string_view shard) const {
  return shard.empty() ? role_->Term() : role_->ShardTerm(shard);
}

absl::Status JetStreamFindings::Fenced(const collector::StoredFinding& version,
                                       const std::string& why) {
  fenced_writes_.fetch_add(1);
  const absl::string_view shard = collector::ShardOfSource(version.source);
  const std::string message = absl::StrCat(
      "shared findings: not writing ", version.finding.id(), " (",
      v1::FindingState_Name(version.finding.state()), "): ", why,
      shard.empty()
          ? "; this collector no longer leads the analysis"
          : absl::StrCat("; this collector no longer owns shard ", shard));
  LogWarning(message);
  return absl::FailedPreconditionError(message);
}

absl::Status JetStreamFindings::WriteOne(
    const collector::StoredFinding& version, absl::Time deadline) {
  const std::string& id = version.finding.id();
  const absl::string_view shard = collector::ShardOfSource(version.source);
  collector::StoredFinding stamped = version;
  natsStatus s = NATS_OK;
  for (int attempt = 0;; ++attempt) {
    if (attempt > 0 && (nats_->closed() || absl::Now() > deadline)) {
      write_errors_.fetch_add(1);
      return NatsError(s, absl::StrCat("sharing finding ", id));
    }
    // Held with its margin by the monotonic clock, now (the term is 0
    // otherwise).
    const uint64_t term = TermOf(shard);
    if (term == 0) {
      return Fenced(version, shard.empty()
                                 ? std::string("the analysis lease ran out")
                                 : absl::StrCat("the lease of shard ", shard,
                                                " ran out"));
    }
    FindingTerms::Seen seen;
    {
      absl::MutexLock lock(&mu_);
      seen = terms_.Get(id);
    }
    if (seen.term > term && seen.shard == shard) {
      return Fenced(version, absl::StrCat("term ", seen.term,
                                          " wrote it after this collector's "
                                          "term ",
                                          term));
    }
    stamped.term = term;
    const std::string value = collector::EncodeFindingsLog(
        absl::MakeConstSpan(&stamped, 1), /*next_id=*/0);
    if (options_.test_write_delay > absl::ZeroDuration()) {
      LogWarning(absl::StrCat("test hook: holding the write of ", id, " (",
                              v1::FindingState_Name(version.finding.state()),
                              ", term ", term, ") for ",
                              absl::FormatDuration(options_.test_write_delay)));
      absl::SleepFor(options_.test_write_delay);
    }
    uint64_t revision = 0;
    s = seen.revision == 0
            ? kvStore_Create(&revision, kv_, id.c_str(), value.data(),
                             static_cast<int>(value.size()))
            : kvStore_Update(&revision, kv_, id.c_str(), value.data(),
                             static_cast<int>(value.size()), seen.revision);
    if (s == NATS_OK) {
      absl::MutexLock lock(&mu_);
      terms_.Saw(id, term, revision, shard);
      return absl::OkStatus();
    }
    // Someone wrote the key since this collector last saw it, or the
    // request failed: what does the bucket hold now?
    kvEntry* entry = nullptr;
    const natsStatus read = kvStore_Get(&entry, kv_, id.c_str());
    if (read == NATS_OK) {
      revision = kvEntry_Revision(entry);
      const std::optional<collector::StoredFinding> stored = Decode(
          absl::string_view(static_cast<const char*>(kvEntry_Value(entry)),
                            static_cast<size_t>(kvEntry_ValueLen(entry))));
      kvEntry_Destroy(entry);
      const uint64_t stored_term = stored.has_value() ? stored->term : 0;
      const absl::string_view stored_shard =
          stored.has_value() ? collector::ShardOfSource(stored->source)
                             : absl::string_view();
      {
        absl::MutexLock lock(&mu_);
        terms_.Saw(id, stored_term, revision, stored_shard);
      }
      if (stored_term > term && stored_shard == shard) {
        return Fenced(version, absl::StrCat("term ", stored_term,
                                            " wrote it after this "
                                            "collector's term ",
                                            term));
      }
      // This collector's own earlier write landed after all, or an older
      // term's: written again over it at once.
      if (revision != seen.revision) continue;
    } else if (read == NATS_NOT_FOUND) {
      {
        absl::MutexLock lock(&mu_);
        terms_.Gone(id);
      }
      if (seen.revision != 0) continue;  // expired or deleted: created anew
    }
    if (!PauseBeforeRetry(*nats_, kRetryPause, deadline)) {
      write_errors_.fetch_add(1);
      return NatsError(s, absl::StrCat("sharing finding ", id));
    }
  }
}

uint64_t JetStreamFindings::PutTermMark(absl::string_view shard) {
  const uint64_t term = TermOf(shard);
  if (term == 0) return 0;
  {
    absl::MutexLock lock(&marked_mu_);
    auto it = marked_.find(shard);
    if (it != marked_.end() && it->second == term) return 0;
  }
  // Unconditional: a late mark of an older term raises nothing.
  uint64_t revision = 0;
  const std::string key = shard.empty()
                              ? std::string(kTermKey)
                              : absl::StrCat(kShardTermKeyPrefix, shard);
  const natsStatus s = kvStore_PutString(&revision, kv_, key.c_str(),
                                         absl::StrCat(term).c_str());
  if (s == NATS_OK) {
    absl::MutexLock lock(&marked_mu_);
    marked_[shard] = term;
    return revision;
  }
  LogWarning(
      NatsError(s, absl::StrCat("marking term ", term, " of ",
                                shard.empty() ? "the analysis"
                                              : absl::StrCat("shard ", shard),
                                " in the shared findings"))
          .message());
  return 0;
}

void JetStreamFindings::MarkTerm() { MarkAndWait(""); }

void JetStreamFindings::MarkShardTerm(absl::string_view shard) {
  MarkAndWait(shard);
}

void JetStreamFindings::MarkAndWait(absl::string_view shard) {
  const uint64_t mark = PutTermMark(shard);
  if (mark == 0 || !watching_.load()) return;
  absl::MutexLock lock(&delivered_mu_);
  const auto reached = [this, mark]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(
                           delivered_mu_) { return delivered_ >= mark; };
  if (!delivered_mu_.AwaitWithTimeout(absl::Condition(&reached),
                                      options_.mark_wait)) {
    LogWarning(absl::StrCat(
        "shared findings: ",
        shard.empty() ? std::string("analysis") : absl::StrCat("shard ", shard),
        " term ", TermOf(shard),
        ": the watcher did not deliver the term's mark (revision ", mark,
        ") within ", absl::FormatDuration(options_.mark_wait),
        "; going on: a previous leader's version that landed before the "
        "mark is taken over when the watcher delivers it, and judged by the "
        "next analysis pass"));
  }
}

void JetStreamFindings::Delivered(uint64_t revision) {
  absl::MutexLock lock(&delivered_mu_);
  delivered_ = std::max(delivered_, revision);
}

absl::Status JetStreamFindings::Write(
    absl::Span<const collector::StoredFinding> versions) {
  const absl::Time deadline = absl::Now() + options_.deadline;
  // Each writer's term marked before its first version, without waiting for
  // the watcher: the caller may hold what applying a delivered version
  // needs (MarkTerm() waited before, at a new term).
  absl::flat_hash_set<absl::string_view> marked;
  for (const collector::StoredFinding& v : versions) {
    const absl::string_view shard = collector::ShardOfSource(v.source);
    if (marked.insert(shard).second) PutTermMark(shard);
  }
  if (versions.empty()) PutTermMark("");
  for (const collector::StoredFinding& v : versions) {
    // Stops at the first failure: the versions after it are newer than
    // what the bucket holds, and a fenced writer writes nothing more.
    absl::Status written = WriteOne(v, deadline);
    if (!written.ok()) {
      // A fenced write is not a failure to share: this collector no longer
      // writes there, and its watcher tells whether it sees the findings.
      // Write() has one caller at a time (the analysis pass).
      const absl::string_view shard = collector::ShardOfSource(v.source);
      const uint64_t term = TermOf(shard);
      absl::MutexLock lock(&failing_mu_);
      if (!absl::IsFailedPrecondition(written) && term != 0 &&
          (failing_.since == absl::InfiniteFuture() || failing_.term != term ||
           failing_.shard != shard)) {
        failing_ = {absl::Now(), term, std::string(shard)};
      }
      return written;
    }
  }
  absl::MutexLock lock(&failing_mu_);
  failing_ = Failing();
  return absl::OkStatus();
}

absl::Duration JetStreamFindings::UnconfirmedFor() const {
  absl::Time since = absl::FromUnixNanos(caught_up_at_.load());
  // A writer that cannot share its findings; once it no longer leads (or
  // owns the shard) under that term, its watcher alone tells whether it
  // sees the cluster's.
  Failing failing;
  {
    absl::MutexLock lock(&failing_mu_);
    failing = failing_;
  }
  if (failing.since != absl::InfiniteFuture() &&
      failing.term == TermOf(failing.shard)) {
    since = std::min(since, failing.since);
  }
  return std::max(absl::ZeroDuration(), absl::Now() - since);
}

void JetStreamFindings::Watch(
    std::function<void(const collector::StoredFinding&)> on_version,
    std::function<void(const absl::flat_hash_set<std::string>&)> on_replayed) {
  watching_.store(true);
  watcher_ = std::thread(&JetStreamFindings::WatchLoop, this,
                         std::move(on_version), std::move(on_replayed));
}

void JetStreamFindings::StopWatching() {
  stopping_.store(true);
  watching_.store(false);
  if (watcher_.joinable()) watcher_.join();
}

void JetStreamFindings::WatchLoop(
    const std::function<void(const collector::StoredFinding&)>& on_version,
    const std::function<void(const absl::flat_hash_set<std::string>&)>&
        on_replayed) {
  uint64_t delivered = 0;  // the newest revision handed over
  // Whatever is ahead in the loop, everything up to `delivered` was handed
  // over (or dropped) by the time the next entry is asked for.
  const auto next = [this, &delivered](kvEntry** entry, kvWatcher* watcher) {
    Delivered(delivered);
    return kvWatcher_Next(entry, watcher, 500);
  };
  while (!stopping_.load()) {
    kvWatchOptions watch_options;
    kvWatchOptions_Init(&watch_options);
    // Right after the servers restarted, a replay can end short of the
    // bucket's newest revision: taken for the whole set, it would resolve
    // findings the cluster still has. So it must reach the newest revision
    // from before it began (deletions, by hand: collectors never delete,
    // are skipped below but counted).
    const absl::StatusOr<uint64_t> newest_before =
        BucketLastRevision(nats_->js(), options_.bucket);
    RevisionGaps gaps(BucketLastSequence(nats_->js(), options_.bucket));
    kvWatcher* watcher = nullptr;
    natsStatus s = kvStore_WatchAll(&watcher, kv_, &watch_options);
    {
      absl::MutexLock lock(&mu_);
      terms_.StartReplay();
    }
    int behind = 0;  // consecutive quiet half-seconds behind the bucket
    // Ids of the findings the replay brought, until its end.
    std::optional<absl::flat_hash_set<std::string>> replayed(std::in_place);
    uint64_t replay_newest = 0;  // the newest revision this replay brought
    int quiet_in_replay = 0;     // consecutive quiet half-seconds in it
    bool explained = false;      // why the watcher ends was logged
    // The replay ended (libnats' marker, or it went quiet having brought
    // the bucket's newest revision): false when it must be read again.
    const auto end_replay = [&] {
      if (!newest_before.ok() || *newest_before > replay_newest) {
        LogWarning(absl::StrCat(
            "shared findings: the replay of bucket ", options_.bucket,
            " ended at revision ", replay_newest, " of ",
            newest_before.ok() ? absl::StrCat(*newest_before)
                               : newest_before.status().ToString(),
            " (the NATS servers are still recovering); reading again"));
        explained = true;
        return false;
      }
      on_replayed(*replayed);
      caught_up_at_.store(absl::ToUnixNanos(absl::Now()));
      replayed.reset();
      return true;
    };
    while (s == NATS_OK && !stopping_.load()) {
      kvEntry* entry = nullptr;
      s = next(&entry, watcher);
      if (s == NATS_TIMEOUT) {
        const absl::StatusOr<uint64_t> last =
            BucketLastRevision(nats_->js(), options_.bucket);
        if (replayed.has_value()) {
          // libnats ends a replay after the message it counted as the
          // last one pending; an ordered consumer recreated under it (the
          // servers restarted) can leave that count unmet for good. A
          // replay that went quiet having brought the bucket's newest
          // revision is complete (it delivers in revision order); one that
          // stays quiet short of it is read again.
          ++quiet_in_replay;
          if (last.ok() && *last <= replay_newest && quiet_in_replay >= 2) {
            if (!end_replay()) s = NATS_TIMEOUT;
            continue;
          }
          if (quiet_in_replay >= kQuietReplayLimit) {
            LogWarning(absl::StrCat(
                "shared findings: the replay of bucket ", options_.bucket,
                " brought nothing for ", kQuietReplayLimit / 2,
                " s short of its end (revision ", replay_newest, " of ",
                last.ok() ? absl::StrCat(*last) : last.status().ToString(),
                "); reading again"));
            explained = true;
            s = NATS_TIMEOUT;
            continue;
          }
        } else if (last.ok() && *last <= delivered) {
          // Quiet and nothing newer in the bucket: still current.
          caught_up_at_.store(absl::ToUnixNanos(absl::Now()));
        }
        // Recreated when it fell behind: its replay brings what it missed.
        s = WatcherFellBehind(last, delivered, &behind).has_value()
                ? NATS_TIMEOUT
                : NATS_OK;
        continue;
      }
      if (s != NATS_OK) continue;
      quiet_in_replay = 0;
      if (entry == nullptr) {  // libnats' end of the replay
        gaps.Replayed();
        if (replayed.has_value() && !end_replay()) {
          s = NATS_TIMEOUT;
          break;
        }
        continue;
      }
      const uint64_t revision = kvEntry_Revision(entry);
      // A revision the watcher passed over but the bucket holds was missed
      // (cluster/kv_watch.h): read again, before this entry is handed over.
      if (const std::string missed =
              MissedRevision(*nats_, options_.bucket, gaps.Before(revision));
          !missed.empty()) {
        kvEntry_Destroy(entry);
        LogWarning(
            absl::StrCat("shared findings: ", missed, "; watching again"));
        explained = true;
        s = NATS_TIMEOUT;
        break;
      }
      delivered = std::max(delivered, revision);
      replay_newest = std::max(replay_newest, revision);
      const kvOperation op = kvEntry_Operation(entry);
      if (op == kvOp_Delete || op == kvOp_Purge) {
        kvEntry_Destroy(entry);
        continue;
      }
      const absl::string_view key = kvEntry_Key(entry);
      if (key == kTermKey || absl::StartsWith(key, kShardTermKeyPrefix)) {
        uint64_t term = 0;
        const char* value = kvEntry_ValueString(entry);
        if (value != nullptr && absl::SimpleAtoi(value, &term)) {
          absl::MutexLock lock(&mu_);
          terms_.NewTerm(term,
                         key == kTermKey
                             ? absl::string_view()
                             : key.substr(sizeof(kShardTermKeyPrefix) - 1));
        }
        kvEntry_Destroy(entry);
        continue;
      }
      std::optional<collector::StoredFinding> version;
      if (key != kNextIdKey) {
        version = Decode(
            absl::string_view(static_cast<const char*>(kvEntry_Value(entry)),
                              static_cast<size_t>(kvEntry_ValueLen(entry))));
        if (!version.has_value()) {
          undecodable_.fetch_add(1);
          LogWarning(absl::StrCat("shared findings: bucket ", options_.bucket,
                                  " key ", kvEntry_Key(entry),
                                  " is not a finding; skipped"));
        }
      }
      kvEntry_Destroy(entry);
      if (!version.has_value()) continue;
      if (replayed.has_value()) replayed->insert(version->finding.id());
      bool admitted = false;
      {
        absl::MutexLock lock(&mu_);
        admitted = terms_.Admit(version->finding.id(), version->term, revision,
                                collector::ShardOfSource(version->source));
      }
      if (!admitted) {
        stale_versions_dropped_.fetch_add(1);
        LogWarning(
            absl::StrCat("shared findings: dropped a late version of ",
                         version->finding.id(), " (",
                         v1::FindingState_Name(version->finding.state()),
                         ") written under term ", version->term,
                         ": a newer writer (analysis leader or shard owner) "
                         "wrote before it landed"));
        continue;
      }
      on_version(*version);
      if (!replayed.has_value()) {
        caught_up_at_.store(absl::ToUnixNanos(absl::Now()));
      }
    }
    EndKvWatcher(nats_->nc(), watcher);
    if (stopping_.load() || nats_->closed()) return;
    if (!explained) {
      LogWarning(absl::StrCat(
          "shared findings: ",
          s == NATS_TIMEOUT ? std::string("the watcher fell behind the bucket")
                            : NatsError(s, "the watcher failed").message(),
          "; watching again"));
    }
    watcher_restarts_.fetch_add(1);
    absl::SleepFor(absl::Milliseconds(200));
  }
}

}  // namespace fabricdiag::cluster
