// Watching findings: the events a subscriber receives, the Watcher it holds
// and the fan-out (WatcherSet) that FindingsStore feeds.
//
// Each watcher has a bounded queue: its snapshot plus a backlog allowance.
// A watcher that falls that far behind has its queue dropped, receives one
// kOverflow event and is closed, so a slow subscriber never makes the
// producer wait or grow without bound.
//
//   WatcherSet set;  // guarded by the owner's mutex
//   std::unique_ptr<Watcher> w = set.Add("moe-train-42", snapshot, 1024);
//   overflows += set.Broadcast(WatchEvent::Type::kOpened, finding);
//   while (auto ev = w->Next(absl::Seconds(1))) { ... }  // another thread
//
// Watcher is thread-safe and may outlive the set (and the other way round).
// WatcherSet is thread-compatible: its owner serializes calls.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "proto/collector.pb.h"

namespace fabricdiag::collector {

struct WatchEvent {
  enum class Type {
    kSnapshot,  // active when the watch started
    kOpened,
    kUpdated,
    kResolved,
    kOverflow,  // the watcher fell behind and was closed; no more events
    kClosed,    // the watcher is closed (after kOverflow, Close, shutdown)
  };
  Type type = Type::kClosed;
  v1::Finding finding;  // empty for kOverflow and kClosed
};

namespace internal {
class WatchQueue;
}  // namespace internal

// One subscriber. Destroying it unsubscribes.
class Watcher {
 public:
  explicit Watcher(std::shared_ptr<internal::WatchQueue> queue);
  Watcher(const Watcher&) = delete;
  Watcher& operator=(const Watcher&) = delete;
  ~Watcher();

  // The next event, waiting up to `timeout`; nullopt on timeout. After the
  // watcher is closed, returns kClosed at once (after a pending kOverflow).
  std::optional<WatchEvent> Next(absl::Duration timeout);
  // Closes the watcher and wakes a blocked Next (e.g. the RPC was cancelled).
  void Close();

 private:
  std::shared_ptr<internal::WatchQueue> queue_;
};

class WatcherSet {
 public:
  WatcherSet() = default;
  WatcherSet(const WatcherSet&) = delete;
  WatcherSet& operator=(const WatcherSet&) = delete;
  // Closes every watcher: a blocked Next returns kClosed.
  ~WatcherSet();

  // A new watcher of `job` ("" = every job) whose queue holds a kSnapshot
  // event per finding of `snapshot` first; `backlog` more events may wait
  // before it overflows (the snapshot does not count against it).
  std::unique_ptr<Watcher> Add(absl::string_view job,
                               const std::vector<const v1::Finding*>& snapshot,
                               size_t backlog);
  // Queues the event for every watcher of the finding's job; never blocks.
  // Returns how many watchers overflowed (and were closed) by it.
  uint64_t Broadcast(WatchEvent::Type type, const v1::Finding& finding);
  // Forgets watchers that were closed (unsubscribed or overflowed).
  void RemoveClosed();
  // Watchers not closed yet.
  size_t open() const;

 private:
  std::vector<std::shared_ptr<internal::WatchQueue>> queues_;
};

}  // namespace fabricdiag::collector
