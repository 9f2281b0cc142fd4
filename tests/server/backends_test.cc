// The collector's one seam (server/backends.h) against both of its
// backends: the same expectations of every interface family for the
// embedded bundle (files in --state_dir) and the cluster's (JetStream on a
// real nats-server on loopback), for a collector alone and across its
// restart. What differs between them (a lease to win, ids reserved from a
// bucket) must not show through.
#include "server/backends.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "analysis/finding.h"
#include "collector/declared/layout_registry.h"
#include "collector/findings/findings_store.h"
#include "collector/runner/analysis_runner.h"
#include "collector/state/state_store.h"
#include "collector/store/series_store.h"
#include "common/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cluster/node_slice.h"
#include "tests/testing/eventually.h"
#include "tests/testing/fixed_topology.h"
#include "tests/testing/nats_cluster.h"
#include "tests/testing/temp_dir.h"

namespace fabricdiag::collector {
namespace {

using ::testing::ElementsAre;
using ::testing::Field;
using ::testing::HasSubstr;
using ::testing::SizeIs;

enum class Mode { kEmbedded, kCluster };

// 16 ranks on 2 hosts: tp=8 dp=2.
v1::Layout DenseLayout(const std::string& job) {
  v1::Layout layout;
  layout.set_job(job);
  layout.set_gpus_per_node(8);
  v1::Parallelism* p = layout.mutable_parallelism();
  p->set_tp(8);
  p->set_pp(1);
  p->set_dp(2);
  for (int h = 0; h < 2; ++h) layout.add_hosts(absl::StrFormat("gpu-%03d", h));
  return layout;
}

analysis::Finding Storm(const std::string& node) {
  analysis::Finding r;
  r.kind = "pfc_storm";
  r.severity = analysis::Severity::kCritical;
  r.job = "dense-16";
  r.node = node;
  r.device = "mlx5_0";
  r.summary = absl::StrCat(node, " mlx5_0 transmits PFC pause");
  r.evidence["tx_pause_fraction"] = 0.9;
  return r;
}

class BackendsTest : public ::testing::TestWithParam<Mode> {
 protected:
  void SetUp() override {
    if (GetParam() == Mode::kCluster) {
      nats_ = std::make_unique<testing::NatsCluster>(1);
      const absl::Status started = nats_->Start();
      ASSERT_TRUE(started.ok()) << started;
    }
    OpenState();
  }

  void OpenState() {
    absl::StatusOr<std::unique_ptr<StateStore>> state =
        StateStore::Open(dir_.path(), &clock_);
    ASSERT_TRUE(state.ok()) << state.status();
    state_ = *std::move(state);
  }

  // The bundle RunCollector would choose; null (and a failure) when the
  // cluster's cannot be joined.
  std::unique_ptr<Backends> Open() {
    if (GetParam() == Mode::kEmbedded) return EmbeddedBackends(state_.get());
    absl::StatusOr<std::unique_ptr<Backends>> joined = ClusterBackends(
        {nats_->urls(), "collector-a", 1, absl::Seconds(1), absl::Seconds(30)},
        state_.get());
    EXPECT_TRUE(joined.ok()) << joined.status();
    return joined.ok() ? *std::move(joined) : nullptr;
  }

  // The process stops (leaving the cluster) and starts again on the same
  // --state_dir and cluster.
  void Restart(std::unique_ptr<Backends>& backends) {
    backends->BeginStop(absl::Seconds(2));
    backends->Leave();
    backends.reset();
    state_.reset();
    OpenState();
    backends = Open();
  }

  // A collector alone leads: at once embedded, once it won the lease in a
  // cluster.
  static bool Leads(Backends& backends) {
    return testing::Eventually(
        [&backends] { return backends.role().Leading(); }, absl::Seconds(20));
  }

  testing::TempDir dir_;
  SystemClock clock_;
  std::unique_ptr<testing::NatsCluster> nats_;
  std::unique_ptr<StateStore> state_;
};

TEST_P(BackendsTest, ALayoutAppliedIsServedAfterARestart) {
  std::unique_ptr<Backends> backends = Open();
  ASSERT_NE(backends, nullptr);
  {
    LayoutRegistry registry(&backends->declared_state(), &clock_);
    ASSERT_TRUE(registry.Load().ok());
    ASSERT_TRUE(registry.Apply(DenseLayout("dense-16")).ok());
  }
  Restart(backends);
  ASSERT_NE(backends, nullptr);
  LayoutRegistry registry(&backends->declared_state(), &clock_);
  ASSERT_TRUE(registry.Load().ok());
  absl::StatusOr<std::shared_ptr<const LayoutEntry>> served =
      registry.Get("dense-16");
  ASSERT_TRUE(served.ok()) << served.status();
  EXPECT_THAT((*served)->applied_layout.hosts(),
              ElementsAre("gpu-000", "gpu-001"));
  EXPECT_FALSE(registry.Get("other").ok());
}

// `layout apply --if_revision`: a write names the revision it replaces (0:
// none), a stale one is refused and writes nothing, the revision served
// survives a restart; in a cluster a collector that has not yet seen a
// write made through another one is refused by the bucket's
// compare-and-set.
TEST_P(BackendsTest, AConditionalApplyRefusesAStaleRevision) {
  std::unique_ptr<Backends> backends = Open();
  ASSERT_NE(backends, nullptr);
  uint64_t second = 0;
  {
    LayoutRegistry registry(&backends->declared_state(), &clock_);
    ASSERT_TRUE(registry.Load().ok());
    absl::StatusOr<ApplyResult> created =
        registry.ApplyIf(DenseLayout("dense-16"), 0);
    ASSERT_TRUE(created.ok()) << created.status();
    const uint64_t first = LayoutRevision(*created->entry);
    EXPECT_NE(first, 0u);
    absl::StatusOr<ApplyResult> again =
        registry.ApplyIf(DenseLayout("dense-16"), 0);
    EXPECT_EQ(again.status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_THAT(again.status().message(),
                HasSubstr(absl::StrCat("at revision ", first)));
    absl::StatusOr<ApplyResult> replaced =
        registry.ApplyIf(DenseLayout("dense-16"), first);
    ASSERT_TRUE(replaced.ok()) << replaced.status();
    second = LayoutRevision(*replaced->entry);
    EXPECT_GT(second, first);
    EXPECT_EQ(registry.ApplyIf(DenseLayout("dense-16"), first).status().code(),
              absl::StatusCode::kFailedPrecondition);
    EXPECT_EQ(registry.ApplyIf(DenseLayout("absent"), 5).status().code(),
              absl::StatusCode::kFailedPrecondition);
    EXPECT_FALSE(registry.Get("absent").ok());
  }
  Restart(backends);
  ASSERT_NE(backends, nullptr);
  LayoutRegistry registry(&backends->declared_state(), &clock_);
  ASSERT_TRUE(registry.Load().ok());
  ASSERT_EQ(LayoutRevision(**registry.Get("dense-16")), second);
  if (GetParam() != Mode::kCluster) return;
  // Another collector (another registry on the bucket) writes; this one,
  // not watching, still serves `second`: the bucket refuses.
  LayoutRegistry other(&backends->declared_state(), &clock_);
  ASSERT_TRUE(other.Load().ok());
  ASSERT_TRUE(other.ApplyIf(DenseLayout("dense-16"), second).ok());
  EXPECT_EQ(registry.ApplyIf(DenseLayout("dense-16"), second).status().code(),
            absl::StatusCode::kAborted);
}

TEST_P(BackendsTest, FindingIdsAreNeverHandedOutAgainAfterARestart) {
  std::unique_ptr<Backends> backends = Open();
  ASSERT_NE(backends, nullptr);
  uint64_t first = 0;
  {
    FindingsStore findings(state_.get(), FindingsStoreOptions{});
    ASSERT_TRUE(findings.Load().ok());
    ASSERT_TRUE(findings.Replicate(backends->findings_replication()).ok());
    ASSERT_TRUE(findings.Update({Storm("gpu-000")}, clock_.Now(), "rate").ok());
    ASSERT_THAT(findings.Active(), SizeIs(1));
    first = FindingIdNumber(findings.Active()[0]);
    EXPECT_GT(first, 0u);
  }
  Restart(backends);
  ASSERT_NE(backends, nullptr);
  FindingsStore findings(state_.get(), FindingsStoreOptions{});
  ASSERT_TRUE(findings.Load().ok());
  ASSERT_TRUE(findings.Replicate(backends->findings_replication()).ok());
  ASSERT_TRUE(findings.Update({Storm("gpu-001")}, clock_.Now(), "rate").ok());
  const std::vector<v1::Finding> active = findings.Active();
  ASSERT_THAT(active, SizeIs(1));
  EXPECT_EQ(active[0].node(), "gpu-001");
  EXPECT_GT(FindingIdNumber(active[0]), first);
}

TEST_P(BackendsTest, AloneTheFabricIsThisCollectorsSlice) {
  std::unique_ptr<Backends> backends = Open();
  ASSERT_NE(backends, nullptr);
  FeatureExchange& features = backends->features();
  const absl::Time now = absl::Now();
  EXPECT_TRUE(
      features.Publish(cluster::testing::NodeSlice("gpu-000", now, 1e9), now)
          .ok());
  const FeatureSlice fabric =
      features.Merged(cluster::testing::NodeSlice("gpu-000", now, 1e9), now,
                      MergeScope::kFabric);
  EXPECT_THAT(
      fabric.nodes,
      ElementsAre(Field(&NodeFacts::liveness,
                        Field(&analysis::NodeLiveness::node, "gpu-000"))));
  EXPECT_EQ(fabric.window.ports().size(), 1u);
  EXPECT_FALSE(features.Describe().empty());
}

TEST_P(BackendsTest, AloneItLeadsAndKeepsEveryAgent) {
  std::unique_ptr<Backends> backends = Open();
  ASSERT_NE(backends, nullptr);
  ASSERT_TRUE(Leads(*backends));
  EXPECT_GT(backends->role().Term(), 0u);
  IngestPlacement& placement = backends->ingest_placement();
  placement.Epoch();
  for (int n = 0; n < 32; ++n) {
    const std::string node = absl::StrFormat("gpu-%03d", n);
    EXPECT_EQ(placement.HandOff(node, {}, 32), std::nullopt) << node;
  }
}

TEST_P(BackendsTest, BaselinesWrittenAreReadAfterARestart) {
  std::unique_ptr<Backends> backends = Open();
  ASSERT_NE(backends, nullptr);
  absl::StatusOr<std::optional<ObjectFile>> before =
      backends->baselines().Read();
  ASSERT_TRUE(before.ok()) << before.status();
  EXPECT_FALSE(before->has_value());
  const absl::Time written = absl::FromUnixSeconds(1795000000);
  ASSERT_TRUE(backends->baselines().Write("the baselines", written).ok());
  Restart(backends);
  ASSERT_NE(backends, nullptr);
  absl::StatusOr<std::optional<ObjectFile>> after =
      backends->baselines().Read();
  ASSERT_TRUE(after.ok()) << after.status();
  ASSERT_TRUE(after->has_value());
  EXPECT_EQ((*after)->payload, "the baselines");
  EXPECT_EQ((*after)->written, written);
}

// The runner over the bundle: a collector alone analyses its own nodes,
// lists them, and keeps its baselines where the bundle says at its stop.
TEST_P(BackendsTest, TheRunnerAnalysesThisCollectorsNodes) {
  std::unique_ptr<Backends> backends = Open();
  ASSERT_NE(backends, nullptr);
  ASSERT_TRUE(Leads(*backends));
  LayoutRegistry registry(&backends->declared_state(), &clock_);
  ASSERT_TRUE(registry.Load().ok());
  FindingsStore findings(state_.get(), FindingsStoreOptions{});
  ASSERT_TRUE(findings.Load().ok());
  ASSERT_TRUE(findings.Replicate(backends->findings_replication()).ok());
  SeriesStore series(SeriesStore::Options{}, clock_);
  std::shared_ptr<NodeSeries> node = series.OpenNode("gpu-000");
  ASSERT_TRUE(
      node->BeginStream("boot-a", 1000, 1, "ipv4:127.0.0.1:1", clock_.Now())
          .ok());
  AnalysisStats stats;
  testing::FixedTopology no_topology;
  {
    AnalysisRunner runner(&series, &registry, &findings, &stats, clock_,
                          {backends->features(), backends->role(),
                           backends->baselines(), no_topology},
                          {});
    runner.Start();
    ASSERT_TRUE(testing::Eventually([&runner] {
      return runner.LatestView() != nullptr;
    })) << "no pass analysed";
    std::shared_ptr<const std::vector<NodeFacts>> nodes = runner.LatestNodes();
    ASSERT_NE(nodes, nullptr);
    EXPECT_THAT(*nodes, ElementsAre(Field(
                            &NodeFacts::liveness,
                            Field(&analysis::NodeLiveness::node, "gpu-000"))));
    runner.Stop();
  }
  absl::StatusOr<std::optional<ObjectFile>> kept = backends->baselines().Read();
  ASSERT_TRUE(kept.ok()) << kept.status();
  EXPECT_TRUE(kept->has_value()) << "the stop wrote no baselines";
}

TEST_P(BackendsTest, StoppingTwiceIsHarmlessAndHealthStillAnswers) {
  std::unique_ptr<Backends> backends = Open();
  ASSERT_NE(backends, nullptr);
  FindingsStore findings(state_.get(), FindingsStoreOptions{});
  ASSERT_TRUE(findings.Load().ok());
  backends->MirrorFindings(findings);
  for (int i = 0; i < 2; ++i) {
    backends->BeginStop(absl::Seconds(1));
    backends->Leave();
  }
  // /healthz and /metrics still answer after the stop.
  std::string text;
  backends->AppendHealth(&text);
  std::string metrics;
  backends->AppendMetrics(RegistryWatchStats{}, &metrics);
  // Only a cluster names its collectors.
  const bool embedded = GetParam() == Mode::kEmbedded;
  EXPECT_EQ(backends->collector_id(), embedded ? "" : "collector-a");
  EXPECT_EQ(metrics.find("fabricdiag_cluster_") == std::string::npos, embedded);
  // The node facts are counted in both modes.
  EXPECT_NE(metrics.find("fabricdiag_node_facts_nodes 0\n"), std::string::npos);
}

// Both bundles hold what the ingest puts in their node facts.
TEST_P(BackendsTest, ExposeTheNodeFacts) {
  std::unique_ptr<Backends> backends = Open();
  ASSERT_NE(backends, nullptr);
  v1::NodeFacts facts;
  facts.set_node("gpu-001");
  facts.set_gpus_read(true);
  ASSERT_TRUE(backends->node_facts().Put(facts).ok());
  const absl::Time deadline = absl::Now() + absl::Seconds(20);
  while (backends->node_facts().Snapshot()->count("gpu-001") == 0 &&
         absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  EXPECT_EQ(backends->node_facts().Snapshot()->count("gpu-001"), 1u);
  backends->BeginStop(absl::Seconds(1));
  backends->Leave();
}

// What only a cluster has: another collector to share with.
class ClusterBackendsTest : public BackendsTest {};

// A cluster's collectors share the facts: what reaches one through its
// agent is held by another, and by the first after its restart (its agents
// need not reconnect first). Embedded, one collector has no one to share
// with, and relearns from its agents after a restart.
TEST_P(ClusterBackendsTest, NodeFactsReachEveryCollectorOfACluster) {
  std::unique_ptr<Backends> a = Open();
  ASSERT_NE(a, nullptr);
  testing::TempDir b_dir;
  absl::StatusOr<std::unique_ptr<StateStore>> b_state =
      StateStore::Open(b_dir.path(), &clock_);
  ASSERT_TRUE(b_state.ok()) << b_state.status();
  absl::StatusOr<std::unique_ptr<Backends>> b = ClusterBackends(
      {nats_->urls(), "collector-b", 1, absl::Seconds(1), absl::Seconds(30)},
      b_state->get());
  ASSERT_TRUE(b.ok()) << b.status();
  v1::NodeFacts facts;
  facts.set_node("gpu-001");
  facts.set_lldp_source("lldpd");
  v1::LldpNeighbor* n = facts.add_lldp_neighbors();
  n->set_local_port("eth0");
  n->set_system_name("leaf-1");
  n->set_port_id("swp1");
  ASSERT_TRUE(a->node_facts().Put(facts).ok());
  EXPECT_TRUE(testing::Eventually(
      [&] { return (*b)->node_facts().Snapshot()->count("gpu-001") == 1; }));
  // Counted once the write is acknowledged, which may be after B saw it.
  std::string metrics;
  EXPECT_TRUE(testing::Eventually([&] {
    metrics.clear();
    a->AppendMetrics(RegistryWatchStats{}, &metrics);
    return absl::StrContains(metrics, "fabricdiag_node_facts_writes_total 1\n");
  })) << metrics;

  Restart(a);
  ASSERT_NE(a, nullptr);
  ASSERT_EQ(a->node_facts().Snapshot()->count("gpu-001"), 1u);
  EXPECT_EQ(
      a->node_facts().Snapshot()->at("gpu-001")->lldp_neighbors(0).port_id(),
      "swp1");
  (*b)->BeginStop(absl::Seconds(1));
  (*b)->Leave();
}

INSTANTIATE_TEST_SUITE_P(Both, BackendsTest,
                         ::testing::Values(Mode::kEmbedded, Mode::kCluster),
                         [](const ::testing::TestParamInfo<Mode>& mode) {
                           return mode.param == Mode::kEmbedded ? "Embedded"
                                                                : "JetStream";
                         });
INSTANTIATE_TEST_SUITE_P(Cluster, ClusterBackendsTest,
                         ::testing::Values(Mode::kCluster),
                         [](const ::testing::TestParamInfo<Mode>&) {
                           return "JetStream";
                         });

}  // namespace
}  // namespace fabricdiag::collector
