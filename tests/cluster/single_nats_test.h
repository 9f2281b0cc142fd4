// A gtest fixture for suites that share one nats-server (JetStream, on
// loopback) across their tests; each test names its buckets and streams
// after itself (TestName()) so that tests do not see each other's data.
//
//   class MyTest : public SingleNatsServerTest {};
//   TEST_F(MyTest, Works) { auto nats = Connect(); ... }
//
// Not thread-safe (gtest fixtures are not).
#pragma once

#include <memory>
#include <string>

#include "absl/time/time.h"
#include "cluster/nats_connection.h"
#include "gtest/gtest.h"
#include "tests/testing/nats_cluster.h"

namespace fabricdiag::cluster {

class SingleNatsServerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    nats_ = new testing::NatsCluster(1);
    const absl::Status started = nats_->Start();
    ASSERT_TRUE(started.ok()) << started;
  }
  static void TearDownTestSuite() {
    delete nats_;
    nats_ = nullptr;
  }

  // A new connection to the server; null (and a test failure) when none.
  static std::unique_ptr<NatsConnection> Connect(
      absl::Duration request_timeout = absl::Seconds(3)) {
    NatsConnection::Options options;
    options.urls = {nats_->url(0)};
    options.request_timeout = request_timeout;
    auto nats = NatsConnection::Connect(options);
    EXPECT_TRUE(nats.ok()) << nats.status();
    return nats.ok() ? *std::move(nats) : nullptr;
  }

  // The running test's name: a valid bucket or stream name.
  static std::string TestName() {
    return ::testing::UnitTest::GetInstance()->current_test_info()->name();
  }

  static inline testing::NatsCluster* nats_ = nullptr;
};

}  // namespace fabricdiag::cluster
