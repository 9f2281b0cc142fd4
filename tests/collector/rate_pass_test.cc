// The rate pass on two threads finds what the window run, the baselines'
// update and the recent run found in turn on one, and leaves the same
// baselines.
#include "collector/rate_pass.h"

#include <string>
#include <vector>

#include "analysis/finding_wire.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "tests/testing/scenario_builder.h"

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

}  // namespace
}  // namespace fabricdiag::collector
