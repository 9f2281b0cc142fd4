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
// Thread-safe: the handler runs on libnats' thread; destroy the object on
// any other thread, and not while holding a lock the handler takes.
#pragma once

#include <nats/nats.h>

#include <memory>
#include <string>

#include "absl/synchronization/notification.h"

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
  // Unsubscribes and waits (up to 5 s, then logs) until the handler
  // returned for the last time. What is still pending is dropped.
  ~NatsSubscription();
  NatsSubscription(const NatsSubscription&) = delete;
  NatsSubscription& operator=(const NatsSubscription&) = delete;

 private:
  NatsSubscription() = default;
  static void OnComplete(void* closure);

  natsSubscription* sub_ = nullptr;
  std::string subject_;
  absl::Notification done_;  // OnComplete ran
};

}  // namespace fabricdiag::cluster
