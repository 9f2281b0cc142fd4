// A bucket's watcher and the revisions it passes over (cluster/kv_watch.h),
// on a real nats-server: which of them the bucket still holds, asked in one
// request, and a watcher that passes over a message outside its keys goes
// on without reading the bucket again.
#include "cluster/kv_watch.h"

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cluster/single_nats_test.h"
#include "tests/testing/eventually.h"

namespace fabricdiag::cluster {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

class KvWatchTest : public SingleNatsServerTest {
 protected:
  void SetUp() override {
    nats_conn_ = Connect();
    ASSERT_NE(nats_conn_, nullptr);
    kvConfig config;
    kvConfig_Init(&config);
    const std::string bucket = TestName();
    config.Bucket = bucket.c_str();
    config.History = 1;
    absl::StatusOr<kvStore*> kv = BindOrCreateBucket(*nats_conn_, config);
    ASSERT_TRUE(kv.ok()) << kv.status();
    kv_ = *kv;
  }
  void TearDown() override {
    if (kv_ != nullptr) kvStore_Destroy(kv_);
  }

  uint64_t Put(const std::string& key, const std::string& value) {
    uint64_t revision = 0;
    EXPECT_EQ(kvStore_PutString(&revision, kv_, key.c_str(), value.c_str()),
              NATS_OK);
    return revision;
  }

  std::unique_ptr<NatsConnection> nats_conn_;
  kvStore* kv_ = nullptr;
};

TEST_F(KvWatchTest, FirstHeldRevisionTellsSupersededFromHeld) {
  ASSERT_EQ(Put("a", "1"), 1u);
  ASSERT_EQ(Put("b", "1"), 2u);
  ASSERT_EQ(Put("a", "2"), 3u);                  // removes revision 1
  ASSERT_EQ(kvStore_Delete(kv_, "b"), NATS_OK);  // 4, removes revision 2
  ASSERT_EQ(Put("c", "1"), 5u);
  const std::string bucket = TestName();
  const auto held = [&](uint64_t first, uint64_t end) {
    absl::StatusOr<std::optional<uint64_t>> revision =
        FirstHeldRevision(*nats_conn_, bucket, {first, end});
    EXPECT_TRUE(revision.ok()) << revision.status();
    return revision.ok() ? revision->value_or(0) : 99;
  };
  EXPECT_EQ(held(1, 3), 0u);  // superseded: nothing missed
  EXPECT_EQ(held(1, 4), 3u);
  EXPECT_EQ(held(2, 5), 3u);
  EXPECT_EQ(held(4, 5), 4u);    // a delete marker is held
  EXPECT_EQ(held(6, 100), 0u);  // after the bucket's newest revision
  EXPECT_EQ(held(3, 3), 0u);    // nothing to ask

  EXPECT_EQ(MissedRevision(*nats_conn_, bucket, {1, 3}), "");
  EXPECT_THAT(MissedRevision(*nats_conn_, bucket, {2, 5}),
              HasSubstr("passed over revision 3, which the bucket holds"));
}

TEST_F(KvWatchTest, ABucketThatIsNotThereIsAnErrorNotANo) {
  const absl::StatusOr<std::optional<uint64_t>> held =
      FirstHeldRevision(*nats_conn_, "NoSuchBucket", {1, 5});
  ASSERT_FALSE(held.ok());
  EXPECT_THAT(held.status().message(), HasSubstr("NoSuchBucket"));
  // Asked again after a new replay rather than trusted.
  EXPECT_THAT(MissedRevision(*nats_conn_, "NoSuchBucket", {1, 5}),
              HasSubstr("could not be checked"));
}

TEST_F(KvWatchTest, AWatcherPassingOverAMessageOutsideItsKeysGoesOn) {
  const std::string bucket = TestName();
  // The bucket's stream also takes a subject of no key: its messages are
  // revisions no watcher delivers, and the bucket holds none of its keys.
  const std::string stream = absl::StrCat("KV_", bucket);
  jsStreamInfo* info = nullptr;
  ASSERT_EQ(js_GetStreamInfo(&info, nats_conn_->js(), stream.c_str(), nullptr,
                             nullptr),
            NATS_OK);
  const std::string keys = absl::StrCat("$KV.", bucket, ".>");
  const std::string aside = absl::StrCat("aside.", bucket);
  const char* subjects[] = {keys.c_str(), aside.c_str()};
  const char** own_subjects = info->Config->Subjects;  // the library's
  const int own_count = info->Config->SubjectsLen;
  info->Config->Subjects = subjects;
  info->Config->SubjectsLen = 2;
  jsStreamInfo* updated = nullptr;
  const natsStatus s = js_UpdateStream(&updated, nats_conn_->js(), info->Config,
                                       nullptr, nullptr);
  // Given back, for jsStreamInfo_Destroy to free.
  info->Config->Subjects = own_subjects;
  info->Config->SubjectsLen = own_count;
  jsStreamInfo_Destroy(info);
  jsStreamInfo_Destroy(updated);
  ASSERT_EQ(s, NATS_OK);

  absl::Mutex mu;
  std::vector<uint64_t> applied;
  std::atomic<uint64_t> restarts{0};
  std::atomic<bool> stop{false};
  absl::Notification replayed;
  BucketWatch watch;
  watch.what = "the test's bucket";
  watch.stopping = [&] { return stop.load(); };
  watch.pause = [&](absl::Duration) { return !stop.load(); };
  watch.apply = [&](kvEntry* entry) {
    absl::MutexLock lock(&mu);
    applied.push_back(kvEntry_Revision(entry));
  };
  watch.replayed = [&] {
    if (!replayed.HasBeenNotified()) replayed.Notify();
  };
  watch.restarts = &restarts;
  std::thread watcher([&] { RunBucketWatch(*nats_conn_, kv_, bucket, watch); });
  ASSERT_TRUE(replayed.WaitForNotificationWithTimeout(absl::Seconds(10)));

  ASSERT_EQ(Put("a", "1"), 1u);
  jsPubAck* ack = nullptr;
  ASSERT_EQ(js_Publish(&ack, nats_conn_->js(), aside.c_str(), "x", 1, nullptr,
                       nullptr),
            NATS_OK);
  ASSERT_EQ(ack->Sequence, 2u);
  jsPubAck_Destroy(ack);
  ASSERT_EQ(Put("b", "1"), 3u);
  ASSERT_EQ(Put("c", "1"), 4u);
  EXPECT_TRUE(testing::Eventually([&] {
    absl::MutexLock lock(&mu);
    return applied.size() >= 3;
  }));
  stop.store(true);
  watcher.join();
  absl::MutexLock lock(&mu);
  // Revision 2 was checked and found to be no key's: no second replay.
  EXPECT_THAT(applied, ElementsAre(1u, 3u, 4u));
  EXPECT_EQ(restarts.load(), 0u);
}

}  // namespace
}  // namespace fabricdiag::cluster
