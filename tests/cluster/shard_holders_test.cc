// Who holds each analysis shard, read from the lease bucket against a real
// nats-server: the holder while it renews, none once it let go, lapsed
// once it stopped renewing, the keys held before the watcher started, and
// through a hand-over the owner that still holds the shard, not the one the
// members' view already names.
#include "cluster/shard_holders.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "cluster/key_lease.h"
#include "cluster/nats_analysis_shards.h"
#include "cluster/shard_leases.h"
#include "gtest/gtest.h"
#include "tests/cluster/single_nats_test.h"
#include "tests/testing/eventually.h"

namespace fabricdiag::cluster {
namespace {

constexpr absl::Duration kTtl = absl::Seconds(1);

class ShardHoldersTest : public SingleNatsServerTest {
 protected:
  void SetUp() override {
    nats_a_ = Connect();
    ASSERT_NE(nats_a_, nullptr);
    auto kv = BindLeaseBucket(*nats_a_, TestName(), 1, kTtl);
    ASSERT_TRUE(kv.ok()) << kv.status();
    kv_ = *kv;
  }
  void TearDown() override {
    if (kv_ != nullptr) kvStore_Destroy(kv_);
  }

  std::unique_ptr<ShardHolders> StartHolders() {
    auto holders = ShardHolders::Start(nats_a_.get(), {TestName(), 1, kTtl});
    EXPECT_TRUE(holders.ok()) << holders.status();
    return holders.ok() ? *std::move(holders) : nullptr;
  }
  // A lease on `shard`'s key as ShardLeases takes it.
  std::unique_ptr<KeyLease> Lease(const std::string& shard,
                                  const std::string& holder) {
    return std::make_unique<KeyLease>(
        kv_, "shard." + shard, holder,
        KeyLease::Naming{"shard " + shard, "owns it", false},
        KeyLease::Timing{kTtl, absl::Milliseconds(200)});
  }

  std::unique_ptr<NatsConnection> nats_a_;
  kvStore* kv_ = nullptr;
};

bool Is(const ShardHolders::Seen& seen, const std::string& holder, bool held) {
  return seen.holder == holder && seen.held == held;
}

// `lease` taken, and `holders` seeing its holder hold `shard`.
::testing::AssertionResult TakenAndSeen(KeyLease& lease,
                                        const ShardHolders& holders,
                                        const std::string& shard,
                                        const std::string& holder) {
  if (!lease.TryAcquire()) {
    return ::testing::AssertionFailure() << holder << " cannot take " << shard;
  }
  if (!testing::Eventually([&] { return Is(holders.Of(shard), holder, true); },
                           absl::Seconds(5))) {
    return ::testing::AssertionFailure() << shard << " not seen held";
  }
  return ::testing::AssertionSuccess();
}

TEST_F(ShardHoldersTest, NamesTheHolderWhileItRenews) {
  std::unique_ptr<ShardHolders> holders = StartHolders();
  ASSERT_NE(holders, nullptr);
  EXPECT_TRUE(Is(holders->Of("jobs.1"), "", false)) << "never written";
  std::unique_ptr<KeyLease> lease = Lease("jobs.1", "col-a");
  ASSERT_TRUE(TakenAndSeen(*lease, *holders, "jobs.1", "col-a"));
  // Renewed for twice the TTL: held all along.
  for (int i = 0; i < 8; ++i) {
    absl::SleepFor(kTtl / 4);
    lease->Renew();
    ASSERT_TRUE(lease->Held());
    EXPECT_TRUE(Is(holders->Of("jobs.1"), "col-a", true)) << i;
  }
  EXPECT_TRUE(Is(holders->Of("jobs.2"), "", false)) << "another shard";
  EXPECT_EQ(holders->Unheld(std::vector<std::string>{"jobs.1", "jobs.2"}), 1u);
}

TEST_F(ShardHoldersTest, AShardLetGoHasNoHolder) {
  std::unique_ptr<ShardHolders> holders = StartHolders();
  ASSERT_NE(holders, nullptr);
  std::unique_ptr<KeyLease> lease = Lease("switches.3", "col-a");
  ASSERT_TRUE(TakenAndSeen(*lease, *holders, "switches.3", "col-a"));
  lease->Release(/*delete_key=*/true);
  EXPECT_TRUE(testing::Eventually(
      [&] { return Is(holders->Of("switches.3"), "", false); },
      absl::Seconds(5)));
}

TEST_F(ShardHoldersTest, AHolderThatStopsRenewingLapsesAndTheNextIsNamed) {
  std::unique_ptr<ShardHolders> holders = StartHolders();
  ASSERT_NE(holders, nullptr);
  std::unique_ptr<KeyLease> dead = Lease("jobs.7", "col-a");
  ASSERT_TRUE(TakenAndSeen(*dead, *holders, "jobs.7", "col-a"));
  // col-a never renews (it died): within the TTL it still holds the shard,
  // then it reads as lapsed, still named (the shard's next choice leaves
  // it out).
  const absl::Time acquired = absl::Now();
  ASSERT_TRUE(testing::Eventually(
      [&] { return Is(holders->Of("jobs.7"), "col-a", false); },
      absl::Seconds(5)));
  EXPECT_GE(absl::Now() - acquired, kTtl - absl::Milliseconds(100));
  EXPECT_EQ(holders->Unheld(std::vector<std::string>{"jobs.7"}), 1u);
  // Once the key expired on the server, col-b takes it.
  std::unique_ptr<KeyLease> next = Lease("jobs.7", "col-b");
  ASSERT_TRUE(testing::Eventually([&] { return next->TryAcquire(); },
                                  absl::Seconds(5), absl::Milliseconds(50)));
  EXPECT_TRUE(testing::Eventually(
      [&] { return Is(holders->Of("jobs.7"), "col-b", true); },
      absl::Seconds(5)));
  EXPECT_EQ(holders->Unheld(std::vector<std::string>{"jobs.7"}), 0u);
}

TEST_F(ShardHoldersTest, KeysHeldBeforeItStartsAreReadAtStart) {
  std::unique_ptr<KeyLease> lease = Lease("jobs.4", "col-c");
  ASSERT_TRUE(lease->TryAcquire());
  // The analysis lease's key is in the same bucket: no shard of it.
  KeyLease analysis(kv_, "analysis", "col-c", {"analysis lease", "leads"},
                    {kTtl, absl::Milliseconds(200)});
  ASSERT_TRUE(analysis.TryAcquire());
  std::unique_ptr<ShardHolders> holders = StartHolders();
  ASSERT_NE(holders, nullptr);
  EXPECT_TRUE(Is(holders->Of("jobs.4"), "col-c", true)) << "read at start";
  EXPECT_TRUE(Is(holders->Of("analysis"), "", false));
  EXPECT_TRUE(holders->Current());
  // Not renewed: not held once the TTL passed, and nothing read lately.
  EXPECT_TRUE(testing::Eventually(
      [&] { return Is(holders->Of("jobs.4"), "col-c", false); },
      absl::Seconds(5)));
  EXPECT_TRUE(testing::Eventually([&] { return !holders->Current(); },
                                  absl::Seconds(5)));
  // Any write to the bucket: a shard taken.
  std::unique_ptr<KeyLease> next = Lease("jobs.5", "col-d");
  ASSERT_TRUE(next->TryAcquire());
  EXPECT_TRUE(testing::Eventually([&] { return holders->Current(); },
                                  absl::Seconds(5)));
}

// A shard handed over stays its old owner's until that one lets it go:
// the members' view names the new owner first, the bucket the one that
// holds it.
TEST_F(ShardHoldersTest, AShardHandedOverIsItsOldOwnersUntilLetGo) {
  std::unique_ptr<ShardHolders> holders = StartHolders();
  ASSERT_NE(holders, nullptr);
  absl::Mutex mu;
  std::vector<ShardLeases::Candidate> live = {
      {"col-a", absl::InfiniteDuration()}};
  const ShardLeases::Members members = [&] {
    absl::MutexLock lock(&mu);
    return live;
  };
  ShardLeases::Options options;
  options.replicas = 1;
  options.bucket = TestName();
  options.ttl = kTtl;
  options.margin = absl::Milliseconds(200);
  options.renew_period = absl::Milliseconds(300);
  options.acquire_period = absl::Milliseconds(100);
  options.settle = absl::ZeroDuration();
  options.handover_wait = absl::Seconds(30);
  // Shards of which col-b is the first choice once it is live.
  std::vector<std::string> shards;
  const std::vector<ShardLeases::Candidate> both = {
      {"col-a", absl::InfiniteDuration()}, {"col-b", absl::InfiniteDuration()}};
  for (int k = 0; shards.size() < 2; ++k) {
    const std::string shard = "jobs." + std::to_string(k);
    if (ShardLeases::FirstChoice(shard, both) == "col-b") {
      shards.push_back(shard);
    }
  }
  auto a = ShardLeases::Start(nats_a_.get(), "col-a", shards, members, options);
  ASSERT_TRUE(a.ok()) << a.status();
  for (const std::string& shard : shards) {
    ASSERT_TRUE(testing::Eventually(
        [&] { return Is(holders->Of(shard), "col-a", true); },
        absl::Seconds(5)))
        << shard;
  }
  std::unique_ptr<NatsConnection> nats_b = Connect();
  ASSERT_NE(nats_b, nullptr);
  {
    absl::MutexLock lock(&mu);
    live = both;
  }
  auto b = ShardLeases::Start(nats_b.get(), "col-b", shards, members, options);
  ASSERT_TRUE(b.ok()) << b.status();
  // col-a keeps them, handing over: the members' view says col-b, the
  // bucket col-a, for as long as col-a does not let go.
  ASSERT_TRUE(testing::Eventually(
      [&] {
        const std::vector<ShardLeases::Owned> owned = (*a)->OwnedShards();
        return owned.size() == 2 && owned[0].handing_over &&
               owned[1].handing_over;
      },
      absl::Seconds(5)));
  absl::SleepFor(2 * kTtl);
  for (const std::string& shard : shards) {
    EXPECT_EQ(ShardLeases::SettledChoice(shard, both, options.settle), "col-b");
    EXPECT_TRUE(Is(holders->Of(shard), "col-a", true)) << shard;
  }
  (*a)->LetGo(shards[0]);
  EXPECT_TRUE(testing::Eventually(
      [&] { return Is(holders->Of(shards[0]), "col-b", true); },
      absl::Seconds(5)));
  EXPECT_TRUE(Is(holders->Of(shards[1]), "col-a", true));
  (*b)->Stop();
  (*a)->Stop();
}

std::vector<std::string> Ids(const std::vector<ShardLeases::Candidate>& in) {
  std::vector<std::string> out;
  for (const ShardLeases::Candidate& c : in) out.push_back(c.id);
  return out;
}

// The job and switch shards go to the live members that shard: those that
// hold their own nodes' shard. While the watcher reads nothing, to every
// live member.
TEST_F(ShardHoldersTest, OnlyMembersHoldingTheirOwnNodesShardAreCandidates) {
  std::unique_ptr<ShardHolders> holders = StartHolders();
  ASSERT_NE(holders, nullptr);
  const std::vector<ShardLeases::Candidate> live = {{"col-a", absl::Hours(1)},
                                                    {"col-b", absl::Hours(1)},
                                                    {"col-c", absl::Hours(1)}};
  std::unique_ptr<KeyLease> a = Lease("ports.col-a", "col-a");
  std::unique_ptr<KeyLease> c = Lease("ports.col-c", "col-c");
  // col-b holds a job shard, not its own nodes' shard: it does not shard.
  std::unique_ptr<KeyLease> b = Lease("jobs.3", "col-b");
  ASSERT_TRUE(a->TryAcquire());
  ASSERT_TRUE(b->TryAcquire());
  ASSERT_TRUE(c->TryAcquire());
  const std::vector<std::string> sharding = {"col-a", "col-c"};
  EXPECT_TRUE(testing::Eventually(
      [&] { return Ids(ShardingMembers(live, *holders)) == sharding; },
      absl::Seconds(5)));
  // col-c stops renewing (it died): no choice once its key lapsed, while
  // col-a renews.
  for (int i = 0; i < 8 && Ids(ShardingMembers(live, *holders)).size() > 1;
       ++i) {
    absl::SleepFor(kTtl / 4);
    a->Renew();
  }
  EXPECT_EQ(Ids(ShardingMembers(live, *holders)),
            std::vector<std::string>{"col-a"});
  // Nothing renewed for the TTL: the watcher cannot tell, every live member.
  EXPECT_TRUE(testing::Eventually([&] { return !holders->Current(); },
                                  absl::Seconds(5)));
  EXPECT_EQ(Ids(ShardingMembers(live, *holders)),
            (std::vector<std::string>{"col-a", "col-b", "col-c"}));
}

}  // namespace
}  // namespace fabricdiag::cluster
