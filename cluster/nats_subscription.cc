#include "cluster/nats_subscription.h"

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "cluster/nats_connection.h"
#include "common/log.h"

namespace fabricdiag::cluster {
namespace {

// How long an end waits for a handler's last return before it logs and
// goes on.
constexpr absl::Duration kHandlerWait = absl::Seconds(5);

}  // namespace

std::unique_ptr<NatsSubscription> NatsSubscription::Open(
    natsConnection* nc, const std::string& subject, natsMsgHandler handler,
    void* closure, PendingLimits limits) {
  std::unique_ptr<NatsSubscription> s(new NatsSubscription);
  s->nc_ = nc;
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
  Unsubscribe(absl::Now() + kHandlerWait);
  ReaderPassed(nc_);
  Free();
}

void NatsSubscription::End(
    std::vector<std::unique_ptr<NatsSubscription>> subs) {
  const absl::Time deadline = absl::Now() + kHandlerWait;
  absl::flat_hash_set<natsConnection*> connections;
  for (const std::unique_ptr<NatsSubscription>& s : subs) {
    if (s == nullptr || s->sub_ == nullptr) continue;
    s->Unsubscribe(deadline);
    connections.insert(s->nc_);
  }
  for (natsConnection* nc : connections) ReaderPassed(nc);
  for (const std::unique_ptr<NatsSubscription>& s : subs) {
    if (s != nullptr) s->Free();
  }
  subs.clear();  // each destructor has nothing left to do
}

void NatsSubscription::Unsubscribe(absl::Time deadline) {
  // The handler may still run one last time: OnComplete says it is done.
  natsSubscription_Unsubscribe(sub_);
  if (!done_.WaitForNotificationWithDeadline(deadline)) {
    LogWarning(absl::StrCat("subscription to ", subject_,
                            ": its handler did not finish in ",
                            absl::FormatDuration(kHandlerWait)));
  }
}

void NatsSubscription::Free() {
  if (sub_ == nullptr) return;
  natsSubscription_Destroy(sub_);
  sub_ = nullptr;
}

void NatsSubscription::OnComplete(void* closure) {
  static_cast<NatsSubscription*>(closure)->done_.Notify();
}

void ReaderPassed(natsConnection* nc) {
  if (natsConnection_Status(nc) == NATS_CONN_STATUS_CONNECTED &&
      natsConnection_FlushTimeout(
          nc, absl::ToInt64Milliseconds(kReaderPassedWait)) == NATS_OK) {
    return;
  }
  // Not connected, or no answer: the reader has ended or is ending (libnats
  // joins it before reconnecting or once closed); what it held is let go
  // within microseconds.
  absl::SleepFor(absl::Milliseconds(5));
}

void EndKvWatcher(natsConnection* nc, kvWatcher* watcher) {
  if (watcher == nullptr) return;
  // Stopping deletes the watcher's consumer, a request whose answer comes
  // through the reader after whatever it read before: that is the wait,
  // unless the request failed.
  if (kvWatcher_Stop(watcher) != NATS_OK) ReaderPassed(nc);
  kvWatcher_Destroy(watcher);
}

}  // namespace fabricdiag::cluster
