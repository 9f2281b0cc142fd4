// The analysis shards' leases against a real nats-server: every shard owned
// by its rendezvous first choice and by no one else at the same moment, a
// dead owner's shards taken by the survivors (and only those), a new member
// handed its shards once it settled, a clean stop handing over at once.
#include "cluster/shard_leases.h"

#include <algorithm>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cluster/single_nats_test.h"
#include "tests/testing/eventually.h"
#include "tests/testing/most_at_once.h"

namespace fabricdiag::cluster {
namespace {

using Candidate = ShardLeases::Candidate;
// shard -> (owner, term)
using Ownership = std::map<std::string, std::pair<std::string, uint64_t>>;

std::vector<std::string> Shards(int n) {
  std::vector<std::string> out;
  out.reserve(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) out.push_back(absl::StrCat("jobs.", i));
  return out;
}

std::vector<Candidate> Named(const std::vector<std::string>& ids) {
  std::vector<Candidate> out;
  out.reserve(ids.size());
  for (const std::string& id : ids) out.push_back({id, absl::Hours(1)});
  return out;
}

// Any member can tell who holds a shard once the leases settle: a newer
// first choice only once it has been live for `settle`, before that the
// first choice of those that have; with none settled, the first choice.
TEST(ShardSettledChoiceTest, ANewMemberGetsItsShardsOnceSettled) {
  const absl::Duration settle = absl::Seconds(4);
  const std::vector<ShardLeases::Candidate> old_two = {
      {"col-a", absl::Minutes(5)}, {"col-b", absl::Minutes(5)}};
  int moved = 0;
  for (int k = 0; k < 64; ++k) {
    const std::string s = absl::StrCat("jobs.", k);
    const std::string before = ShardLeases::FirstChoice(s, old_two);
    EXPECT_EQ(ShardLeases::SettledChoice(s, old_two, settle), before) << s;
    std::vector<ShardLeases::Candidate> joined = old_two;
    joined.push_back({"col-c", absl::Seconds(1)});
    EXPECT_EQ(ShardLeases::SettledChoice(s, joined, settle), before)
        << s << ": col-c is not settled yet";
    joined.back().live_for = settle;
    const std::string after = ShardLeases::SettledChoice(s, joined, settle);
    EXPECT_EQ(after, ShardLeases::FirstChoice(s, joined)) << s;
    moved += after == "col-c" ? 1 : 0;
  }
  EXPECT_GT(moved, 0) << "col-c settled takes some shards";
  const std::vector<ShardLeases::Candidate> fresh = {
      {"col-a", absl::Seconds(1)}, {"col-b", absl::ZeroDuration()}};
  EXPECT_EQ(ShardLeases::SettledChoice("jobs.3", fresh, settle),
            ShardLeases::FirstChoice("jobs.3", fresh));
  EXPECT_EQ(ShardLeases::SettledChoice("jobs.3", {}, settle), "");
}

TEST(ShardFirstChoiceTest, SpreadsShardsAndMovesOnlyAGoneMembersShards) {
  const std::vector<std::string> shards = Shards(300);
  const std::vector<Candidate> three = Named({"col-a", "col-b", "col-c"});
  std::map<std::string, int> owned;
  for (const std::string& s : shards) {
    const std::string first = ShardLeases::FirstChoice(s, three);
    ++owned[first];
    // The order the candidates come in does not matter.
    EXPECT_EQ(first,
              ShardLeases::FirstChoice(s, Named({"col-c", "col-a", "col-b"})));
    // Without col-b, only col-b's shards move.
    const std::string without_b =
        ShardLeases::FirstChoice(s, Named({"col-a", "col-c"}));
    if (first != "col-b") {
      EXPECT_EQ(without_b, first) << s;
    }
  }
  ASSERT_EQ(owned.size(), 3u);
  for (const auto& [id, n] : owned) {
    EXPECT_GT(n, 70) << id;  // 100 expected
    EXPECT_LT(n, 130) << id;
  }
  EXPECT_EQ(ShardLeases::FirstChoice("jobs.0", {}), "");
}

// The members' view the test controls: who is live, since when.
class View {
 public:
  View() = default;
  explicit View(const std::vector<std::string>& ids) {
    for (const std::string& id : ids) Add(id);
  }
  void Add(const std::string& id, absl::Time since = absl::InfinitePast()) {
    absl::MutexLock lock(&mu_);
    since_[id] = since;
  }
  void Remove(const std::string& id) {
    absl::MutexLock lock(&mu_);
    since_.erase(id);
  }
  ShardLeases::Members Function() {
    return [this] {
      absl::MutexLock lock(&mu_);
      std::vector<Candidate> out;
      for (const auto& [id, since] : since_) {
        out.push_back({id, absl::Now() - since});
      }
      return out;
    };
  }

 private:
  absl::Mutex mu_;
  std::map<std::string, absl::Time> since_ ABSL_GUARDED_BY(mu_);
};

struct Collector {
  std::string id;
  std::unique_ptr<NatsConnection> nats;
  std::unique_ptr<ShardLeases> shards;
};

ShardLeases::Options Fast(const std::string& bucket) {
  ShardLeases::Options options;
  options.replicas = 1;
  options.bucket = bucket;
  options.ttl = absl::Seconds(1);
  options.margin = absl::Milliseconds(200);
  options.renew_period = absl::Milliseconds(300);
  options.acquire_period = absl::Milliseconds(100);
  options.settle = absl::Seconds(1);
  // Without a user to say LetGo(), a shard to hand over goes at once.
  options.handover_wait = absl::ZeroDuration();
  return options;
}

// The most owners any of `shards` has now among `collectors` (for
// testing::MostAtOnce: never two at once). `collectors` must outlive it and
// not change while it is sampled.
std::function<int()> MostOwners(const std::vector<Collector>& collectors,
                                std::vector<std::string> shards) {
  return [&collectors, shards = std::move(shards)] {
    int most = 0;
    for (const std::string& shard : shards) {
      int owners = 0;
      for (const Collector& c : collectors) {
        if (c.shards != nullptr && c.shards->Term(shard) != 0) ++owners;
      }
      most = std::max(most, owners);
    }
    return most;
  };
}

class ShardLeasesTest : public SingleNatsServerTest {
 protected:
  // Starts `ids` as collectors over `shards`, each seeing `view`.
  std::vector<Collector> StartAll(const std::vector<std::string>& ids,
                                  const std::vector<std::string>& shards,
                                  View* view) {
    std::vector<Collector> out;
    out.reserve(ids.size() + 1);  // room for one added later
    for (const std::string& id : ids) {
      out.push_back(StartOne(id, shards, view));
    }
    return out;
  }
  Collector StartOne(const std::string& id,
                     const std::vector<std::string>& shards, View* view) {
    Collector c;
    c.id = id;
    c.nats = Connect();
    if (c.nats == nullptr) return c;
    ShardLeases::Options options = Fast(TestName());
    options.handover_wait = handover_wait_;
    auto started =
        ShardLeases::Start(c.nats.get(), id, shards, view->Function(), options);
    EXPECT_TRUE(started.ok()) << started.status();
    if (started.ok()) c.shards = *std::move(started);
    return c;
  }

  // shard -> (owner, term), when every shard has exactly one owner and it
  // is its first choice among `live`; empty otherwise.
  static Ownership Settled(const std::vector<Collector>& collectors,
                           const std::vector<std::string>& shards,
                           const std::vector<std::string>& live) {
    Ownership out;
    for (const std::string& shard : shards) {
      std::vector<std::pair<std::string, uint64_t>> owners;
      for (const Collector& c : collectors) {
        if (c.shards == nullptr) continue;
        const uint64_t term = c.shards->Term(shard);
        if (term != 0) owners.emplace_back(c.id, term);
      }
      if (owners.size() != 1 ||
          owners[0].first != ShardLeases::FirstChoice(shard, Named(live))) {
        return {};
      }
      out[shard] = owners[0];
    }
    return out;
  }
  // Settled() once it is not empty; empty (and a test failure) when it
  // stays so for 10 s.
  static Ownership WaitSettled(const std::vector<Collector>& collectors,
                               const std::vector<std::string>& shards,
                               const std::vector<std::string>& live) {
    Ownership out;
    EXPECT_TRUE(testing::Eventually(
        [&] {
          out = Settled(collectors, shards, live);
          return !out.empty();
        },
        absl::Seconds(10), absl::Milliseconds(20)));
    return out;
  }

  // Options::handover_wait of the collectors started from now on.
  absl::Duration handover_wait_ = absl::ZeroDuration();
};

TEST_F(ShardLeasesTest, EveryShardIsOwnedByItsFirstChoiceAlone) {
  const std::vector<std::string> shards = Shards(24);
  const std::vector<std::string> ids = {"col-a", "col-b", "col-c"};
  View view(ids);
  std::vector<Collector> c = StartAll(ids, shards, &view);
  testing::MostAtOnce watch(MostOwners(c, shards));
  Ownership settled = WaitSettled(c, shards, ids);
  ASSERT_FALSE(settled.empty());
  // Renewed over several TTLs, nothing moves; everyone sees the owners.
  absl::SleepFor(absl::Seconds(3));
  EXPECT_EQ(Settled(c, shards, ids), settled);
  for (const Collector& each : c) {
    EXPECT_EQ(each.shards->handovers(), 0u);
    for (const std::string& shard : shards) {
      const std::string& owner = settled[shard].first;
      if (each.id == owner) {
        EXPECT_EQ(each.shards->Owner(shard), owner);
      } else {
        // Another's shard is read only while this one would take it; an
        // owner it never looked at is unknown.
        EXPECT_THAT(each.shards->Owner(shard),
                    ::testing::AnyOf(owner, ::testing::IsEmpty()));
      }
    }
  }
  EXPECT_EQ(watch.most(), 1);
}

TEST_F(ShardLeasesTest, ADeadOwnersShardsAloneMoveWithHigherTerms) {
  const std::vector<std::string> shards = Shards(24);
  const std::vector<std::string> ids = {"col-a", "col-b", "col-c"};
  View view(ids);
  std::vector<Collector> c = StartAll(ids, shards, &view);
  testing::MostAtOnce watch(MostOwners(c, shards));
  const Ownership before = WaitSettled(c, shards, ids);
  ASSERT_FALSE(before.empty());
  // col-b's connection dies without a word (kill -9): its keys expire; the
  // members' view drops it 2 s later, as announcements age out.
  const absl::Time died = absl::Now();
  c[1].nats->Close();
  std::thread view_ages([&view] {
    absl::SleepFor(absl::Seconds(2));
    view.Remove("col-b");
  });
  const std::vector<std::string> survivors = {"col-a", "col-c"};
  Ownership after;
  const bool moved = testing::Eventually(
      [&] {
        after = Settled(c, shards, survivors);
        return !after.empty();
      },
      absl::Seconds(10), absl::Milliseconds(20));
  view_ages.join();
  ASSERT_TRUE(moved);
  std::cout << "a dead owner's shards taken over "
            << absl::FormatDuration(absl::Now() - died)
            << " after its connection died (view aged out after 2 s)\n";
  int moved_shards = 0;
  for (const std::string& shard : shards) {
    if (before.at(shard).first == "col-b") {
      ++moved_shards;
      EXPECT_GT(after[shard].second, before.at(shard).second) << shard;
    } else {
      // Not a flap: the survivors' own shards kept their owner and term.
      EXPECT_EQ(after[shard], before.at(shard)) << shard;
    }
  }
  EXPECT_GT(moved_shards, 0);
  EXPECT_EQ(watch.most(), 1);
}

TEST_F(ShardLeasesTest, ANewMemberIsHandedItsShardsOnceSettled) {
  const std::vector<std::string> shards = Shards(24);
  View view;
  view.Add("col-a");
  view.Add("col-b");
  std::vector<Collector> c = StartAll({"col-a", "col-b"}, shards, &view);
  const Ownership before = WaitSettled(c, shards, {"col-a", "col-b"});
  ASSERT_FALSE(before.empty());
  // col-c joins: everyone sees it live from now on, but it is not settled
  // for a second, and meanwhile it is handed nothing.
  view.Add("col-c", absl::Now());
  c.push_back(StartOne("col-c", shards, &view));
  // From here `c` does not change: watched through the hand-over.
  testing::MostAtOnce watch(MostOwners(c, shards));
  absl::SleepFor(absl::Milliseconds(500));
  EXPECT_TRUE(c[2].shards->OwnedShards().empty());
  EXPECT_EQ(Settled(c, shards, {"col-a", "col-b"}), before);
  const std::vector<std::string> three = {"col-a", "col-b", "col-c"};
  Ownership after = WaitSettled(c, shards, three);
  ASSERT_FALSE(after.empty());
  size_t handed = 0;
  for (const std::string& shard : shards) {
    if (after[shard].first == "col-c") {
      ++handed;
      EXPECT_GT(after[shard].second, before.at(shard).second) << shard;
    } else {
      EXPECT_EQ(after[shard], before.at(shard)) << shard;
    }
  }
  EXPECT_GT(handed, 0u);
  EXPECT_EQ(c[0].shards->handovers() + c[1].shards->handovers(), handed);
  EXPECT_EQ(c[2].shards->OwnedShards().size(), handed);
  EXPECT_EQ(watch.most(), 1);
}

// A shard to hand over is kept, marked so, until its owner says it may go
// (what it kept of it is written for the next owner): then it goes within
// a look or two; one never let go goes after handover_wait all the same.
TEST_F(ShardLeasesTest, AShardHandedOverGoesOnceLetGoOrAfterTheWait) {
  handover_wait_ = absl::Seconds(3);
  const std::vector<std::string> shards = Shards(24);
  View view;
  view.Add("col-a");
  std::vector<Collector> c = StartAll({"col-a"}, shards, &view);
  ASSERT_FALSE(WaitSettled(c, shards, {"col-a"}).empty());
  view.Add("col-b", absl::Now());
  c.push_back(StartOne("col-b", shards, &view));
  testing::MostAtOnce watch(MostOwners(c, shards));
  // Once col-b settled (1 s), col-a marks its shards handing over.
  std::vector<std::string> handing;
  ASSERT_TRUE(testing::Eventually(
      [&] {
        handing.clear();
        for (const ShardLeases::Owned& o : c[0].shards->OwnedShards()) {
          if (o.handing_over) handing.push_back(o.shard);
        }
        return !handing.empty();
      },
      absl::Seconds(5), absl::Milliseconds(10)));
  const absl::Time marked = absl::Now();
  absl::SleepFor(absl::Milliseconds(500));
  EXPECT_TRUE(c[1].shards->OwnedShards().empty())
      << "nothing goes before it is let go or the wait ends";
  // One let go: it moves at once, the others wait.
  const std::string first = handing.front();
  c[0].shards->LetGo(first);
  ASSERT_TRUE(testing::Eventually([&] { return c[1].shards->Term(first) != 0; },
                                  absl::Seconds(2), absl::Milliseconds(10)));
  const absl::Duration let_go_took = absl::Now() - marked;
  EXPECT_LT(let_go_took, absl::Seconds(2)) << let_go_took;
  EXPECT_EQ(c[1].shards->OwnedShards().size(), 1u);
  // LetGo() of a shard not handing over changes nothing.
  const std::vector<std::string> two = {"col-a", "col-b"};
  for (const std::string& shard : shards) {
    if (ShardLeases::FirstChoice(shard, Named(two)) == "col-a") {
      c[0].shards->LetGo(shard);
    }
  }
  // The rest go once the wait is over, none of col-a's own.
  const Ownership after = WaitSettled(c, shards, two);
  ASSERT_FALSE(after.empty());
  const absl::Duration all_took = absl::Now() - marked;
  std::cout << "one shard let go after " << let_go_took << ", the rest went "
            << all_took << " after they were marked\n";
  EXPECT_GE(all_took, absl::Seconds(2.5)) << all_took;
  size_t to_b = 0;
  for (const auto& [shard, owner] : after) to_b += owner.first == "col-b";
  EXPECT_GT(to_b, 1u);
  EXPECT_EQ(c[0].shards->handovers(), to_b);
  EXPECT_EQ(watch.most(), 1);
}

TEST_F(ShardLeasesTest, ACleanStopHandsOverAtOnce) {
  const std::vector<std::string> shards = Shards(12);
  const std::vector<std::string> ids = {"col-a", "col-b"};
  View view(ids);
  std::vector<Collector> c = StartAll(ids, shards, &view);
  ASSERT_TRUE(
      testing::Eventually([&] { return !Settled(c, shards, ids).empty(); }));
  // A clean stop deletes its keys and its member key (the view drops it at
  // once): the other takes every shard well within the 1 s TTL.
  const absl::Time stopped = absl::Now();
  c[0].shards->Stop();
  view.Remove("col-a");
  ASSERT_TRUE(testing::Eventually(
      [&] { return c[1].shards->OwnedShards().size() == shards.size(); },
      absl::Seconds(5), absl::Milliseconds(10)));
  const absl::Duration took = absl::Now() - stopped;
  std::cout << "every shard taken " << absl::FormatDuration(took)
            << " after a clean stop\n";
  EXPECT_LT(took, absl::Milliseconds(800)) << took;
}

// A collector takes its shards a hundred at a time: it says so in a line
// per look at them, not a line per shard.
TEST_F(ShardLeasesTest, ShardsTakenAndLetGoAreLoggedTogether) {
  const std::vector<std::string> shards = Shards(128);
  View view({"col-a"});
  ::testing::internal::CaptureStderr();
  std::vector<Collector> c = StartAll({"col-a"}, shards, &view);
  const bool all = testing::Eventually(
      [&] { return c[0].shards->OwnedShards().size() == shards.size(); },
      absl::Seconds(10), absl::Milliseconds(10));
  c[0].shards->Stop();
  const std::string log = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(all);
  int lines = 0;
  int taken = 0;
  for (absl::string_view line : absl::StrSplit(log, '\n')) {
    if (!absl::StrContains(line, "analysis shards: col-a")) continue;
    ++lines;
    int n = 0;
    const size_t at = line.find(" takes ");
    if (at != absl::string_view::npos &&
        absl::SimpleAtoi(line.substr(at + 7, line.find(' ', at + 7) - at - 7),
                         &n)) {
      taken += n;
    }
  }
  EXPECT_EQ(taken, 128) << log;
  EXPECT_THAT(log, ::testing::HasSubstr(
                       "analysis shards: col-a lets go of the 128 shards"));
  EXPECT_LE(lines, 4) << log;
  EXPECT_THAT(log, ::testing::Not(::testing::HasSubstr("owns shard")));
}

TEST_F(ShardLeasesTest, RefusesShardNamesThatCannotBeKeys) {
  auto nats = Connect();
  ASSERT_NE(nats, nullptr);
  View view;
  for (const std::vector<std::string>& bad :
       std::vector<std::vector<std::string>>{{"jobs 1"},
                                             {""},
                                             {".jobs"},
                                             {"jobs..1"},
                                             {"jobs.*"},
                                             {"jobs.1", "jobs.1"}}) {
    auto started = ShardLeases::Start(nats.get(), "col-a", bad, view.Function(),
                                      Fast(TestName()));
    EXPECT_EQ(started.status().code(), absl::StatusCode::kInvalidArgument)
        << bad[0];
  }
}

}  // namespace
}  // namespace fabricdiag::cluster
