#include "cluster/kv_watch.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/log.h"

namespace fabricdiag::cluster {
namespace {

// How long a watcher waits for an entry before it asks whether it fell
// behind the bucket.
constexpr int64_t kWatchPollMillis = 500;

}  // namespace

void RunBucketWatch(const NatsConnection& nats, kvStore* kv,
                    const std::string& bucket, const BucketWatch& watch) {
  // The newest revision applied, across watchers, to tell a quiet watcher
  // from one that fell behind.
  uint64_t delivered = 0;
  while (true) {
    kvWatchOptions watch_options;
    kvWatchOptions_Init(&watch_options);
    kvWatcher* watcher = nullptr;
    natsStatus s = kvStore_WatchAll(&watcher, kv, &watch_options);
    int behind = 0;  // consecutive quiet polls behind the bucket
    while (s == NATS_OK && !watch.stopping()) {
      kvEntry* entry = nullptr;
      s = kvWatcher_Next(&entry, watcher, kWatchPollMillis);
      if (s == NATS_TIMEOUT) {
        // A watcher is a consumer on one server: when that server dies it
        // can go quiet without an error. Recreated, it replays every key.
        s = WatcherFellBehind(nats.js(), bucket, delivered, &behind).has_value()
                ? NATS_TIMEOUT
                : NATS_OK;
        continue;
      }
      if (s != NATS_OK) break;
      if (entry == nullptr) {  // the end of the replay
        watch.replayed();
        continue;
      }
      delivered = std::max(delivered, kvEntry_Revision(entry));
      watch.apply(entry);
      kvEntry_Destroy(entry);
    }
    if (watcher != nullptr) kvWatcher_Destroy(watcher);
    if (nats.closed() || watch.stopping()) return;
    LogWarning(absl::StrCat(
        "watching ", watch.what, ": ",
        s == NATS_TIMEOUT ? std::string("the watcher fell behind the bucket")
                          : NatsError(s, "the watcher failed").message(),
        "; watching again"));
    if (watch.restarts != nullptr) watch.restarts->fetch_add(1);
    if (!watch.pause(absl::Milliseconds(200))) return;
  }
}

absl::Status WaitForReplay(const absl::Notification& replayed,
                           const NatsConnection& nats,
                           const std::string& bucket) {
  // At least a few seconds even when opening the other buckets used up
  // most of the startup deadline.
  const absl::Time deadline =
      std::max(nats.startup_deadline(), absl::Now() + absl::Seconds(10));
  if (replayed.WaitForNotificationWithDeadline(deadline)) {
    return absl::OkStatus();
  }
  return absl::UnavailableError(absl::StrCat(
      "reading bucket ", bucket, " of ", absl::StrJoin(nats.urls(), ","),
      ": its watcher did not replay it in time (the NATS "
      "servers are still recovering?)"));
}

}  // namespace fabricdiag::cluster
