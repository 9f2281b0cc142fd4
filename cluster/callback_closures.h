// Closures for C callbacks that may still come after their owner is gone.
//
// libnats hands every callback of a connection the `void*` closure set in
// its options, on its own threads, and names no moment after which none
// will come: the closed callback is usually the last, but an asynchronous
// error posted behind it is delivered after it (seen under load: a
// NATS_CONNECTION_CLOSED error as a connection with a key-value watcher
// closes). So a closure must not point at memory anyone frees. A closure
// from CallbackClosures is an id instead: once Remove()d, Find() returns
// null and the callback has nothing to do.
//
//   void* closure = CallbackClosures<Link>::Add(link);
//   natsOptions_SetErrorHandler(options, &OnError, closure);
//   ...
//   void OnError(..., void* closure) {
//     std::shared_ptr<Link> link = CallbackClosures<Link>::Find(closure);
//     if (link == nullptr) return;  // its connection is gone
//   }
//   ...
//   CallbackClosures<Link>::Remove(closure);  // after the connection is
//                                             // destroyed
//
// Thread-safe. An id is never given out twice.
#pragma once

#include <cstdint>
#include <memory>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"

namespace fabricdiag::cluster {

template <typename T>
class CallbackClosures {
 public:
  // Keeps `value` until Remove(); the closure to give the callbacks.
  static void* Add(std::shared_ptr<T> value) {
    Table& t = table();
    absl::MutexLock lock(&t.mu);
    const uint64_t id = t.next++;
    t.by_id.emplace(id, std::move(value));
    // An opaque token: never dereferenced, only looked up.
    return reinterpret_cast<void*>(  // NOLINT(performance-no-int-to-ptr)
        static_cast<uintptr_t>(id));
  }

  // What Add() kept under `closure`; null once removed (or for a closure
  // Add() never gave).
  static std::shared_ptr<T> Find(void* closure) {
    Table& t = table();
    absl::MutexLock lock(&t.mu);
    auto it = t.by_id.find(Id(closure));
    return it == t.by_id.end() ? nullptr : it->second;
  }

  // Lets go of what Add() kept under `closure`; a later Find() of it
  // returns null. Removing twice, or null, does nothing.
  static void Remove(void* closure) {
    Table& t = table();
    absl::MutexLock lock(&t.mu);
    t.by_id.erase(Id(closure));
  }

  // How many are kept (for tests).
  static size_t size() {
    Table& t = table();
    absl::MutexLock lock(&t.mu);
    return t.by_id.size();
  }

 private:
  struct Table {
    absl::Mutex mu;
    uint64_t next ABSL_GUARDED_BY(mu) = 1;  // 0 is no closure
    absl::flat_hash_map<uint64_t, std::shared_ptr<T>> by_id ABSL_GUARDED_BY(mu);
  };
  static uint64_t Id(void* closure) {
    return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(closure));
  }
  // Never destroyed: a callback may come while the process exits.
  static Table& table() {
    static Table* const t = new Table;
    return *t;
  }
};

}  // namespace fabricdiag::cluster
