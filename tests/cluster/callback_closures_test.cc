#include "cluster/callback_closures.h"

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace fabricdiag::cluster {
namespace {

struct Counter {
  std::atomic<int> calls{0};
};
using Closures = CallbackClosures<Counter>;

// What a C callback does with its closure.
void Callback(void* closure) {
  if (std::shared_ptr<Counter> c = Closures::Find(closure)) c->calls++;
}

TEST(CallbackClosuresTest, ACallbackAfterTheRemovalFindsNothing) {
  auto counter = std::make_shared<Counter>();
  void* closure = Closures::Add(counter);
  ASSERT_NE(closure, nullptr);
  Callback(closure);
  EXPECT_EQ(counter->calls.load(), 1);
  EXPECT_EQ(Closures::Find(closure), counter);

  Closures::Remove(closure);
  // The owner is gone: what the closure named is not reached again, and
  // the registry keeps nothing alive.
  const std::weak_ptr<Counter> gone = counter;
  counter.reset();
  EXPECT_TRUE(gone.expired());
  Callback(closure);
  EXPECT_EQ(Closures::Find(closure), nullptr);
  Closures::Remove(closure);  // twice: nothing
  Closures::Remove(nullptr);
  EXPECT_EQ(Closures::Find(nullptr), nullptr);
}

TEST(CallbackClosuresTest, IdsAreNeverGivenTwice) {
  void* first = Closures::Add(std::make_shared<Counter>());
  Closures::Remove(first);
  void* second = Closures::Add(std::make_shared<Counter>());
  EXPECT_NE(first, second);
  EXPECT_EQ(Closures::Find(first), nullptr);
  EXPECT_NE(Closures::Find(second), nullptr);
  Closures::Remove(second);
}

// Callbacks on other threads while the owner goes: each finds it or
// nothing, never freed memory (the sanitized build checks the latter).
TEST(CallbackClosuresTest, CallbacksRaceTheRemoval) {
  const size_t before = Closures::size();
  for (int round = 0; round < 50; ++round) {
    auto counter = std::make_shared<Counter>();
    void* closure = Closures::Add(counter);
    std::atomic<bool> go{false};
    std::vector<std::thread> callers;
    for (int t = 0; t < 3; ++t) {
      callers.emplace_back([&] {
        while (!go.load()) {
        }
        for (int i = 0; i < 200; ++i) Callback(closure);
      });
    }
    go.store(true);
    counter.reset();
    Closures::Remove(closure);
    for (std::thread& t : callers) t.join();
    EXPECT_EQ(Closures::Find(closure), nullptr);
  }
  EXPECT_EQ(Closures::size(), before);
}

}  // namespace
}  // namespace fabricdiag::cluster
