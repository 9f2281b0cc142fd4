#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "absl/strings/str_cat.h"
#include "analysis/finding.h"
#include "analysis/layout_model.h"
#include "analysis/layout_parse.h"
#include "collector/declared/file_declared_state.h"
#include "collector/declared/layout_metrics.h"
#include "collector/declared/layout_registry.h"
#include "collector/findings/findings_metrics.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "prometheus/text_serializer.h"
#include "tests/testing/promtool.h"
#include "tests/testing/temp_dir.h"

namespace fabricdiag::collector {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

using ScopedTempDir = ::fabricdiag::testing::TempDir;

analysis::Finding Pfc(const std::string& node, const std::string& group) {
  analysis::Finding r;
  r.kind = "pfc_storm";
  r.severity = analysis::Severity::kCritical;
  r.job = "moe-42";
  r.node = node;
  r.device = "mlx5_2";
  r.group = group;
  r.summary = "pause storm";
  return r;
}

class StateMetricsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<StateStore>> state =
        StateStore::Open(tmp_.path(), &clock_);
    ASSERT_TRUE(state.ok()) << state.status();
    state_ = *std::move(state);
    declared_ = std::make_unique<FileDeclaredState>(state_.get());
    registry_ = std::make_unique<LayoutRegistry>(declared_.get(), &clock_);
    ASSERT_TRUE(registry_->Load().ok());
    findings_ =
        std::make_unique<FindingsStore>(state_.get(), FindingsStoreOptions{});
    ASSERT_TRUE(findings_->Load().ok());
    metrics_ = std::make_unique<FindingsMetrics>(findings_.get(),
                                                 registry_.get(), state_.get());
  }

  // What the collector's /metrics serves: the families, then the layouts'
  // pre-rendered series.
  std::string Text() const {
    std::string text =
        prometheus::TextSerializer().Serialize(metrics_->Collect());
    AppendLayoutMetrics(*registry_->Snapshot(), &text);
    return text;
  }

  ScopedTempDir tmp_;
  FakeClock clock_;
  std::unique_ptr<StateStore> state_;
  std::unique_ptr<FileDeclaredState> declared_;
  std::unique_ptr<LayoutRegistry> registry_;
  std::unique_ptr<FindingsStore> findings_;
  std::unique_ptr<FindingsMetrics> metrics_;
};

TEST_F(StateMetricsTest, ActiveFindingsAreOneSeriesEachUntilResolved) {
  analysis::Finding down;
  down.kind = "agent_down";
  down.severity = analysis::Severity::kWarning;
  down.node = "gpu-007";
  ASSERT_TRUE(
      findings_->Update({Pfc("gpu-003", "")}, clock_.Now(), "pfc").ok());
  ASSERT_TRUE(findings_->Update({down}, clock_.Now(), "liveness").ok());
  std::string text = Text();
  EXPECT_THAT(text, HasSubstr("fabricdiag_finding_active{kind=\"pfc_storm\","
                              "severity=\"critical\",job=\"moe-42\","
                              "node=\"gpu-003\",device=\"mlx5_2\","
                              "silenced=\"false\",acked=\"false\","
                              "id=\"f-000001\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("fabricdiag_finding_active{kind=\"agent_down\","
                              "severity=\"warning\",job=\"\","
                              "node=\"gpu-007\",device=\"\","
                              "silenced=\"false\",acked=\"false\","
                              "id=\"f-000002\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("fabricdiag_finding_info{id=\"f-000001\","
                              "summary=\"" +
                              findings_->Active()[0].summary() + "\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("fabricdiag_findings_opened_total{kind="
                              "\"pfc_storm\"} 1\n"));

  ASSERT_TRUE(findings_->Update({}, clock_.Now(), "pfc").ok());
  text = Text();
  EXPECT_THAT(text, Not(HasSubstr("kind=\"pfc_storm\",severity")));
  EXPECT_THAT(text, HasSubstr("fabricdiag_findings_resolved_total{kind="
                              "\"pfc_storm\"} 1\n"));
  // Kinds never seen are present at 0, so rate() works from the start.
  EXPECT_THAT(text, HasSubstr("fabricdiag_findings_opened_total{kind="
                              "\"ecmp_imbalance\"} 0\n"));
}

TEST_F(StateMetricsTest, LayoutGroupsAndUplinksAreSeriesForDashboards) {
  std::string text = Text();
  EXPECT_THAT(text, Not(HasSubstr("fabricdiag_layout_group_member{")));
  EXPECT_THAT(text, Not(HasSubstr("fabricdiag_topology_uplink{")));

  // tp 2 inside each node, dp 2 across them: tp:0 = gpu-000 GPUs 0-1.
  absl::StatusOr<v1::Layout> layout = analysis::ParseLayout(
      "job: j\ngpus_per_node: 2\nparallelism: {tp: 2, pp: 1, dp: 2}\n"
      "hosts: [gpu-000, gpu-001]\nrails: [mlx5_0, mlx5_1]\n");
  ASSERT_TRUE(layout.ok()) << layout.status();
  ASSERT_TRUE(registry_->Apply(*layout).ok());
  absl::StatusOr<v1::Topology> topology = analysis::ParseTopology(
      "switches:\n  - {name: leaf-0, uplinks: [swp49, swp50]}\nlinks: []\n");
  ASSERT_TRUE(topology.ok()) << topology.status();
  ASSERT_TRUE(registry_->ApplyTopology(*topology).ok());

  text = Text();
  for (const char* series :
       {"{job=\"j\",group=\"tp:0\",node=\"gpu-000\",device=\"mlx5_0\"} 1",
        "{job=\"j\",group=\"tp:0\",node=\"gpu-000\",device=\"mlx5_1\"} 1",
        "{job=\"j\",group=\"dp:1\",node=\"gpu-001\",device=\"mlx5_1\"} 1"}) {
    EXPECT_THAT(text, HasSubstr(absl::StrCat("fabricdiag_layout_group_member",
                                             series)));
  }
  // pp and ep have one rank per group here: no series.
  EXPECT_THAT(text, Not(HasSubstr("group=\"pp:")));
  EXPECT_THAT(
      text, HasSubstr("fabricdiag_layout_group_member_series{job=\"j\"} 8\n"));
  EXPECT_THAT(text, HasSubstr("fabricdiag_topology_uplink{node=\"leaf-0\","
                              "netdev=\"swp50\"} 1\n"));
}

// A 200k-GPU job would be ~800k series (80 MB per scrape): over the cap a
// layout exports none, says so, and costs the scrape nothing.
TEST_F(StateMetricsTest, HugeLayoutsExportNoGroupSeriesAndSaySo) {
  v1::Layout big;
  big.set_job("huge");
  big.set_gpus_per_node(8);
  big.mutable_parallelism()->set_tp(8);
  big.mutable_parallelism()->set_pp(1);
  big.mutable_parallelism()->set_dp(2048);
  for (int i = 0; i < 2048; ++i) big.add_hosts(absl::StrCat("gpu-", i));
  for (int i = 0; i < 8; ++i) big.add_rails(absl::StrCat("mlx5_", i));
  ASSERT_TRUE(registry_->Apply(big).ok());
  absl::StatusOr<analysis::LayoutModel> model =
      analysis::LayoutModel::Build(big);
  ASSERT_TRUE(model.ok());
  // 16,384 tp + 16,384 dp series: over a cap of 30,000, under 40,000.
  EXPECT_EQ(RenderLayoutSeries(*model, 30000).group_member_series, 0u);
  EXPECT_EQ(RenderLayoutSeries(*model, 30000).omitted_series, 32768u);
  EXPECT_EQ(RenderLayoutSeries(*model, 40000).group_member_series, 32768u);

  big.set_job("huger");
  big.mutable_parallelism()->set_dp(4096);
  for (int i = 2048; i < 4096; ++i) big.add_hosts(absl::StrCat("gpu-", i));
  ASSERT_TRUE(registry_->Apply(big).ok());
  const std::string text = Text();
  EXPECT_THAT(text, HasSubstr("fabricdiag_layout_group_member_series{job="
                              "\"huge\"} 32768\n"));
  EXPECT_THAT(text, HasSubstr("fabricdiag_layout_group_member_series{job="
                              "\"huger\"} 0\n"));
  EXPECT_THAT(text, Not(HasSubstr("job=\"huger\",group=")));
}

// Two findings differing only in group are two series (their ids differ),
// never one series twice in a scrape.
TEST_F(StateMetricsTest, FindingsDifferingOnlyInGroupAreSeriesOfTheirOwn) {
  ASSERT_TRUE(findings_
                  ->Update({Pfc("gpu-003", "tp:1"), Pfc("gpu-003", "tp:2")},
                           clock_.Now(), "pfc")
                  .ok());
  ASSERT_EQ(findings_->Active().size(), 2u);
  const std::string text = Text();
  EXPECT_THAT(text, HasSubstr("acked=\"false\",id=\"f-000001\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("acked=\"false\",id=\"f-000002\"} 1\n"));
}

// A job's layout labels are exported behind label_, after the finding's
// own labels, so that a layout label named `kind` or `job` clashes with
// nothing.
TEST_F(StateMetricsTest, JobLabelsArePrefixedLabelsOfTheSeries) {
  analysis::Finding owned = Pfc("gpu-003", "");
  owned.labels = {{"team", "ml-infra"}, {"job", "x"}, {"kind", "y"}};
  ASSERT_TRUE(findings_->Update({owned}, clock_.Now(), "pfc").ok());
  EXPECT_THAT(Text(),
              HasSubstr("fabricdiag_finding_active{kind=\"pfc_storm\","
                        "severity=\"critical\",job=\"moe-42\","
                        "node=\"gpu-003\",device=\"mlx5_2\","
                        "silenced=\"false\",acked=\"false\","
                        "id=\"f-000001\",label_job=\"x\",label_kind=\"y\","
                        "label_team=\"ml-infra\"} 1\n"));
}

TEST_F(StateMetricsTest, StoreHealthAndWatchers) {
  std::unique_ptr<Watcher> watcher = findings_->Watch("");
  std::string text = Text();
  EXPECT_THAT(text, HasSubstr("fabricdiag_finding_watchers 1\n"));
  EXPECT_THAT(text, HasSubstr("fabricdiag_layouts 0\n"));
  EXPECT_THAT(text, HasSubstr("fabricdiag_state_write_errors_total 0\n"));
  EXPECT_THAT(text, HasSubstr("fabricdiag_state_damaged_files 0\n"));
}

// promtool is the reference for the exposition format and naming lint.
TEST_F(StateMetricsTest, PassesPromtoolCheckMetrics) {
  if (!::fabricdiag::testing::PromtoolInstalled()) {
    GTEST_SKIP() << "promtool not installed (apt-get install prometheus)";
  }
  analysis::Finding owned = Pfc("gpu-003", "");
  owned.labels = {{"team", "ml-infra"}};
  ASSERT_TRUE(findings_->Update({owned}, clock_.Now(), "pfc").ok());
  std::unique_ptr<Watcher> watcher = findings_->Watch("");
  std::string lint;
  EXPECT_TRUE(::fabricdiag::testing::PromtoolAccepts(Text(), &lint)) << lint;
}

}  // namespace
}  // namespace fabricdiag::collector
