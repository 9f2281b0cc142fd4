#include "client/failover_client.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "client/client_config.h"
#include "tests/client/fake_collector_client.h"

namespace fabricdiag::client {
namespace {

using ::fabricdiag::client::testing::FakeCollectorClient;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

class FailoverClientTest : public ::testing::Test {
 protected:
  // Members named c0:9811, c1:9811, ...; the client over all of them.
  FailoverCollectorClient& Make(int n) {
    std::vector<std::shared_ptr<CollectorClient>> members;
    for (int i = 0; i < n; ++i) {
      fakes_.push_back(std::make_shared<FakeCollectorClient>(
          "c" + std::to_string(i) + ":9811"));
      members.push_back(fakes_.back());
    }
    client_ = std::make_unique<FailoverCollectorClient>(std::move(members));
    return *client_;
  }
  void Refuse(int i) {
    fakes_[i]->fail = absl::UnavailableError(
        absl::StrCat("cannot reach collector ", fakes_[i]->address(),
                     ": connection "
                     "refused"));
  }

  std::vector<std::shared_ptr<FakeCollectorClient>> fakes_;
  std::unique_ptr<FailoverCollectorClient> client_;
};

TEST_F(FailoverClientTest, UsesTheFirstThatAnswers) {
  FailoverCollectorClient& client = Make(3);
  Refuse(0);
  fakes_[1]->nodes.add_nodes()->set_node("gpu-001");
  fakes_[2]->nodes.add_nodes()->set_node("gpu-002");
  EXPECT_EQ(client.address(), "c0:9811");
  absl::StatusOr<v1::ListNodesResponse> nodes = client.ListNodes();
  ASSERT_TRUE(nodes.ok()) << nodes.status();
  ASSERT_EQ(nodes->nodes_size(), 1);
  EXPECT_EQ(nodes->nodes(0).node(), "gpu-001");
  EXPECT_EQ(client.address(), "c1:9811");
  EXPECT_EQ(fakes_[0]->calls, 1);
  EXPECT_EQ(fakes_[2]->calls, 0);  // never asked: c1 answered
}

TEST_F(FailoverClientTest, EveryCallStartsFromTheFirstAddress) {
  FailoverCollectorClient& client = Make(2);
  Refuse(0);
  ASSERT_TRUE(client.ListLayouts().ok());
  fakes_[0]->fail = absl::OkStatus();  // the preferred one is back
  ASSERT_TRUE(client.ListLayouts().ok());
  EXPECT_EQ(client.address(), "c0:9811");
  EXPECT_EQ(fakes_[0]->calls, 2);
  EXPECT_EQ(fakes_[1]->calls, 1);
}

TEST_F(FailoverClientTest, DeadlineExceededAlsoMovesOn) {
  FailoverCollectorClient& client = Make(2);
  fakes_[0]->fail = absl::DeadlineExceededError(
      "cannot reach collector c0:9811: no answer within 10s (--timeout)");
  EXPECT_TRUE(client.ListLayouts().ok());
  EXPECT_EQ(fakes_[1]->calls, 1);
  EXPECT_EQ(client.address(), "c1:9811");
}

// A collector that is up and refuses has decided: asking the next one would
// repeat or contradict it.
TEST_F(FailoverClientTest, ApplicationErrorsAreReturnedAsIs) {
  FailoverCollectorClient& client = Make(2);
  for (absl::Status error :
       {absl::NotFoundError("collector c0:9811: not found: no layout"),
        absl::InvalidArgumentError("collector c0:9811: invalid argument: x"),
        absl::UnauthenticatedError("collector c0:9811: unauthenticated"),
        absl::PermissionDeniedError("collector c0:9811: permission denied")}) {
    fakes_[0]->fail = error;
    absl::StatusOr<v1::Layout> layout = client.GetLayout("job");
    EXPECT_EQ(layout.status(), error);
  }
  EXPECT_EQ(fakes_[1]->calls, 0);
}

TEST_F(FailoverClientTest, NoneAnsweringNamesEveryAddressInOrder) {
  FailoverCollectorClient& client = Make(3);
  Refuse(0);
  Refuse(1);
  fakes_[2]->fail = absl::DeadlineExceededError(
      "cannot reach collector c2:9811: no answer within 10s (--timeout)");
  absl::StatusOr<v1::ListFindingsResponse> findings =
      client.ListFindings(v1::ListFindingsRequest());
  EXPECT_TRUE(IsConnectionFailure(findings.status()));
  EXPECT_EQ(findings.status().message(),
            "no collector answered: cannot reach collector c0:9811: "
            "connection refused; cannot reach collector c1:9811: connection "
            "refused; cannot reach collector c2:9811: no answer within 10s "
            "(--timeout)");
}

TEST_F(FailoverClientTest, OneAddressKeepsItsOwnError) {
  FailoverCollectorClient& client = Make(1);
  Refuse(0);
  EXPECT_EQ(client.GetTopology().status().message(),
            "cannot reach collector c0:9811: connection refused");
}

TEST_F(FailoverClientTest, WatchMovesOnOnlyBeforeACollectorAcceptedIt) {
  FailoverCollectorClient& client = Make(2);
  // c0 refuses; c1 accepts the watch, then the connection is lost.
  FakeCollectorClient::WatchSession refused;
  refused.connected = false;
  refused.end = absl::UnavailableError(
      "cannot reach collector c0:9811: connection refused");
  fakes_[0]->watch_sessions = {refused};
  FakeCollectorClient::WatchSession lost;
  lost.events.emplace_back();
  fakes_[1]->watch_sessions = {lost};
  std::vector<std::string> connected_to;
  int events = 0;
  CollectorClient::WatchCallbacks callbacks;
  callbacks.on_connected = [&] { connected_to.push_back(client.address()); };
  callbacks.on_event = [&](const v1::FindingEvent&) { ++events; };
  absl::Status status = client.WatchFindings("job", callbacks);
  // The loss is returned to the caller (which reconnects), not hidden by
  // trying c0 again.
  EXPECT_TRUE(absl::IsUnavailable(status)) << status;
  EXPECT_THAT(status.message(), HasSubstr("connection lost"));
  EXPECT_THAT(connected_to, ElementsAre("c1:9811"));
  EXPECT_EQ(events, 1);
  EXPECT_EQ(fakes_[0]->watch_calls, 1);
  EXPECT_EQ(fakes_[1]->watch_calls, 1);
  EXPECT_EQ(fakes_[1]->last_watch_job, "job");
}

TEST_F(FailoverClientTest, CancelWatchReachesEveryMember) {
  FailoverCollectorClient& client = Make(2);
  client.CancelWatch();
  EXPECT_TRUE(fakes_[0]->cancelled);
  EXPECT_TRUE(fakes_[1]->cancelled);
  EXPECT_TRUE(absl::IsCancelled(client.WatchFindings("", {})));
  EXPECT_EQ(fakes_[1]->watch_calls, 0);
}

TEST(ClientConfigListTest, ParsesAListInOrder) {
  ClientFlags flags;
  flags.address = "c1:9811, c0:9811,dns:///c2:9811";
  absl::StatusOr<ClientConfig> config = LoadClientConfig(flags);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_THAT(config->addresses,
              ElementsAre("c1:9811", "c0:9811", "dns:///c2:9811"));
  EXPECT_EQ(config->address, "c1:9811");

  flags.address = "127.0.0.1:9811";
  config = LoadClientConfig(flags);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_THAT(config->addresses, ElementsAre("127.0.0.1:9811"));
}

TEST(ClientConfigListTest, RefusesBadListsNamingTheEntry) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "--collector: empty address"},
      {"c0:9811,,c1:9811", "entry 2 is empty"},
      {"c0:9811,", "entry 2 is empty"},
      {"c0:9811,c0:9811", "\"c0:9811\" is listed twice"},
      {"c0:9811,c1:99999", "\"c1:99999\" is not HOST:PORT"},
      {"c0:9811,c1", "\"c1\" is not HOST:PORT"},
      {"c0:9811,c 1:9811", "contains a space"},
  };
  for (const auto& [value, message] : cases) {
    ClientFlags flags;
    flags.address = value;
    absl::StatusOr<ClientConfig> config = LoadClientConfig(flags);
    EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument)
        << value;
    EXPECT_THAT(config.status().message(), HasSubstr(message)) << value;
  }
}

}  // namespace
}  // namespace fabricdiag::client
