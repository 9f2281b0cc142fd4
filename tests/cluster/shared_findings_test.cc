// One set of findings for a collector cluster, against a real nats-server:
// three collectors' findings stores joined through ClusterMember (lease,
// shared bucket, mirroring); only the leader's store is fed reports, as
// only the leader's analysis runner runs.
#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "analysis/finding.h"
#include "cluster/cluster_member.h"
#include "cluster/jetstream_findings.h"
#include "cluster/nats_connection.h"
#include "collector/declared/file_declared_state.h"
#include "collector/declared/layout_registry.h"
#include "collector/findings/findings_store.h"
#include "collector/state/findings_log.h"
#include "collector/state/state_store.h"
#include "common/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/eventually.h"
#include "tests/testing/nats_cluster.h"
#include "tests/testing/promtool.h"
#include "tests/testing/temp_dir.h"

namespace fabricdiag::cluster {
namespace {

using collector::FindingsStore;
using collector::WatchEvent;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

analysis::Finding Storm(const std::string& node) {
  analysis::Finding r;
  r.kind = "pfc_storm";
  r.severity = analysis::Severity::kCritical;
  r.job = "moe-42";
  r.node = node;
  r.device = "mlx5_2";
  r.summary = absl::StrCat(node, " mlx5_2 transmits PFC pause");
  r.evidence["tx_pause_fraction"] = 0.9;
  return r;
}

// A collector: its --state_dir, findings store, cluster membership, and a
// watcher of its store (what WatchFindings streams).
struct Collector {
  testing::TempDir dir;
  std::unique_ptr<collector::StateStore> state;
  std::unique_ptr<FindingsStore> findings;
  std::unique_ptr<ClusterMember> member;
  std::unique_ptr<collector::Watcher> watcher;
  std::vector<std::pair<WatchEvent::Type, std::string>> events;

  ~Collector() {
    if (member != nullptr) member->StopMirroring();
  }
  bool Leading() const { return member->role()->Leading(); }
  std::vector<std::string> ActiveIds() const {
    std::vector<std::string> ids;
    for (const v1::Finding& f : findings->Active()) ids.push_back(f.id());
    return ids;
  }
  // Drains the watcher into `events`, waiting (bounded) until it holds at
  // least `n`: a change reaches watchers just after the store's lists.
  void Collect(size_t n) {
    testing::Eventually([&] {
      while (std::optional<WatchEvent> e =
                 watcher->Next(absl::ZeroDuration())) {
        if (e->type == WatchEvent::Type::kClosed) break;
        events.emplace_back(e->type, e->finding.id());
      }
      return events.size() >= n;
    });
  }
};

class SharedFindingsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const absl::Status started = nats_.Start();
    ASSERT_TRUE(started.ok()) << started;
  }

  // `before` runs on the store before the collector joins (what its
  // --state_dir held from before the cluster).
  std::unique_ptr<Collector> Start(
      const std::string& id,
      const std::function<void(FindingsStore&)>& before = nullptr) {
    auto c = std::make_unique<Collector>();
    auto state = collector::StateStore::Open(c->dir.path(), &clock_);
    EXPECT_TRUE(state.ok()) << state.status();
    if (!state.ok()) return nullptr;
    c->state = *std::move(state);
    c->findings = std::make_unique<FindingsStore>(
        c->state.get(), collector::FindingsStoreOptions{});
    EXPECT_TRUE(c->findings->Load().ok());
    if (before) before(*c->findings);
    auto member = ClusterMember::Join({nats_.urls(), id, 1});
    EXPECT_TRUE(member.ok()) << member.status();
    if (!member.ok()) return nullptr;
    c->member = *std::move(member);
    EXPECT_TRUE(
        c->findings->Replicate(*c->member->findings_replication()).ok());
    c->watcher = c->findings->Watch("");
    c->member->MirrorFindings(c->findings.get());
    return c;
  }

  testing::NatsCluster nats_{1};
  SystemClock clock_;
};

int LeaderOf(const std::vector<std::unique_ptr<Collector>>& c) {
  int leader = -1;
  for (size_t i = 0; i < c.size(); ++i) {
    if (c[i] != nullptr && c[i]->Leading()) {
      if (leader >= 0) return -2;  // two: never acceptable
      leader = static_cast<int>(i);
    }
  }
  return leader;
}

TEST_F(SharedFindingsTest, OneSetOfIdsThroughAFailover) {
  std::vector<std::unique_ptr<Collector>> c;
  for (const char* id : {"col-a", "col-b", "col-c"}) c.push_back(Start(id));
  ASSERT_TRUE(c[0] && c[1] && c[2]);
  ASSERT_TRUE(testing::Eventually([&] { return LeaderOf(c) >= 0; }));
  const size_t leader = static_cast<size_t>(LeaderOf(c));

  // The leader's analysis opens a finding: every collector lists it under
  // the leader's id.
  ASSERT_TRUE(
      c[leader]
          ->findings->Update({Storm("gpu-007")}, absl::Now(), "rate_analyzers")
          .ok());
  const std::vector<std::string> ids = c[leader]->ActiveIds();
  ASSERT_EQ(ids, std::vector<std::string>{"f-000001"});
  for (const auto& each : c) {
    EXPECT_TRUE(testing::Eventually([&] { return each->ActiveIds() == ids; }))
        << "a collector does not list " << ids[0];
  }

  // The leader dies without a word; another takes over within the TTL and
  // its analysis, still seeing the condition, keeps the finding as it is.
  c[leader]->member->Disconnect();
  ASSERT_TRUE(testing::Eventually(
      [&] {
        const int l = LeaderOf(c);
        return l >= 0 && static_cast<size_t>(l) != leader;
      },
      absl::Seconds(10), absl::Milliseconds(10)));
  EXPECT_GE(LeaderOf(c), 0);
  const size_t next = static_cast<size_t>(LeaderOf(c));
  const size_t other = 3 - leader - next;
  ASSERT_TRUE(c[next]
                  ->findings
                  ->Update({Storm("gpu-007"), Storm("gpu-009")}, absl::Now(),
                           "rate_analyzers")
                  .ok());
  const std::vector<std::string> after = c[next]->ActiveIds();
  ASSERT_EQ(after.size(), 2u);
  EXPECT_EQ(after[0], ids[0]);  // kept, same id
  // A new finding's id comes from a block the old leader never had.
  EXPECT_EQ(after[1], "f-000101");
  EXPECT_TRUE(
      testing::Eventually([&] { return c[other]->ActiveIds() == after; }));

  // The condition clears: the new leader resolves the same id, everywhere.
  ASSERT_TRUE(
      c[next]
          ->findings->Update({Storm("gpu-009")}, absl::Now(), "rate_analyzers")
          .ok());
  EXPECT_TRUE(testing::Eventually([&] {
    return c[other]->ActiveIds() == std::vector<std::string>{after[1]};
  }));
  // What a follower's watchers saw: opened once, resolved once; no
  // resolve and reopen around the failover.
  c[other]->Collect(3);
  using T = WatchEvent::Type;
  EXPECT_THAT(c[other]->events,
              ::testing::ElementsAre(std::make_pair(T::kOpened, ids[0]),
                                     std::make_pair(T::kOpened, after[1]),
                                     std::make_pair(T::kResolved, ids[0])));
  c[next]->Collect(3);
  EXPECT_THAT(c[next]->events,
              ::testing::ElementsAre(std::make_pair(T::kOpened, ids[0]),
                                     std::make_pair(T::kOpened, after[1]),
                                     std::make_pair(T::kResolved, ids[0])));
}

// A collector that joins with findings of its own from before (other ids,
// conditions the cluster's analysis does not report) follows the cluster:
// those are resolved, and their ids are never handed out again.
TEST_F(SharedFindingsTest, AFollowerDropsFindingsTheClusterNeverHad) {
  std::vector<std::unique_ptr<Collector>> c;
  c.push_back(Start("col-a"));
  ASSERT_TRUE(c[0] != nullptr);
  ASSERT_TRUE(testing::Eventually([&] { return c[0]->Leading(); }));
  c.push_back(Start("col-b", [](FindingsStore& own) {
    ASSERT_TRUE(own.Update({Storm("gpu-old"), Storm("gpu-older")}, absl::Now(),
                           "rate_analyzers")
                    .ok());
  }));
  ASSERT_TRUE(c[1] != nullptr);
  EXPECT_TRUE(testing::Eventually([&] { return c[1]->ActiveIds().empty(); }))
      << "col-b still lists its own findings";
  c[1]->Collect(4);
  using T = WatchEvent::Type;
  EXPECT_THAT(c[1]->events,
              ::testing::ElementsAre(std::make_pair(T::kSnapshot, "f-000001"),
                                     std::make_pair(T::kSnapshot, "f-000002"),
                                     std::make_pair(T::kResolved, "f-000001"),
                                     std::make_pair(T::kResolved, "f-000002")));
  // The leader's first finding takes an id col-b never used.
  ASSERT_TRUE(
      c[0]->findings->Update({Storm("gpu-007")}, absl::Now(), "rate_analyzers")
          .ok());
  EXPECT_EQ(c[0]->ActiveIds(), std::vector<std::string>{"f-000003"});
  EXPECT_TRUE(testing::Eventually([&] {
    return c[1]->ActiveIds() == std::vector<std::string>{"f-000003"};
  }));
}

// The bucket's key `id`, read and written around the collectors: what a
// deposed leader's write does when it lands late.
class RawBucket {
 public:
  explicit RawBucket(const std::string& url) {
    NatsConnection::Options options;
    options.urls = {url};
    absl::StatusOr<std::unique_ptr<NatsConnection>> nats =
        NatsConnection::Connect(options);
    EXPECT_TRUE(nats.ok()) << nats.status();
    if (!nats.ok()) return;
    nats_ = *std::move(nats);
    EXPECT_EQ(js_KeyValue(&kv_, nats_->js(), kFindingsBucket), NATS_OK);
  }
  ~RawBucket() {
    if (kv_ != nullptr) kvStore_Destroy(kv_);
  }
  void Put(const collector::StoredFinding& version) {
    ASSERT_NE(kv_, nullptr);
    const std::string value =
        collector::EncodeFindingsLog(absl::MakeConstSpan(&version, 1), 0);
    uint64_t revision = 0;
    EXPECT_EQ(kvStore_Put(&revision, kv_, version.finding.id().c_str(),
                          value.data(), static_cast<int>(value.size())),
              NATS_OK);
  }
  std::optional<collector::StoredFinding> Get(const std::string& id) {
    kvEntry* entry = nullptr;
    if (kv_ == nullptr || kvStore_Get(&entry, kv_, id.c_str()) != NATS_OK) {
      return std::nullopt;
    }
    collector::FindingsReplay replay = collector::ReplayFindingsLog(
        absl::string_view(static_cast<const char*>(kvEntry_Value(entry)),
                          static_cast<size_t>(kvEntry_ValueLen(entry))));
    kvEntry_Destroy(entry);
    if (replay.loaded.findings.size() != 1) return std::nullopt;
    return std::move(replay.loaded.findings[0]);
  }

 private:
  std::unique_ptr<NatsConnection> nats_;
  kvStore* kv_ = nullptr;
};

// The fencing gap closed: a deposed leader's first version of a finding
// nobody else saw lands after another collector took the lease but before
// it marked its term. The new leader's mark waits for its watcher, so the
// finding is in its store and rewritten under the new term; its next pass,
// which does not see the condition, resolves it on every collector. Never
// left as the old leader wrote it.
TEST_F(SharedFindingsTest, ALateFirstVersionBeforeTheNewMarkIsTakenOver) {
  std::vector<std::unique_ptr<Collector>> c;
  for (const char* id : {"col-a", "col-b", "col-c"}) c.push_back(Start(id));
  ASSERT_TRUE(c[0] && c[1] && c[2]);
  ASSERT_TRUE(testing::Eventually([&] { return LeaderOf(c) >= 0; }));
  const size_t leader = static_cast<size_t>(LeaderOf(c));
  const uint64_t old_term = c[leader]->member->role()->Term();
  c[leader]->member->Disconnect();
  ASSERT_TRUE(testing::Eventually(
      [&] {
        const int l = LeaderOf(c);
        return l >= 0 && static_cast<size_t>(l) != leader;
      },
      absl::Seconds(10), absl::Milliseconds(10)));
  const size_t next = static_cast<size_t>(LeaderOf(c));
  const size_t other = 3 - leader - next;
  const uint64_t new_term = c[next]->member->role()->Term();
  ASSERT_GT(new_term, old_term);

  collector::StoredFinding late;
  late.finding.set_id("f-000050");
  late.finding.set_kind("pfc_storm");
  late.finding.set_job("moe-42");
  late.finding.set_node("gpu-late");
  late.finding.set_device("mlx5_2");
  late.finding.set_state(v1::FINDING_STATE_ACTIVE);
  late.finding.set_first_seen_unix_nanos(absl::ToUnixNanos(absl::Now()));
  late.finding.set_last_seen_unix_nanos(absl::ToUnixNanos(absl::Now()));
  late.source = "rate_analyzers";
  late.term = old_term;
  RawBucket bucket(nats_.url(0));
  bucket.Put(late);
  // The new leader's first pass: its mark, then its active findings.
  absl::StatusOr<size_t> rewritten = c[next]->findings->ShareActive();
  ASSERT_TRUE(rewritten.ok()) << rewritten.status();
  EXPECT_EQ(*rewritten, 1u);
  EXPECT_EQ(c[next]->ActiveIds(), std::vector<std::string>{"f-000050"});
  std::optional<collector::StoredFinding> stored = bucket.Get("f-000050");
  ASSERT_TRUE(stored.has_value());
  EXPECT_EQ(stored->term, new_term);
  EXPECT_TRUE(testing::Eventually([&] {
    return c[other]->ActiveIds() == std::vector<std::string>{"f-000050"};
  }));
  // Its next pass does not see the condition: resolved everywhere.
  ASSERT_TRUE(
      c[next]->findings->Update({}, absl::Now(), "rate_analyzers").ok());
  EXPECT_TRUE(c[next]->ActiveIds().empty());
  EXPECT_TRUE(
      testing::Eventually([&] { return c[other]->ActiveIds().empty(); }));
  stored = bucket.Get("f-000050");
  ASSERT_TRUE(stored.has_value());
  EXPECT_EQ(stored->finding.state(), v1::FINDING_STATE_RESOLVED);
  EXPECT_EQ(stored->term, new_term);
}

// A watcher's replay counts as complete only when it reached the bucket's
// newest revision (a replay cut short right after a restart must not
// resolve what the cluster has), deletions included: a key deleted by hand
// as the bucket's last change does not keep a follower from ever
// finishing its replay.
TEST_F(SharedFindingsTest, AKeyDeletedByHandLastStillEndsTheReplay) {
  std::unique_ptr<Collector> a = Start("col-a");
  ASSERT_TRUE(a != nullptr);
  ASSERT_TRUE(testing::Eventually([&] { return a->Leading(); }));
  NatsConnection::Options options;
  options.urls = {nats_.url(0)};
  absl::StatusOr<std::unique_ptr<NatsConnection>> nats =
      NatsConnection::Connect(options);
  ASSERT_TRUE(nats.ok()) << nats.status();
  kvStore* kv = nullptr;
  ASSERT_EQ(js_KeyValue(&kv, (*nats)->js(), kFindingsBucket), NATS_OK);
  uint64_t revision = 0;
  ASSERT_EQ(kvStore_PutString(&revision, kv, "stray", "x"), NATS_OK);
  ASSERT_EQ(kvStore_Delete(kv, "stray"), NATS_OK);
  kvStore_Destroy(kv);
  std::unique_ptr<Collector> b = Start("col-b", [](FindingsStore& own) {
    ASSERT_TRUE(
        own.Update({Storm("gpu-old")}, absl::Now(), "rate_analyzers").ok());
  });
  ASSERT_TRUE(b != nullptr);
  EXPECT_TRUE(testing::Eventually([&] { return b->ActiveIds().empty(); }))
      << "col-b still lists its own finding";
}

#ifndef FABRICDIAG_SANITIZED  // real time
// /healthz names a collector that runs (it announces itself) but whose
// features do not arrive, and not one that was killed.
TEST_F(SharedFindingsTest, HealthNamesACollectorWhoseFeaturesDoNotArrive) {
  std::unique_ptr<Collector> a = Start("col-a");
  std::unique_ptr<Collector> b = Start("col-b");
  ASSERT_TRUE(a != nullptr && b != nullptr);
  // B publishes nothing: once features would have gone stale (3 s), A
  // names it.
  std::string health;
  EXPECT_TRUE(testing::Eventually(
      [&] {
        health.clear();
        return !a->member->AppendHealth(&health) &&
               absl::StrContains(health, "no features from col-b");
      },
      absl::Seconds(15), absl::Milliseconds(100)))
      << health;
  EXPECT_FALSE(absl::StrContains(health, "no features from col-a"));

  // B publishes a slice every 300 ms, as its analysis passes would.
  std::atomic<bool> stop{false};
  std::thread passes([&] {
    while (!stop.load()) {
      collector::FeatureSlice slice;
      collector::NodeFacts node;
      node.liveness.node = "gpu-b1";
      node.liveness.last_report = absl::Now();
      node.liveness.ever_reported = true;
      slice.nodes.push_back(node);
      slice.window.AddPort("gpu-b1", "mlx5_0");
      slice.window.Finish();
      (void)b->member->features()->Publish(slice, absl::Now());
      absl::SleepFor(absl::Milliseconds(300));
    }
  });
  EXPECT_TRUE(testing::Eventually(
      [&] {
        health.clear();
        return a->member->AppendHealth(&health);
      },
      absl::Seconds(10), absl::Milliseconds(100)))
      << health;
  std::string metrics;
  collector::LayoutRegistry registry(a->member->declared_state(), &clock_);
  a->member->AppendMetrics(registry.watch_stats(), &metrics);
  EXPECT_TRUE(std::regex_search(
      metrics, std::regex("\nfabricdiag_cluster_features_age_seconds\\{"
                          "collector_id=\"col-a\",from=\"col-b\"\\} 0[.]")))
      << metrics;
  if (testing::PromtoolInstalled()) {
    std::string lint;
    EXPECT_TRUE(testing::PromtoolAccepts(metrics, &lint)) << lint;
  }

  // B dies: its announcements and features stop together. A stays healthy
  // while B drops out of the members (6 s).
  stop.store(true);
  passes.join();
  b->member->Disconnect();
  const absl::Time killed = absl::Now();
  while (absl::Now() - killed < absl::Seconds(8)) {
    health.clear();
    EXPECT_TRUE(a->member->AppendHealth(&health)) << health;
    absl::SleepFor(absl::Milliseconds(200));
  }
}
#endif  // FABRICDIAG_SANITIZED

#ifndef FABRICDIAG_SANITIZED  // real time
// /healthz turns 503 when nobody was seen leading the analysis for
// kWithoutLeaderLimit (here the lease bucket's stream is deleted under the
// collector, as if NATS lost it), and healthy again once one leads.
TEST_F(SharedFindingsTest, HealthSaysWhenNobodyLeadsTheAnalysis) {
  std::unique_ptr<Collector> a = Start("col-a");
  ASSERT_TRUE(a != nullptr);
  // Healthy and leading within 15 s; *health: what /healthz said last.
  const auto healthy_and_leading = [&a](std::string* health) {
    return testing::Eventually(
        [&] {
          health->clear();
          return a->member->AppendHealth(health) && a->Leading();
        },
        absl::Seconds(15), absl::Milliseconds(100));
  };
  std::string health;
  ASSERT_TRUE(healthy_and_leading(&health)) << health;
  NatsConnection::Options options;
  options.urls = {nats_.url(0)};
  absl::StatusOr<std::unique_ptr<NatsConnection>> admin =
      NatsConnection::Connect(options);
  ASSERT_TRUE(admin.ok()) << admin.status();
  const absl::Time deleted = absl::Now();
  ASSERT_EQ(js_DeleteStream((*admin)->js(),
                            absl::StrCat("KV_", kLeaderBucket).c_str(), nullptr,
                            nullptr),
            NATS_OK);
  // The lease runs out (3 s), then nobody leads for the limit.
  EXPECT_TRUE(testing::Eventually(
      [&] {
        health.clear();
        return !a->member->AppendHealth(&health) &&
               absl::StrContains(health,
                                 "no collector was seen leading the analysis");
      },
      kWithoutLeaderLimit + absl::Seconds(15), absl::Milliseconds(200)))
      << health;
  EXPECT_GE(absl::Now() - deleted, kWithoutLeaderLimit);
  EXPECT_THAT(health, ::testing::HasSubstr("analysis leader: none now"));

  kvConfig config;
  kvConfig_Init(&config);
  config.Bucket = kLeaderBucket;
  config.History = 1;
  config.StorageType = js_MemoryStorage;
  config.TTL = absl::ToInt64Nanoseconds(absl::Seconds(3));
  absl::StatusOr<kvStore*> kv = BindOrCreateBucket(**admin, config);
  ASSERT_TRUE(kv.ok()) << kv.status();
  kvStore_Destroy(*kv);
  EXPECT_TRUE(healthy_and_leading(&health)) << health;
}
#endif  // FABRICDIAG_SANITIZED

// The first collector of a new cluster brings the layouts and topology of
// its --state_dir along; a later one, or an old --state_dir after a
// deletion, brings nothing back.
TEST_F(SharedFindingsTest, TheFirstCollectorSeedsANewClusterFromItsStateDir) {
  // Two collectors' --state_dir from before the cluster.
  auto before = [this](const testing::TempDir& dir, const std::string& job,
                       bool with_topology) {
    auto state = collector::StateStore::Open(dir.path(), &clock_);
    EXPECT_TRUE(state.ok()) << state.status();
    collector::FileDeclaredState files(state->get());
    v1::Layout layout;
    layout.set_job(job);
    EXPECT_TRUE(
        files.WriteLayout(layout, absl::Now(), 0, absl::InfiniteFuture()).ok());
    if (with_topology) {
      v1::Topology topology;
      topology.add_switches()->set_name("leaf-0");
      EXPECT_TRUE(
          files.WriteTopology(topology, absl::Now(), 0, absl::InfiniteFuture())
              .ok());
    }
    return *std::move(state);
  };
  testing::TempDir dir_a;
  testing::TempDir dir_b;
  std::unique_ptr<collector::StateStore> state_a = before(dir_a, "old-a", true);
  std::unique_ptr<collector::StateStore> state_b =
      before(dir_b, "old-b", false);
  collector::FileDeclaredState files_a(state_a.get());
  collector::FileDeclaredState files_b(state_b.get());

  auto a = ClusterMember::Join({nats_.urls(), "col-a", 1});
  ASSERT_TRUE(a.ok()) << a.status();
  absl::StatusOr<int> seeded = (*a)->SeedDeclaredState(files_a);
  ASSERT_TRUE(seeded.ok()) << seeded.status();
  EXPECT_EQ(*seeded, 2);
  auto jobs = [](collector::DeclaredState* state) {
    std::vector<std::string> out;
    absl::StatusOr<std::vector<collector::DeclaredLayout>> layouts =
        state->ReadLayouts();
    EXPECT_TRUE(layouts.ok()) << layouts.status();
    if (layouts.ok()) {
      for (const auto& l : *layouts) out.push_back(l.layout.job());
    }
    return out;
  };
  EXPECT_THAT(jobs((*a)->declared_state()), ElementsAre("old-a"));
  absl::StatusOr<std::optional<collector::DeclaredTopology>> topology =
      (*a)->declared_state()->ReadTopology();
  ASSERT_TRUE(topology.ok() && topology->has_value());
  EXPECT_EQ((*topology)->topology.switches(0).name(), "leaf-0");

  // The bucket is no longer new: B's old layout stays out.
  auto b = ClusterMember::Join({nats_.urls(), "col-b", 1});
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ((*b)->SeedDeclaredState(files_b).value_or(-1), 0);
  EXPECT_THAT(jobs((*b)->declared_state()), ElementsAre("old-a"));

  // Deleted in the cluster: A's --state_dir does not bring it back.
  ASSERT_TRUE((*a)->declared_state()
                  ->RemoveLayout("old-a", 0, absl::InfiniteFuture())
                  .ok());
  EXPECT_EQ((*a)->SeedDeclaredState(files_a).value_or(-1), 0);
  EXPECT_THAT(jobs((*a)->declared_state()), IsEmpty());
}

}  // namespace
}  // namespace fabricdiag::cluster
