#include "collector/findings/findings_watch.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace fabricdiag::collector {
namespace {

v1::Finding Finding(const std::string& id, const std::string& job) {
  v1::Finding f;
  f.set_id(id);
  f.set_job(job);
  return f;
}

// The type of the next event; nullopt when none is waiting.
std::optional<WatchEvent::Type> NextType(Watcher& w) {
  std::optional<WatchEvent> event = w.Next(absl::ZeroDuration());
  if (!event.has_value()) return std::nullopt;
  return event->type;
}

TEST(WatcherSetTest, SnapshotFirstThenTheEventsOfTheWatchedJob) {
  WatcherSet set;
  const v1::Finding active = Finding("f-000001", "job-a");
  std::unique_ptr<Watcher> a = set.Add("job-a", {&active}, 10);
  std::unique_ptr<Watcher> all = set.Add("", {}, 10);
  EXPECT_EQ(set.Broadcast(WatchEvent::Type::kOpened, Finding("f-2", "job-b")),
            0u);
  EXPECT_EQ(set.Broadcast(WatchEvent::Type::kResolved, active), 0u);

  std::optional<WatchEvent> first = a->Next(absl::ZeroDuration());
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->type, WatchEvent::Type::kSnapshot);
  EXPECT_EQ(first->finding.id(), "f-000001");
  EXPECT_EQ(NextType(*a), WatchEvent::Type::kResolved);  // job-b skipped
  EXPECT_EQ(NextType(*a), std::nullopt);

  EXPECT_EQ(NextType(*all), WatchEvent::Type::kOpened);
  EXPECT_EQ(NextType(*all), WatchEvent::Type::kResolved);
}

TEST(WatcherSetTest, AWatcherBeyondItsBacklogOverflowsOnceAndCloses) {
  WatcherSet set;
  std::unique_ptr<Watcher> slow = set.Add("", {}, 2);
  std::unique_ptr<Watcher> fast = set.Add("", {}, 100);
  uint64_t overflows = 0;
  for (int i = 0; i < 5; ++i) {
    overflows += set.Broadcast(WatchEvent::Type::kUpdated, Finding("f-1", ""));
  }
  EXPECT_EQ(overflows, 1u);
  EXPECT_EQ(set.open(), 1u);
  EXPECT_EQ(NextType(*slow), WatchEvent::Type::kOverflow);
  EXPECT_EQ(NextType(*slow), WatchEvent::Type::kClosed);
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(NextType(*fast), WatchEvent::Type::kUpdated);
  }
}

TEST(WatcherSetTest, DestroyingAWatcherUnsubscribesIt) {
  WatcherSet set;
  std::unique_ptr<Watcher> a = set.Add("", {}, 10);
  std::unique_ptr<Watcher> b = set.Add("", {}, 10);
  EXPECT_EQ(set.open(), 2u);
  a.reset();
  EXPECT_EQ(set.open(), 1u);
  set.RemoveClosed();
  EXPECT_EQ(set.Broadcast(WatchEvent::Type::kOpened, Finding("f-1", "")), 0u);
  EXPECT_EQ(NextType(*b), WatchEvent::Type::kOpened);
}

TEST(WatcherSetTest, DestroyingTheSetClosesItsWatchers) {
  auto set = std::make_unique<WatcherSet>();
  std::unique_ptr<Watcher> w = set->Add("", {}, 10);
  set.reset();
  EXPECT_EQ(NextType(*w), WatchEvent::Type::kClosed);
}

}  // namespace
}  // namespace fabricdiag::collector
