// The watcher loop every watched key-value bucket of the cluster runs on a
// thread of its own (node facts, operator marks): a kvStore watcher of the
// whole bucket that first replays every key's latest value, then delivers
// each change; recreated when it fails or falls quietly behind the bucket
// (a watcher is a consumer on one server, which may die), its replay then
// carrying whatever changed meanwhile.
//
//   BucketWatch watch;
//   watch.what = "the node facts";
//   watch.stopping = [this] { ... };
//   watch.pause = [this](absl::Duration d) { return Pause(d); };
//   watch.apply = [this](kvEntry* entry) { ApplyEntry(entry); };
//   watch.replayed = [this] { replayed_.Notify(); };
//   watcher_ = std::thread([this, watch] { RunBucketWatch(*nats_, kv_,
//                                                         bucket, watch); });
//   RETURN_IF_ERROR(WaitForReplay(replayed_, *nats_, bucket));
#pragma once

#include <nats/nats.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "cluster/nats_connection.h"

namespace fabricdiag::cluster {

struct BucketWatch {
  std::string what;  // "the node facts", for the log
  // Polled between entries (at least every half second).
  std::function<bool()> stopping;
  // Waits `d` before the watcher is recreated; false: stop instead.
  std::function<bool(absl::Duration)> pause;
  // Each entry, in order; the loop destroys it afterwards.
  std::function<void(kvEntry*)> apply;
  // At the end of every replay (the first one lets Open return).
  std::function<void()> replayed;
  // Counts the recreations; may be null.
  std::atomic<uint64_t>* restarts = nullptr;
};

// Runs until watch.stopping() or the connection is closed for good.
void RunBucketWatch(const NatsConnection& nats, kvStore* kv,
                    const std::string& bucket, const BucketWatch& watch);

// Waits for `replayed` until the connection's startup deadline (at least 10
// s from now): Unavailable naming the bucket and the servers when the
// watcher did not replay it in time.
absl::Status WaitForReplay(const absl::Notification& replayed,
                           const NatsConnection& nats,
                           const std::string& bucket);

}  // namespace fabricdiag::cluster
