// The watcher loop every watched key-value bucket of the cluster runs on a
// thread of its own (node facts, operator marks): a kvStore watcher of the
// whole bucket that first replays every key's latest value, then delivers
// each change; recreated when it fails, falls quietly behind the bucket (a
// watcher is a consumer on one server, which may die) or missed a revision
// (RevisionGaps below), its replay then carrying whatever changed meanwhile.
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
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
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

// A watcher of a whole bucket must deliver, once its replay reached the
// revision the bucket had when it began, every revision the bucket still
// holds: a later value of the same key removes an older one (history 1), so
// a revision it passes over is either gone or missed. nats-server 2.9 can
// miss one for good: a message stored while the consumer reads, the one that
// removes its key's older value, is passed over (a hand delete, one run in
// some hundreds on a loaded machine). A missed delete would keep a forgotten
// node for good, so each watcher checks the revisions it passed over
// (FirstHeldRevision) and reads the bucket again when one is still held.
//
//   RevisionGaps gaps(BucketLastSequence(js, bucket));  // before watching
//   ... for each entry, in order:
//   const std::string missed =
//       MissedRevision(nats, bucket, gaps.Before(kvEntry_Revision(entry)));
//   if (!missed.empty()) { ... log it, recreate the watcher ... }
//
// Not thread-safe: one per watcher, on its thread.
class RevisionGaps {
 public:
  // The revisions [first, end).
  struct Range {
    uint64_t first = 0;
    uint64_t end = 0;
    bool empty() const { return first >= end; }
  };

  // `floor`: the bucket's last revision read before the watcher was created;
  // up to it, the replay brings each key's newest value and passes over
  // older ones by design. Unknown (the read failed): the checks start after
  // the replay's end.
  explicit RevisionGaps(const absl::StatusOr<uint64_t>& floor);

  // At the end of the replay (libnats' marker).
  void Replayed();

  // Before an entry of `revision` is applied, in the watcher's order: the
  // revisions passed over since the entry before (after the floor).
  Range Before(uint64_t revision);

 private:
  bool anchored_ = false;  // last_ is known: the floor, or the replay's end
  uint64_t last_ = 0;      // the newest revision checked up to
  uint64_t newest_ = 0;    // the newest revision delivered
};

// The first revision of `range` that the bucket's stream still holds, asked
// of its leader in one request however wide the range; nullopt when it holds
// none of them.
absl::StatusOr<std::optional<uint64_t>> FirstHeldRevision(
    const NatsConnection& nats, const std::string& bucket,
    RevisionGaps::Range range);

// FirstHeldRevision's reading of the answer of JetStream's message API: the
// message's sequence when it lies in `range`, nullopt when it lies after it
// or the stream holds no message from range.first on; Unavailable for
// JetStream's other errors, Internal for anything that is not its answer.
absl::StatusOr<std::optional<uint64_t>> ReadFirstHeldRevision(
    absl::string_view answer, RevisionGaps::Range range);

// Why a watcher must read its bucket again, having passed over `range`: a
// revision the bucket still holds, or a check that failed (asked again after
// a new replay rather than trusted). Empty when there is nothing to check or
// every revision passed over is gone: superseded, deleted or expired.
std::string MissedRevision(const NatsConnection& nats,
                           const std::string& bucket,
                           RevisionGaps::Range range);

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
