// Who holds each analysis shard: a value replayed keeps its first arrival;
// read from the lease bucket against a real nats-server, the holder while it
// renews, none once it let go, lapsed once it stopped renewing, the keys held
// before the watcher started, no holder of a value that is no collector id, and
// through a hand-over the owner that still holds the shard, not the one the
// members' view already names; and three collectors' NatsAnalysisShards
// naming one owner through a hand-over, and the members that do not shard.
#include "cluster/shard_holders.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
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

// A recreated watcher replays every key's latest value: the revision
// already read keeps the time it first arrived, a holder that died before
// the replay lapses a TTL after its last write was read, not after the
// replay; a renewal (a new revision) counts from its own arrival.
TEST(HolderKeysTest, AReplayedValueKeepsItsFirstArrival) {
  const absl::Time t0 = absl::FromUnixSeconds(1'000'000);
  HolderKeys keys;
  EXPECT_EQ(keys.Find("jobs.1"), nullptr);
  keys.Put("jobs.1", "col-a", 5, t0);
  keys.Put("jobs.2", "col-b", 7, t0);
  keys.Put("jobs.1", "col-a", 5, t0 + absl::Seconds(2));  // the replay
  ASSERT_NE(keys.Find("jobs.1"), nullptr);
  EXPECT_EQ(keys.Find("jobs.1")->holder, "col-a");
  EXPECT_EQ(keys.Find("jobs.1")->arrived, t0);
  keys.Put("jobs.1", "col-a", 8, t0 + absl::Seconds(3));  // renewed
  EXPECT_EQ(keys.Find("jobs.1")->arrived, t0 + absl::Seconds(3));
  EXPECT_EQ(keys.Find("jobs.1")->revision, 8u);
  // The same revision from another holder (a bucket made anew) is a new
  // value.
  keys.Put("jobs.1", "col-c", 8, t0 + absl::Seconds(4));
  EXPECT_EQ(keys.Find("jobs.1")->holder, "col-c");
  EXPECT_EQ(keys.Find("jobs.1")->arrived, t0 + absl::Seconds(4));
  // Let go, then taken again: read anew, whatever its revision.
  keys.Erase("jobs.1");
  EXPECT_EQ(keys.Find("jobs.1"), nullptr);
  keys.Put("jobs.1", "col-c", 8, t0 + absl::Seconds(5));
  EXPECT_EQ(keys.Find("jobs.1")->arrived, t0 + absl::Seconds(5));
  EXPECT_EQ(keys.Find("jobs.2")->arrived, t0) << "another shard";
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

// A value no collector would write (the bucket's key written by hand or by
// a hostile client) names no holder; a real holder's next write is read.
TEST_F(ShardHoldersTest, AValueThatIsNoCollectorIdNamesNoHolder) {
  std::unique_ptr<ShardHolders> holders = StartHolders();
  ASSERT_NE(holders, nullptr);
  // `value` written to jobs.9's key, and read as `holder` holding it or not.
  auto written_and_read = [&](const char* value, const std::string& holder,
                              bool held) {
    return kvStore_PutString(nullptr, kv_, "shard.jobs.9", value) == NATS_OK &&
           testing::Eventually(
               [&] { return Is(holders->Of("jobs.9"), holder, held); },
               absl::Seconds(5));
  };
  // Each hostile value after a real holder's: it is that write that
  // makes the shard unheld.
  for (const char* hostile :
       {"<script>alert(1)</script>", "col a", "", "col-a\nFINDING"}) {
    ASSERT_TRUE(written_and_read("col-a", "col-a", true)) << hostile;
    EXPECT_TRUE(written_and_read(hostile, "", false)) << hostile;
    EXPECT_EQ(holders->Unheld(std::vector<std::string>{"jobs.9"}), 1u);
  }
  EXPECT_TRUE(written_and_read("col-b", "col-b", true));
}

// The same of a lease's own read of its key's holder (the analysis lease's
// leader on /healthz): a value that is no collector id names nobody.
TEST_F(ShardHoldersTest, ALeaseReadsNoHolderFromAValueThatIsNoCollectorId) {
  ASSERT_EQ(kvStore_PutString(nullptr, kv_, "analysis", "<b>everyone</b>"),
            NATS_OK);
  KeyLease lease(kv_, "analysis", "col-a", {"analysis lease", "leads"},
                 {kTtl, absl::Milliseconds(200)});
  EXPECT_FALSE(lease.TryAcquire()) << "the key is there";
  EXPECT_EQ(lease.holder(), "");
  ASSERT_EQ(kvStore_PutString(nullptr, kv_, "analysis", "col-b"), NATS_OK);
  EXPECT_FALSE(lease.TryAcquire());
  EXPECT_EQ(lease.holder(), "col-b");
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
  out.reserve(in.size());
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

// Three collectors' shards as NatsAnalysisShards deals them. Every one of
// them names the same owner of a shard through a hand-over to a collector
// that joined: the old owner while it holds the shard (the newcomer too
// says so), the newcomer once it took it.
class AnalysisShardsTest : public ShardHoldersTest {
 protected:
  AnalysisShardsTest() {
    options_.counts = {16, 1};
    options_.leases.replicas = 1;
    options_.leases.bucket = TestName();
    options_.leases.ttl = kTtl;
    options_.leases.margin = absl::Milliseconds(200);
    options_.leases.renew_period = absl::Milliseconds(300);
    options_.leases.acquire_period = absl::Milliseconds(100);
    options_.leases.settle = absl::ZeroDuration();
    // Held until LetGo(): the hand-over lasts as long as the test wants.
    options_.leases.handover_wait = absl::Seconds(30);
    options_.exchange.subject = "test.shard." + TestName();
    options_.news.subject = "test.news." + TestName();
  }

  // Collector `id` on a connection of its own, among the members `live`.
  std::unique_ptr<NatsAnalysisShards> StartCollector(const std::string& id) {
    connections_.push_back(Connect());
    if (connections_.back() == nullptr) return nullptr;
    auto shards = NatsAnalysisShards::Start(
        connections_.back().get(), id,
        [this] {
          absl::MutexLock lock(&mu_);
          return live_;
        },
        options_);
    EXPECT_TRUE(shards.ok()) << shards.status();
    return shards.ok() ? *std::move(shards) : nullptr;
  }
  void SetLive(std::vector<ShardLeases::Candidate> live) {
    absl::MutexLock lock(&mu_);
    live_ = std::move(live);
  }

  NatsAnalysisShards::Options options_;
  std::vector<std::unique_ptr<NatsConnection>> connections_;
  absl::Mutex mu_;
  std::vector<ShardLeases::Candidate> live_ ABSL_GUARDED_BY(mu_);
};

bool Owns(const NatsAnalysisShards& c, const std::string& shard) {
  return c.Term(shard) != 0;
}

TEST_F(AnalysisShardsTest, EveryCollectorNamesTheOwnerThroughAHandOver) {
  const ShardLeases::Candidate a{"col-a", absl::Hours(1)};
  const ShardLeases::Candidate b{"col-b", absl::Hours(1)};
  const ShardLeases::Candidate c{"col-c", absl::Hours(1)};
  SetLive({a, b});
  std::unique_ptr<NatsAnalysisShards> col_a = StartCollector("col-a");
  std::unique_ptr<NatsAnalysisShards> col_b = StartCollector("col-b");
  ASSERT_NE(col_a, nullptr);
  ASSERT_NE(col_b, nullptr);
  ASSERT_EQ(col_a->shard_count(), 17u);
  // A job shard that goes to col-c once it is live.
  std::string moving;
  for (int k = 0; k < 16 && moving.empty(); ++k) {
    const std::string shard = "jobs." + std::to_string(k);
    if (ShardLeases::FirstChoice(shard, {a, b, c}) == "col-c") moving = shard;
  }
  ASSERT_FALSE(moving.empty());
  const std::string first = ShardLeases::FirstChoice(moving, {a, b});
  NatsAnalysisShards& old_owner = first == "col-a" ? *col_a : *col_b;
  NatsAnalysisShards& bystander = first == "col-a" ? *col_b : *col_a;
  ASSERT_TRUE(testing::Eventually(
      [&] {
        return col_a->unowned() == 0 && col_b->unowned() == 0 &&
               Owns(old_owner, moving);
      },
      absl::Seconds(10)));
  EXPECT_EQ(bystander.OwnerOf(moving), first);
  EXPECT_EQ(old_owner.OwnerOf(moving), first);
  EXPECT_TRUE(col_a->NotSharding().empty());

  // col-c joins; the old owner hands the shard over and keeps it until it
  // lets go. Meanwhile every collector names the old owner, col-c itself
  // included, though the members' view already names col-c.
  SetLive({a, b, c});
  std::unique_ptr<NatsAnalysisShards> col_c = StartCollector("col-c");
  ASSERT_NE(col_c, nullptr);
  ASSERT_TRUE(testing::Eventually(
      [&] {
        for (const NatsAnalysisShards::Owned& o : old_owner.OwnedShards()) {
          if (o.shard == moving) return o.handing_over;
        }
        return false;
      },
      absl::Seconds(10)));
  absl::SleepFor(2 * kTtl);
  EXPECT_FALSE(Owns(*col_c, moving));
  EXPECT_EQ(ShardLeases::SettledChoice(moving, {a, b, c}, absl::ZeroDuration()),
            "col-c");
  for (NatsAnalysisShards* each : {col_a.get(), col_b.get(), col_c.get()}) {
    EXPECT_EQ(each->OwnerOf(moving), first) << each->Id();
  }
  old_owner.LetGo(moving);
  ASSERT_TRUE(testing::Eventually([&] { return Owns(*col_c, moving); },
                                  absl::Seconds(5)));
  for (NatsAnalysisShards* each : {col_a.get(), col_b.get(), col_c.get()}) {
    EXPECT_TRUE(testing::Eventually(
        [&] { return each->OwnerOf(moving) == "col-c"; }, absl::Seconds(5)))
        << each->Id() << " names " << each->OwnerOf(moving);
  }
  col_c->Stop();
  col_b->Stop();
  col_a->Stop();
}

// A live member that holds no lease on its own nodes' shard runs without
// --analysis_shards: the others name it once it has been live long enough
// to have taken one.
TEST_F(AnalysisShardsTest, NamesTheMembersThatDoNotShard) {
  SetLive({{"col-a", absl::Hours(1)}, {"col-b", absl::Hours(1)}});
  std::unique_ptr<NatsAnalysisShards> col_a = StartCollector("col-a");
  ASSERT_NE(col_a, nullptr);
  EXPECT_TRUE(testing::Eventually(
      [&] { return col_a->NotSharding() == std::vector<std::string>{"col-b"}; },
      absl::Seconds(5)));
  // Just started: it may not have taken its own nodes' shard yet.
  SetLive({{"col-a", absl::Hours(1)},
           {"col-b", NatsAnalysisShards::kShardingWithin / 2}});
  EXPECT_TRUE(col_a->NotSharding().empty());
  // It starts sharding: no longer named.
  SetLive({{"col-a", absl::Hours(1)}, {"col-b", absl::Hours(1)}});
  std::unique_ptr<NatsAnalysisShards> col_b = StartCollector("col-b");
  ASSERT_NE(col_b, nullptr);
  EXPECT_TRUE(testing::Eventually([&] { return col_a->NotSharding().empty(); },
                                  absl::Seconds(5)));
  col_b->Stop();
  col_a->Stop();
}

}  // namespace
}  // namespace fabricdiag::cluster
