#include "cluster/nats_subscription.h"

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "cluster/nats_connection.h"
#include "common/log.h"

namespace fabricdiag::cluster {

std::unique_ptr<NatsSubscription> NatsSubscription::Open(
    natsConnection* nc, const std::string& subject, natsMsgHandler handler,
    void* closure, PendingLimits limits) {
  std::unique_ptr<NatsSubscription> s(new NatsSubscription);
  s->subject_ = subject;
  const natsStatus status =
      natsConnection_Subscribe(&s->sub_, nc, subject.c_str(), handler, closure);
  if (status != NATS_OK) {
    LogWarning(
        NatsError(status, absl::StrCat("subscribing to ", subject)).message());
    s->sub_ = nullptr;
    return nullptr;
  }
  natsSubscription_SetOnCompleteCB(s->sub_, &NatsSubscription::OnComplete,
                                   s.get());
  natsSubscription_SetPendingLimits(s->sub_, limits.messages, limits.bytes);
  return s;
}

NatsSubscription::~NatsSubscription() {
  if (sub_ == nullptr) return;
  // The handler may still run one last time: OnComplete says it is done.
  natsSubscription_Unsubscribe(sub_);
  if (!done_.WaitForNotificationWithTimeout(absl::Seconds(5))) {
    LogWarning(absl::StrCat("subscription to ", subject_,
                            ": its handler did not finish in 5s"));
  }
  natsSubscription_Destroy(sub_);
}

void NatsSubscription::OnComplete(void* closure) {
  static_cast<NatsSubscription*>(closure)->done_.Notify();
}

}  // namespace fabricdiag::cluster
