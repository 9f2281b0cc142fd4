#include "collector/findings/findings_store.h"

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "analysis/finding.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "tests/testing/temp_dir.h"

namespace fabricdiag::collector {
namespace {

using ::google::protobuf::util::MessageDifferencer;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::SizeIs;
using Type = WatchEvent::Type;

using ScopedTempDir = ::fabricdiag::testing::TempDir;

analysis::Finding Pfc(const std::string& node, double fraction,
                      const std::string& job = "moe-42") {
  analysis::Finding r;
  r.kind = "pfc_storm";
  r.severity = analysis::Severity::kCritical;
  r.job = job;
  r.node = node;
  r.device = "mlx5_2";
  r.summary =
      absl::StrCat(node, " mlx5_2 has transmitted PFC pause for ",
                   static_cast<int>(fraction * 100), "% of the last 5 s");
  r.evidence["tx_pause_fraction"] = fraction;
  r.evidence["priority"] = 3;
  return r;
}

std::vector<std::string> Ids(const std::vector<v1::Finding>& findings) {
  std::vector<std::string> ids;
  ids.reserve(findings.size());
  for (const auto& f : findings) ids.push_back(f.id());
  return ids;
}

class FindingsStoreTest : public ::testing::Test {
 protected:
  void SetUp() override { Restart(); }

  // Drops the objects without any shutdown step and loads them again from
  // the directory: a kill -9 and restart.
  void Restart(FindingsStoreOptions options = {}) {
    findings_.reset();
    state_.reset();
    absl::StatusOr<std::unique_ptr<StateStore>> state =
        StateStore::Open(tmp_.path() + "/state", &clock_);
    ASSERT_TRUE(state.ok()) << state.status();
    state_ = *std::move(state);
    findings_ = std::make_unique<FindingsStore>(state_.get(), options);
    ASSERT_TRUE(findings_->Load().ok());
  }

  absl::Time Tick() {
    clock_.Advance(absl::Seconds(1));
    return clock_.Now();
  }

  void Report(const std::vector<analysis::Finding>& reports,
              const std::string& source = "pfc") {
    ASSERT_TRUE(findings_->Update(reports, Tick(), source).ok());
  }

  std::vector<v1::Finding> ListAll() {
    FindingsFilter filter;
    filter.all = true;
    return findings_->List(filter);
  }

  ScopedTempDir tmp_;
  FakeClock clock_;
  std::unique_ptr<StateStore> state_;
  std::unique_ptr<FindingsStore> findings_;
};

TEST_F(FindingsStoreTest, OpensUpdatesAndResolves) {
  Report({Pfc("gpu-003", 0.94)});
  absl::Time opened = clock_.Now();
  std::vector<v1::Finding> active = findings_->Active();
  ASSERT_THAT(active, SizeIs(1));
  const v1::Finding& f = active[0];
  EXPECT_EQ(f.id(), "f-000001");
  EXPECT_EQ(f.state(), v1::FINDING_STATE_ACTIVE);
  EXPECT_EQ(f.kind(), "pfc_storm");
  EXPECT_EQ(f.severity(), v1::SEVERITY_CRITICAL);
  EXPECT_THAT(f.nodes(), ElementsAre("gpu-003"));  // defaulted from node
  EXPECT_EQ(f.evidence().at("tx_pause_fraction"), 0.94);
  EXPECT_EQ(f.first_seen_unix_nanos(), absl::ToUnixNanos(opened));
  EXPECT_EQ(f.resolved_unix_nanos(), 0);

  Report({Pfc("gpu-003", 0.5)});
  active = findings_->Active();
  ASSERT_THAT(active, SizeIs(1));
  EXPECT_EQ(active[0].id(), "f-000001");
  EXPECT_EQ(active[0].evidence().at("tx_pause_fraction"), 0.5);
  EXPECT_EQ(active[0].last_seen_unix_nanos(), absl::ToUnixNanos(clock_.Now()));
  EXPECT_EQ(active[0].first_seen_unix_nanos(), absl::ToUnixNanos(opened));

  Report({});
  EXPECT_THAT(findings_->Active(), IsEmpty());
  std::vector<v1::Finding> all = ListAll();
  ASSERT_THAT(all, SizeIs(1));
  EXPECT_EQ(all[0].state(), v1::FINDING_STATE_RESOLVED);
  EXPECT_EQ(all[0].resolved_unix_nanos(), absl::ToUnixNanos(clock_.Now()));

  FindingsCounters counters = findings_->Counters();
  EXPECT_EQ(counters.opened_by_kind["pfc_storm"], 1u);
  EXPECT_EQ(counters.resolved_by_kind["pfc_storm"], 1u);
  EXPECT_EQ(counters.updated, 1u);

  // The same condition coming back is a new finding.
  Report({Pfc("gpu-003", 0.9)});
  EXPECT_THAT(Ids(findings_->Active()), ElementsAre("f-000002"));
}

TEST_F(FindingsStoreTest, SmallChangesDoNotProduceUpdates) {
  Report({Pfc("gpu-003", 0.50)});
  std::unique_ptr<Watcher> watcher = findings_->Watch("");
  ASSERT_EQ(watcher->Next(absl::ZeroDuration())->type, Type::kSnapshot);

  // 0.50 -> 0.53: 6%, and a summary differing only in its number.
  Report({Pfc("gpu-003", 0.53)});
  EXPECT_EQ(watcher->Next(absl::ZeroDuration()), std::nullopt);
  std::vector<v1::Finding> active = findings_->Active();
  EXPECT_EQ(active[0].evidence().at("tx_pause_fraction"), 0.50);
  EXPECT_EQ(active[0].last_seen_unix_nanos(), absl::ToUnixNanos(clock_.Now()));
  EXPECT_EQ(findings_->Counters().updated, 0u);

  // Small steps do not creep past the threshold unnoticed: the comparison
  // is against the last published value.
  // 0.56 is 5.4% from 0.53 but 12% from 0.50, the last published value.
  Report({Pfc("gpu-003", 0.56)});
  std::optional<WatchEvent> ev = watcher->Next(absl::ZeroDuration());
  ASSERT_TRUE(ev.has_value());
  EXPECT_EQ(ev->type, Type::kUpdated);
  EXPECT_EQ(ev->finding.evidence().at("tx_pause_fraction"), 0.56);

  analysis::Finding severity = Pfc("gpu-003", 0.56);
  severity.severity = analysis::Severity::kWarning;
  Report({severity});
  ASSERT_EQ(watcher->Next(absl::ZeroDuration())->type, Type::kUpdated);

  analysis::Finding words = severity;
  words.summary = "something else entirely";
  Report({words});
  ASSERT_EQ(watcher->Next(absl::ZeroDuration())->type, Type::kUpdated);

  analysis::Finding new_key = words;
  new_key.evidence["queue"] = 1;
  Report({new_key});
  ASSERT_EQ(watcher->Next(absl::ZeroDuration())->type, Type::kUpdated);
  EXPECT_EQ(findings_->Counters().updated, 4u);
}

TEST_F(FindingsStoreTest, LabelsAreCarriedAndTheirChangeIsAnUpdate) {
  analysis::Finding owned = Pfc("gpu-003", 0.5);
  owned.labels = {{"team", "ml-infra"}, {"project", "llama"}};
  Report({owned});
  std::unique_ptr<Watcher> watcher = findings_->Watch("");
  ASSERT_EQ(watcher->Next(absl::ZeroDuration())->type, Type::kSnapshot);
  Report({owned});
  EXPECT_EQ(watcher->Next(absl::ZeroDuration()), std::nullopt);

  // The job's layout applied again with another team: alerts must route
  // to the new owner.
  owned.labels["team"] = "research";
  Report({owned});
  std::optional<WatchEvent> ev = watcher->Next(absl::ZeroDuration());
  ASSERT_TRUE(ev.has_value());
  EXPECT_EQ(ev->type, Type::kUpdated);
  EXPECT_EQ(ev->finding.labels().at("team"), "research");
  owned.labels.erase("project");
  Report({owned});
  ASSERT_EQ(watcher->Next(absl::ZeroDuration())->type, Type::kUpdated);

  Restart();
  std::vector<v1::Finding> active = findings_->Active();
  ASSERT_THAT(active, SizeIs(1));
  EXPECT_EQ(active[0].labels_size(), 1);
  EXPECT_EQ(active[0].labels().at("team"), "research");
}

TEST_F(FindingsStoreTest, OnlyTheOwningSourceResolves) {
  Report({Pfc("gpu-003", 0.9)}, "pfc");
  analysis::Finding down;
  down.kind = "agent_down";
  down.node = "gpu-007";
  Report({down}, "agent_liveness");
  Report({}, "other");
  EXPECT_THAT(findings_->Active(), SizeIs(2));
  Report({}, "pfc");
  std::vector<v1::Finding> active = findings_->Active();
  ASSERT_THAT(active, SizeIs(1));
  EXPECT_EQ(active[0].kind(), "agent_down");
}

TEST_F(FindingsStoreTest, ASourceOfSomeNodesResolvesOnlyWithinThem) {
  // Two collectors' port parts: a node moves from col-a to col-b.
  Report({Pfc("gpu-001", 0.9), Pfc("gpu-002", 0.9)}, "ports@col-a");
  const std::vector<v1::Finding> opened = findings_->Active();
  ASSERT_THAT(opened, SizeIs(2));
  // col-a holds only gpu-001 now, and reports nothing: gpu-002's finding
  // is not col-a's to resolve.
  ASSERT_TRUE(
      findings_->UpdateWithin({}, Tick(), "ports@col-a", {"gpu-001"}).ok());
  std::vector<v1::Finding> active = findings_->Active();
  ASSERT_THAT(active, SizeIs(1));
  EXPECT_EQ(active[0].node(), "gpu-002");
  EXPECT_THAT(Ids(findings_->ActiveOf("ports@col-a")),
              ElementsAre(opened[1].id()));
  // col-b takes it over: same id, now col-b's, which resolves it.
  ASSERT_TRUE(findings_
                  ->UpdateWithin({Pfc("gpu-002", 0.9)}, Tick(), "ports@col-b",
                                 {"gpu-002"})
                  .ok());
  EXPECT_THAT(findings_->ActiveOf("ports@col-a"), IsEmpty());
  EXPECT_THAT(Ids(findings_->ActiveOf("ports@col-b")),
              ElementsAre(opened[1].id()));
  ASSERT_TRUE(
      findings_->UpdateWithin({}, Tick(), "ports@col-b", {"gpu-002"}).ok());
  EXPECT_THAT(findings_->Active(), IsEmpty());
}

TEST_F(FindingsStoreTest, DuplicateKeysInOnePassOpenOneFinding) {
  Report({Pfc("gpu-003", 0.9), Pfc("gpu-003", 0.2)});
  std::vector<v1::Finding> active = findings_->Active();
  ASSERT_THAT(active, SizeIs(1));
  EXPECT_EQ(active[0].evidence().at("tx_pause_fraction"), 0.9);
}

TEST_F(FindingsStoreTest, NonFiniteEvidenceIsDropped) {
  analysis::Finding r = Pfc("gpu-003", 0.9);
  r.evidence["bad"] = std::nan("");
  r.evidence["worse"] = INFINITY;
  Report({r});
  std::vector<v1::Finding> active = findings_->Active();
  EXPECT_EQ(active[0].evidence().count("bad"), 0u);
  EXPECT_EQ(active[0].evidence().count("worse"), 0u);
  EXPECT_EQ(active[0].evidence().count("priority"), 1u);
  // Still NaN next pass: not a change.
  Report({r});
  EXPECT_EQ(findings_->Counters().updated, 0u);
}

TEST_F(FindingsStoreTest, FindingsSurviveACrashWithTheirOwners) {
  Report({Pfc("gpu-001", 0.9), Pfc("gpu-002", 0.9)});
  Report({Pfc("gpu-002", 0.2)});  // gpu-001 resolves, gpu-002 updates
  Restart();
  std::vector<v1::Finding> all = ListAll();
  ASSERT_THAT(all, SizeIs(2));
  EXPECT_EQ(all[0].id(), "f-000002");
  EXPECT_EQ(all[0].state(), v1::FINDING_STATE_ACTIVE);
  EXPECT_EQ(all[0].evidence().at("tx_pause_fraction"), 0.2);
  EXPECT_EQ(all[1].state(), v1::FINDING_STATE_RESOLVED);
  // The reloaded finding still belongs to "pfc": its empty pass resolves it.
  Report({}, "pfc");
  EXPECT_THAT(findings_->Active(), IsEmpty());
}

TEST_F(FindingsStoreTest, IdsStayUniqueAcrossRestartsAndCompaction) {
  FindingsStoreOptions tiny;
  tiny.max_resolved = 1;
  tiny.compact_log_bytes = 256;
  Restart(tiny);
  for (int i = 0; i < 5; ++i) {
    Report({Pfc(absl::StrCat("gpu-", i), 0.9)});
    Report({});
  }
  // Only the newest resolved finding is kept, yet the next id follows on.
  EXPECT_THAT(Ids(ListAll()), ElementsAre("f-000005"));
  Restart(tiny);
  EXPECT_THAT(Ids(ListAll()), ElementsAre("f-000005"));
  Report({Pfc("gpu-9", 0.9)});
  EXPECT_THAT(Ids(findings_->Active()), ElementsAre("f-000006"));
}

TEST_F(FindingsStoreTest, CompactionBoundsTheLogAndKeepsTheState) {
  FindingsStoreOptions options;
  options.compact_log_bytes = 4096;
  Restart(options);
  for (int i = 0; i < 200; ++i) {
    Report({Pfc("gpu-001", (i % 2) ? 0.2 : 0.9), Pfc("gpu-002", 0.5)});
  }
  EXPECT_EQ(findings_->Counters().updated, 199u);
  EXPECT_LE(state_->findings_log_bytes(), 2 * 4096u);
  std::vector<v1::Finding> before = ListAll();
  Restart(options);
  std::vector<v1::Finding> after = ListAll();
  ASSERT_THAT(after, SizeIs(before.size()));
  // last_seen alone is persisted at most once a minute.
  MessageDifferencer differ;
  differ.IgnoreField(
      v1::Finding::descriptor()->FindFieldByName("last_seen_unix_nanos"));
  for (size_t i = 0; i < before.size(); ++i) {
    EXPECT_TRUE(differ.Compare(after[i], before[i]))
        << after[i].DebugString() << " vs " << before[i].DebugString();
    EXPECT_LE(
        before[i].last_seen_unix_nanos() - after[i].last_seen_unix_nanos(),
        absl::ToInt64Nanoseconds(absl::Minutes(1)));
  }
}

TEST_F(FindingsStoreTest, LastSeenIsPersistedAtMostOncePerInterval) {
  Report({Pfc("gpu-001", 0.9)});
  uint64_t after_open = state_->findings_log_bytes();
  for (int i = 0; i < 59; ++i) Report({Pfc("gpu-001", 0.9)});
  EXPECT_EQ(state_->findings_log_bytes(), after_open);
  Report({Pfc("gpu-001", 0.9)});  // 60 s after the open
  EXPECT_GT(state_->findings_log_bytes(), after_open);
  absl::Time seen = clock_.Now();
  Restart();
  EXPECT_EQ(findings_->Active()[0].last_seen_unix_nanos(),
            absl::ToUnixNanos(seen));
  EXPECT_EQ(findings_->Counters().updated, 0u);
}

TEST_F(FindingsStoreTest, ResolvedHistoryIsBounded) {
  FindingsStoreOptions options;
  options.max_resolved = 3;
  Restart(options);
  for (int i = 0; i < 5; ++i) {
    Report({Pfc(absl::StrCat("gpu-", i), 0.9)});
    Report({});
  }
  EXPECT_THAT(Ids(ListAll()), ElementsAre("f-000005", "f-000004", "f-000003"));
  Restart(options);
  EXPECT_THAT(Ids(ListAll()), ElementsAre("f-000005", "f-000004", "f-000003"));
}

TEST_F(FindingsStoreTest, ListFiltersAndOrdersNewestFirst) {
  Report({Pfc("gpu-001", 0.9, "job-a")});
  Report({Pfc("gpu-001", 0.9, "job-a"), Pfc("gpu-002", 0.9, "job-b")});
  analysis::Finding other = Pfc("gpu-003", 0.9, "job-a");
  other.kind = "link_errors";
  Report({other}, "links");
  Report({Pfc("gpu-002", 0.9, "job-b")});  // f-000001 resolves

  FindingsFilter filter;  // active only by default
  EXPECT_THAT(Ids(findings_->List(filter)),
              ElementsAre("f-000003", "f-000002"));
  filter.all = true;
  EXPECT_THAT(Ids(findings_->List(filter)),
              ElementsAre("f-000003", "f-000002", "f-000001"));
  filter.job = "job-a";
  EXPECT_THAT(Ids(findings_->List(filter)),
              ElementsAre("f-000003", "f-000001"));
  filter.kind = "pfc_storm";
  EXPECT_THAT(Ids(findings_->List(filter)), ElementsAre("f-000001"));
  FindingsFilter resolved;
  resolved.state = v1::FINDING_STATE_RESOLVED;
  EXPECT_THAT(Ids(findings_->List(resolved)), ElementsAre("f-000001"));
  FindingsFilter limited;
  limited.all = true;
  limited.limit = 2;
  EXPECT_THAT(Ids(findings_->List(limited)),
              ElementsAre("f-000003", "f-000002"));
}

// The filters of `findings --since/--until/--node/--device/--severity`.
TEST_F(FindingsStoreTest, ListFiltersByWindowNodeDeviceAndSeverity) {
  Report({Pfc("gpu-001", 0.9)});  // f-000001, opened at 1 s
  const int64_t first_opened = absl::ToUnixNanos(clock_.Now());
  Report({});  // resolved at 2 s
  const int64_t first_resolved = absl::ToUnixNanos(clock_.Now());
  clock_.Advance(absl::Seconds(100));
  analysis::Finding links = Pfc("gpu-003", 0.9);
  links.kind = "link_errors";
  links.severity = analysis::Severity::kWarning;
  links.device = "mlx5_0";
  links.nodes = {"gpu-003", "gpu-004"};
  Report({Pfc("gpu-002", 0.9), links});  // f-000002, f-000003 at 103 s
  const int64_t later = absl::ToUnixNanos(clock_.Now());

  FindingsFilter filter;
  filter.all = true;
  // A window after the first resolved: only the active ones.
  filter.since_unix_nanos = first_resolved + 1;
  EXPECT_THAT(Ids(findings_->List(filter)),
              ElementsAre("f-000003", "f-000002"));
  // Its resolve time itself is still in the window.
  filter.since_unix_nanos = first_resolved;
  EXPECT_THAT(Ids(findings_->List(filter)),
              ElementsAre("f-000003", "f-000002", "f-000001"));
  // A window that ends before the later ones opened.
  filter.since_unix_nanos = 0;
  filter.until_unix_nanos = later - 1;
  EXPECT_THAT(Ids(findings_->List(filter)), ElementsAre("f-000001"));
  filter.until_unix_nanos = first_opened - 1;
  EXPECT_THAT(findings_->List(filter), IsEmpty());
  filter.until_unix_nanos = 0;

  // --node matches one of the nodes involved, not only the first.
  filter.node = "gpu-004";
  EXPECT_THAT(Ids(findings_->List(filter)), ElementsAre("f-000003"));
  filter.node = "gpu-009";
  EXPECT_THAT(findings_->List(filter), IsEmpty());
  filter.node.clear();
  filter.device = "mlx5_2";
  EXPECT_THAT(Ids(findings_->List(filter)),
              ElementsAre("f-000002", "f-000001"));
  filter.device.clear();
  // --severity is a floor.
  filter.min_severity = v1::SEVERITY_CRITICAL;
  EXPECT_THAT(Ids(findings_->List(filter)),
              ElementsAre("f-000002", "f-000001"));
  filter.min_severity = v1::SEVERITY_WARNING;
  EXPECT_THAT(findings_->List(filter), SizeIs(3));
}

TEST_F(FindingsStoreTest, PagesFollowEachOtherWithoutGapsOrRepeats) {
  for (int i = 0; i < 5; ++i) {
    Report({Pfc(absl::StrCat("gpu-", i), 0.9)});
    Report({});
  }
  FindingsFilter filter;
  filter.all = true;
  filter.limit = 2;
  FindingsPage page = findings_->ListPage(filter);
  EXPECT_THAT(Ids(page.findings), ElementsAre("f-000005", "f-000004"));
  EXPECT_TRUE(page.more);
  filter.below_id = 4;
  page = findings_->ListPage(filter);
  EXPECT_THAT(Ids(page.findings), ElementsAre("f-000003", "f-000002"));
  EXPECT_TRUE(page.more);
  filter.below_id = 2;
  page = findings_->ListPage(filter);
  EXPECT_THAT(Ids(page.findings), ElementsAre("f-000001"));
  EXPECT_FALSE(page.more);
  // Exactly a page's worth left: no empty page after it.
  filter.below_id = 3;
  page = findings_->ListPage(filter);
  EXPECT_THAT(Ids(page.findings), ElementsAre("f-000002", "f-000001"));
  EXPECT_FALSE(page.more);
}

TEST_F(FindingsStoreTest, ResolvedHistoryIsKeptForTheRetention) {
  FindingsStoreOptions options;
  options.resolved_retention = absl::Hours(1);
  Restart(options);
  Report({Pfc("gpu-001", 0.9)});
  Report({});  // f-000001 resolved
  clock_.Advance(absl::Minutes(30));
  Report({Pfc("gpu-002", 0.9)});
  Report({});  // f-000002 resolved 30 min later
  clock_.Advance(absl::Minutes(29));
  Report({});
  EXPECT_THAT(Ids(ListAll()), ElementsAre("f-000002", "f-000001"));
  clock_.Advance(absl::Minutes(2));  // f-000001 resolved over an hour ago
  Report({});
  EXPECT_THAT(Ids(ListAll()), ElementsAre("f-000002"));
  Restart(options);
  Report({});
  EXPECT_THAT(Ids(ListAll()), ElementsAre("f-000002"));
}

TEST_F(FindingsStoreTest, ResolvedHistoryIsBoundedInBytes) {
  Report({Pfc("gpu-001", 0.9)});
  Report({});
  const uint64_t one = ListAll()[0].ByteSizeLong();
  FindingsStoreOptions options;
  // Room for two findings of the same size (gpu-N names are as long).
  options.max_resolved_bytes = 2 * one + one / 2;
  Restart(options);
  for (int i = 2; i <= 5; ++i) {
    Report({Pfc(absl::StrCat("gpu-00", i), 0.9)});
    Report({});
  }
  EXPECT_THAT(Ids(ListAll()), ElementsAre("f-000005", "f-000004"));
}

TEST_F(FindingsStoreTest, JobsAreThoseOfActiveAndResolvedFindings) {
  Report({Pfc("gpu-001", 0.9, "job-b")});
  Report({Pfc("gpu-001", 0.9, "job-a"), Pfc("gpu-002", 0.9, "")});
  EXPECT_THAT(findings_->Jobs(), ElementsAre("job-a", "job-b"));
}

TEST_F(FindingsStoreTest, WatcherGetsSnapshotThenEveryChange) {
  Report({Pfc("gpu-001", 0.9), Pfc("gpu-002", 0.9, "job-b")});
  std::unique_ptr<Watcher> all = findings_->Watch("");
  std::unique_ptr<Watcher> job_a = findings_->Watch("moe-42");
  EXPECT_EQ(findings_->Counters().watchers, 2u);

  std::optional<WatchEvent> ev = all->Next(absl::ZeroDuration());
  ASSERT_TRUE(ev.has_value());
  EXPECT_EQ(ev->type, Type::kSnapshot);
  EXPECT_EQ(ev->finding.id(), "f-000001");
  EXPECT_EQ(all->Next(absl::ZeroDuration())->finding.id(), "f-000002");
  EXPECT_EQ(all->Next(absl::ZeroDuration()), std::nullopt);

  Report({Pfc("gpu-001", 0.2), Pfc("gpu-003", 0.9)});  // f1 up, f3, f2 gone
  std::vector<std::pair<Type, std::string>> seen;
  while (auto e = all->Next(absl::ZeroDuration())) {
    seen.emplace_back(e->type, e->finding.id());
  }
  EXPECT_THAT(seen, ElementsAre(std::make_pair(Type::kUpdated, "f-000001"),
                                std::make_pair(Type::kOpened, "f-000003"),
                                std::make_pair(Type::kResolved, "f-000002")));

  seen.clear();
  while (auto e = job_a->Next(absl::ZeroDuration())) {
    seen.emplace_back(e->type, e->finding.id());
  }
  EXPECT_THAT(seen, ElementsAre(std::make_pair(Type::kSnapshot, "f-000001"),
                                std::make_pair(Type::kUpdated, "f-000001"),
                                std::make_pair(Type::kOpened, "f-000003")));

  job_a.reset();
  EXPECT_EQ(findings_->Counters().watchers, 1u);
}

TEST_F(FindingsStoreTest, SlowWatcherOverflowsAndIsClosedWithoutBlocking) {
  FindingsStoreOptions options;
  options.watcher_queue = 4;
  Restart(options);
  Report({Pfc("gpu-000", 0.9)});
  std::unique_ptr<Watcher> slow = findings_->Watch("");
  std::unique_ptr<Watcher> fast = findings_->Watch("");
  // The slow watcher never reads; every Update below must still return.
  int fast_events = 0;
  for (int i = 1; i <= 10; ++i) {
    std::vector<analysis::Finding> reports = {Pfc("gpu-000", 0.9)};
    reports.push_back(Pfc(absl::StrCat("gpu-", i), 0.9));
    Report(reports);
    while (auto e = fast->Next(absl::ZeroDuration())) ++fast_events;
  }
  // fast: 1 snapshot + 10 opened + 9 resolved.
  EXPECT_EQ(fast_events, 20);
  std::optional<WatchEvent> ev = slow->Next(absl::ZeroDuration());
  ASSERT_TRUE(ev.has_value());
  EXPECT_EQ(ev->type, Type::kOverflow);
  ev = slow->Next(absl::Seconds(10));  // returns at once: closed
  ASSERT_TRUE(ev.has_value());
  EXPECT_EQ(ev->type, Type::kClosed);
  FindingsCounters counters = findings_->Counters();
  EXPECT_EQ(counters.watcher_overflows, 1u);
  EXPECT_EQ(counters.watchers, 1u);
}

TEST_F(FindingsStoreTest, LargeSnapshotDoesNotCountAsOverflow) {
  FindingsStoreOptions options;
  options.watcher_queue = 2;
  Restart(options);
  std::vector<analysis::Finding> many;
  many.reserve(10);
  for (int i = 0; i < 10; ++i) many.push_back(Pfc(absl::StrCat("g", i), 0.9));
  Report(many);
  std::unique_ptr<Watcher> watcher = findings_->Watch("");
  int snapshots = 0;
  while (auto e = watcher->Next(absl::ZeroDuration())) {
    ASSERT_EQ(e->type, Type::kSnapshot);
    ++snapshots;
  }
  EXPECT_EQ(snapshots, 10);
}

TEST_F(FindingsStoreTest, ClosingAWatcherWakesItAndDestroyingTheStoreToo) {
  std::unique_ptr<Watcher> watcher = findings_->Watch("");
  watcher->Close();
  EXPECT_EQ(watcher->Next(absl::Seconds(10))->type, Type::kClosed);
  std::unique_ptr<Watcher> orphan = findings_->Watch("");
  findings_.reset();
  EXPECT_EQ(orphan->Next(absl::Seconds(10))->type, Type::kClosed);
}

TEST_F(FindingsStoreTest, TornLastLogRecordIsDroppedOnLoad) {
  Report({Pfc("gpu-001", 0.9)});
  Report({Pfc("gpu-001", 0.9), Pfc("gpu-002", 0.9)});
  findings_.reset();
  state_.reset();
  std::string log = tmp_.path() + "/state/findings.log";
  std::filesystem::resize_file(log, std::filesystem::file_size(log) - 3);
  Restart();
  EXPECT_THAT(Ids(ListAll()), ElementsAre("f-000001"));
  // The lost record's id was never acknowledged (Update had not returned and
  // events go out only after the write), so handing it out again is safe.
  Report({Pfc("gpu-003", 0.9)}, "other");
  std::vector<v1::Finding> active = findings_->Active();
  EXPECT_THAT(Ids(active), ElementsAre("f-000001", "f-000002"));
  EXPECT_EQ(active[1].node(), "gpu-003");
}

}  // namespace
}  // namespace fabricdiag::collector

namespace fabricdiag::collector {
namespace {

// The cluster's shared findings as one collector's store sees them: ids
// from a counter, versions collected.
class FakeReplication final : public FindingsReplication {
 public:
  std::string Describe() const override { return "fake"; }
  absl::StatusOr<uint64_t> ReserveIds(uint64_t count,
                                      uint64_t at_least) override {
    next = std::max(next, at_least);
    const uint64_t first = next;
    next += count;
    return first;
  }
  absl::Status Write(absl::Span<const StoredFinding> written) override {
    versions.insert(versions.end(), written.begin(), written.end());
    return absl::OkStatus();
  }
  void Watch(std::function<void(const StoredFinding&)> /*on_version*/,
             std::function<void(const absl::flat_hash_set<std::string>&)>
             /*on_replayed*/) override {}
  void StopWatching() override {}
  void MarkTerm() override { marks.emplace_back(); }
  void MarkShardTerm(absl::string_view shard) override {
    marks.emplace_back(shard);
  }

  uint64_t next = 1;
  std::vector<StoredFinding> versions;
  std::vector<std::string> marks;  // "" for the analysis lease's term
};

std::vector<std::pair<WatchEvent::Type, std::string>> Drain(Watcher& w) {
  std::vector<std::pair<WatchEvent::Type, std::string>> out;
  while (std::optional<WatchEvent> e = w.Next(absl::ZeroDuration())) {
    if (e->type == WatchEvent::Type::kClosed) break;
    out.emplace_back(e->type, e->finding.id());
  }
  return out;
}

// A follower's store (findings_) applies what a leader's store shared.
class ReplicatedFindingsTest : public FindingsStoreTest {
 protected:
  void SetUp() override {
    FindingsStoreTest::SetUp();
    auto state = StateStore::Open(tmp_.path() + "/leader", &clock_);
    ASSERT_TRUE(state.ok()) << state.status();
    leader_state_ = *std::move(state);
    leader_ = std::make_unique<FindingsStore>(leader_state_.get(),
                                              FindingsStoreOptions{});
    ASSERT_TRUE(leader_->Load().ok());
    ASSERT_TRUE(leader_->Replicate(shared_).ok());
    watcher_ = findings_->Watch("");
  }

  // The leader's pass, and what it shared applied on the follower.
  void LeaderReports(const std::vector<analysis::Finding>& reports) {
    const size_t before = shared_.versions.size();
    ASSERT_TRUE(leader_->Update(reports, Tick(), "pfc").ok());
    for (size_t i = before; i < shared_.versions.size(); ++i) {
      ASSERT_TRUE(findings_->ApplyReplicated(shared_.versions[i]).ok());
    }
  }

  FakeReplication shared_;
  std::unique_ptr<StateStore> leader_state_;
  std::unique_ptr<FindingsStore> leader_;
  std::unique_ptr<Watcher> watcher_;
};

TEST_F(ReplicatedFindingsTest, AFollowerHoldsTheLeadersFindingsAndEvents) {
  using T = WatchEvent::Type;
  LeaderReports({Pfc("gpu-003", 0.94)});
  EXPECT_THAT(Ids(findings_->Active()), ElementsAre("f-000001"));
  // Seen again a minute later: last_seen moves, nobody is told.
  clock_.Advance(absl::Minutes(2));
  LeaderReports({Pfc("gpu-003", 0.94)});
  EXPECT_EQ(findings_->Active()[0].last_seen_unix_nanos(),
            absl::ToUnixNanos(clock_.Now()));
  LeaderReports({Pfc("gpu-003", 0.5)});  // material: an update
  LeaderReports({});
  EXPECT_THAT(findings_->Active(), IsEmpty());
  LeaderReports({Pfc("gpu-003", 0.9)});  // back: a new finding
  EXPECT_THAT(Ids(findings_->Active()), ElementsAre("f-000002"));
  EXPECT_THAT(Drain(*watcher_),
              ElementsAre(std::make_pair(T::kOpened, "f-000001"),
                          std::make_pair(T::kUpdated, "f-000001"),
                          std::make_pair(T::kResolved, "f-000001"),
                          std::make_pair(T::kOpened, "f-000002")));
  // Versions of f-000001 delivered again (a watcher's replay) change
  // nothing: the condition's current finding is f-000002.
  for (const StoredFinding& v : shared_.versions) {
    if (v.finding.id() == "f-000001") {
      ASSERT_TRUE(findings_->ApplyReplicated(v).ok());
    }
  }
  EXPECT_THAT(Ids(findings_->Active()), ElementsAre("f-000002"));
  EXPECT_THAT(Drain(*watcher_), IsEmpty());
  // The follower's view survives its restart, and its ids are the
  // leader's.
  Restart();
  EXPECT_THAT(Ids(findings_->Active()), ElementsAre("f-000002"));
}

// A new analysis leader writes every active finding again (under its term,
// which the replication stamps): in ascending id, without an event.
TEST_F(ReplicatedFindingsTest, ANewLeaderSharesTheActiveFindingsAgain) {
  LeaderReports({Pfc("gpu-003", 0.94), Pfc("gpu-001", 0.9)});
  LeaderReports({Pfc("gpu-001", 0.9)});  // gpu-003 resolved
  LeaderReports({Pfc("gpu-001", 0.9), Pfc("gpu-002", 0.9)});
  (void)Drain(*watcher_);
  // The follower takes over: it shares what it mirrored.
  ASSERT_TRUE(findings_->Replicate(shared_).ok());
  const size_t before = shared_.versions.size();
  absl::StatusOr<size_t> shared = findings_->ShareActive();
  ASSERT_TRUE(shared.ok()) << shared.status();
  EXPECT_EQ(*shared, 2u);
  std::vector<std::string> written;
  for (size_t i = before; i < shared_.versions.size(); ++i) {
    written.push_back(shared_.versions[i].finding.id());
    EXPECT_EQ(shared_.versions[i].finding.state(), v1::FINDING_STATE_ACTIVE);
    EXPECT_EQ(shared_.versions[i].source, "pfc");
  }
  EXPECT_THAT(written, ElementsAre("f-000002", "f-000003"));
  EXPECT_THAT(Drain(*watcher_), IsEmpty());
}

// A shard's new owner rewrites that shard's findings under its term, and
// a new leader those of the unsharded analysis alone.
TEST_F(ReplicatedFindingsTest, EachTermRewritesItsOwnSourcesFindings) {
  ASSERT_TRUE(
      leader_->Update({Pfc("gpu-001", 0.9)}, Tick(), "rate@jobs.3").ok());
  ASSERT_TRUE(
      leader_->Update({Pfc("gpu-002", 0.9)}, Tick(), "rate@switches.1").ok());
  ASSERT_TRUE(leader_->Update({Pfc("gpu-003", 0.9)}, Tick(), "pfc").ok());
  auto written_since = [this](size_t before) {
    std::vector<std::string> out;
    for (size_t i = before; i < shared_.versions.size(); ++i) {
      out.push_back(shared_.versions[i].finding.node() + " " +
                    shared_.versions[i].source);
    }
    return out;
  };
  size_t before = shared_.versions.size();
  absl::StatusOr<size_t> shared = leader_->ShareActiveOf("jobs.3");
  ASSERT_TRUE(shared.ok()) << shared.status();
  EXPECT_EQ(*shared, 1u);
  EXPECT_THAT(written_since(before), ElementsAre("gpu-001 rate@jobs.3"));
  before = shared_.versions.size();
  shared = leader_->ShareActive();
  ASSERT_TRUE(shared.ok()) << shared.status();
  EXPECT_THAT(written_since(before), ElementsAre("gpu-003 pfc"));
  EXPECT_THAT(shared_.marks, ElementsAre("jobs.3", ""));
}

TEST_F(ReplicatedFindingsTest, AStoreThatSharesNothingRewritesNothing) {
  Report({Pfc("gpu-009", 0.9)});
  absl::StatusOr<size_t> shared = findings_->ShareActive();
  ASSERT_TRUE(shared.ok());
  EXPECT_EQ(*shared, 0u);
}

TEST_F(ReplicatedFindingsTest, FindingsTheClusterDoesNotHoldAreResolved) {
  Report({Pfc("gpu-009", 0.9)});  // the follower's own, from before
  ASSERT_TRUE(findings_->Replicate(shared_).ok());  // it joins the cluster
  LeaderReports({Pfc("gpu-003", 0.94)});
  ASSERT_THAT(findings_->Active(), SizeIs(2));
  const std::string leaders = shared_.versions.back().finding.id();
  ASSERT_TRUE(findings_->ResolveUnshared({"f-000001", leaders}, Tick()).ok());
  // Its own f-000001, made before it joined, is not the cluster's even
  // when the shared set names that id: only the shared one stays.
  std::vector<v1::Finding> active = findings_->Active();
  ASSERT_THAT(active, SizeIs(1));
  EXPECT_EQ(active[0].node(), "gpu-003");
}

}  // namespace
}  // namespace fabricdiag::collector
