// The most a count ever reached while a test ran: samples `count` from a
// thread of its own every `poll` until destroyed. For "never two leaders at
// once": a single check after the fact would miss a short overlap.
//
//   MostAtOnce leaders([&] { return Leaders(c).size(); });
//   ... kill, pause, restart ...
//   EXPECT_EQ(leaders.most(), 1);
//
// `count` must be thread-safe and outlive the watcher.
#pragma once

#include <atomic>
#include <functional>
#include <thread>
#include <utility>

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace fabricdiag::testing {

class MostAtOnce {
 public:
  explicit MostAtOnce(std::function<int()> count,
                      absl::Duration poll = absl::Milliseconds(5))
      : count_(std::move(count)), poll_(poll), thread_([this] { Run(); }) {}
  ~MostAtOnce() {
    stop_.store(true);
    thread_.join();
  }
  MostAtOnce(const MostAtOnce&) = delete;
  MostAtOnce& operator=(const MostAtOnce&) = delete;

  int most() const { return most_.load(); }

 private:
  void Run() {
    while (!stop_.load()) {
      const int now = count_();
      if (now > most_.load()) most_.store(now);
      absl::SleepFor(poll_);
    }
  }

  const std::function<int()> count_;
  const absl::Duration poll_;
  std::atomic<bool> stop_{false};
  std::atomic<int> most_{0};
  std::thread thread_;  // last: starts once the rest is set
};

}  // namespace fabricdiag::testing
