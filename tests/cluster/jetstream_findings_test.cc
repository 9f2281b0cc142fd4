// The fenced writes of the shared findings bucket
// (cluster/jetstream_findings.h) against a real nats-server: the term each
// version carries, compare-and-set against the revision the writer saw,
// and the watcher dropping a deposed leader's late version.
#include "cluster/jetstream_findings.h"

#include <atomic>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "collector/runner/analysis_role.h"
#include "collector/state/findings_log.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cluster/single_nats_test.h"
#include "tests/testing/eventually.h"

namespace fabricdiag::cluster {
namespace {

using collector::StoredFinding;

// A lease whose term the test sets (0: not leading), and the terms of the
// shards it owns.
class FakeRole final : public collector::AnalysisRole {
 public:
  explicit FakeRole(uint64_t term) : term_(term) {}
  bool Leading() const override { return term_.load() != 0; }
  uint64_t Term() const override { return term_.load(); }
  uint64_t ShardTerm(absl::string_view shard) const override {
    absl::MutexLock lock(&mu_);
    auto it = shards_.find(shard);
    return it == shards_.end() ? 0 : it->second;
  }
  void set_term(uint64_t term) { term_.store(term); }
  void set_shard_term(const std::string& shard, uint64_t term) {
    absl::MutexLock lock(&mu_);
    shards_[shard] = term;
  }

 private:
  std::atomic<uint64_t> term_;
  mutable absl::Mutex mu_;
  std::map<std::string, uint64_t, std::less<>> shards_ ABSL_GUARDED_BY(mu_);
};

StoredFinding Version(const std::string& id, v1::FindingState state,
                      int64_t last_seen,
                      const std::string& source = "rate_analyzers") {
  StoredFinding v;
  v.finding.set_id(id);
  v.finding.set_kind("pfc_storm");
  v.finding.set_node("gpu-007");
  v.finding.set_state(state);
  v.finding.set_last_seen_unix_nanos(last_seen);
  v.source = source;
  return v;
}

class JetStreamFindingsTest : public SingleNatsServerTest {
 protected:
  // A collector's view of the test's bucket: its own connection and role.
  struct Writer {
    std::unique_ptr<NatsConnection> nats;
    std::unique_ptr<FakeRole> role;
    std::unique_ptr<JetStreamFindings> findings;
  };

  Writer Open(uint64_t term,
              absl::Duration request_timeout = absl::Seconds(3)) {
    Writer w;
    w.nats = Connect(request_timeout);
    w.role = std::make_unique<FakeRole>(term);
    JetStreamFindings::Options options;
    options.replicas = 1;
    options.bucket = TestName();
    options.deadline = absl::Seconds(2);
    if (w.nats == nullptr) return w;
    auto findings =
        JetStreamFindings::Open(w.nats.get(), w.role.get(), options);
    EXPECT_TRUE(findings.ok()) << findings.status();
    if (findings.ok()) w.findings = *std::move(findings);
    return w;
  }

  // What the bucket holds for `id` now.
  std::optional<StoredFinding> Stored(const std::string& id) {
    std::unique_ptr<NatsConnection> nats = Connect();
    kvStore* kv = nullptr;
    if (nats == nullptr ||
        js_KeyValue(&kv, nats->js(), TestName().c_str()) != NATS_OK) {
      return std::nullopt;
    }
    kvEntry* entry = nullptr;
    std::optional<StoredFinding> stored;
    if (kvStore_Get(&entry, kv, id.c_str()) == NATS_OK) {
      collector::FindingsReplay replay = collector::ReplayFindingsLog(
          absl::string_view(static_cast<const char*>(kvEntry_Value(entry)),
                            static_cast<size_t>(kvEntry_ValueLen(entry))));
      if (replay.loaded.findings.size() == 1) {
        stored = std::move(replay.loaded.findings[0]);
      }
      kvEntry_Destroy(entry);
    }
    kvStore_Destroy(kv);
    return stored;
  }

  // Puts `version` as it is (its term included), unconditionally: what a
  // deposed leader's write held in a reconnect buffer does when it lands.
  void PutRaw(const StoredFinding& version) {
    std::unique_ptr<NatsConnection> nats = Connect();
    ASSERT_NE(nats, nullptr);
    kvStore* kv = nullptr;
    ASSERT_EQ(js_KeyValue(&kv, nats->js(), TestName().c_str()), NATS_OK);
    const std::string value =
        collector::EncodeFindingsLog(absl::MakeConstSpan(&version, 1), 0);
    uint64_t revision = 0;
    EXPECT_EQ(kvStore_Put(&revision, kv, version.finding.id().c_str(),
                          value.data(), static_cast<int>(value.size())),
              NATS_OK);
    kvStore_Destroy(kv);
  }
};

TEST_F(JetStreamFindingsTest, EveryVersionCarriesTheWritersTerm) {
  Writer a = Open(5);
  ASSERT_NE(a.findings, nullptr);
  const StoredFinding v = Version("f-000001", v1::FINDING_STATE_ACTIVE, 1000);
  ASSERT_TRUE(a.findings->Write({v}).ok());
  std::optional<StoredFinding> stored = Stored("f-000001");
  ASSERT_TRUE(stored.has_value());
  EXPECT_EQ(stored->term, 5u);
  EXPECT_EQ(stored->finding.last_seen_unix_nanos(), 1000);
  // Written again by the same term: compare-and-set against its own write.
  ASSERT_TRUE(
      a.findings->Write({Version("f-000001", v1::FINDING_STATE_ACTIVE, 2000)})
          .ok());
  EXPECT_EQ(Stored("f-000001")->finding.last_seen_unix_nanos(), 2000);
  EXPECT_EQ(a.findings->fenced_writes(), 0u);
}

TEST_F(JetStreamFindingsTest, NothingIsWrittenWithoutTheLease) {
  Writer a = Open(0);
  ASSERT_NE(a.findings, nullptr);
  const absl::Status written =
      a.findings->Write({Version("f-000001", v1::FINDING_STATE_ACTIVE, 1)});
  EXPECT_TRUE(absl::IsFailedPrecondition(written)) << written;
  EXPECT_EQ(a.findings->fenced_writes(), 1u);
  EXPECT_FALSE(Stored("f-000001").has_value());
}

// The old leader (term 5) wrote a finding; a new leader (term 9) rewrote
// it. The old leader's next write conflicts with the revision it saw, reads
// the key back, finds the higher term and stops: the new version stays.
TEST_F(JetStreamFindingsTest, ACasConflictWithAHigherTermStopsTheWriter) {
  Writer old_leader = Open(5);
  ASSERT_NE(old_leader.findings, nullptr);
  ASSERT_TRUE(old_leader.findings
                  ->Write({Version("f-000001", v1::FINDING_STATE_ACTIVE, 100)})
                  .ok());
  Writer new_leader = Open(9);
  ASSERT_NE(new_leader.findings, nullptr);
  // It never watched: its create finds the key, reads it back (term 5, not
  // higher) and updates it.
  ASSERT_TRUE(
      new_leader.findings
          ->Write({Version("f-000001", v1::FINDING_STATE_RESOLVED, 200)})
          .ok());
  EXPECT_EQ(new_leader.findings->fenced_writes(), 0u);

  const absl::Status late = old_leader.findings->Write(
      {Version("f-000001", v1::FINDING_STATE_ACTIVE, 150),
       Version("f-000002", v1::FINDING_STATE_ACTIVE, 150)});
  EXPECT_TRUE(absl::IsFailedPrecondition(late)) << late;
  EXPECT_THAT(std::string(late.message()),
              ::testing::HasSubstr("term 9 wrote it"));
  EXPECT_EQ(old_leader.findings->fenced_writes(), 1u);
  std::optional<StoredFinding> stored = Stored("f-000001");
  ASSERT_TRUE(stored.has_value());
  EXPECT_EQ(stored->term, 9u);
  EXPECT_EQ(stored->finding.state(), v1::FINDING_STATE_RESOLVED);
  // It stopped at the fenced version: nothing after it was written.
  EXPECT_FALSE(Stored("f-000002").has_value());
  // Having seen term 9 there, it refuses at once next time too.
  EXPECT_TRUE(absl::IsFailedPrecondition(old_leader.findings->Write(
      {Version("f-000001", v1::FINDING_STATE_ACTIVE, 160)})));
  EXPECT_EQ(old_leader.findings->fenced_writes(), 2u);
}

// A follower's watcher: a version with a lower term than one already
// delivered (for that finding, or before it in the bucket) never reaches
// on_version; an equal term and a version without a term (an older
// release's) do.
TEST_F(JetStreamFindingsTest, TheWatcherDropsALateVersionOfALowerTerm) {
  Writer leader = Open(9);
  ASSERT_NE(leader.findings, nullptr);
  ASSERT_TRUE(
      leader.findings
          ->Write({Version("f-000001", v1::FINDING_STATE_RESOLVED, 200)})
          .ok());
  Writer follower = Open(0);
  ASSERT_NE(follower.findings, nullptr);
  absl::Mutex mu;
  std::vector<std::pair<std::string, uint64_t>> seen;  // id, term
  follower.findings->Watch(
      [&](const StoredFinding& v) {
        absl::MutexLock lock(&mu);
        seen.emplace_back(
            absl::StrCat(v.finding.id(), " ",
                         v1::FindingState_Name(v.finding.state())),
            v.term);
      },
      [](const absl::flat_hash_set<std::string>&) {});
  auto seen_now = [&] {
    absl::MutexLock lock(&mu);
    return seen;
  };
  ASSERT_TRUE(testing::Eventually([&] { return seen_now().size() == 1; }));

  StoredFinding late = Version("f-000001", v1::FINDING_STATE_ACTIVE, 150);
  late.term = 5;
  PutRaw(late);
  StoredFinding late_open = Version("f-000002", v1::FINDING_STATE_ACTIVE, 150);
  late_open.term = 5;
  PutRaw(late_open);
  StoredFinding same_term = Version("f-000003", v1::FINDING_STATE_ACTIVE, 300);
  same_term.term = 9;
  PutRaw(same_term);
  PutRaw(Version("f-000004", v1::FINDING_STATE_ACTIVE, 300));  // term 0
  // The leader's next write: everything before it was delivered or dropped.
  ASSERT_TRUE(leader.findings
                  ->Write({Version("f-000005", v1::FINDING_STATE_ACTIVE, 400)})
                  .ok());
  ASSERT_TRUE(testing::Eventually([&] {
    const auto now = seen_now();
    return !now.empty() && now.back().first == "f-000005 FINDING_STATE_ACTIVE";
  })) << seen_now().size();
  follower.findings->StopWatching();
  EXPECT_THAT(seen_now(),
              ::testing::ElementsAre(
                  std::make_pair("f-000001 FINDING_STATE_RESOLVED", 9u),
                  std::make_pair("f-000003 FINDING_STATE_ACTIVE", 9u),
                  std::make_pair("f-000004 FINDING_STATE_ACTIVE", 0u),
                  std::make_pair("f-000005 FINDING_STATE_ACTIVE", 9u)));
  EXPECT_EQ(follower.findings->stale_versions_dropped(), 2u);
}

// A new leader marks its term before its first write, even with nothing
// to write: a deposed leader's open of a finding the new leader never
// wrote, landing after that mark, is dropped too.
TEST_F(JetStreamFindingsTest, ALateFirstVersionAfterANewTermsMarkIsDropped) {
  Writer leader = Open(9);
  ASSERT_NE(leader.findings, nullptr);
  ASSERT_TRUE(leader.findings->Write({}).ok());  // took over: nothing active
  Writer follower = Open(0);
  ASSERT_NE(follower.findings, nullptr);
  absl::Mutex mu;
  std::vector<std::string> seen;
  follower.findings->Watch(
      [&](const StoredFinding& v) {
        absl::MutexLock lock(&mu);
        seen.push_back(v.finding.id());
      },
      [](const absl::flat_hash_set<std::string>&) {});
  StoredFinding late = Version("f-000001", v1::FINDING_STATE_ACTIVE, 150);
  late.term = 5;
  PutRaw(late);
  ASSERT_TRUE(leader.findings
                  ->Write({Version("f-000002", v1::FINDING_STATE_ACTIVE, 400)})
                  .ok());
  EXPECT_TRUE(testing::Eventually([&] {
    absl::MutexLock lock(&mu);
    return seen == std::vector<std::string>{"f-000002"};
  }));
  follower.findings->StopWatching();
  EXPECT_EQ(follower.findings->stale_versions_dropped(), 1u);
  EXPECT_EQ(follower.findings->undecodable(), 0u) << "the term key";
}

// A leader whose writes fail says its findings are unconfirmed, however
// current its watcher is; once it no longer holds that term (a follower
// now, or leading again in a new one), its watcher alone tells.
TEST_F(JetStreamFindingsTest, AFailedWriteCountsOnlyWhileItsTermLeads) {
  // Requests to the paused server fail fast.
  Writer a = Open(5, absl::Milliseconds(300));
  ASSERT_NE(a.findings, nullptr);
  a.findings->Watch([](const StoredFinding&) {},
                    [](const absl::flat_hash_set<std::string>&) {});
  const auto confirmed = [&] {
    return a.findings->UnconfirmedFor() < absl::Seconds(1);
  };
  ASSERT_TRUE(testing::Eventually(confirmed));

  nats_->Pause(0);
  const absl::Status written =
      a.findings->Write({Version("f-000001", v1::FINDING_STATE_ACTIVE, 1)});
  nats_->Resume(0);
  ASSERT_FALSE(written.ok());
  const absl::Time failed = absl::Now();
  // The watcher catches up again, but the leader's findings are not shared.
  absl::SleepFor(absl::Seconds(2));
  EXPECT_GE(a.findings->UnconfirmedFor(), absl::Now() - failed);

  a.role->set_term(0);  // the lease went to another collector
  EXPECT_TRUE(testing::Eventually(confirmed));
  a.role->set_term(8);  // and came back, in a new term
  EXPECT_TRUE(confirmed());
  // A failure of the new term counts again.
  nats_->Pause(0);
  EXPECT_FALSE(
      a.findings->Write({Version("f-000001", v1::FINDING_STATE_ACTIVE, 2)})
          .ok());
  nats_->Resume(0);
  absl::SleepFor(absl::Seconds(1));
  EXPECT_GE(a.findings->UnconfirmedFor(), absl::Seconds(1));
  // Until a write succeeds.
  EXPECT_TRUE(testing::Eventually([&] {
    return a.findings->Write({Version("f-000001", v1::FINDING_STATE_ACTIVE, 3)})
        .ok();
  }));
  EXPECT_TRUE(testing::Eventually(confirmed));
}

// The (id, term) of every version a collector's watcher delivered.
class SeenVersions {
 public:
  template <typename W>
  void Watch(W& watcher) {
    watcher.findings->Watch(
        [this](const StoredFinding& v) {
          absl::MutexLock lock(&mu_);
          seen_.emplace_back(v.finding.id(), v.term);
        },
        [](const absl::flat_hash_set<std::string>&) {});
  }
  std::vector<std::pair<std::string, uint64_t>> Get() const {
    absl::MutexLock lock(&mu_);
    return seen_;
  }

 private:
  mutable absl::Mutex mu_;
  std::vector<std::pair<std::string, uint64_t>> seen_ ABSL_GUARDED_BY(mu_);
};

// Owners of different analysis shards write side by side, each under its
// shard's term: a third collector takes every version, and neither can
// write the other's shard.
TEST_F(JetStreamFindingsTest, OwnersOfTwoShardsWriteSideBySide) {
  Writer a = Open(0);
  Writer b = Open(0);
  Writer follower = Open(0);
  ASSERT_TRUE(a.findings && b.findings && follower.findings);
  a.role->set_shard_term("jobs.1", 20);
  b.role->set_shard_term("jobs.2", 30);
  SeenVersions seen;
  seen.Watch(follower);
  const auto write = [](Writer& w, const std::string& id,
                        const std::string& source) {
    return w.findings->Write(
        {Version(id, v1::FINDING_STATE_ACTIVE, 100, source)});
  };
  ASSERT_TRUE(write(a, "f-000001", "layout@jobs.1").ok());
  ASSERT_TRUE(write(b, "f-000002", "layout@jobs.2").ok());
  // After the higher term of jobs.2: not late, another shard's.
  ASSERT_TRUE(write(a, "f-000003", "layout@jobs.1").ok());
  ASSERT_TRUE(testing::Eventually([&] { return seen.Get().size() == 3; }));
  EXPECT_THAT(seen.Get(),
              ::testing::ElementsAre(std::make_pair("f-000001", 20u),
                                     std::make_pair("f-000002", 30u),
                                     std::make_pair("f-000003", 20u)));
  EXPECT_EQ(follower.findings->stale_versions_dropped(), 0u);
  // Neither writes a shard it does not own, nor the unsharded analysis.
  EXPECT_TRUE(
      absl::IsFailedPrecondition(write(a, "f-000004", "layout@jobs.2")));
  EXPECT_TRUE(
      absl::IsFailedPrecondition(write(b, "f-000005", "rate_analyzers")));
  EXPECT_EQ(a.findings->fenced_writes() + b.findings->fenced_writes(), 2u);
  EXPECT_FALSE(Stored("f-000004").has_value());
  follower.findings->StopWatching();
}

// A shard moves: its new owner marks its (higher) term; the former owner's
// write is refused, and one of its versions that lands late is dropped by
// every watcher, while another shard's writer of a lower term is not.
TEST_F(JetStreamFindingsTest, AShardsFormerOwnerIsFencedInThatShardAlone) {
  Writer a = Open(0);
  Writer b = Open(0);
  Writer follower = Open(0);
  ASSERT_TRUE(a.findings && b.findings && follower.findings);
  a.role->set_shard_term("jobs.1", 20);
  ASSERT_TRUE(a.findings
                  ->Write({Version("f-000001", v1::FINDING_STATE_ACTIVE, 100,
                                   "layout@jobs.1")})
                  .ok());
  SeenVersions seen;
  seen.Watch(follower);
  // jobs.1 moves to b at term 40 (a lost its lease).
  a.role->set_shard_term("jobs.1", 0);
  b.role->set_shard_term("jobs.1", 40);
  b.findings->MarkShardTerm("jobs.1");
  // a's open of a finding b never wrote, landing after b's mark.
  StoredFinding late =
      Version("f-000002", v1::FINDING_STATE_ACTIVE, 150, "layout@jobs.1");
  late.term = 20;
  PutRaw(late);
  // Another shard's version of a lower term is that shard's business.
  StoredFinding other =
      Version("f-000003", v1::FINDING_STATE_ACTIVE, 150, "layout@jobs.2");
  other.term = 25;
  PutRaw(other);
  ASSERT_TRUE(b.findings
                  ->Write({Version("f-000001", v1::FINDING_STATE_ACTIVE, 200,
                                   "layout@jobs.1")})
                  .ok());
  // b's write comes after everything else in the bucket's order.
  ASSERT_TRUE(testing::Eventually([&] {
    const auto now = seen.Get();
    return !now.empty() && now.back().second == 40u;
  }));
  EXPECT_THAT(seen.Get(),
              ::testing::ElementsAre(std::make_pair("f-000001", 20u),
                                     std::make_pair("f-000003", 25u),
                                     std::make_pair("f-000001", 40u)));
  EXPECT_EQ(follower.findings->stale_versions_dropped(), 1u);
  EXPECT_EQ(follower.findings->undecodable(), 0u) << "the shard's term key";
  // a is refused before it writes, and would be by the key's higher term.
  const absl::Status refused = a.findings->Write(
      {Version("f-000001", v1::FINDING_STATE_RESOLVED, 300, "layout@jobs.1")});
  EXPECT_TRUE(absl::IsFailedPrecondition(refused)) << refused;
  EXPECT_THAT(std::string(refused.message()),
              ::testing::HasSubstr("no longer owns shard jobs.1"));
  EXPECT_EQ(Stored("f-000001")->term, 40u);
  follower.findings->StopWatching();
}

}  // namespace
}  // namespace fabricdiag::cluster
