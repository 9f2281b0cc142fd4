// The analysis parts' news between collectors, against a real nats-server:
// every collector reads every other's newest news and not its own, a
// silent collector drops out, and what is not news is refused.
#include "cluster/part_news_exchange.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "tests/cluster/single_nats_test.h"
#include "tests/testing/eventually.h"

namespace fabricdiag::cluster {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

constexpr absl::Duration kBound = absl::Seconds(10);

// News naming `node`'s first NIC as a straggler excused, with `ports`
// host ports of `cnp` CNP/s.
PartNews News(const std::string& node, int ports, double cnp) {
  PartNews news;
  news.published = absl::Now();
  news.window.excuses.straggler = {{node, "mlx5_0"}};
  for (int i = 0; i < ports; ++i) news.window.congestion.hosts.Add(cnp);
  return news;
}

std::vector<std::string> Senders(const std::vector<PartNews>& news) {
  std::vector<std::string> out;
  for (const PartNews& n : news) out.push_back(n.collector_id);
  return out;
}

class PartNewsExchangeTest : public SingleNatsServerTest {
 protected:
  struct Collector {
    std::unique_ptr<NatsConnection> nats;
    std::unique_ptr<PartNewsExchange> news;
  };

  static Collector Join(const std::string& id,
                        absl::Duration freshness = absl::Seconds(5)) {
    Collector c;
    c.nats = Connect();
    if (c.nats == nullptr) return c;
    PartNewsExchange::Options options;
    options.subject = absl::StrCat("news.", TestName());
    options.freshness = freshness;
    auto news = PartNewsExchange::Open(c.nats.get(), id, options);
    EXPECT_TRUE(news.ok()) << news.status();
    if (news.ok()) c.news = *std::move(news);
    return c;
  }
};

TEST_F(PartNewsExchangeTest, EveryCollectorReadsEveryOthersNews) {
  std::vector<Collector> cs;
  for (const char* id : {"col-a", "col-b", "col-c"}) cs.push_back(Join(id));
  for (const Collector& c : cs) ASSERT_NE(c.news, nullptr);
  ASSERT_TRUE(testing::Eventually(
      [&] {
        for (size_t i = 0; i < cs.size(); ++i) {
          EXPECT_TRUE(
              cs[i]
                  .news->Publish(News(absl::StrCat("gpu-", i), 100 + i, 300))
                  .ok());
        }
        for (const Collector& c : cs) {
          if (c.news->Fresh(absl::Now()).size() != 2) return false;
        }
        return true;
      },
      kBound, absl::Milliseconds(100)));
  const std::vector<PartNews> heard = cs[0].news->Fresh(absl::Now());
  EXPECT_THAT(Senders(heard), ElementsAre("col-b", "col-c"));
  EXPECT_EQ(heard[0].window.excuses.straggler,
            (std::set<analysis::RateExcuses::Port>{{"gpu-1", "mlx5_0"}}));
  EXPECT_EQ(heard[1].window.congestion.hosts.count(), 102u);
  EXPECT_NEAR(heard[1].window.congestion.hosts.Baseline().median, 300, 1.5);
  EXPECT_THAT(Senders(cs[2].news->Fresh(absl::Now())),
              ElementsAre("col-a", "col-b"));
  const PartNewsExchange::Stats s = cs[0].news->stats();
  EXPECT_GT(s.published, 0u);
  EXPECT_GT(s.last_published_bytes, 0u);
  EXPECT_LT(s.last_published_bytes, 100u);  // one excuse, one bucket
  EXPECT_EQ(s.publish_errors, 0u);
  EXPECT_EQ(s.refused, 0u) << "its own news, echoed back, is no refusal";
}

TEST_F(PartNewsExchangeTest, TheNewestNewsWinsAndASilentCollectorLeaves) {
  const absl::Duration freshness = absl::Seconds(1);
  Collector reader = Join("col-r", freshness);
  Collector a = Join("col-a", freshness);
  ASSERT_NE(reader.news, nullptr);
  ASSERT_NE(a.news, nullptr);
  PartNews older = News("gpu-old", 1, 10);
  older.published = absl::Now() - absl::Seconds(1);
  ASSERT_TRUE(testing::Eventually(
      [&] {
        EXPECT_TRUE(a.news->Publish(News("gpu-new", 1, 10)).ok());
        return !reader.news->Fresh(absl::Now()).empty();
      },
      kBound, absl::Milliseconds(100)));
  // A late message from before: not read over the newer one.
  ASSERT_TRUE(a.news->Publish(older).ok());
  ASSERT_EQ(natsConnection_FlushTimeout(a.nats->nc(), 2000), NATS_OK);
  absl::SleepFor(absl::Milliseconds(200));
  std::vector<PartNews> heard = reader.news->Fresh(absl::Now());
  ASSERT_EQ(heard.size(), 1u);
  EXPECT_EQ(heard[0].window.excuses.straggler.begin()->first, "gpu-new");
  // Silent for longer than the freshness: gone.
  absl::SleepFor(freshness + absl::Milliseconds(300));
  EXPECT_THAT(reader.news->Fresh(absl::Now()), IsEmpty());
}

TEST_F(PartNewsExchangeTest, WhatIsNotNewsIsRefusedAndTheRealOnesGetIn) {
  Collector reader = Join("col-r");
  Collector a = Join("col-a");
  ASSERT_NE(reader.news, nullptr);
  ASSERT_NE(a.news, nullptr);
  const std::string subject = absl::StrCat("news.", TestName(), ".x");
  std::vector<std::string> hostile;
  // More made-up collectors than are kept: the ones heard from longest ago
  // make room.
  for (int k = 0; k < 300; ++k) {
    v1::PartNews n;
    n.set_collector_id(absl::StrCat("fake-", k));
    hostile.push_back(n.SerializeAsString());
  }
  hostile.push_back("not a protobuf \xff\xff\xff");
  {
    v1::PartNews n = ToProto(News("gpu-1", 3, 5));
    n.set_collector_id("col-r");  // the reader's own
    hostile.push_back(n.SerializeAsString());
    n.set_collector_id("");  // no one's
    hostile.push_back(n.SerializeAsString());
    n.set_collector_id("col-z");
    n.mutable_window()->add_straggler_excused_node("gpu-2");  // no device
    hostile.push_back(n.SerializeAsString());
  }
  for (const std::string& data : hostile) {
    ASSERT_EQ(
        natsConnection_Publish(reader.nats->nc(), subject.c_str(), data.data(),
                               static_cast<int>(data.size())),
        NATS_OK);
  }
  ASSERT_TRUE(testing::Eventually(
      [&] {
        EXPECT_TRUE(a.news->Publish(News("gpu-a", 1, 10)).ok());
        const std::vector<std::string> senders =
            Senders(reader.news->Fresh(absl::Now()));
        return reader.news->stats().refused >= 3 &&
               std::count(senders.begin(), senders.end(), "col-a") == 1;
      },
      kBound, absl::Milliseconds(100)))
      << reader.news->stats().refused;
  const std::vector<std::string> senders =
      Senders(reader.news->Fresh(absl::Now()));
  EXPECT_LE(senders.size(), PartNewsExchange::kMaxSenders);
  EXPECT_EQ(std::count(senders.begin(), senders.end(), "col-z"), 0);
}

TEST_F(PartNewsExchangeTest, NewsPastTheServersMaxPayloadIsAClearError) {
  Collector a = Join("col-a");
  ASSERT_NE(a.news, nullptr);
  PartNews huge;
  for (int i = 0; i < 60000; ++i) {
    huge.window.excuses.congestion.emplace(absl::StrCat("node-", i), "mlx5_0");
  }
  const absl::Status s = a.news->Publish(huge);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
  EXPECT_THAT(std::string(s.message()), ::testing::HasSubstr("max_payload"));
  EXPECT_EQ(a.news->stats().publish_errors, 1u);
}

}  // namespace
}  // namespace fabricdiag::cluster
