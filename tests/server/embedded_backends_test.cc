// The embedded backends (server/backends.h): the null objects each
// interface's folder provides, and the bundle that serves them over one
// --state_dir.
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "analysis/finding.h"
#include "analysis/shard_map.h"
#include "collector/findings/findings_replication.h"
#include "collector/findings/findings_store.h"
#include "collector/ingest/ingest_placement.h"
#include "collector/runner/analysis_role.h"
#include "collector/runner/analysis_shards.h"
#include "collector/state/baselines_store.h"
#include "collector/state/state_store.h"
#include "common/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/backends.h"
#include "tests/testing/temp_dir.h"

namespace fabricdiag::collector {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::SizeIs;

TEST(AlwaysLeadingTest, LeadsInOneTermForever) {
  AlwaysLeading role;
  EXPECT_TRUE(role.Leading());
  // A term that moved would make the runner start its hysteresis over.
  const uint64_t term = role.Term();
  EXPECT_GT(term, 0u);
  EXPECT_EQ(role.Term(), term);
}

TEST(KeepEveryAgentTest, NeverHandsOff) {
  KeepEveryAgent placement;
  // Epoch 0: a stream never even asks.
  EXPECT_EQ(placement.Epoch(), 0u);
  for (int n = 0; n < 64; ++n) {
    EXPECT_EQ(placement.HandOff(absl::StrFormat("gpu-%03d", n),
                                {"c0:9811", "c1:9811"}, 64),
              std::nullopt);
  }
}

TEST(NoBaselinesStoreTest, KeepsNothing) {
  NoBaselinesStore store;
  EXPECT_TRUE(store.Write("baselines", absl::FromUnixSeconds(1)).ok());
  absl::StatusOr<std::optional<ObjectFile>> read = store.Read();
  ASSERT_TRUE(read.ok());
  EXPECT_EQ(*read, std::nullopt);
}

TEST(LocalFindingsReplicationTest, IdsStartWhereTheStoreIs) {
  LocalFindingsReplication local;
  // No counter of its own: the store's next id is the answer, every time.
  EXPECT_EQ(local.ReserveIds(100, 42).value_or(0), 42u);
  EXPECT_EQ(local.ReserveIds(100, 42).value_or(0), 42u);
  EXPECT_EQ(local.ReserveIds(0, 7).value_or(0), 7u);
  EXPECT_TRUE(local.Write({}).ok());
}

analysis::Finding Storm(int n) {
  analysis::Finding r;
  r.kind = "pfc_storm";
  r.severity = analysis::Severity::kCritical;
  r.job = "dense-16";
  r.node = absl::StrFormat("gpu-%03d", n);
  r.device = "mlx5_0";
  r.summary = "transmits PFC pause";
  return r;
}

std::vector<analysis::Finding> Storms(int from, int to) {
  std::vector<analysis::Finding> out;
  for (int n = from; n < to; ++n) out.push_back(Storm(n));
  return out;
}

class EmbeddedBackendsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<StateStore>> state =
        StateStore::Open(dir_.path(), &clock_);
    ASSERT_TRUE(state.ok()) << state.status();
    state_ = *std::move(state);
    backends_ = EmbeddedBackends(state_.get());
  }

  testing::TempDir dir_;
  FakeClock clock_{absl::FromUnixSeconds(1795000000)};
  std::unique_ptr<StateStore> state_;
  std::unique_ptr<Backends> backends_;
};

// Ids over the local replication are the store's own, consecutive across
// the blocks the store reserves ahead (100 at a time).
TEST_F(EmbeddedBackendsTest, FindingIdsAreConsecutiveAcrossReservedBlocks) {
  FindingsStore findings(state_.get(), FindingsStoreOptions{});
  ASSERT_TRUE(findings.Load().ok());
  ASSERT_TRUE(findings.Replicate(backends_->findings_replication()).ok());
  ASSERT_TRUE(findings.Update(Storms(0, 150), clock_.Now(), "rate").ok());
  ASSERT_TRUE(findings.Update(Storms(0, 210), clock_.Now(), "rate").ok());
  const std::vector<v1::Finding> active = findings.Active();
  ASSERT_THAT(active, SizeIs(210));
  for (size_t i = 0; i < active.size(); ++i) {
    EXPECT_EQ(active[i].id(), absl::StrFormat("f-%06d", i + 1));
  }
}

TEST_F(EmbeddedBackendsTest, AddsNothingToHealthAndOnlyNodeFactsToMetrics) {
  std::string health;
  EXPECT_TRUE(backends_->AppendHealth(&health));
  EXPECT_THAT(health, IsEmpty());
  std::string metrics;
  backends_->AppendMetrics(RegistryWatchStats{3, 1}, &metrics);
  EXPECT_THAT(metrics, Not(HasSubstr("fabricdiag_cluster_")));
  EXPECT_THAT(metrics, HasSubstr("fabricdiag_node_facts_nodes 0\n"));
  EXPECT_THAT(backends_->collector_id(), IsEmpty());
  EXPECT_THAT(backends_->Describe(), IsEmpty());
}

// The embedded collector's rate analysis is that of a cluster of one: it
// owns every job and switch shard, under one term, and has no id (its
// parts run over its whole view: AnalysisRunner).
TEST_F(EmbeddedBackendsTest, IsAClusterOfOneThatOwnsEveryShard) {
  AnalysisShards* shards = backends_->analysis_shards();
  ASSERT_NE(shards, nullptr);
  EXPECT_THAT(shards->Id(), IsEmpty());
  const analysis::ShardCounts counts = shards->Counts();
  const std::vector<AnalysisShards::Owned> owned = shards->OwnedShards();
  ASSERT_THAT(owned, SizeIs(counts.jobs + counts.switches));
  std::set<std::string> names;
  for (const AnalysisShards::Owned& o : owned) {
    names.insert(o.shard);
    EXPECT_EQ(o.term, 1u) << o.shard;
    EXPECT_FALSE(o.handing_over) << o.shard;
  }
  EXPECT_THAT(names, SizeIs(owned.size()));
  EXPECT_THAT(names, ::testing::Contains("jobs.0"));
  EXPECT_THAT(names, ::testing::Contains(
                         absl::StrCat("switches.", counts.switches - 1)));
}

TEST_F(EmbeddedBackendsTest, KeepsItsStateInTheStateDir) {
  EXPECT_THAT(backends_->baselines().Describe(), HasSubstr(dir_.path()));
  EXPECT_THAT(backends_->declared_state().Describe(), HasSubstr(dir_.path()));
  ASSERT_TRUE(backends_->baselines().Write("baselines", clock_.Now()).ok());
  // Another process over the same directory reads them.
  std::unique_ptr<Backends> again = EmbeddedBackends(state_.get());
  absl::StatusOr<std::optional<ObjectFile>> read = again->baselines().Read();
  ASSERT_TRUE(read.ok()) << read.status();
  ASSERT_TRUE(read->has_value());
  EXPECT_EQ((*read)->payload, "baselines");
  EXPECT_TRUE(again->role().Leading());
  EXPECT_EQ(again->ingest_placement().HandOff("gpu-000", {}, 1), std::nullopt);
}

// The node facts live in memory: what the ingest puts, the readers see, and
// /metrics counts.
TEST_F(EmbeddedBackendsTest, HoldsTheNodeFacts) {
  v1::NodeFacts facts;
  facts.set_node("gpu-001");
  facts.set_gpus_read(true);
  ASSERT_TRUE(backends_->node_facts().Put(facts).ok());
  facts.set_node("not a node");
  EXPECT_FALSE(backends_->node_facts().Put(facts).ok());
  EXPECT_EQ(backends_->node_facts().Snapshot()->count("gpu-001"), 1u);
  std::string metrics;
  backends_->AppendMetrics(RegistryWatchStats{}, &metrics);
  EXPECT_THAT(metrics, HasSubstr("fabricdiag_node_facts_nodes 1\n"));
  EXPECT_THAT(metrics,
              HasSubstr("fabricdiag_node_facts_writes_failed_total 1\n"));
}

}  // namespace
}  // namespace fabricdiag::collector
