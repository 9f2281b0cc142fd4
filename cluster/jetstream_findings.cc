#include "cluster/jetstream_findings.h"

#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/log.h"
#include "common/status_macros.h"

namespace fabricdiag::cluster {
namespace {

constexpr char kNextIdKey[] = "next_id";
constexpr absl::Duration kRetryPause = absl::Milliseconds(100);

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

absl::StatusOr<std::unique_ptr<JetStreamFindings>> JetStreamFindings::Open(
    NatsConnection* nats, const Options& options) {
  kvConfig config;
  kvConfig_Init(&config);
  config.Bucket = options.bucket.c_str();
  config.Description = "fabricdiag findings of the cluster";
  config.History = 1;
  config.StorageType = js_FileStorage;
  config.Replicas = options.replicas;
  config.TTL = absl::ToInt64Nanoseconds(options.ttl);
  ASSIGN_OR_RETURN(kvStore * kv, BindOrCreateBucket(*nats, config));
  return std::unique_ptr<JetStreamFindings>(
      new JetStreamFindings(nats, options, kv));
}

JetStreamFindings::JetStreamFindings(NatsConnection* nats, Options options,
                                     kvStore* kv)
    : nats_(nats), options_(std::move(options)), kv_(kv) {}

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
    if (first.ok() || absl::IsDataLoss(first.status()) || nats_->closed() ||
        absl::Now() + kRetryPause > deadline) {
      return first;
    }
    absl::SleepFor(kRetryPause);
  }
}

absl::Status JetStreamFindings::Write(
    absl::Span<const collector::StoredFinding> versions) {
  const absl::Time deadline = absl::Now() + options_.deadline;
  for (const collector::StoredFinding& v : versions) {
    const std::string value =
        collector::EncodeFindingsLog(absl::MakeConstSpan(&v, 1), /*next_id=*/0);
    while (true) {
      uint64_t revision = 0;
      const natsStatus s =
          kvStore_Put(&revision, kv_, v.finding.id().c_str(), value.data(),
                      static_cast<int>(value.size()));
      if (s == NATS_OK) break;
      if (nats_->closed() || absl::Now() + kRetryPause > deadline) {
        write_errors_.fetch_add(1);
        int64_t none = 0;
        writes_failing_since_.compare_exchange_strong(
            none, absl::ToUnixNanos(absl::Now()));
        return NatsError(s, absl::StrCat("sharing finding ", v.finding.id()));
      }
      absl::SleepFor(kRetryPause);
    }
  }
  writes_failing_since_.store(0);
  return absl::OkStatus();
}

absl::Duration JetStreamFindings::UnconfirmedFor() const {
  int64_t since = caught_up_at_.load();
  if (const int64_t failing = writes_failing_since_.load(); failing != 0) {
    since = std::min(since, failing);
  }
  return std::max(absl::ZeroDuration(),
                  absl::Now() - absl::FromUnixNanos(since));
}

void JetStreamFindings::Watch(
    std::function<void(const collector::StoredFinding&)> on_version,
    std::function<void(const absl::flat_hash_set<std::string>&)> on_replayed) {
  watcher_ = std::thread(&JetStreamFindings::WatchLoop, this,
                         std::move(on_version), std::move(on_replayed));
}

void JetStreamFindings::StopWatching() {
  stopping_.store(true);
  if (watcher_.joinable()) watcher_.join();
}

void JetStreamFindings::WatchLoop(
    const std::function<void(const collector::StoredFinding&)>& on_version,
    const std::function<void(const absl::flat_hash_set<std::string>&)>&
        on_replayed) {
  uint64_t delivered = 0;  // the newest revision handed over
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
    kvWatcher* watcher = nullptr;
    natsStatus s = kvStore_WatchAll(&watcher, kv_, &watch_options);
    int behind = 0;  // consecutive quiet half-seconds behind the bucket
    // Ids of the findings the replay brought, until its end marker.
    std::optional<absl::flat_hash_set<std::string>> replayed(std::in_place);
    uint64_t replay_newest = 0;  // the newest revision this replay brought
    while (s == NATS_OK && !stopping_.load()) {
      kvEntry* entry = nullptr;
      s = kvWatcher_Next(&entry, watcher, 500);
      if (s == NATS_TIMEOUT) {
        const absl::StatusOr<uint64_t> last =
            BucketLastRevision(nats_->js(), options_.bucket);
        // Quiet and nothing newer in the bucket: still current.
        if (!replayed.has_value() && last.ok() && *last <= delivered) {
          caught_up_at_.store(absl::ToUnixNanos(absl::Now()));
        }
        // Recreated when it fell behind: its replay brings what it missed.
        s = WatcherFellBehind(last, delivered, &behind).has_value()
                ? NATS_TIMEOUT
                : NATS_OK;
        continue;
      }
      if (s != NATS_OK) continue;
      if (entry == nullptr) {  // the end of the replay
        if (replayed.has_value()) {
          if (!newest_before.ok() || *newest_before > replay_newest) {
            LogWarning(absl::StrCat(
                "shared findings: the replay of bucket ", options_.bucket,
                " ended at revision ", replay_newest, " of ",
                newest_before.ok() ? absl::StrCat(*newest_before)
                                   : newest_before.status().ToString(),
                " (the NATS servers are still recovering); reading again"));
            s = NATS_TIMEOUT;
            break;
          }
          on_replayed(*replayed);
          caught_up_at_.store(absl::ToUnixNanos(absl::Now()));
        }
        replayed.reset();
        continue;
      }
      delivered = std::max(delivered, kvEntry_Revision(entry));
      replay_newest = std::max(replay_newest, kvEntry_Revision(entry));
      const kvOperation op = kvEntry_Operation(entry);
      if (op == kvOp_Delete || op == kvOp_Purge) {
        kvEntry_Destroy(entry);
        continue;
      }
      std::optional<collector::StoredFinding> version;
      if (absl::string_view(kvEntry_Key(entry)) != kNextIdKey) {
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
      on_version(*version);
      if (!replayed.has_value()) {
        caught_up_at_.store(absl::ToUnixNanos(absl::Now()));
      }
    }
    if (watcher != nullptr) kvWatcher_Destroy(watcher);
    if (stopping_.load() || nats_->closed()) return;
    watcher_restarts_.fetch_add(1);
    absl::SleepFor(absl::Milliseconds(200));
  }
}

}  // namespace fabricdiag::cluster
