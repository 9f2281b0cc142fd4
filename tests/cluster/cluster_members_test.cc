// Membership of a collector cluster against real nats-server processes.
#include "cluster/cluster_members.h"

#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cluster/single_nats_test.h"
#include "tests/testing/eventually.h"

namespace fabricdiag::cluster {
namespace {

class ClusterMembersTest : public SingleNatsServerTest {
 protected:
  std::unique_ptr<ClusterMembers> Join(NatsConnection* nats,
                                       const std::string& id) {
    ClusterMembers::Options options;
    options.replicas = 1;
    options.period = absl::Milliseconds(200);
    options.bucket = TestName();
    auto members = ClusterMembers::Start(nats, id, options);
    EXPECT_TRUE(members.ok()) << members.status();
    return members.ok() ? *std::move(members) : nullptr;
  }

  static std::vector<std::string> Ids(const ClusterMembers& members) {
    std::vector<std::string> ids;
    for (const ClusterMembers::Member& m : members.Live()) ids.push_back(m.id);
    return ids;
  }
};

TEST_F(ClusterMembersTest, MembersSeeEachOtherAndALeaver) {
  auto conn_a = Connect();
  auto conn_b = Connect();
  ASSERT_NE(conn_b, nullptr);
  auto a = Join(conn_a.get(), "col-a");
  auto b = Join(conn_b.get(), "col-b");
  ASSERT_NE(b, nullptr);
  EXPECT_TRUE(testing::Eventually([&] {
    return Ids(*a) == std::vector<std::string>{"col-a", "col-b"} &&
           Ids(*b) == std::vector<std::string>{"col-a", "col-b"};
  }));
  EXPECT_TRUE(a->Live()[0].self);
  EXPECT_FALSE(a->Live()[1].self);
  // A clean stop deletes its announcement: gone at once, not after 3
  // periods.
  b.reset();
  EXPECT_TRUE(testing::Eventually(
      [&] { return Ids(*a) == std::vector<std::string>{"col-a"}; },
      absl::Milliseconds(400)));
  EXPECT_FALSE(a->id_conflict());
}

// A member's address is "" until it advertises one, then every member
// sees it; a second id on the same key is still a conflict (the address
// comes after the instance in the announcement).
TEST_F(ClusterMembersTest, AnAdvertisedAddressReachesTheOthers) {
  auto conn_a = Connect();
  auto conn_b = Connect();
  ASSERT_NE(conn_b, nullptr);
  auto a = Join(conn_a.get(), "col-a");
  auto b = Join(conn_b.get(), "col-b");
  ASSERT_TRUE(testing::Eventually([&] { return Ids(*a).size() == 2; }));
  EXPECT_EQ(a->Live()[1].address, "");
  b->Advertise("10.0.0.2:9811");
  EXPECT_TRUE(testing::Eventually([&] {
    const std::vector<ClusterMembers::Member> live = a->Live();
    return live.size() == 2 && live[1].address == "10.0.0.2:9811";
  }));
  EXPECT_EQ(a->Live()[0].address, "");
  EXPECT_FALSE(a->id_conflict());
  EXPECT_FALSE(b->id_conflict());
}

TEST_F(ClusterMembersTest, ASilentMemberAgesOut) {
  auto conn_a = Connect();
  auto conn_b = Connect();
  ASSERT_NE(conn_b, nullptr);
  auto a = Join(conn_a.get(), "col-a");
  auto b = Join(conn_b.get(), "col-b");
  ASSERT_TRUE(testing::Eventually([&] { return Ids(*a).size() == 2; }));
  // B's connection dies without a word (as with kill -9): no delete.
  conn_b->Close();
  EXPECT_TRUE(testing::Eventually(
      [&] { return Ids(*a) == std::vector<std::string>{"col-a"}; },
      absl::Seconds(3)));
}

TEST_F(ClusterMembersTest, TwoCollectorsWithOneIdAreAConflict) {
  auto conn_a = Connect();
  auto conn_b = Connect();
  ASSERT_NE(conn_b, nullptr);
  auto first = Join(conn_a.get(), "col-a");
  auto second = Join(conn_b.get(), "col-a");
  EXPECT_TRUE(testing::Eventually(
      [&] { return first->id_conflict() && second->id_conflict(); }));
  // A successor that starts after its predecessor stopped is no conflict.
  second.reset();
  first.reset();
  auto successor = Join(conn_b.get(), "col-a");
  absl::SleepFor(absl::Seconds(1));
  EXPECT_FALSE(successor->id_conflict());
}

}  // namespace
}  // namespace fabricdiag::cluster
