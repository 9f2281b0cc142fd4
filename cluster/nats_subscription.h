// A core NATS subscription whose handler has returned for good once the
// object is gone: what a class that hands its `this` to a handler needs
// before it goes away.
//
//   std::unique_ptr<NatsSubscription> sub = NatsSubscription::Open(
//       nats->nc(), "fabricdiag.liveness.>", &OnLiveness, this,
//       {65536, 512 << 20});
//   if (sub == nullptr) ...;  // logged
//   sub.reset();              // unsubscribed; OnLiveness runs no more
//
// Ending a subscription (this class's, a KV watcher's) must also wait for
// libnats' reader thread: libnats 3.4 looks an incoming message's
// subscription up under the connection's lock, lets the lock go, and only
// then takes the subscription's own lock, holding no reference in between.
// A subscription freed in that gap is used after it was freed (a crash in
// natsConn_processMsg). ~NatsSubscription waits for the reader to pass
// (ReaderPassed()) between the unsubscribe and the free; EndKvWatcher()
// likewise, when the watcher's consumer deletion (itself a round trip
// through the reader) failed.
//
// Thread-safe: the handler runs on libnats' thread; destroy the object on
// any other thread, and not while holding a lock the handler takes.
#pragma once

#include <nats/nats.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/synchronization/notification.h"
#include "absl/time/time.h"

namespace fabricdiag::cluster {

class NatsSubscription {
 public:
  // How much may wait for the handler before libnats drops messages as a
  // slow consumer's. Bursts of large chunks: let them queue.
  struct PendingLimits {
    int messages = 65536;
    int bytes = 256 << 20;
  };

  // Subscribes `handler` (given `closure`) to `subject`; null when the
  // subscription failed (logged, naming the subject).
  static std::unique_ptr<NatsSubscription> Open(natsConnection* nc,
                                                const std::string& subject,
                                                natsMsgHandler handler,
                                                void* closure,
                                                PendingLimits limits);
  // Unsubscribes, waits (up to 5 s, then logs) until the handler returned
  // for the last time, then until the reader passed (ReaderPassed()). What
  // is still pending is dropped.
  ~NatsSubscription();
  // Ends every subscription of `subs` (null ones skipped) as the destructor
  // ends one, but with one wait for each connection's reader rather than
  // one per subscription: a collector that lets go of many shards at once
  // while its server does not answer waits kReaderPassedWait, not that
  // many times over.
  static void End(std::vector<std::unique_ptr<NatsSubscription>> subs);
  NatsSubscription(const NatsSubscription&) = delete;
  NatsSubscription& operator=(const NatsSubscription&) = delete;

 private:
  NatsSubscription() = default;
  static void OnComplete(void* closure);
  // The two halves of the end, ReaderPassed() between them: unsubscribes
  // and waits until `deadline` for the handler's last return; frees.
  void Unsubscribe(absl::Time deadline);
  void Free();

  natsConnection* nc_ = nullptr;
  natsSubscription* sub_ = nullptr;
  std::string subject_;
  absl::Notification done_;  // OnComplete ran
};

// How long ReaderPassed() waits for the server's answer before it returns
// anyway.
inline constexpr absl::Duration kReaderPassedWait = absl::Milliseconds(250);

// Returns once `nc`'s reader thread has finished with every message it
// read before this call: a subscription unsubscribed before it may then be
// freed. Connected, that is the answer to a PING (the reader handles what
// it reads in order), or kReaderPassedWait if none comes; otherwise (the
// reader thread ended, or is ending, with the link) a few milliseconds.
// The reader never blocks while it holds a subscription unreferenced, so a
// wait that ends without the answer has still outlasted it.
void ReaderPassed(natsConnection* nc);

// Stops `watcher` (a KV watcher on `nc`), waits for the reader, and
// destroys it. Null is ignored.
void EndKvWatcher(natsConnection* nc, kvWatcher* watcher);

}  // namespace fabricdiag::cluster
