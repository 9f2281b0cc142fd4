// When a collector of a cluster can no longer see the cluster's findings,
// against a real nats-server: ClusterMember::FindingsStaleness turns stale
// while NATS is away or the findings bucket does not answer, and current
// again once it does.
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "cluster/cluster_member.h"
#include "collector/findings/findings_store.h"
#include "collector/state/state_store.h"
#include "common/clock.h"
#include "gtest/gtest.h"
#include "tests/testing/eventually.h"
#include "tests/testing/nats_cluster.h"
#include "tests/testing/temp_dir.h"

namespace fabricdiag::cluster {
namespace {

// A collector: its --state_dir, findings store and membership, mirroring.
struct Member {
  testing::TempDir dir;
  std::unique_ptr<collector::StateStore> state;
  std::unique_ptr<collector::FindingsStore> findings;
  std::unique_ptr<ClusterMember> member;

  ~Member() {
    if (member != nullptr) member->StopMirroring();
  }
};

class FindingsStalenessClusterTest : public ::testing::Test {
 protected:
  explicit FindingsStalenessClusterTest(int servers) : nats_(servers) {}

  void SetUp() override {
    const absl::Status started = nats_.Start();
    ASSERT_TRUE(started.ok()) << started;
  }

  std::unique_ptr<Member> Join(const std::string& id) {
    auto m = std::make_unique<Member>();
    auto state = collector::StateStore::Open(m->dir.path(), &clock_);
    EXPECT_TRUE(state.ok()) << state.status();
    if (!state.ok()) return nullptr;
    m->state = *std::move(state);
    m->findings = std::make_unique<collector::FindingsStore>(
        m->state.get(), collector::FindingsStoreOptions{});
    EXPECT_TRUE(m->findings->Load().ok());
    auto member = ClusterMember::Join({nats_.urls(), id, 1});
    EXPECT_TRUE(member.ok()) << member.status();
    if (!member.ok()) return nullptr;
    m->member = *std::move(member);
    EXPECT_TRUE(
        m->findings->Replicate(*m->member->findings_replication()).ok());
    m->member->MirrorFindings(m->findings.get());
    return m;
  }

  // Whether `m`'s findings are current (and known so within a second)
  // within `within`.
  static bool BecomesCurrent(const Member& m, absl::Duration within) {
    return testing::Eventually(
        [&m] {
          const collector::FindingsStaleness s = m.member->FindingsStaleness();
          return !s.stale && s.age < absl::Seconds(1);
        },
        within, absl::Milliseconds(100));
  }

  testing::NatsCluster nats_;
  SystemClock clock_;
};

// Three servers: a lone one forgets the lease's memory bucket when it
// restarts (nobody could lead again), a cluster keeps its config.
class AllNatsAwayTest : public FindingsStalenessClusterTest {
 protected:
  AllNatsAwayTest() : FindingsStalenessClusterTest(3) {}
};

class FindingsBucketGoneTest : public FindingsStalenessClusterTest {
 protected:
  FindingsBucketGoneTest() : FindingsStalenessClusterTest(1) {}
};

#ifndef FABRICDIAG_SANITIZED  // real time
// Every NATS server of three away: the leader and the follower both turn
// stale a few seconds later, their age growing; back: both current again.
TEST_F(AllNatsAwayTest, StaleWhileNatsIsAwayCurrentAfter) {
  std::unique_ptr<Member> a = Join("col-a");
  std::unique_ptr<Member> b = Join("col-b");
  ASSERT_TRUE(a != nullptr && b != nullptr);
  ASSERT_TRUE(testing::Eventually([&] { return a->member->role()->Leading(); },
                                  absl::Seconds(15)));
  ASSERT_TRUE(BecomesCurrent(*a, absl::Seconds(10)));
  ASSERT_TRUE(BecomesCurrent(*b, absl::Seconds(10)));
  // Healthy for a while: never stale.
  for (int i = 0; i < 20; ++i) {
    EXPECT_FALSE(a->member->FindingsStaleness().stale);
    EXPECT_FALSE(b->member->FindingsStaleness().stale);
    absl::SleepFor(absl::Milliseconds(100));
  }

  const absl::Time killed = absl::Now();
  for (int i = 0; i < 3; ++i) nats_.Kill(i);
  for (const Member* m : {a.get(), b.get()}) {
    EXPECT_TRUE(testing::Eventually(
        [m] { return m->member->FindingsStaleness().stale; },
        kFindingsUnconfirmedLimit + absl::Seconds(10), absl::Milliseconds(100)))
        << m->member->collector_id();
  }
  // Not before the limit: a moment without NATS is no outage. The age
  // counts from the watcher's last look, which may precede the kill by
  // its half-second wait and a request.
  EXPECT_GE(absl::Now() - killed, kFindingsUnconfirmedLimit - absl::Seconds(2));
  EXPECT_GE(b->member->FindingsStaleness().age, kFindingsUnconfirmedLimit);

  // JetStream elects its leaders again, then a collector takes the lease
  // (tens of seconds on a loaded machine).
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(nats_.Restart(i).ok());
  EXPECT_TRUE(BecomesCurrent(*a, absl::Seconds(60)));
  EXPECT_TRUE(BecomesCurrent(*b, absl::Seconds(60)));
}
#endif  // FABRICDIAG_SANITIZED

// The findings bucket gone while the lease still answers (a leader leads):
// the follower cannot see the findings, so they are stale all the same.
TEST_F(FindingsBucketGoneTest, StaleWhenTheFindingsBucketDoesNotAnswer) {
  std::unique_ptr<Member> a = Join("col-a");
  ASSERT_TRUE(a != nullptr);
  ASSERT_TRUE(testing::Eventually([&] { return a->member->role()->Leading(); },
                                  absl::Seconds(15)));
  std::unique_ptr<Member> b = Join("col-b");
  ASSERT_TRUE(b != nullptr);
  ASSERT_TRUE(BecomesCurrent(*b, absl::Seconds(10)));

  NatsConnection::Options options;
  options.urls = {nats_.url(0)};
  absl::StatusOr<std::unique_ptr<NatsConnection>> admin =
      NatsConnection::Connect(options);
  ASSERT_TRUE(admin.ok()) << admin.status();
  ASSERT_EQ(js_DeleteStream((*admin)->js(),
                            absl::StrCat("KV_", kFindingsBucket).c_str(),
                            nullptr, nullptr),
            NATS_OK);
  EXPECT_TRUE(testing::Eventually(
      [&] { return b->member->FindingsStaleness().stale; },
      kFindingsUnconfirmedLimit + absl::Seconds(10), absl::Milliseconds(100)));
  EXPECT_TRUE(a->member->role()->Leading());
}

}  // namespace
}  // namespace fabricdiag::cluster
