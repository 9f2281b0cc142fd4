// The rate pass on two threads finds what the window run, the baselines'
// update and the recent run found in turn on one, and leaves the same
// baselines.
#include "collector/runner/rate_pass.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "analysis/finding_wire.h"
#include "analysis/shard_map.h"
#include "analysis/straggler_baselines.h"
#include "collector/runner/shard_baselines.h"
#include "common/clock.h"
#include "common/little_endian.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "tests/testing/scenario_builder.h"
#include "tests/testing/temp_dir.h"

namespace fabricdiag::collector {
namespace {

using analysis::scenario::Cluster;
using analysis::scenario::Fault;
using analysis::scenario::FaultKind;
using analysis::scenario::TrafficOptions;

// Equal findings (the wire form's maps compared as maps).
void ExpectSame(const std::vector<analysis::Finding>& a,
                const std::vector<analysis::Finding>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    v1::Finding x;
    v1::Finding y;
    analysis::FillWireFinding(a[i], &x);
    analysis::FillWireFinding(b[i], &y);
    EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(x, y))
        << x.DebugString() << "\nvs\n"
        << y.DebugString();
  }
}

TEST(RatePassTest, TwoThreadsFindWhatOneFinds) {
  absl::StatusOr<Cluster> built =
      Cluster::Build(analysis::scenario::ManyJobCluster(128, 8));
  ASSERT_TRUE(built.ok()) << built.status();
  const Cluster& c = *built;
  const analysis::AnalysisConfig config;
  const std::vector<Fault> faults = {
      {FaultKind::kStragglerNic, c.HostName(3), "mlx5_1"},
      {FaultKind::kHotExpert, c.HostName(9), "mlx5_0"},
      {FaultKind::kCongestion, c.HostName(40), "mlx5_3"},
  };
  // One pass short of the history that makes a baseline count: the
  // straggler of the expert-parallel job-000 is judged only with the
  // baselines this pass updates, i.e. in the recent run and not in the
  // window's.
  analysis::StragglerBaselines one =
      c.Watched(TrafficOptions{}, 5, config,
                /*passes=*/config.straggler_nic.min_history_passes - 1);
  analysis::StragglerBaselines two = one;
  size_t findings = 0;
  size_t recent_findings = 0;
  for (uint32_t pass = 0; pass < 4; ++pass) {
    SCOPED_TRACE(pass);
    const std::vector<Fault>& now = faults;
    const analysis::FabricView window = c.View(now, TrafficOptions{}, pass);
    analysis::FabricView recent = c.View(now, TrafficOptions{}, 100 + pass);
    recent.window_seconds = 2;
    const analysis::AnalysisInput in = c.Input(&window, &config);
    const RateFindings a = RunRatePass(in, &recent, &one, 1);
    const RateFindings b = RunRatePass(in, &recent, &two, 2);
    ExpectSame(a.window, b.window);
    ExpectSame(a.recent, b.recent);
    findings += a.window.size();
    recent_findings += a.recent.size();
    ASSERT_EQ(one.size(), two.size());
    for (const analysis::LayoutModel& job : c.jobs()) {
      for (const std::string& host : job.Hosts()) {
        for (const std::string& nic : job.Nics()) {
          const auto* x = one.Find(job.job(), host, nic);
          const auto* y = two.Find(job.job(), host, nic);
          ASSERT_EQ(x == nullptr, y == nullptr) << host << " " << nic;
          if (x == nullptr) continue;
          EXPECT_EQ(x->bytes_per_second, y->bytes_per_second);
          EXPECT_EQ(x->passes, y->passes);
        }
      }
    }
  }
  // The runs found something to compare.
  EXPECT_GT(findings, 0u);
  EXPECT_GT(recent_findings, 0u);
  EXPECT_GT(one.size(), 0u);
}

// Without a recent view: the window's findings alone, baselines updated.
TEST(RatePassTest, NoRecentView) {
  absl::StatusOr<Cluster> built =
      Cluster::Build(analysis::scenario::ManyJobCluster(64, 4));
  ASSERT_TRUE(built.ok()) << built.status();
  const analysis::AnalysisConfig config;
  const analysis::FabricView window =
      built->View({{FaultKind::kCongestion, built->HostName(5), "mlx5_2"}},
                  TrafficOptions{}, 1);
  analysis::StragglerBaselines baselines;
  const RateFindings found =
      RunRatePass(built->Input(&window, &config), nullptr, &baselines, 2);
  EXPECT_FALSE(found.window.empty());
  EXPECT_TRUE(found.recent.empty());
  EXPECT_GT(baselines.size(), 0u);
}

// Every NIC's baselines through the state directory, as a restarted
// collector loads them.
class BaselineFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<Cluster> built =
        Cluster::Build(analysis::scenario::ManyJobCluster(16, 2));
    ASSERT_TRUE(built.ok()) << built.status();
    cluster_ = std::make_unique<Cluster>(*std::move(built));
    watched_ = cluster_->Watched(TrafficOptions{}, 7, config_);
    ASSERT_GT(watched_.size(), 0u);
    for (const analysis::LayoutModel& m : cluster_->jobs()) {
      layouts_.push_back(&m);
    }
    absl::StatusOr<std::unique_ptr<StateStore>> opened =
        StateStore::Open(dir_.path(), &clock_);
    ASSERT_TRUE(opened.ok()) << opened.status();
    state_ = *std::move(opened);
    store_ = std::make_unique<FileBaselinesStore>(state_.get());
  }

  // Whether `b` holds every baseline of watched_, the same.
  void ExpectAllOf(const analysis::StragglerBaselines& b) {
    EXPECT_EQ(b.size(), watched_.size());
    for (const analysis::LayoutModel& m : cluster_->jobs()) {
      for (const std::string& host : m.Hosts()) {
        for (const std::string& nic : m.Nics()) {
          const auto* want = watched_.Find(m.job(), host, nic);
          const auto* got = b.Find(m.job(), host, nic);
          ASSERT_EQ(want == nullptr, got == nullptr) << host << " " << nic;
          if (want == nullptr) continue;
          EXPECT_EQ(got->bytes_per_second, want->bytes_per_second);
          EXPECT_EQ(got->passes, want->passes);
        }
      }
    }
  }

  // What a restarted collector loads now.
  absl::StatusOr<LoadedBaselines> Load(analysis::StragglerBaselines* into) {
    return LoadStragglerBaselines(store_.get(), clock_.Now(),
                                  kStragglerBaselinesMaxAge, layouts_, into);
  }

  // That a restarted collector would load nothing, and say why when
  // `problem`.
  void ExpectFreshStart(bool problem, bool damaged) {
    analysis::StragglerBaselines loaded;
    absl::StatusOr<LoadedBaselines> r = Load(&loaded);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->problem.empty(), !problem) << r->problem;
    EXPECT_EQ(r->damaged, damaged);
    EXPECT_EQ(loaded.size(), 0u);
  }

  const analysis::AnalysisConfig config_{};
  fabricdiag::testing::TempDir dir_;
  FakeClock clock_;
  std::unique_ptr<Cluster> cluster_;
  analysis::StragglerBaselines watched_;
  std::vector<const analysis::LayoutModel*> layouts_;
  std::unique_ptr<StateStore> state_;
  std::unique_ptr<FileBaselinesStore> store_;
};

TEST_F(BaselineFileTest, RestartKeepsEveryBaseline) {
  ASSERT_TRUE(
      SaveStragglerBaselines(store_.get(), watched_, clock_.Now()).ok());
  clock_.Advance(absl::Minutes(5));
  analysis::StragglerBaselines loaded;
  absl::StatusOr<LoadedBaselines> r = Load(&loaded);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->problem, "");
  EXPECT_EQ(r->restored, watched_.size());
  EXPECT_EQ(r->dropped, 0u);
  ExpectAllOf(loaded);
}

// Sharded, each job shard's baselines have a file of their own beside
// the unsharded analysis's; a shard name that is not a safe file name is
// refused, never written outside the state directory.
TEST_F(BaselineFileTest, EachShardHasAFileOfItsOwn) {
  std::unique_ptr<BaselinesStore> jobs3 = store_->ForShard("jobs.3");
  std::unique_ptr<BaselinesStore> jobs4 = store_->ForShard("jobs.4");
  ASSERT_TRUE(jobs3->Write("of jobs.3", clock_.Now()).ok());
  EXPECT_EQ(jobs3->Describe(), dir_.path() + "/straggler_baselines.jobs.3.pb");
  EXPECT_TRUE(std::filesystem::exists(jobs3->Describe()));
  EXPECT_FALSE(std::filesystem::exists(state_->baselines_path()));
  absl::StatusOr<std::optional<ObjectFile>> read = jobs3->Read();
  ASSERT_TRUE(read.ok() && read->has_value()) << read.status();
  EXPECT_EQ((*read)->payload, "of jobs.3");
  read = jobs4->Read();
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_FALSE(read->has_value());
  read = store_->Read();
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_FALSE(read->has_value());

  for (const char* bad : {"../jobs.3", "jobs/3", ".hidden", "-x"}) {
    SCOPED_TRACE(bad);
    std::unique_ptr<BaselinesStore> hostile = store_->ForShard(bad);
    const absl::Status written = hostile->Write("x", clock_.Now());
    EXPECT_TRUE(absl::IsInvalidArgument(written)) << written;
    EXPECT_TRUE(absl::IsInvalidArgument(hostile->Read().status()));
  }
  EXPECT_FALSE(std::filesystem::exists(dir_.path() + "/../jobs.3.pb"));
}

TEST_F(BaselineFileTest, NoFileIsAFreshStart) {
  ExpectFreshStart(/*problem=*/false, /*damaged=*/false);
}

TEST_F(BaselineFileTest, StaleFileIsDropped) {
  ASSERT_TRUE(
      SaveStragglerBaselines(store_.get(), watched_, clock_.Now()).ok());
  clock_.Advance(kStragglerBaselinesMaxAge + absl::Seconds(1));
  ExpectFreshStart(/*problem=*/true, /*damaged=*/false);
}

TEST_F(BaselineFileTest, NicsNoLongerInALayoutAreDropped) {
  ASSERT_TRUE(
      SaveStragglerBaselines(store_.get(), watched_, clock_.Now()).ok());
  ASSERT_GE(layouts_.size(), 2u);
  const analysis::LayoutModel* gone = layouts_.back();
  layouts_.pop_back();
  size_t of_gone = 0;
  for (const std::string& host : gone->Hosts()) {
    for (const std::string& nic : gone->Nics()) {
      if (watched_.Find(gone->job(), host, nic) != nullptr) ++of_gone;
    }
  }
  ASSERT_GT(of_gone, 0u);
  analysis::StragglerBaselines loaded;
  absl::StatusOr<LoadedBaselines> r = Load(&loaded);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->dropped, of_gone);
  EXPECT_EQ(r->restored, watched_.size() - of_gone);
  EXPECT_EQ(loaded.size(), watched_.size() - of_gone);
}

// A file cut short, or with a payload that is not baselines: a warning
// (the problem, the file moved aside) and a fresh start, never a crash.
TEST_F(BaselineFileTest, DamagedFileIsMovedAsideAndAFreshStart) {
  const std::string path = state_->baselines_path();
  ASSERT_TRUE(
      SaveStragglerBaselines(store_.get(), watched_, clock_.Now()).ok());
  std::string whole;
  {
    std::ifstream in(path, std::ios::binary);
    whole.assign(std::istreambuf_iterator<char>(in), {});
  }
  ASSERT_GT(whole.size(), 40u);
  const std::string payload = watched_.Serialize();
  const std::vector<std::string> damaged_files = {
      whole.substr(0, whole.size() / 2),  // truncated
      whole.substr(0, 10),                // the header cut
      "",                                 // empty
  };
  for (const std::string& bytes : damaged_files) {
    SCOPED_TRACE(bytes.size());
    {
      std::ofstream out(path, std::ios::binary | std::ios::trunc);
      out << bytes;
    }
    ExpectFreshStart(/*problem=*/true, /*damaged=*/true);
    EXPECT_FALSE(std::filesystem::exists(path));
    clock_.Advance(absl::Seconds(1));
  }
  // A sound envelope around payloads that are not baselines.
  const std::vector<std::string> bad_payloads = {
      payload.substr(0, payload.size() - 3),         // a baseline cut
      payload + "x",                                 // bytes after the last
      std::string("\x02\0\0\0\0\0\0\0", 8),          // unknown version
      std::string("\x01\0\0\0\xff\xff\xff\xff", 8),  // count too big
  };
  for (const std::string& bad : bad_payloads) {
    SCOPED_TRACE(bad.size());
    ASSERT_TRUE(state_->WriteBaselines(bad, clock_.Now()).ok());
    ExpectFreshStart(/*problem=*/true, /*damaged=*/true);
    clock_.Advance(absl::Seconds(1));
  }
  // Every damaged file was moved aside: the next load is a fresh start.
  analysis::StragglerBaselines loaded;
  absl::StatusOr<LoadedBaselines> r = Load(&loaded);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(r->damaged);
  EXPECT_EQ(state_->problems().size(),
            damaged_files.size() + bad_payloads.size());
}

// One write at production scale (68,000 NICs): its bytes and time, printed
// for the docs, and bounded so a regression shows.
TEST_F(BaselineFileTest, WriteOf68kNicsIsSmallAndFast) {
  std::string payload;
  constexpr int kNics = 68000;
  {
    std::string raw;
    PutU32(&raw, 1);
    PutU32(&raw, kNics);
    for (int i = 0; i < kNics; ++i) {
      const std::string key =
          absl::StrCat("job-", i / 4096, std::string(1, '\0'), "gpu-node-",
                       i / 8, std::string(1, '\0'), "mlx5_", i % 8);
      PutU32(&raw, static_cast<uint32_t>(key.size()));
      raw += key;
      PutU64(&raw, 0x41d0000000000000ull);  // 1.07e9 bytes/s
      PutU32(&raw, 300);
    }
    analysis::StragglerBaselines big;
    absl::StatusOr<size_t> n = big.Restore(raw, nullptr);
    ASSERT_TRUE(n.ok()) << n.status();
    ASSERT_EQ(*n, static_cast<size_t>(kNics));
    const auto start = std::chrono::steady_clock::now();
    ASSERT_TRUE(SaveStragglerBaselines(store_.get(), big, clock_.Now()).ok());
    const double ms = std::chrono::duration<double, std::milli>(
                          std::chrono::steady_clock::now() - start)
                          .count();
    payload = big.Serialize();
    std::printf("straggler baselines: %d NICs, %zu bytes, %.1f ms per write\n",
                kNics, payload.size(), ms);
    // A write a minute must stay a small fraction of the analysis thread.
    EXPECT_LT(payload.size(), 4u << 20);
    EXPECT_LT(ms, 2000);
    const auto load_start = std::chrono::steady_clock::now();
    analysis::StragglerBaselines loaded;
    absl::StatusOr<size_t> back = loaded.Restore(payload, nullptr);
    std::printf("straggler baselines: %.1f ms to restore\n",
                std::chrono::duration<double, std::milli>(
                    std::chrono::steady_clock::now() - load_start)
                    .count());
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(loaded.size(), static_cast<size_t>(kNics));
  }
}

// A store whose writes wait for the test, recording what they wrote.
class GatedBaselines final : public BaselinesStore {
 public:
  absl::Status Write(absl::string_view payload,
                     absl::Time /*written*/) override {
    // One writer thread: no race between the check and the Notify.
    if (!entered_.HasBeenNotified()) entered_.Notify();
    open_.WaitForNotification();
    absl::MutexLock lock(&mu_);
    written_.emplace_back(payload);
    return result_;
  }
  absl::StatusOr<std::optional<ObjectFile>> Read() override {
    return std::nullopt;
  }
  void Reject(absl::string_view /*why*/) override {}
  std::string Describe() const override { return "gated"; }
  std::unique_ptr<BaselinesStore> ForShard(
      absl::string_view /*shard*/) override {
    return std::make_unique<NoBaselinesStore>();
  }

  void WaitUntilWriting() { entered_.WaitForNotification(); }
  // What each write returns (after recording its payload).
  void ReturnFromWrites(absl::Status result) {
    absl::MutexLock lock(&mu_);
    result_ = std::move(result);
  }
  void Open() { open_.Notify(); }
  std::vector<std::string> written() {
    absl::MutexLock lock(&mu_);
    return written_;
  }

 private:
  absl::Notification entered_;
  absl::Notification open_;
  absl::Mutex mu_;
  std::vector<std::string> written_ ABSL_GUARDED_BY(mu_);
  absl::Status result_ ABSL_GUARDED_BY(mu_);
};

// The analysis pass hands its baselines over and goes on; what waits
// behind a slow write is only the newest set.
TEST(BaselinesWriterTest, APassDoesNotWaitAndOnlyTheNewestWaitingSetIsWritten) {
  GatedBaselines store;
  {
    BaselinesWriter writer(&store);
    writer.Write("first", absl::UnixEpoch());
    store.WaitUntilWriting();  // "first" is in flight, held by the store
    writer.Write("second", absl::UnixEpoch());
    writer.Write("third", absl::UnixEpoch());
    EXPECT_TRUE(store.written().empty()) << "Write returned while held";
    store.Open();
    writer.Flush();
    EXPECT_EQ(store.written(), (std::vector<std::string>{"first", "third"}));
    writer.Write("at stop", absl::UnixEpoch());
  }
  EXPECT_EQ(store.written(),
            (std::vector<std::string>{"first", "third", "at stop"}))
      << "the destructor writes what is pending";
}

// Hands `writer` "a1" for its store `a` and, while `a` holds it, "b1" for
// `b`, then "a2", "b2" and "a3"; lets `a` go and waits for the writes.
void WriteWhileHeld(BaselinesWriter& writer, GatedBaselines& a,
                    GatedBaselines& b) {
  writer.Write("a1", absl::UnixEpoch());
  a.WaitUntilWriting();
  writer.Write(&b, "b1", absl::UnixEpoch());
  writer.Write("a2", absl::UnixEpoch());
  writer.Write(&b, "b2", absl::UnixEpoch());
  writer.Write(&a, "a3", absl::UnixEpoch());
  a.Open();
  writer.Flush();
}

// Each store's newest waiting set is written, one store after another:
// the shards' sets do not replace each other.
TEST(BaselinesWriterTest, EachStoreKeepsItsNewestWaitingSet) {
  GatedBaselines a;
  GatedBaselines b;
  b.Open();
  BaselinesWriter writer(&a);
  WriteWhileHeld(writer, a, b);
  EXPECT_EQ(a.written(), (std::vector<std::string>{"a1", "a3"}));
  EXPECT_EQ(b.written(), (std::vector<std::string>{"b2"}));
}

// A store that does not answer drops the writes waiting behind its own:
// each would wait out its deadline too, and a stop behind them. What is
// handed over after is written.
TEST(BaselinesWriterTest, AStoreThatDoesNotAnswerDropsTheWritesWaiting) {
  GatedBaselines a;
  GatedBaselines b;
  a.ReturnFromWrites(absl::UnavailableError("no answer"));
  b.Open();
  BaselinesWriter writer(&a);
  WriteWhileHeld(writer, a, b);
  EXPECT_EQ(a.written(), (std::vector<std::string>{"a1"}));
  EXPECT_TRUE(b.written().empty());
  writer.Write(&b, "b2", absl::UnixEpoch());
  writer.Flush();
  EXPECT_EQ(b.written(), (std::vector<std::string>{"b2"}));
  // A write refused for another reason (a full disk) drops nothing.
  a.ReturnFromWrites(absl::ResourceExhaustedError("disk full"));
  writer.Write("a3", absl::UnixEpoch());
  writer.Write(&b, "b3", absl::UnixEpoch());
  writer.Flush();
  EXPECT_EQ(b.written(), (std::vector<std::string>{"b2", "b3"}));
}

// What a write says to do once done runs after it is written, after the
// write that replaced it, and when it is dropped; never before.
TEST(BaselinesWriterTest, EachWritesDoneRunsOnceItIsWrittenReplacedOrDropped) {
  GatedBaselines a;
  GatedBaselines b;
  BaselinesWriter writer(&a);
  std::atomic<int> a1_done{0}, a2_done{0}, a3_done{0}, b1_done{0};
  std::atomic<int> written_when_a2_done{-1};
  writer.Write(&a, "a1", absl::UnixEpoch(), [&] { ++a1_done; });
  a.WaitUntilWriting();
  writer.Write(&a, "a2", absl::UnixEpoch(), [&] {
    written_when_a2_done = static_cast<int>(a.written().size());
    ++a2_done;
  });
  writer.Write(&a, "a3", absl::UnixEpoch(), [&] { ++a3_done; });
  EXPECT_EQ(a1_done + a2_done + a3_done, 0) << "nothing written yet";
  a.Open();
  writer.Flush();
  EXPECT_EQ(a.written(), (std::vector<std::string>{"a1", "a3"}));
  EXPECT_EQ(a1_done, 1);
  EXPECT_EQ(a2_done, 1) << "replaced by a3: done once a3 is";
  EXPECT_EQ(written_when_a2_done, 2);
  EXPECT_EQ(a3_done, 1);

  // Dropped behind a store that does not answer: done all the same.
  GatedBaselines c;
  c.ReturnFromWrites(absl::UnavailableError("no answer"));
  BaselinesWriter dropping(&c);
  dropping.Write("c1", absl::UnixEpoch());
  c.WaitUntilWriting();
  dropping.Write(&b, "b1", absl::UnixEpoch(), [&] { ++b1_done; });
  c.Open();
  dropping.Flush();
  EXPECT_TRUE(b.written().empty());
  EXPECT_EQ(b1_done, 1);
}

// A job shard handed over is written at once, for its next owner, with
// its done; unless its take could not read what was stored and it was
// taken less than a period ago (the little learned since would replace
// good baselines). Other shards keep nothing.
TEST(ShardBaselinesTest, AShardHandedOverIsWrittenAtOnceWhenItMayBe) {
  GatedBaselines store;
  store.Open();
  BaselinesWriter writer(&store);
  ShardBaselines kept(&store, &writer,
                      {absl::Minutes(1), absl::Hours(1), {4, 4}});
  analysis::StragglerBaselines baselines;
  const absl::Time t0 = absl::FromUnixSeconds(1764547200);
  int done = 0;
  // Taken (nothing stored: read without a problem), then handed over 2 s
  // later: written at once.
  kept.Take("jobs.1", t0, {}, &baselines);
  EXPECT_TRUE(kept.HandOver("jobs.1", t0 + absl::Seconds(2), baselines,
                            [&] { ++done; }));
  writer.Flush();
  EXPECT_EQ(done, 1);
  // Not a job shard: nothing to write.
  EXPECT_FALSE(kept.HandOver("switches.1", t0, baselines, [&] { ++done; }));
  // Taken without reading the store (it did not answer for another shard):
  // not written until a period has passed since the take.
  kept.Take("jobs.2", t0, {}, &baselines, /*read=*/false);
  EXPECT_FALSE(kept.HandOver("jobs.2", t0 + absl::Seconds(2), baselines,
                             [&] { ++done; }));
  EXPECT_TRUE(kept.HandOver("jobs.2", t0 + absl::Minutes(1), baselines,
                            [&] { ++done; }));
  writer.Flush();
  EXPECT_EQ(done, 2);
}

// Counts the writes of each shard's store.
class CountedShards final : public BaselinesStore {
 public:
  absl::Status Write(absl::string_view /*payload*/,
                     absl::Time /*written*/) override {
    return Count("");
  }
  absl::StatusOr<std::optional<ObjectFile>> Read() override {
    return std::nullopt;
  }
  void Reject(absl::string_view /*why*/) override {}
  std::string Describe() const override { return "counted"; }
  std::unique_ptr<BaselinesStore> ForShard(absl::string_view shard) override {
    return std::make_unique<Shard>(this, std::string(shard));
  }
  int writes(const std::string& shard) {
    absl::MutexLock lock(&mu_);
    return writes_[shard];
  }

 private:
  class Shard final : public BaselinesStore {
   public:
    Shard(CountedShards* all, std::string name)
        : all_(all), name_(std::move(name)) {}
    absl::Status Write(absl::string_view /*payload*/,
                       absl::Time /*written*/) override {
      return all_->Count(name_);
    }
    absl::StatusOr<std::optional<ObjectFile>> Read() override {
      return std::nullopt;
    }
    void Reject(absl::string_view /*why*/) override {}
    std::string Describe() const override { return name_; }
    std::unique_ptr<BaselinesStore> ForShard(
        absl::string_view /*shard*/) override {
      return std::make_unique<NoBaselinesStore>();
    }

   private:
    CountedShards* const all_;
    const std::string name_;
  };

  absl::Status Count(const std::string& shard) {
    absl::MutexLock lock(&mu_);
    ++writes_[shard];
    return absl::OkStatus();
  }

  absl::Mutex mu_;
  std::map<std::string, int> writes_ ABSL_GUARDED_BY(mu_);
};

// A job shard with no baseline of its jobs is written once, then not again
// while it has none (a lone collector owns every job shard, most of them
// empty on a small fabric); one with baselines every period; the first
// save after it lost them, and the first after a take, are written.
TEST(ShardBaselinesTest, AShardWithNoBaselineIsWrittenOnceWhileItHasNone) {
  CountedShards store;
  BaselinesWriter writer(&store);
  const analysis::ShardCounts counts{4, 4};
  ShardBaselines kept(&store, &writer,
                      {absl::Minutes(1), absl::Hours(1), counts});
  const absl::Time t0 = absl::FromUnixSeconds(1764547200);
  const std::vector<std::string> owned = {"jobs.1"};
  analysis::StragglerBaselines none;
  kept.Take("jobs.1", t0, {}, &none);
  const auto saved = [&](absl::Duration at,
                         const analysis::StragglerBaselines& baselines,
                         bool all = false) {
    kept.Save(t0 + at, owned, baselines, all);
    writer.Flush();
    return store.writes("jobs.1");
  };
  EXPECT_EQ(saved(absl::Seconds(30), none), 0) << "a period after the take";
  EXPECT_EQ(saved(absl::Minutes(1), none), 1);
  EXPECT_EQ(saved(absl::Minutes(2), none), 1);
  EXPECT_EQ(saved(absl::Minutes(2), none, /*all=*/true), 1) << "at a stop too";

  std::string job;
  for (int i = 0; job.empty(); ++i) {
    const std::string name = absl::StrCat("job-", i);
    if (analysis::JobShardOf(name, counts) == "jobs.1") job = name;
  }
  analysis::Finding slow;
  slow.kind = "straggler_nic";
  slow.job = job;
  slow.node = "gpu-000";
  slow.device = "mlx5_0";
  slow.evidence = {{"own_baseline_bytes_per_second", 2e10},
                   {"own_baseline_passes", 300}};
  analysis::StragglerBaselines some;
  some.Seed({slow});
  ASSERT_EQ(some.size(), 1u);
  EXPECT_EQ(saved(absl::Minutes(3), some), 2);
  EXPECT_EQ(saved(absl::Minutes(4), some), 3);
  EXPECT_EQ(saved(absl::Minutes(4), some, /*all=*/true), 4);
  EXPECT_EQ(saved(absl::Minutes(5), none), 5) << "its baselines gone";
  EXPECT_EQ(saved(absl::Minutes(6), none), 5);
  EXPECT_EQ(store.writes(""), 0) << "the unsharded file is not the shards'";

  // Taken again: what is stored is not known here, so written once more.
  kept.Take("jobs.1", t0 + absl::Minutes(7), {}, &none);
  EXPECT_EQ(saved(absl::Minutes(8), none), 6);
  EXPECT_EQ(saved(absl::Minutes(9), none), 6);
}

}  // namespace
}  // namespace fabricdiag::collector
