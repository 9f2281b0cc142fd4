// Ending a subscription against a real nats-server while messages pour in:
// libnats 3.4's reader thread may hold the subscription of a message it
// read, unreferenced, when the subscription ends (cluster/nats_subscription.h).
// Without ReaderPassed() between the unsubscribe and the free, the test
// crashes in natsConn_processMsg within 0.4-2.4 s (ASan build). Ended while
// the server answers nothing, one subscription or many at once wait for the
// reader once, boundedly.
#include "cluster/nats_subscription.h"

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "tests/cluster/single_nats_test.h"
#include "tests/testing/eventually.h"
#include "tests/testing/stall_proxy.h"

namespace fabricdiag::cluster {
namespace {

constexpr absl::Duration kRun = absl::Seconds(5);

class NatsSubscriptionTest : public SingleNatsServerTest {
 protected:
  // A receiving connection through a proxy that can hold what it sends,
  // and a sender straight to the server.
  void ConnectThroughProxy() {
    absl::StatusOr<std::unique_ptr<testing::StallProxy>> proxy =
        testing::StallProxy::Start(nats_->port(0));
    ASSERT_TRUE(proxy.ok()) << proxy.status();
    proxy_ = *std::move(proxy);
    NatsConnection::Options options;
    options.urls = {absl::StrCat("nats://127.0.0.1:", proxy_->port())};
    absl::StatusOr<std::unique_ptr<NatsConnection>> receiver =
        NatsConnection::Connect(options);
    ASSERT_TRUE(receiver.ok()) << receiver.status();
    receiver_ = *std::move(receiver);
    sender_ = Connect();
    ASSERT_NE(sender_, nullptr);
  }

  std::unique_ptr<testing::StallProxy> proxy_;
  std::unique_ptr<NatsConnection> receiver_;
  std::unique_ptr<NatsConnection> sender_;
};

void Count(natsConnection* /*nc*/, natsSubscription* /*sub*/, natsMsg* msg,
           void* closure) {
  static_cast<std::atomic<uint64_t>*>(closure)->fetch_add(1);
  natsMsg_Destroy(msg);
}

TEST_F(NatsSubscriptionTest, EndedWhileMessagesPourInNothingFreedIsUsed) {
  std::unique_ptr<NatsConnection> sender = Connect();
  std::unique_ptr<NatsConnection> receiver = Connect();
  ASSERT_TRUE(sender != nullptr && receiver != nullptr);
  const std::string subject = "flood." + TestName();
  std::atomic<bool> stop{false};
  // Large messages: the reader copies each before it takes the
  // subscription's lock, which widens the gap.
  std::thread flood([&] {
    const std::string data(256 << 10, 'x');
    while (!stop.load()) {
      natsConnection_Publish(sender->nc(), subject.c_str(), data.data(),
                             static_cast<int>(data.size()));
    }
  });
  std::atomic<uint64_t> received{0};
  const absl::Time end = absl::Now() + kRun;
  for (int round = 0; absl::Now() < end; ++round) {
    std::unique_ptr<NatsSubscription> sub =
        NatsSubscription::Open(receiver->nc(), subject, &Count, &received, {});
    ASSERT_NE(sub, nullptr);
    if (round % 64 == 0) {
      // Now and then one held until the flood reached it: on a loaded
      // machine the server may route nothing to subscriptions this short.
      const uint64_t before = received.load();
      testing::Eventually([&] { return received.load() > before; },
                          absl::Milliseconds(200), absl::Milliseconds(1));
    } else {
      absl::SleepFor(absl::Microseconds(round % 500));
    }
    sub.reset();
  }
  stop.store(true);
  flood.join();
  EXPECT_GT(received.load(), 0u) << "the subscriptions never saw the flood";
}

// A server that does not answer (here: the unsubscribe and what follows
// held on the way) keeps the end waiting kReaderPassedWait, no longer; the
// answer that comes later is ignored.
TEST_F(NatsSubscriptionTest, AnUnansweredEndWaitsBoundedly) {
  ASSERT_NO_FATAL_FAILURE(ConnectThroughProxy());
  const std::string subject = "held." + TestName();
  std::atomic<uint64_t> received{0};
  std::unique_ptr<NatsSubscription> sub =
      NatsSubscription::Open(receiver_->nc(), subject, &Count, &received, {});
  ASSERT_NE(sub, nullptr);
  ASSERT_EQ(natsConnection_FlushTimeout(receiver_->nc(), 5000), NATS_OK);
  ASSERT_EQ(natsConnection_PublishString(sender_->nc(), subject.c_str(), "x"),
            NATS_OK);
  ASSERT_TRUE(testing::Eventually([&] { return received.load() == 1; },
                                  absl::Seconds(5), absl::Milliseconds(5)));

  proxy_->HoldRequestsFrom("UNSUB ");
  const absl::Time start = absl::Now();
  sub.reset();
  const absl::Duration took = absl::Now() - start;
  EXPECT_TRUE(proxy_->holding());
  EXPECT_GE(took, kReaderPassedWait) << "no wait for the reader";
  EXPECT_LT(took, kReaderPassedWait + absl::Seconds(2));
  proxy_->Release();
  // The late answer, and the connection goes on.
  EXPECT_EQ(natsConnection_FlushTimeout(receiver_->nc(), 5000), NATS_OK);
  EXPECT_TRUE(receiver_->link_up());
}

// Many subscriptions ended at once (a collector letting go of its shards)
// while the server answers nothing: one wait for the reader, not one each
// (16 one after the other would take 4 s).
TEST_F(NatsSubscriptionTest, ManyEndedAtOnceWaitOnce) {
  ASSERT_NO_FATAL_FAILURE(ConnectThroughProxy());
  constexpr int kSubs = 16;
  std::atomic<uint64_t> received{0};
  std::vector<std::unique_ptr<NatsSubscription>> subs;
  std::vector<std::string> subjects;
  for (int i = 0; i < kSubs; ++i) {
    subjects.push_back(absl::StrCat("held.", TestName(), ".", i));
    subs.push_back(NatsSubscription::Open(receiver_->nc(), subjects.back(),
                                          &Count, &received, {}));
    ASSERT_NE(subs.back(), nullptr);
  }
  subs.push_back(nullptr);  // skipped
  ASSERT_EQ(natsConnection_FlushTimeout(receiver_->nc(), 5000), NATS_OK);
  for (const std::string& subject : subjects) {
    ASSERT_EQ(natsConnection_PublishString(sender_->nc(), subject.c_str(), "x"),
              NATS_OK);
  }
  ASSERT_TRUE(testing::Eventually([&] { return received.load() == kSubs; },
                                  absl::Seconds(5), absl::Milliseconds(5)));

  proxy_->HoldRequestsFrom("UNSUB ");
  const absl::Time start = absl::Now();
  NatsSubscription::End(std::move(subs));
  const absl::Duration took = absl::Now() - start;
  EXPECT_TRUE(proxy_->holding());
  EXPECT_GE(took, kReaderPassedWait) << "no wait for the reader";
  EXPECT_LT(took, 4 * kReaderPassedWait) << "a wait for each";
  proxy_->Release();
  EXPECT_EQ(natsConnection_FlushTimeout(receiver_->nc(), 5000), NATS_OK);
  EXPECT_TRUE(receiver_->link_up());
  // Ended: what is published now reaches no handler.
  for (const std::string& subject : subjects) {
    ASSERT_EQ(natsConnection_PublishString(sender_->nc(), subject.c_str(), "y"),
              NATS_OK);
  }
  ASSERT_EQ(natsConnection_FlushTimeout(sender_->nc(), 5000), NATS_OK);
  ASSERT_EQ(natsConnection_FlushTimeout(receiver_->nc(), 5000), NATS_OK);
  EXPECT_EQ(received.load(), uint64_t{kSubs});
}

}  // namespace
}  // namespace fabricdiag::cluster
