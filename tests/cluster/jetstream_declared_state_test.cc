// The cluster backend of the declared state against real nats-server
// processes on loopback: a 3-server JetStream cluster shared by the tests of
// a suite (each test uses its own bucket), and one of its own for the test
// that kills a server.
#include "cluster/jetstream_declared_state.h"

#include <signal.h>

#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cluster/nats_subscription.h"
#include "collector/declared/layout_registry.h"
#include "collector/declared/write_deadline.h"
#include "collector/state/object_store.h"
#include "common/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cluster/single_nats_test.h"
#include "tests/testing/eventually.h"
#include "tests/testing/nats_cluster.h"
#include "tests/testing/stall_proxy.h"

namespace fabricdiag::cluster {
namespace {

using collector::LayoutRegistry;
using ::testing::HasSubstr;
using ::testing::SizeIs;

v1::Layout DenseLayout(const std::string& job, int hosts) {
  v1::Layout layout;
  layout.set_job(job);
  layout.set_gpus_per_node(8);
  layout.mutable_parallelism()->set_tp(8);
  layout.mutable_parallelism()->set_pp(1);
  layout.mutable_parallelism()->set_dp(hosts);
  for (int h = 0; h < hosts; ++h) {
    layout.add_hosts(absl::StrFormat("gpu-%03d", h));
  }
  return layout;
}

v1::Topology OneLeaf(const std::string& name) {
  v1::Topology topology;
  v1::Switch* sw = topology.add_switches();
  sw->set_name(name);
  sw->add_uplinks("swp49");
  return topology;
}

TEST(NatsUrlsTest, ParsesAListAndNamesTheBadEntry) {
  absl::StatusOr<std::vector<std::string>> urls =
      ParseNatsUrls("nats://a:4222, nats://b:4222");
  ASSERT_TRUE(urls.ok()) << urls.status();
  EXPECT_THAT(*urls, ::testing::ElementsAre("nats://a:4222", "nats://b:4222"));
  for (const char* bad :
       {"", "a:4222", "nats://a", "nats://a:0", "nats://a:70000",
        "nats://a:1,,nats://b:2", "nats://a:1,nats://a:1"}) {
    absl::StatusOr<std::vector<std::string>> parsed = ParseNatsUrls(bad);
    EXPECT_TRUE(absl::IsInvalidArgument(parsed.status())) << bad;
    EXPECT_THAT(parsed.status().message(), HasSubstr("--nats")) << bad;
  }
}

TEST(NatsUrlsTest, LayoutKeysRoundTripEveryJobName) {
  for (const char* job : {"train", "a.b", "a..b", "x.", "llama-70b_v2.1"}) {
    EXPECT_EQ(JobOfKey(LayoutKey(job)), std::optional<std::string>(job));
  }
  EXPECT_EQ(LayoutKey("a..b"), "layout.a=2E=2Eb");
  EXPECT_EQ(JobOfKey("topology"), std::nullopt);
  EXPECT_EQ(JobOfKey("layout."), std::nullopt);
}

TEST(NatsConnectionTest, NoServerIsAClearErrorInTime) {
  NatsConnection::Options options;
  options.urls = {
      absl::StrCat("nats://127.0.0.1:", testing::FreeLoopbackPort())};
  options.startup_timeout = absl::Seconds(1);
  const absl::Time start = absl::Now();
  absl::StatusOr<std::unique_ptr<NatsConnection>> nats =
      NatsConnection::Connect(options);
  EXPECT_TRUE(absl::IsUnavailable(nats.status())) << nats.status();
  EXPECT_THAT(nats.status().message(), HasSubstr(options.urls[0]));
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
}

// A NATS server started without JetStream (no -js) never serves a bucket:
// named at once with the fix when it is the only server listed; with others
// listed (a cluster could be partly enabled), waited for with the same hint
// until the startup deadline.
TEST(NatsConnectionTest, AServerWithoutJetStreamIsNamedWithTheFix) {
  const int port = testing::FreeLoopbackPort();
  absl::StatusOr<std::unique_ptr<testing::Subprocess>> server =
      testing::StartServerWithoutJetStream(port);
  ASSERT_TRUE(server.ok()) << server.status();
  const std::string url = absl::StrCat("nats://127.0.0.1:", port);
  NatsConnection::Options options;
  options.urls = {url};
  options.startup_timeout = absl::Seconds(60);
  absl::Time start = absl::Now();
  absl::StatusOr<std::unique_ptr<NatsConnection>> nats =
      NatsConnection::Connect(options);
  const absl::Duration alone = absl::Now() - start;
  EXPECT_TRUE(absl::IsFailedPrecondition(nats.status())) << nats.status();
  EXPECT_THAT(
      nats.status().message(),
      ::testing::AllOf(HasSubstr(url), HasSubstr("does not run JetStream"),
                       HasSubstr("-js"), HasSubstr("jetstream {}")));
  EXPECT_LT(alone, absl::Seconds(5));

  options.urls = {
      url, absl::StrCat("nats://127.0.0.1:", testing::FreeLoopbackPort())};
  options.startup_timeout = absl::Seconds(2);
  start = absl::Now();
  nats = NatsConnection::Connect(options);
  const absl::Duration listed_with_others = absl::Now() - start;
  EXPECT_TRUE(absl::IsUnavailable(nats.status())) << nats.status();
  EXPECT_THAT(
      nats.status().message(),
      ::testing::AllOf(HasSubstr("does not run JetStream"), HasSubstr("-js"),
                       HasSubstr("--nats_startup_timeout")));
  EXPECT_GE(listed_with_others, absl::Milliseconds(1500));
  EXPECT_LT(listed_with_others, absl::Seconds(8));
  std::cout << "no JetStream: named after " << alone << " alone, after "
            << listed_with_others
            << " with another server listed (--nats_startup_timeout=2s)\n";
  (*server)->Signal(SIGKILL);
  EXPECT_TRUE((*server)->Wait(absl::Seconds(10)).has_value());
}

// The declared state on one nats-server, directly or through a proxy that
// can hold what passes.
class OneNatsServerTest : public SingleNatsServerTest {
 protected:
  // A connection through a StallProxy in front of the server (proxy_),
  // whose requests wait `request_timeout` for their answer.
  std::unique_ptr<NatsConnection> ConnectThroughProxy(
      absl::Duration request_timeout = absl::Seconds(3)) {
    absl::StatusOr<std::unique_ptr<testing::StallProxy>> proxy =
        testing::StallProxy::Start(nats_->port(0));
    EXPECT_TRUE(proxy.ok()) << proxy.status();
    if (!proxy.ok()) return nullptr;
    proxy_ = *std::move(proxy);
    NatsConnection::Options options;
    options.urls = {absl::StrCat("nats://127.0.0.1:", proxy_->port())};
    options.request_timeout = request_timeout;
    absl::StatusOr<std::unique_ptr<NatsConnection>> nats =
        NatsConnection::Connect(options);
    EXPECT_TRUE(nats.ok()) << nats.status();
    return nats.ok() ? *std::move(nats) : nullptr;
  }

  // The test's declared state (one replica) over `nats`; null (and a test
  // failure) when it does not open.
  static std::unique_ptr<JetStreamDeclaredState> OpenState(
      NatsConnection* nats) {
    JetStreamDeclaredState::Options options;
    options.replicas = 1;
    options.bucket = Bucket();
    absl::StatusOr<std::unique_ptr<JetStreamDeclaredState>> state =
        JetStreamDeclaredState::Open(nats, options);
    EXPECT_TRUE(state.ok()) << state.status();
    return state.ok() ? *std::move(state) : nullptr;
  }
  static std::string Bucket() { return absl::StrCat("t_", TestName()); }
  // How a client's publish to a key of the test's bucket begins.
  static std::string KeyWrites() {
    return absl::StrCat("PUB ", "$KV.", Bucket(), ".");
  }

  std::unique_ptr<testing::StallProxy> proxy_;
};

// A single server never holds three replicas: the collector says which flag
// to change at once instead of retrying for its whole deadline.
TEST_F(OneNatsServerTest, ReplicasOnASingleServerNameTheFlagAtOnce) {
  std::unique_ptr<NatsConnection> nats = Connect();
  ASSERT_NE(nats, nullptr);
  JetStreamDeclaredState::Options state_options;
  state_options.replicas = 3;
  state_options.bucket = "replicas_single";
  const absl::Time start = absl::Now();
  absl::StatusOr<std::unique_ptr<JetStreamDeclaredState>> state =
      JetStreamDeclaredState::Open(nats.get(), state_options);
  EXPECT_TRUE(absl::IsFailedPrecondition(state.status())) << state.status();
  EXPECT_THAT(state.status().message(), HasSubstr("--nats_replicas=1"));
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
  state_options.replicas = 1;
  state = JetStreamDeclaredState::Open(nats.get(), state_options);
  EXPECT_TRUE(state.ok()) << state.status();
}

// Right after the servers restarted, a watcher's lookup of the stream behind
// its subject finds none until the meta leader knows the streams again: a
// retryable error, not an internal one (made here by deleting the stream).
TEST_F(OneNatsServerTest, NoStreamForASubjectIsUnavailable) {
  std::unique_ptr<NatsConnection> nats = Connect();
  ASSERT_NE(nats, nullptr);
  kvConfig config;
  kvConfig_Init(&config);
  config.Bucket = "gone";
  absl::StatusOr<kvStore*> kv = BindOrCreateBucket(*nats, config);
  ASSERT_TRUE(kv.ok()) << kv.status();
  ASSERT_EQ(js_DeleteStream(nats->js(), "KV_gone", nullptr, nullptr), NATS_OK);
  kvWatchOptions watch_options;
  kvWatchOptions_Init(&watch_options);
  kvWatcher* watcher = nullptr;
  const natsStatus s = kvStore_WatchAll(&watcher, *kv, &watch_options);
  const absl::Status error = NatsError(s, "watching");
  EXPECT_TRUE(absl::IsUnavailable(error)) << error;
  EXPECT_THAT(error.message(), HasSubstr("no stream matches subject"));
  EndKvWatcher(nats->nc(), watcher);
  kvStore_Destroy(*kv);
}

// A write whose request reached the servers but whose answer was lost (the
// client's wait timed out) landed: the collector finds it in the bucket on
// its next attempt and reports it done, written once, not a conflict with
// itself and not a failure. The same for a create, a replacement and a
// removal.
TEST_F(OneNatsServerTest, AWriteWhoseAnswerIsLostIsReportedDoneAndWrittenOnce) {
  const absl::Duration request_timeout = absl::Milliseconds(400);
  std::unique_ptr<NatsConnection> nats = ConnectThroughProxy(request_timeout);
  ASSERT_NE(nats, nullptr);
  std::unique_ptr<JetStreamDeclaredState> state = OpenState(nats.get());
  ASSERT_NE(state, nullptr);
  SystemClock clock;
  LayoutRegistry registry(state.get(), &clock);
  ASSERT_TRUE(registry.Load().ok());
  registry.StartWatching();

  // The answer to the request that writes the key is held for `hold`.
  const auto with_answer_lost = [&](absl::Duration hold, const auto& write) {
    proxy_->HoldRepliesFrom(KeyWrites());
    std::thread release([&] {
      testing::Eventually([&] { return proxy_->holding(); }, absl::Seconds(20),
                          absl::Milliseconds(5));
      absl::SleepFor(hold);
      proxy_->Release();
    });
    const absl::Time start = absl::Now();
    auto result = write();
    const absl::Duration took = absl::Now() - start;
    release.join();
    // The write reached the server while its answer was held, and the wait
    // timed out: the path under test, not a plain write.
    EXPECT_GT(proxy_->held_bytes(), 0u);
    EXPECT_GE(took, request_timeout);
    return result;
  };
  // Every write to the bucket, whoever made it: the stream's last sequence.
  const auto writes = [&] {
    absl::StatusOr<uint64_t> last = BucketLastRevision(nats->js(), Bucket());
    EXPECT_TRUE(last.ok()) << last.status();
    return last.value_or(0);
  };

  // 0.6 s: the attempt's wait (0.4 s) times out, and the lookup right after
  // it finds the write. 1 s: that lookup times out too, and the next
  // attempt (after a pause of 0.25 s) finds it.
  for (const absl::Duration hold :
       {absl::Milliseconds(600), absl::Seconds(1)}) {
    SCOPED_TRACE(absl::StrCat("answers held for ", absl::FormatDuration(hold)));
    const uint64_t before = writes();
    const std::string job = absl::StrCat("job", before);
    absl::StatusOr<collector::ApplyResult> created = with_answer_lost(
        hold, [&] { return registry.Apply(DenseLayout(job, 2)); });
    ASSERT_TRUE(created.ok()) << created.status();
    EXPECT_EQ(created->entry->revision, before + 1);
    EXPECT_EQ(writes(), before + 1);

    absl::StatusOr<collector::ApplyResult> replaced = with_answer_lost(
        hold, [&] { return registry.Apply(DenseLayout(job, 3)); });
    ASSERT_TRUE(replaced.ok()) << replaced.status();
    EXPECT_EQ(replaced->entry->revision, before + 2);
    EXPECT_EQ(writes(), before + 2);
    absl::StatusOr<std::shared_ptr<const collector::LayoutEntry>> served =
        registry.Get(job);
    ASSERT_TRUE(served.ok()) << served.status();
    EXPECT_EQ((*served)->model.WorldSize(), 24u);

    // The backend itself, not through the registry (which forgets a job
    // the bucket no longer has, whatever the backend answers).
    const absl::Status removed = with_answer_lost(hold, [&] {
      return state->RemoveLayout(job, replaced->entry->revision,
                                 absl::InfiniteFuture());
    });
    EXPECT_TRUE(removed.ok()) << removed;
    EXPECT_EQ(writes(), before + 3);
    EXPECT_TRUE(
        testing::Eventually([&] { return registry.NumLayouts() == 0; }));
  }

  EXPECT_EQ(state->write_conflicts(), 0u);
  EXPECT_TRUE(state->last_write_status().ok()) << state->last_write_status();
}

// A removal is compare-and-set on the servers too, not only against what
// it read: a replacement through another collector that lands between the
// removal's read and its delete (held on its way here) is not removed.
TEST_F(OneNatsServerTest, ARemovalRacingAReplacementRemovesNothing) {
  std::unique_ptr<NatsConnection> through_proxy = ConnectThroughProxy();
  ASSERT_NE(through_proxy, nullptr);
  std::unique_ptr<NatsConnection> direct = Connect();
  ASSERT_NE(direct, nullptr);
  std::unique_ptr<JetStreamDeclaredState> a = OpenState(through_proxy.get());
  std::unique_ptr<JetStreamDeclaredState> b = OpenState(direct.get());
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  absl::StatusOr<uint64_t> first = a->WriteLayout(
      DenseLayout("job", 2), absl::Now(), 0, absl::InfiniteFuture());
  ASSERT_TRUE(first.ok()) << first.status();

  // A's delete is held once sent; B replaces the layout meanwhile.
  proxy_->HoldRequestsFrom(KeyWrites());
  absl::StatusOr<uint64_t> replaced;
  std::thread racer([&] {
    testing::Eventually([&] { return proxy_->holding(); }, absl::Seconds(20),
                        absl::Milliseconds(5));
    replaced = b->WriteLayout(DenseLayout("job", 3), absl::Now(), *first,
                              absl::InfiniteFuture());
    proxy_->Release();
  });
  const absl::Status removed =
      a->RemoveLayout("job", *first, absl::InfiniteFuture());
  racer.join();
  ASSERT_TRUE(replaced.ok()) << replaced.status();
  // The race happened: the delete waited in the proxy.
  EXPECT_GT(proxy_->held_bytes(), 0u);
  EXPECT_TRUE(absl::IsAborted(removed)) << removed;
  EXPECT_THAT(removed.message(), HasSubstr("another collector"));
  EXPECT_THAT(removed.message(), HasSubstr("nothing was removed"));
  EXPECT_EQ(a->write_conflicts(), 1u);
  // The bucket holds B's version, nothing after it.
  absl::StatusOr<uint64_t> last = BucketLastRevision(direct->js(), Bucket());
  ASSERT_TRUE(last.ok()) << last.status();
  EXPECT_EQ(*last, *replaced);
  absl::StatusOr<std::vector<collector::DeclaredLayout>> layouts =
      b->ReadLayouts();
  ASSERT_TRUE(layouts.ok()) << layouts.status();
  ASSERT_THAT(*layouts, SizeIs(1));
  EXPECT_EQ((*layouts)[0].layout.parallelism().dp(), 3);
}

class JetStreamDeclaredStateTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    nats_ = new testing::NatsCluster(3);
    const absl::Status started = nats_->Start();
    ASSERT_TRUE(started.ok()) << started;
  }
  static void TearDownTestSuite() {
    delete nats_;
    nats_ = nullptr;
  }

  // One collector's view: a connection, the bucket of this test, a
  // registry that watches it.
  struct Member {
    std::unique_ptr<NatsConnection> nats;
    std::unique_ptr<JetStreamDeclaredState> state;
    std::unique_ptr<LayoutRegistry> registry;
  };

  Member Join(const std::string& name, const SystemClock* clock) {
    Member m;
    NatsConnection::Options options;
    options.urls = *ParseNatsUrls(nats_->urls());
    options.name = name;
    absl::StatusOr<std::unique_ptr<NatsConnection>> nats =
        NatsConnection::Connect(options);
    EXPECT_TRUE(nats.ok()) << nats.status();
    if (!nats.ok()) return m;
    m.nats = *std::move(nats);
    JetStreamDeclaredState::Options state_options;
    state_options.bucket = Bucket();
    absl::StatusOr<std::unique_ptr<JetStreamDeclaredState>> state =
        JetStreamDeclaredState::Open(m.nats.get(), state_options);
    EXPECT_TRUE(state.ok()) << state.status();
    if (!state.ok()) return m;
    m.state = *std::move(state);
    m.registry = std::make_unique<LayoutRegistry>(m.state.get(), clock);
    EXPECT_TRUE(m.registry->Load().ok());
    m.registry->StartWatching();
    return m;
  }

  // A bucket per test, so tests of the suite do not see each other.
  static std::string Bucket() {
    std::string name =
        ::testing::UnitTest::GetInstance()->current_test_info()->name();
    return absl::StrCat("t_", name);
  }

  static testing::NatsCluster* nats_;
  SystemClock clock_;
};

testing::NatsCluster* JetStreamDeclaredStateTest::nats_ = nullptr;

TEST_F(JetStreamDeclaredStateTest, AWriteThroughOneIsServedByTheOthers) {
  Member a = Join("a", &clock_);
  Member b = Join("b", &clock_);
  Member c = Join("c", &clock_);
  ASSERT_NE(c.registry, nullptr);

  const absl::Time applied = absl::Now();
  absl::StatusOr<collector::ApplyResult> result =
      a.registry->Apply(DenseLayout("train.v2", 4));
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_GT(result->entry->revision, 0u);
  ASSERT_TRUE(a.registry->ApplyTopology(OneLeaf("leaf-0")).ok());
  for (Member* m : {&b, &c}) {
    EXPECT_TRUE(testing::Eventually(
        [&] {
          auto snap = m->registry->Snapshot();
          return snap->layouts.count("train.v2") == 1 &&
                 snap->topology != nullptr;
        },
        absl::Seconds(1)))
        << "not served within 1 s of the write";
  }
  EXPECT_LT(absl::Now() - applied, absl::Seconds(2));
  auto on_b = b.registry->Get("train.v2");
  ASSERT_TRUE(on_b.ok());
  EXPECT_EQ((*on_b)->revision, result->entry->revision);
  EXPECT_EQ((*on_b)->model.WorldSize(), 32u);

  // Replaced through B, removed through C: everyone follows.
  ASSERT_TRUE(b.registry->Apply(DenseLayout("train.v2", 2)).ok());
  ASSERT_TRUE(testing::Eventually([&] {
    auto got = a.registry->Get("train.v2");
    return got.ok() && (*got)->model.WorldSize() == 16u;
  }));
  ASSERT_TRUE(testing::Eventually([&] {
    auto got = c.registry->Get("train.v2");
    return got.ok() && (*got)->model.WorldSize() == 16u;
  }));
  ASSERT_TRUE(c.registry->Delete("train.v2").ok());
  for (Member* m : {&a, &b}) {
    EXPECT_TRUE(
        testing::Eventually([&] { return m->registry->NumLayouts() == 0; }));
  }
  // Re-declared after the removal: a fresh create over the tombstone.
  EXPECT_TRUE(a.registry->Apply(DenseLayout("train.v2", 1)).ok());
}

TEST_F(JetStreamDeclaredStateTest, ConcurrentWritesConflictInsteadOfMerging) {
  Member a = Join("a", &clock_);
  Member b = Join("b", &clock_);
  ASSERT_NE(b.state, nullptr);
  absl::StatusOr<uint64_t> first = a.state->WriteLayout(
      DenseLayout("job", 2), absl::Now(), 0, absl::InfiniteFuture());
  ASSERT_TRUE(first.ok()) << first.status();
  // Both start from `first`; A lands, B's write is refused.
  absl::StatusOr<uint64_t> second = a.state->WriteLayout(
      DenseLayout("job", 3), absl::Now(), *first, absl::InfiniteFuture());
  ASSERT_TRUE(second.ok()) << second.status();
  absl::StatusOr<uint64_t> stale = b.state->WriteLayout(
      DenseLayout("job", 4), absl::Now(), *first, absl::InfiniteFuture());
  EXPECT_TRUE(absl::IsAborted(stale.status())) << stale.status();
  EXPECT_THAT(stale.status().message(), HasSubstr("another collector"));
  EXPECT_EQ(b.state->write_conflicts(), 1u);
  // A create of a job that exists is a conflict too.
  EXPECT_TRUE(
      absl::IsAborted(b.state
                          ->WriteLayout(DenseLayout("job", 5), absl::Now(), 0,
                                        absl::InfiniteFuture())
                          .status()));
  // The bucket holds A's version; a conflict is not a failed write.
  ASSERT_TRUE(testing::Eventually([&] {
    auto got = b.registry->Get("job");
    return got.ok() && (*got)->model.WorldSize() == 24u;
  }));
  EXPECT_TRUE(b.state->last_write_status().ok());
}

// A removal meant for one version does not remove a newer one written
// through another collector meanwhile.
TEST_F(JetStreamDeclaredStateTest, ARemovalOfAnOlderVersionRemovesNothing) {
  Member a = Join("a", &clock_);
  Member b = Join("b", &clock_);
  ASSERT_NE(b.state, nullptr);
  absl::StatusOr<uint64_t> first = a.state->WriteLayout(
      DenseLayout("job", 2), absl::Now(), 0, absl::InfiniteFuture());
  ASSERT_TRUE(first.ok()) << first.status();
  absl::StatusOr<uint64_t> second = b.state->WriteLayout(
      DenseLayout("job", 3), absl::Now(), *first, absl::InfiniteFuture());
  ASSERT_TRUE(second.ok()) << second.status();
  // A still means `first`.
  const absl::Status stale =
      a.state->RemoveLayout("job", *first, absl::InfiniteFuture());
  EXPECT_TRUE(absl::IsAborted(stale)) << stale;
  EXPECT_THAT(stale.message(), HasSubstr("another collector"));
  EXPECT_THAT(stale.message(), HasSubstr("nothing was removed"));
  EXPECT_EQ(a.state->write_conflicts(), 1u);
  ASSERT_TRUE(testing::Eventually([&] {
    auto got = a.registry->Get("job");
    return got.ok() && (*got)->model.WorldSize() == 24u;
  }));
  // Through the registry, which now serves `second`: removed everywhere.
  ASSERT_TRUE(a.registry->Delete("job").ok());
  EXPECT_TRUE(
      testing::Eventually([&] { return b.registry->NumLayouts() == 0; }));
  EXPECT_TRUE(absl::IsNotFound(
      b.state->RemoveLayout("job", 0, absl::InfiniteFuture())));
}

TEST_F(JetStreamDeclaredStateTest, ARestartedCollectorLoadsWhatWasDeclared) {
  {
    Member a = Join("a", &clock_);
    ASSERT_NE(a.registry, nullptr);
    ASSERT_TRUE(a.registry->Apply(DenseLayout("one", 1)).ok());
    v1::Layout two = DenseLayout("two", 2);
    (*two.mutable_labels())["team"] = "ml-infra";
    ASSERT_TRUE(a.registry->Apply(two).ok());
    ASSERT_TRUE(a.registry->Delete("one").ok());
    ASSERT_TRUE(a.registry->ApplyTopology(OneLeaf("leaf-9")).ok());
  }
  Member again = Join("a", &clock_);
  ASSERT_NE(again.registry, nullptr);
  auto snap = again.registry->Snapshot();
  EXPECT_THAT(snap->layouts, SizeIs(1));
  ASSERT_EQ(snap->layouts.count("two"), 1u);
  // The layout's labels are stored with it in the bucket.
  EXPECT_EQ(snap->layouts.at("two")->applied_layout.labels().at("team"),
            "ml-infra");
  ASSERT_NE(snap->topology, nullptr);
  EXPECT_EQ(snap->topology->switches(0).name(), "leaf-9");
  EXPECT_GT(snap->topology_revision, 0u);
}

// A topology whose protobuf passes 64 KiB is stored gzip-compressed in its
// envelope (a 200,000-GPU one fits NATS' default max_payload that way);
// plain values, as earlier versions wrote them, still read; a damaged
// compressed value is reported, not served.
TEST_F(JetStreamDeclaredStateTest, LargeValuesAreStoredCompressed) {
  Member a = Join("a", &clock_);
  Member b = Join("b", &clock_);
  ASSERT_NE(b.registry, nullptr);
  v1::Topology big;
  for (int i = 0; i < 4000; ++i) {
    v1::Switch* sw = big.add_switches();
    sw->set_name(absl::StrCat("leaf-", i));
    for (int u = 0; u < 4; ++u) sw->add_uplinks(absl::StrCat("swp", 129 + u));
  }
  const size_t plain_size = big.SerializeAsString().size();
  ASSERT_GT(plain_size, 64u << 10);
  ASSERT_TRUE(a.registry->ApplyTopology(big).ok());
  ASSERT_TRUE(testing::Eventually([&] {
    auto snap = b.registry->Snapshot();
    return snap->topology != nullptr && snap->topology->switches_size() == 4000;
  }));
  EXPECT_EQ(b.registry->Snapshot()->topology->switches(3999).uplinks(3),
            "swp132");

  kvStore* kv = nullptr;
  ASSERT_EQ(js_KeyValue(&kv, a.nats->js(), Bucket().c_str()), NATS_OK);
  kvEntry* entry = nullptr;
  ASSERT_EQ(kvStore_Get(&entry, kv, "topology"), NATS_OK);
  const absl::string_view stored(static_cast<const char*>(kvEntry_Value(entry)),
                                 static_cast<size_t>(kvEntry_ValueLen(entry)));
  absl::string_view payload;
  absl::Time written;
  ASSERT_TRUE(collector::DecodeObject(stored, &payload, &written).ok());
  EXPECT_TRUE(absl::StartsWith(payload, "\x1f\x8b"));
  EXPECT_LT(payload.size(), plain_size / 4);
  const std::string compressed(payload);
  kvEntry_Destroy(entry);

  // Plain, as an earlier version writes it: read as before.
  uint64_t revision = 0;
  v1::Topology plain = OneLeaf("leaf-plain");
  std::string value =
      collector::EncodeObject(plain.SerializeAsString(), absl::Now());
  ASSERT_EQ(kvStore_Put(&revision, kv, "topology", value.data(),
                        static_cast<int>(value.size())),
            NATS_OK);
  ASSERT_TRUE(testing::Eventually([&] {
    auto snap = b.registry->Snapshot();
    return snap->topology != nullptr && snap->topology->switches_size() == 1;
  }));
  // Compressed bytes cut short, in an intact envelope: reported, and the
  // topology served stays the last good one.
  value = collector::EncodeObject(
      absl::string_view(compressed).substr(0, compressed.size() / 2),
      absl::Now());
  ASSERT_EQ(kvStore_Put(&revision, kv, "topology", value.data(),
                        static_cast<int>(value.size())),
            NATS_OK);
  ASSERT_TRUE(testing::Eventually(
      [&] { return b.registry->watch_stats().rejected == 1; }));
  EXPECT_EQ(b.registry->Snapshot()->topology->switches(0).name(), "leaf-plain");
  kvStore_Destroy(kv);
}

TEST_F(JetStreamDeclaredStateTest,
       DamagedAndInvalidValuesAreReportedNotServed) {
  Member a = Join("a", &clock_);
  ASSERT_NE(a.state, nullptr);
  kvStore* kv = nullptr;
  ASSERT_EQ(js_KeyValue(&kv, a.nats->js(), Bucket().c_str()), NATS_OK);
  uint64_t revision = 0;
  // Garbage, a valid envelope around the wrong job, and a layout that does
  // not build (tp=3 on 8 GPUs per node).
  ASSERT_EQ(kvStore_PutString(&revision, kv, "layout.garbage", "\x01zz"),
            NATS_OK);
  std::string wrong_job = collector::EncodeObject(
      DenseLayout("other", 1).SerializeAsString(), absl::Now());
  ASSERT_EQ(kvStore_Put(&revision, kv, "layout.mismatch", wrong_job.data(),
                        static_cast<int>(wrong_job.size())),
            NATS_OK);
  v1::Layout invalid = DenseLayout("invalid", 1);
  invalid.mutable_parallelism()->set_tp(3);
  std::string invalid_value =
      collector::EncodeObject(invalid.SerializeAsString(), absl::Now());
  ASSERT_EQ(kvStore_Put(&revision, kv, "layout.invalid", invalid_value.data(),
                        static_cast<int>(invalid_value.size())),
            NATS_OK);
  ASSERT_EQ(kvStore_PutString(&revision, kv, "from.a.newer.version", "x"),
            NATS_OK);
  // The running registry (watching) rejects all three...
  ASSERT_TRUE(testing::Eventually(
      [&] { return a.registry->watch_stats().rejected == 3; }));
  EXPECT_EQ(a.registry->NumLayouts(), 0u);
  // ...and a collector that starts now loads around them and says why.
  Member b = Join("b", &clock_);
  ASSERT_NE(b.state, nullptr);
  EXPECT_EQ(b.registry->NumLayouts(), 0u);
  std::vector<std::string> problems = b.state->problems();
  ASSERT_THAT(problems, SizeIs(3));
  EXPECT_THAT(problems[0] + problems[1] + problems[2],
              ::testing::AllOf(HasSubstr("layout.garbage"),
                               HasSubstr("not a layout of job \"mismatch\""),
                               HasSubstr("no longer valid")));
  // A valid apply replaces the damaged key.
  EXPECT_TRUE(b.registry->Apply(DenseLayout("garbage", 1)).ok());
  kvStore_Destroy(kv);
}

// Its own cluster: every server is stopped (SIGSTOP). A write made for a
// request with a 1 s deadline stops at it, not at the store's own 15 s, and
// says that it may still land; once the servers go on, writes succeed.
TEST(JetStreamDeadlineTest, AWriteStopsAtItsCallersDeadline) {
  testing::NatsCluster cluster(3);
  ASSERT_TRUE(cluster.Start().ok());
  SystemClock clock;
  NatsConnection::Options options;
  options.urls = *ParseNatsUrls(cluster.urls());
  absl::StatusOr<std::unique_ptr<NatsConnection>> nats =
      NatsConnection::Connect(options);
  ASSERT_TRUE(nats.ok()) << nats.status();
  absl::StatusOr<std::unique_ptr<JetStreamDeclaredState>> state =
      JetStreamDeclaredState::Open(nats->get(), {});
  ASSERT_TRUE(state.ok()) << state.status();
  LayoutRegistry registry(state->get(), &clock);
  ASSERT_TRUE(registry.Load().ok());
  registry.StartWatching();
  ASSERT_TRUE(registry.Apply(DenseLayout("before", 1)).ok());

  for (int i = 0; i < cluster.size(); ++i) cluster.Pause(i);
  // What QueryService passes for a request due in 1 s.
  absl::Time start = absl::Now();
  absl::StatusOr<collector::ApplyResult> stalled =
      registry.Apply(DenseLayout("stalled", 1),
                     collector::AnswerBy(start + absl::Seconds(1), start));
  const absl::Duration write = absl::Now() - start;
  EXPECT_TRUE(absl::IsDeadlineExceeded(stalled.status())) << stalled.status();
  EXPECT_THAT(std::string(stalled.status().message()),
              ::testing::AllOf(::testing::StartsWith("cluster unavailable: "),
                               HasSubstr("the layout of job stalled"),
                               HasSubstr("request's deadline"),
                               HasSubstr("may still land")));
  EXPECT_GE(write, absl::Milliseconds(850));
  EXPECT_LT(write, absl::Seconds(4));
  // Not served: only what the bucket acknowledged is.
  EXPECT_EQ(registry.NumLayouts(), 1u);
  EXPECT_TRUE(absl::IsDeadlineExceeded((*state)->last_write_status()));

  start = absl::Now();
  const absl::Status removed = registry.Delete(
      "before", collector::AnswerBy(start + absl::Seconds(1), start));
  const absl::Duration removal = absl::Now() - start;
  EXPECT_TRUE(absl::IsDeadlineExceeded(removed)) << removed;
  EXPECT_THAT(removed.message(), HasSubstr("cluster unavailable: "));
  EXPECT_LT(removal, absl::Seconds(4));
  EXPECT_EQ(registry.NumLayouts(), 1u);

  // The topology's write stops the same way, and is not served.
  start = absl::Now();
  const absl::Status topology = registry.ApplyTopology(
      OneLeaf("leaf-0"), collector::AnswerBy(start + absl::Seconds(1), start));
  const absl::Duration topology_write = absl::Now() - start;
  EXPECT_TRUE(absl::IsDeadlineExceeded(topology)) << topology;
  EXPECT_THAT(std::string(topology.message()),
              ::testing::AllOf(::testing::StartsWith("cluster unavailable: "),
                               HasSubstr("topology")));
  EXPECT_LT(topology_write, absl::Seconds(4));
  EXPECT_TRUE(absl::IsNotFound(registry.GetTopology().status()));

  // A deadline already passed: nothing is sent at all.
  start = absl::Now();
  absl::StatusOr<collector::ApplyResult> gone =
      registry.Apply(DenseLayout("gone", 1), start - absl::Seconds(1));
  EXPECT_TRUE(absl::IsDeadlineExceeded(gone.status())) << gone.status();
  EXPECT_THAT(gone.status().message(), HasSubstr("nothing was written"));
  EXPECT_LT(absl::Now() - start, absl::Milliseconds(500));

  // Once the client has noticed the loss (missed pings), nothing is sent:
  // a request would wait for the reconnect thread's lock, then sit in the
  // client's buffer until a server comes back.
  const absl::Time lost = absl::Now();
  ASSERT_TRUE(testing::Eventually([&] { return !(*nats)->link_up(); },
                                  absl::Seconds(30)))
      << "connected " << (*nats)->connected() << " reconnects "
      << (*nats)->reconnects();
  std::cout << "link down after " << absl::Now() - lost << "\n";
  start = absl::Now();
  absl::StatusOr<collector::ApplyResult> unsent =
      registry.Apply(DenseLayout("unsent", 1),
                     collector::AnswerBy(start + absl::Seconds(1), start));
  const absl::Duration reconnecting = absl::Now() - start;
  EXPECT_TRUE(absl::IsDeadlineExceeded(unsent.status())) << unsent.status();
  EXPECT_THAT(std::string(unsent.status().message()),
              ::testing::AllOf(HasSubstr("reconnecting"),
                               HasSubstr("nothing was written")));
  EXPECT_LT(reconnecting, absl::Seconds(1));

  for (int i = 0; i < cluster.size(); ++i) cluster.Resume(i);
  const absl::Time resumed = absl::Now();
  // The next write retries (the store's own deadline) until the cluster
  // has its leaders back.
  absl::StatusOr<collector::ApplyResult> after =
      registry.Apply(DenseLayout("after", 2));
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_TRUE((*state)->last_write_status().ok());
  const absl::Duration next = absl::Now() - resumed;
  EXPECT_TRUE(testing::Eventually([&] { return registry.Get("after").ok(); },
                                  absl::Seconds(10)));
  // What the client held back was never sent: once a later write is
  // acknowledged, the bucket has no trace of it.
  kvStore* kv = nullptr;
  ASSERT_EQ(js_KeyValue(&kv, (*nats)->js(), kDeclaredBucket), NATS_OK);
  // NATS_OK or NATS_NOT_FOUND: whether `key` holds a value; other answers
  // (the cluster still electing leaders) are asked again.
  auto holds = [&](const std::string& key) {
    natsStatus s = NATS_ERR;
    EXPECT_TRUE(testing::Eventually(
        [&] {
          kvEntry* entry = nullptr;
          s = kvStore_Get(&entry, kv, key.c_str());
          if (entry != nullptr) kvEntry_Destroy(entry);
          return s == NATS_OK || s == NATS_NOT_FOUND;
        },
        absl::Seconds(20)))
        << key << ": " << natsStatus_GetText(s);
    return s == NATS_OK;
  };
  EXPECT_FALSE(holds(LayoutKey("unsent")));
  const bool stalled_landed = holds(LayoutKey("stalled"));
  kvStore_Destroy(kv);
  std::cout << "servers stopped, 1 s deadline: the write answered after "
            << write << ", the removal after " << removal
            << " (the unanswered write landed later: "
            << (stalled_landed ? "yes" : "no")
            << "); while reconnecting, a write answered after " << reconnecting
            << "; after SIGCONT the next write took " << next << "\n";
}

// Its own cluster: a server is killed.
TEST(JetStreamFailoverTest, WritesAndWatchesGoOnAfterKill9OfOneServer) {
  testing::NatsCluster cluster(3);
  ASSERT_TRUE(cluster.Start().ok());
  SystemClock clock;
  auto join = [&](const std::string& url) {
    NatsConnection::Options options;
    options.urls = *ParseNatsUrls(url);
    auto nats = NatsConnection::Connect(options);
    EXPECT_TRUE(nats.ok()) << nats.status();
    return *std::move(nats);
  };
  // A is connected to server 0 first, B to server 1: killing server 0
  // moves A's connection.
  std::unique_ptr<NatsConnection> nats_a = join(
      absl::StrCat(cluster.url(0), ",", cluster.url(1), ",", cluster.url(2)));
  std::unique_ptr<NatsConnection> nats_b =
      join(absl::StrCat(cluster.url(1), ",", cluster.url(2)));
  auto state_a = JetStreamDeclaredState::Open(nats_a.get(), {});
  auto state_b = JetStreamDeclaredState::Open(nats_b.get(), {});
  ASSERT_TRUE(state_a.ok() && state_b.ok());
  LayoutRegistry a(state_a->get(), &clock);
  LayoutRegistry b(state_b->get(), &clock);
  ASSERT_TRUE(a.Load().ok() && b.Load().ok());
  a.StartWatching();
  b.StartWatching();
  ASSERT_TRUE(a.Apply(DenseLayout("before", 1)).ok());
  ASSERT_TRUE(testing::Eventually([&] { return b.NumLayouts() == 1; }));

  cluster.Kill(0);
  const absl::Time killed = absl::Now();
  // Writes through either collector succeed within their deadline (the
  // first may wait for the bucket's new stream leader).
  absl::StatusOr<collector::ApplyResult> after =
      a.Apply(DenseLayout("after", 2));
  ASSERT_TRUE(after.ok()) << after.status();
  ASSERT_TRUE(b.Apply(DenseLayout("after-b", 1)).ok());
  const absl::Duration writes = absl::Now() - killed;
  EXPECT_LT(writes, absl::Seconds(30));
  EXPECT_TRUE(testing::Eventually([&] { return b.NumLayouts() == 3; },
                                  absl::Seconds(20)));
  EXPECT_TRUE(testing::Eventually([&] { return a.NumLayouts() == 3; },
                                  absl::Seconds(20)));
  EXPECT_TRUE(nats_a->connected());
  EXPECT_NE(nats_a->connected_url(), cluster.url(0));
  std::cout << "after kill -9: both writes took " << writes
            << ", all served after " << absl::Now() - killed << "\n";
}

}  // namespace
}  // namespace fabricdiag::cluster
