#include "collector/findings/findings_watch.h"

#include <algorithm>
#include <deque>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace fabricdiag::collector {
namespace internal {

// The bounded queue behind one Watcher; shared by the store (producer) and
// the Watcher (consumer) so that either may go away first.
class WatchQueue {
 public:
  WatchQueue(std::string job, size_t capacity)
      : job_(std::move(job)), capacity_(capacity) {}

  const std::string& job() const { return job_; }

  // Never blocks beyond a short critical section. Returns false when this
  // push overflowed the queue (which closes it).
  bool Push(WatchEvent event) {
    absl::MutexLock lock(&mu_);
    if (closed_) return true;
    if (events_.size() >= capacity_) {
      events_.clear();
      WatchEvent overflow;
      overflow.type = WatchEvent::Type::kOverflow;
      events_.push_back(std::move(overflow));
      closed_ = true;
      return false;
    }
    events_.push_back(std::move(event));
    return true;
  }

  std::optional<WatchEvent> Next(absl::Duration timeout) {
    absl::MutexLock lock(&mu_);
    auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return closed_ || !events_.empty();
    };
    mu_.AwaitWithTimeout(absl::Condition(&ready), timeout);
    if (!events_.empty()) {
      WatchEvent event = std::move(events_.front());
      events_.pop_front();
      return event;
    }
    if (closed_) return WatchEvent{WatchEvent::Type::kClosed, {}};
    return std::nullopt;
  }

  void Close() {
    absl::MutexLock lock(&mu_);
    // A pending overflow marker stays: the consumer must learn why.
    if (!closed_) events_.clear();
    closed_ = true;
  }

  bool closed() const {
    absl::MutexLock lock(&mu_);
    return closed_;
  }

 private:
  const std::string job_;
  const size_t capacity_;
  mutable absl::Mutex mu_;
  std::deque<WatchEvent> events_ ABSL_GUARDED_BY(mu_);
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace internal

Watcher::Watcher(std::shared_ptr<internal::WatchQueue> queue)
    : queue_(std::move(queue)) {}

Watcher::~Watcher() { queue_->Close(); }

std::optional<WatchEvent> Watcher::Next(absl::Duration timeout) {
  return queue_->Next(timeout);
}

void Watcher::Close() { queue_->Close(); }

WatcherSet::~WatcherSet() {
  for (const auto& queue : queues_) queue->Close();
}

std::unique_ptr<Watcher> WatcherSet::Add(
    absl::string_view job, const std::vector<const v1::Finding*>& snapshot,
    size_t backlog) {
  auto queue = std::make_shared<internal::WatchQueue>(
      std::string(job), snapshot.size() + backlog);
  for (const v1::Finding* f : snapshot) {
    queue->Push(WatchEvent{WatchEvent::Type::kSnapshot, *f});
  }
  queues_.push_back(queue);
  return std::make_unique<Watcher>(std::move(queue));
}

uint64_t WatcherSet::Broadcast(WatchEvent::Type type,
                               const v1::Finding& finding) {
  uint64_t overflows = 0;
  for (const auto& queue : queues_) {
    if (!queue->job().empty() && queue->job() != finding.job()) continue;
    if (!queue->Push(WatchEvent{type, finding})) ++overflows;
  }
  return overflows;
}

void WatcherSet::RemoveClosed() {
  queues_.erase(
      std::remove_if(queues_.begin(), queues_.end(),
                     [](const auto& queue) { return queue->closed(); }),
      queues_.end());
}

size_t WatcherSet::open() const {
  return static_cast<size_t>(
      std::count_if(queues_.begin(), queues_.end(),
                    [](const auto& queue) { return !queue->closed(); }));
}

}  // namespace fabricdiag::collector
