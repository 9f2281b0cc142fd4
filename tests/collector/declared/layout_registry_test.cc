#include "collector/declared/layout_registry.h"

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/notification.h"
#include "collector/declared/file_declared_state.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/temp_dir.h"

namespace fabricdiag::collector {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::SizeIs;
using ::testing::StartsWith;

using ScopedTempDir = ::fabricdiag::testing::TempDir;

// 64 ranks on 8 hosts: tp=8 pp=2 dp=4 ep=4.
v1::Layout MoeLayout(const std::string& job) {
  v1::Layout layout;
  layout.set_job(job);
  layout.set_gpus_per_node(8);
  v1::Parallelism* p = layout.mutable_parallelism();
  p->set_tp(8);
  p->set_pp(2);
  p->set_dp(4);
  p->set_ep(4);
  for (int h = 0; h < 8; ++h) layout.add_hosts(absl::StrFormat("gpu-%03d", h));
  return layout;
}

v1::Topology TwoLeafTopology() {
  v1::Topology topo;
  for (const char* name : {"leaf-0", "leaf-1"}) {
    v1::Switch* sw = topo.add_switches();
    sw->set_name(name);
    sw->add_uplinks("swp49");
    sw->add_uplinks("swp50");
  }
  v1::Link* link = topo.add_links();
  link->set_host("gpu-000");
  link->set_nic("mlx5_0");
  link->set_switch_("leaf-0");
  link->set_port("swp1");
  return topo;
}

class LayoutRegistryTest : public ::testing::Test {
 protected:
  // A fresh store + registry on the same directory: what a restarted
  // collector sees.
  void Restart() {
    registry_.reset();
    declared_.reset();
    store_.reset();
    absl::StatusOr<std::unique_ptr<StateStore>> store =
        StateStore::Open(Dir(), &clock_);
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
    declared_ = std::make_unique<FileDeclaredState>(store_.get());
    registry_ = std::make_unique<LayoutRegistry>(declared_.get(), &clock_);
    ASSERT_TRUE(registry_->Load().ok());
  }
  void SetUp() override { Restart(); }
  std::string Dir() const { return tmp_.path() + "/state"; }

  ScopedTempDir tmp_;
  FakeClock clock_;
  std::unique_ptr<StateStore> store_;
  std::unique_ptr<FileDeclaredState> declared_;
  std::unique_ptr<LayoutRegistry> registry_;
};

TEST_F(LayoutRegistryTest, ApplyGetListSummarizesTheJob) {
  absl::StatusOr<ApplyResult> result = registry_->Apply(MoeLayout("moe-42"));
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_FALSE(result->replaced);
  EXPECT_EQ(result->entry->model.WorldSize(), 64u);

  absl::StatusOr<std::shared_ptr<const LayoutEntry>> got =
      registry_->Get("moe-42");
  ASSERT_TRUE(got.ok());
  EXPECT_EQ((*got)->applied_layout.SerializeAsString(),
            MoeLayout("moe-42").SerializeAsString());

  std::vector<LayoutSummary> list = registry_->List();
  ASSERT_THAT(list, SizeIs(1));
  EXPECT_EQ(list[0].job, "moe-42");
  EXPECT_EQ(list[0].ranks, 64u);
  EXPECT_EQ(list[0].hosts, 8u);
  EXPECT_EQ(list[0].parallelism, "tp=8 pp=2 dp=4 ep=4");
  EXPECT_EQ(list[0].applied, clock_.Now());
}

TEST_F(LayoutRegistryTest, ReapplyReportsReplaced) {
  ASSERT_TRUE(registry_->Apply(MoeLayout("moe-42")).ok());
  clock_.Advance(absl::Minutes(5));
  v1::Layout smaller = MoeLayout("moe-42");
  smaller.mutable_parallelism()->set_dp(2);
  smaller.mutable_parallelism()->clear_ep();
  smaller.mutable_hosts()->DeleteSubrange(4, 4);
  absl::StatusOr<ApplyResult> result = registry_->Apply(smaller);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_TRUE(result->replaced);
  std::vector<LayoutSummary> list = registry_->List();
  ASSERT_THAT(list, SizeIs(1));
  EXPECT_EQ(list[0].parallelism, "tp=8 pp=2 dp=2");
  EXPECT_EQ(list[0].applied, clock_.Now());
}

TEST_F(LayoutRegistryTest, InvalidLayoutIsRejectedNamingTheFieldAndNotSaved) {
  v1::Layout bad = MoeLayout("moe-42");
  bad.mutable_parallelism()->set_ep(3);
  absl::StatusOr<ApplyResult> result = registry_->Apply(bad);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(result.status().message()),
              StartsWith("parallelism.ep"));
  EXPECT_FALSE(std::filesystem::exists(Dir() + "/layouts/moe-42.pb"));
  EXPECT_EQ(registry_->NumLayouts(), 0u);
}

TEST_F(LayoutRegistryTest, AcknowledgedLayoutsSurviveARestart) {
  ASSERT_TRUE(registry_->Apply(MoeLayout("job-a")).ok());
  absl::Time applied_a = clock_.Now();
  clock_.Advance(absl::Seconds(10));
  ASSERT_TRUE(registry_->Apply(MoeLayout("job-b")).ok());
  ASSERT_TRUE(registry_->ApplyTopology(TwoLeafTopology()).ok());
  Restart();
  std::vector<LayoutSummary> list = registry_->List();
  ASSERT_THAT(list, SizeIs(2));
  EXPECT_EQ(list[0].job, "job-a");
  EXPECT_EQ(list[0].applied, applied_a);
  EXPECT_EQ(list[1].parallelism, "tp=8 pp=2 dp=4 ep=4");
  absl::StatusOr<std::shared_ptr<const v1::Topology>> topo =
      registry_->GetTopology();
  ASSERT_TRUE(topo.ok());
  EXPECT_EQ((*topo)->SerializeAsString(),
            TwoLeafTopology().SerializeAsString());
}

TEST_F(LayoutRegistryTest, LabelsAreStoredListedAndValidated) {
  v1::Layout owned = MoeLayout("moe-42");
  (*owned.mutable_labels())["team"] = "ml-infra";
  (*owned.mutable_labels())["project"] = "llama";
  ASSERT_TRUE(registry_->Apply(owned).ok());
  Restart();
  absl::StatusOr<std::shared_ptr<const LayoutEntry>> got =
      registry_->Get("moe-42");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_THAT(
      (*got)->applied_layout.labels(),
      ::testing::UnorderedElementsAre(::testing::Pair("team", "ml-infra"),
                                      ::testing::Pair("project", "llama")));
  std::vector<LayoutSummary> list = registry_->List();
  ASSERT_THAT(list, SizeIs(1));
  EXPECT_THAT(list[0].labels,
              ::testing::ElementsAre(::testing::Pair("project", "llama"),
                                     ::testing::Pair("team", "ml-infra")));

  // A bad label refuses the whole layout, naming the label; the stored one
  // stays.
  (*owned.mutable_labels())["Team"] = "x";
  absl::StatusOr<ApplyResult> bad = registry_->Apply(owned);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bad.status().message()),
              StartsWith("labels.\"Team\""));
  EXPECT_EQ(registry_->List()[0].labels.size(), 2u);
}

TEST_F(LayoutRegistryTest, GetAndDeleteOfAnUnknownJobNameTheJob) {
  absl::StatusOr<std::shared_ptr<const LayoutEntry>> got =
      registry_->Get("nope");
  EXPECT_EQ(got.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(got.status().message(), HasSubstr("\"nope\""));
  absl::Status deleted = registry_->Delete("nope");
  EXPECT_EQ(deleted.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(deleted.message(), HasSubstr("\"nope\""));
}

TEST_F(LayoutRegistryTest, DeleteRemovesTheFileAndStaysDeletedAfterRestart) {
  ASSERT_TRUE(registry_->Apply(MoeLayout("job-a")).ok());
  ASSERT_TRUE(registry_->Apply(MoeLayout("job-b")).ok());
  ASSERT_TRUE(registry_->Delete("job-a").ok());
  EXPECT_FALSE(std::filesystem::exists(Dir() + "/layouts/job-a.pb"));
  EXPECT_EQ(registry_->Get("job-a").status().code(),
            absl::StatusCode::kNotFound);
  Restart();
  ASSERT_THAT(registry_->List(), SizeIs(1));
  EXPECT_EQ(registry_->List()[0].job, "job-b");
}

TEST_F(LayoutRegistryTest, SnapshotIsUnaffectedByLaterWrites) {
  ASSERT_TRUE(registry_->Apply(MoeLayout("job-a")).ok());
  std::shared_ptr<const RegistrySnapshot> before = registry_->Snapshot();
  ASSERT_TRUE(registry_->Apply(MoeLayout("job-b")).ok());
  ASSERT_TRUE(registry_->Delete("job-a").ok());
  ASSERT_TRUE(registry_->ApplyTopology(TwoLeafTopology()).ok());
  ASSERT_THAT(before->layouts, SizeIs(1));
  EXPECT_EQ(before->layouts.begin()->second->model.job(), "job-a");
  EXPECT_EQ(before->topology, nullptr);
  std::shared_ptr<const RegistrySnapshot> after = registry_->Snapshot();
  ASSERT_THAT(after->layouts, SizeIs(1));
  EXPECT_EQ(after->layouts.begin()->first, "job-b");
  EXPECT_NE(after->topology, nullptr);
}

TEST_F(LayoutRegistryTest, ReadersSeeConsistentSnapshotsWhileWritersApply) {
  std::atomic<bool> done{false};
  std::atomic<int> inconsistent{0};
  auto reader = [&]() {
    while (!done.load()) {
      std::shared_ptr<const RegistrySnapshot> snap = registry_->Snapshot();
      for (const auto& [job, entry] : snap->layouts) {
        if (entry->model.job() != job || entry->model.WorldSize() != 64) {
          ++inconsistent;
        }
      }
      if (registry_->List().size() > 20) ++inconsistent;
    }
  };
  std::thread r1(reader);
  std::thread r2(reader);
  for (int i = 0; i < 20; ++i) {
    EXPECT_TRUE(registry_->Apply(MoeLayout(absl::StrCat("job-", i))).ok());
    if (i % 3 == 0) {
      EXPECT_TRUE(registry_->Delete(absl::StrCat("job-", i)).ok());
    }
  }
  done = true;
  r1.join();
  r2.join();
  EXPECT_EQ(inconsistent.load(), 0);
  EXPECT_EQ(registry_->NumLayouts(), 13u);
}

TEST_F(LayoutRegistryTest, FailedSaveKeepsThePreviousLayoutInEffect) {
  ASSERT_TRUE(registry_->Apply(MoeLayout("job-a")).ok());
  // Make layouts/ unusable (root ignores permission bits; a file does not).
  std::filesystem::rename(Dir() + "/layouts", Dir() + "/layouts.away");
  std::ofstream(Dir() + "/layouts") << "not a directory";
  v1::Layout changed = MoeLayout("job-a");
  changed.mutable_parallelism()->set_ep(2);
  absl::StatusOr<ApplyResult> result = registry_->Apply(changed);
  ASSERT_FALSE(result.ok());
  EXPECT_THAT(result.status().message(), HasSubstr("layouts/job-a.pb"));
  EXPECT_EQ(registry_->List()[0].parallelism, "tp=8 pp=2 dp=4 ep=4");
  EXPECT_EQ(store_->write_errors(), 1u);
}

TEST_F(LayoutRegistryTest, StoredLayoutThatNoLongerBuildsIsMovedAside) {
  v1::Layout bad = MoeLayout("job-bad");
  bad.mutable_parallelism()->set_tp(3);  // 3*2*4 != 64 ranks
  ASSERT_TRUE(store_->WriteLayout(bad, clock_.Now()).ok());
  ASSERT_TRUE(store_->WriteLayout(MoeLayout("job-good"), clock_.Now()).ok());
  Restart();
  ASSERT_THAT(registry_->List(), SizeIs(1));
  EXPECT_EQ(registry_->List()[0].job, "job-good");
  ASSERT_THAT(store_->problems(), SizeIs(1));
  EXPECT_THAT(store_->problems()[0],
              AllOf(HasSubstr("job-bad.pb"), HasSubstr("no longer valid")));
  EXPECT_FALSE(std::filesystem::exists(Dir() + "/layouts/job-bad.pb"));
}

TEST_F(LayoutRegistryTest, TopologyIsValidatedBeforeItIsSaved) {
  EXPECT_EQ(registry_->GetTopology().status().code(),
            absl::StatusCode::kNotFound);
  v1::Topology dup = TwoLeafTopology();
  dup.mutable_switches(1)->set_name("leaf-0");
  absl::Status status = registry_->ApplyTopology(dup);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()), StartsWith("switches[1].name"));

  v1::Topology dangling = TwoLeafTopology();
  dangling.mutable_links(0)->set_switch_("spine-9");
  status = registry_->ApplyTopology(dangling);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()), StartsWith("links[0].switch"));
  EXPECT_FALSE(std::filesystem::exists(Dir() + "/topology.pb"));

  // A switch with unknown uplinks and links to hosts no layout names yet
  // are fine.
  v1::Topology ok = TwoLeafTopology();
  ok.mutable_switches(1)->clear_uplinks();
  EXPECT_TRUE(registry_->ApplyTopology(ok).ok());
}

// An adopt writes the topology only over the one its caller read: version 0
// while none is declared, then one number per topology served, also after
// a restart; a write in between makes it Aborted, nothing written.
TEST_F(LayoutRegistryTest, ApplyTopologyIfReplacesOnlyTheVersionRead) {
  EXPECT_EQ(registry_->Snapshot()->topology_version, 0u);
  v1::Topology first = TwoLeafTopology();
  absl::StatusOr<uint64_t> written = registry_->ApplyTopologyIf(first, 0);
  ASSERT_TRUE(written.ok()) << written.status();
  const uint64_t read = registry_->Snapshot()->topology_version;
  EXPECT_EQ(*written, read);
  EXPECT_NE(read, 0u);

  v1::Topology other = TwoLeafTopology();
  other.mutable_links(0)->set_port("swp2");
  ASSERT_TRUE(registry_->ApplyTopology(other).ok());  // someone else
  EXPECT_NE(registry_->Snapshot()->topology_version, read);

  v1::Topology adopted = TwoLeafTopology();
  adopted.mutable_links(0)->set_port("swp3");
  absl::Status lost = registry_->ApplyTopologyIf(adopted, read).status();
  EXPECT_EQ(lost.code(), absl::StatusCode::kAborted) << lost;
  EXPECT_EQ((*registry_->GetTopology())->links(0).port(), "swp2");
  EXPECT_EQ(registry_->ApplyTopologyIf(adopted, 0).status().code(),
            absl::StatusCode::kAborted);

  ASSERT_TRUE(
      registry_
          ->ApplyTopologyIf(adopted, registry_->Snapshot()->topology_version)
          .ok());
  EXPECT_EQ((*registry_->GetTopology())->links(0).port(), "swp3");

  Restart();
  const uint64_t loaded = registry_->Snapshot()->topology_version;
  EXPECT_NE(loaded, 0u);
  EXPECT_TRUE(registry_->ApplyTopologyIf(first, loaded).ok());
}

// The files' backend, but a layout write waits until `release` is
// notified: a backend that does not answer (a cluster cut off).
class StallingState final : public DeclaredState {
 public:
  explicit StallingState(StateStore* store) : files_(store) {}
  absl::Notification entered;  // a write is waiting
  absl::Notification release;

  std::string Describe() const override { return "the stalling store"; }
  absl::StatusOr<uint64_t> WriteLayout(const v1::Layout& layout,
                                       absl::Time applied, uint64_t expected,
                                       absl::Time deadline) override {
    if (!entered.HasBeenNotified()) entered.Notify();
    release.WaitForNotification();
    return files_.WriteLayout(layout, applied, expected, deadline);
  }
  absl::Status RemoveLayout(absl::string_view job, uint64_t expected,
                            absl::Time deadline) override {
    return files_.RemoveLayout(job, expected, deadline);
  }
  absl::StatusOr<std::vector<DeclaredLayout>> ReadLayouts() override {
    return files_.ReadLayouts();
  }
  absl::StatusOr<uint64_t> WriteTopology(const v1::Topology& topology,
                                         absl::Time applied, uint64_t expected,
                                         absl::Time deadline) override {
    return files_.WriteTopology(topology, applied, expected, deadline);
  }
  absl::StatusOr<std::optional<DeclaredTopology>> ReadTopology() override {
    return files_.ReadTopology();
  }
  void Reject(absl::string_view where, absl::string_view why) override {
    files_.Reject(where, why);
  }
  void Watch(std::function<void(const DeclaredChange&)>) override {}
  void StopWatching() override {}
  std::vector<std::string> problems() const override {
    return files_.problems();
  }

 private:
  FileDeclaredState files_;
};

// A write queued behind one the backend does not answer stops at its own
// deadline, nothing written; the one ahead still completes.
TEST_F(LayoutRegistryTest, AWriteQueuedBehindAStuckOneStopsAtItsDeadline) {
  StallingState state(store_.get());
  LayoutRegistry registry(&state, &clock_);
  ASSERT_TRUE(registry.Load().ok());
  absl::Status first;
  std::thread ahead(
      [&] { first = registry.Apply(MoeLayout("job-a")).status(); });
  state.entered.WaitForNotification();

  const absl::Time start = absl::Now();
  for (int write = 0; write < 3; ++write) {
    const absl::Time deadline = absl::Now() + absl::Milliseconds(200);
    absl::Status queued;
    switch (write) {
      case 0:
        queued = registry.Apply(MoeLayout("job-b"), deadline).status();
        break;
      case 1:
        queued = registry.Delete("job-a", deadline);
        break;
      default:
        queued = registry.ApplyTopology(TwoLeafTopology(), deadline);
    }
    EXPECT_EQ(queued.code(), absl::StatusCode::kDeadlineExceeded) << queued;
    EXPECT_THAT(
        std::string(queued.message()),
        AllOf(HasSubstr("another write"), HasSubstr("the stalling store"),
              HasSubstr("nothing was written")));
  }
  EXPECT_LT(absl::Now() - start, absl::Seconds(3));
  EXPECT_EQ(registry.NumLayouts(), 0u);

  state.release.Notify();
  ahead.join();
  EXPECT_TRUE(first.ok()) << first;
  EXPECT_EQ(registry.NumLayouts(), 1u);
  // The turn is free again.
  EXPECT_TRUE(
      registry.Apply(MoeLayout("job-b"), absl::Now() + absl::Seconds(5)).ok());
  EXPECT_TRUE(registry.GetTopology().status().code() ==
              absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace fabricdiag::collector
