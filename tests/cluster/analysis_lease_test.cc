// The analysis lease against real nats-server processes: one leader among
// three collectors, a successor within the TTL when the leader dies, and
// never two leaders while a NATS server is stopped.
#include "cluster/analysis_lease.h"

#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cluster/single_nats_test.h"
#include "tests/testing/eventually.h"
#include "tests/testing/most_at_once.h"
#include "tests/testing/nats_cluster.h"

namespace fabricdiag::cluster {
namespace {

struct Collector {
  std::unique_ptr<NatsConnection> nats;
  std::unique_ptr<AnalysisLease> lease;
};

std::vector<int> Leaders(const std::vector<Collector>& collectors) {
  std::vector<int> out;
  for (size_t i = 0; i < collectors.size(); ++i) {
    if (collectors[i].lease != nullptr && collectors[i].lease->Leading()) {
      out.push_back(static_cast<int>(i));
    }
  }
  return out;
}

// Three collectors, collector i connected to server i % servers only.
std::vector<Collector> StartCollectors(const testing::NatsCluster& nats,
                                       int replicas,
                                       const std::string& bucket) {
  std::vector<Collector> collectors(3);
  for (int i = 0; i < 3; ++i) {
    NatsConnection::Options options;
    options.urls = {nats.url(i % nats.size())};
    options.name = absl::StrCat("col-", i);
    auto conn = NatsConnection::Connect(options);
    EXPECT_TRUE(conn.ok()) << conn.status();
    if (!conn.ok()) return {};
    collectors[i].nats = *std::move(conn);
  }
  for (int i = 0; i < 3; ++i) {
    AnalysisLease::Options options;
    options.replicas = replicas;
    options.bucket = bucket;
    auto lease = AnalysisLease::Start(collectors[i].nats.get(),
                                      absl::StrCat("col-", i), options);
    EXPECT_TRUE(lease.ok()) << lease.status();
    if (!lease.ok()) return {};
    collectors[i].lease = *std::move(lease);
  }
  return collectors;
}

class AnalysisLeaseTest : public SingleNatsServerTest {};

TEST_F(AnalysisLeaseTest, OneLeaderAmongThree) {
  std::vector<Collector> c = StartCollectors(*nats_, 1, TestName());
  ASSERT_EQ(c.size(), 3u);
  testing::MostAtOnce watch(
      [&c] { return static_cast<int>(Leaders(c).size()); });
  ASSERT_TRUE(testing::Eventually([&] { return Leaders(c).size() == 1; }));
  const int leader = Leaders(c)[0];
  // It keeps the lease over several TTLs by renewing it; everyone knows it.
  absl::SleepFor(absl::Seconds(7));
  EXPECT_EQ(Leaders(c), std::vector<int>{leader});
  EXPECT_EQ(c[static_cast<size_t>(leader)].lease->acquisitions(), 1u);
  EXPECT_GT(c[static_cast<size_t>(leader)].lease->Term(), 0u);
  for (const Collector& each : c) {
    EXPECT_EQ(each.lease->leader(), absl::StrCat("col-", leader));
  }
  EXPECT_EQ(watch.most(), 1);
}

TEST_F(AnalysisLeaseTest, ADeadLeaderIsReplacedWithinTheTtl) {
  std::vector<Collector> c = StartCollectors(*nats_, 1, TestName());
  ASSERT_EQ(c.size(), 3u);
  testing::MostAtOnce watch(
      [&c] { return static_cast<int>(Leaders(c).size()); });
  ASSERT_TRUE(testing::Eventually([&] { return Leaders(c).size() == 1; }));
  const size_t old = static_cast<size_t>(Leaders(c)[0]);
  const uint64_t old_term = c[old].lease->Term();
  // Its connection dies without a word (kill -9): no step-down, the key
  // expires.
  const absl::Time died = absl::Now();
  c[old].nats->Close();
  ASSERT_TRUE(testing::Eventually(
      [&] {
        const std::vector<int> l = Leaders(c);
        return l.size() == 1 && static_cast<size_t>(l[0]) != old;
      },
      absl::Seconds(10), absl::Milliseconds(10)));
  const absl::Duration takeover = absl::Now() - died;
  std::cout << "takeover after the leader's connection died: "
            << absl::FormatDuration(takeover) << "\n";
  EXPECT_LE(takeover, absl::Seconds(3) + absl::Seconds(1)) << takeover;
  EXPECT_GT(c[static_cast<size_t>(Leaders(c)[0])].lease->Term(), old_term);
  EXPECT_EQ(watch.most(), 1);
}

TEST_F(AnalysisLeaseTest, ACleanStopHandsOverAtOnce) {
  std::vector<Collector> c = StartCollectors(*nats_, 1, TestName());
  ASSERT_EQ(c.size(), 3u);
  ASSERT_TRUE(testing::Eventually([&] { return Leaders(c).size() == 1; }));
  const size_t old = static_cast<size_t>(Leaders(c)[0]);
  const absl::Time stopped = absl::Now();
  c[old].lease.reset();
  ASSERT_TRUE(testing::Eventually([&] { return Leaders(c).size() == 1; },
                                  absl::Seconds(10), absl::Milliseconds(10)));
  // Well under the TTL: the key was deleted, not left to expire.
  EXPECT_LT(absl::Now() - stopped, absl::Seconds(2));
}

// Every collector tells how long nobody was seen leading (what /healthz
// turns 503 on): nothing while one renews; growing while the lease bucket
// does not answer (here: its stream deleted under them), for the leader
// too once its lease ran out; nothing again once one leads.
TEST_F(AnalysisLeaseTest, EveryoneSeesHowLongNobodyLed) {
  std::unique_ptr<NatsConnection> admin = Connect();
  ASSERT_NE(admin, nullptr);
  const std::string bucket = TestName();
  AnalysisLease::Options options;
  options.replicas = 1;
  options.bucket = bucket;
  options.ttl = absl::Seconds(1);
  options.renew_period = absl::Milliseconds(300);
  options.acquire_period = absl::Milliseconds(100);
  options.margin = absl::Milliseconds(200);
  std::vector<Collector> c(2);
  for (int i = 0; i < 2; ++i) {
    c[i].nats = Connect();
    ASSERT_NE(c[i].nats, nullptr);
    auto lease =
        AnalysisLease::Start(c[i].nats.get(), absl::StrCat("col-", i), options);
    ASSERT_TRUE(lease.ok()) << lease.status();
    c[i].lease = *std::move(lease);
  }
  ASSERT_TRUE(testing::Eventually([&] { return Leaders(c).size() == 1; }));
  for (int look = 0; look < 20; ++look) {
    for (const Collector& each : c) {
      EXPECT_LT(each.lease->WithoutLeaderFor(), options.ttl);
    }
    absl::SleepFor(absl::Milliseconds(100));
  }

  ASSERT_EQ(js_DeleteStream(admin->js(), absl::StrCat("KV_", bucket).c_str(),
                            nullptr, nullptr),
            NATS_OK);
  EXPECT_TRUE(testing::Eventually(
      [&] {
        return Leaders(c).empty() &&
               c[0].lease->WithoutLeaderFor() > absl::Seconds(2) &&
               c[1].lease->WithoutLeaderFor() > absl::Seconds(2);
      },
      absl::Seconds(15), absl::Milliseconds(50)))
      << c[0].lease->WithoutLeaderFor() << " "
      << c[1].lease->WithoutLeaderFor();

  kvConfig config;
  kvConfig_Init(&config);
  config.Bucket = bucket.c_str();
  config.History = 1;
  config.StorageType = js_MemoryStorage;
  config.TTL = absl::ToInt64Nanoseconds(options.ttl);
  absl::StatusOr<kvStore*> kv = BindOrCreateBucket(*admin, config);
  ASSERT_TRUE(kv.ok()) << kv.status();
  kvStore_Destroy(*kv);
  EXPECT_TRUE(testing::Eventually(
      [&] {
        return Leaders(c).size() == 1 &&
               c[0].lease->WithoutLeaderFor() < options.ttl &&
               c[1].lease->WithoutLeaderFor() < options.ttl;
      },
      absl::Seconds(15), absl::Milliseconds(50)));
}

#ifndef FABRICDIAG_SANITIZED  // real time
// Three servers, each collector on its own. The leader's server is stopped
// (SIGSTOP): its renewals hang, so it gives the lease up before the key can
// expire, and a new term begins, never two leaders at once.
TEST(AnalysisLeaseClusterTest, AStoppedServerDoesNotMakeTwoLeaders) {
  testing::NatsCluster nats(3);
  const absl::Status started = nats.Start();
  ASSERT_TRUE(started.ok()) << started;
  std::vector<Collector> c = StartCollectors(nats, 3, "lease_pause");
  ASSERT_EQ(c.size(), 3u);
  testing::MostAtOnce watch(
      [&c] { return static_cast<int>(Leaders(c).size()); });
  ASSERT_TRUE(testing::Eventually([&] { return Leaders(c).size() == 1; },
                                  absl::Seconds(30)));
  const int old = Leaders(c)[0];
  const uint64_t old_term = c[static_cast<size_t>(old)].lease->Term();
  nats.Pause(old);
  // Its renewals hang: it gives the lease up before the key can expire, and
  // a new term begins. Usually another collector's; the old leader's own
  // when its client reconnected first through a server it learned of from
  // the cluster (NATS clients discover every server of the cluster), which
  // is as legitimate. Never two at once (the watch).
  int next = -1;
  EXPECT_TRUE(testing::Eventually(
      [&] {
        const std::vector<int> l = Leaders(c);
        if (l.size() != 1 ||
            c[static_cast<size_t>(l[0])].lease->Term() <= old_term) {
          return false;
        }
        next = l[0];
        return true;
      },
      absl::Seconds(30), absl::Milliseconds(10)));
  nats.Resume(old);
  // With the server back, nobody takes the lease from the one renewing it.
  absl::SleepFor(absl::Seconds(5));
  EXPECT_EQ(Leaders(c), std::vector<int>{next});
  EXPECT_EQ(watch.most(), 1);
}
#endif  // FABRICDIAG_SANITIZED

}  // namespace
}  // namespace fabricdiag::cluster
