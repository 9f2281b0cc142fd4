#include "analysis/straggler_nic.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "analysis/analyzer_util.h"
#include "analysis/layout_parse.h"

namespace fabricdiag::analysis {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Key;
using ::testing::Not;
using ::testing::SizeIs;

constexpr double kLinkRate = 50e9;  // 400 Gb/s in bytes/s
constexpr double kAllToAll = 10e9;  // healthy traffic per NIC and direction
constexpr double kInf = std::numeric_limits<double>::infinity();

std::string LayoutYaml(const std::string& job, int hosts,
                       const std::string& parallelism,
                       const std::string& rails) {
  std::vector<std::string> names;
  for (int h = 0; h < hosts; ++h) {
    names.push_back(absl::StrFormat("gpu-%03d", h));
  }
  std::string yaml = absl::StrCat(
      "job: ", job, "\ngpus_per_node: 8\nparallelism: ", parallelism,
      "\nhosts: [", absl::StrJoin(names, ", "), "]\nmodel: {experts: 64}\n");
  if (!rails.empty()) absl::StrAppend(&yaml, "rails: ", rails, "\n");
  return yaml;
}

LayoutModel Build(const std::string& yaml) {
  absl::StatusOr<v1::Layout> layout = ParseLayout(yaml);
  EXPECT_TRUE(layout.ok()) << layout.status();
  absl::StatusOr<LayoutModel> model = LayoutModel::Build(*layout);
  EXPECT_TRUE(model.ok()) << model.status();
  return *std::move(model);
}

constexpr char kEightRails[] =
    "[mlx5_0, mlx5_1, mlx5_2, mlx5_3, mlx5_4, mlx5_5, mlx5_6, mlx5_7]";
constexpr char kFourSharedRails[] =
    "[mlx5_0, mlx5_0, mlx5_1, mlx5_1, mlx5_2, mlx5_2, mlx5_3, mlx5_3]";

// 8 hosts x 8 GPUs, tp=8 dp=8 ep=8: dp:k and ep:k are both rail k across the
// 8 hosts (the same NICs).
LayoutModel MoeJob(const std::string& job = "moe-train-42") {
  return Build(LayoutYaml(job, 8, "{tp: 8, pp: 1, dp: 8, ep: 8}", kEightRails));
}

using Port = std::pair<std::string, std::string>;  // (host, device)
using Ports = std::map<Port, PortSignals>;

// Every NIC of `model` busy with `base` bytes/s each way, +-`noise` (30%)
// routing skew from a seeded generator, on a healthy 400 Gb/s link.
Ports HealthyPorts(const LayoutModel& model, uint32_t seed,
                   double base = kAllToAll, double noise = 0.3) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> skew(1 - noise, 1 + noise);
  Ports ports;
  for (uint32_t r = 0; r < model.WorldSize(); ++r) {
    Port key{model.HostName(r), std::string(model.NicName(r))};
    if (key.second.empty() || ports.count(key) > 0) continue;
    PortSignals& s = ports[key];
    s.rx_bytes = base * skew(rng);
    s.tx_bytes = base * skew(rng);
    s.link_rate = kLinkRate;
    s.expected_rate = kLinkRate;
  }
  return ports;
}

// Every NIC at exactly `each` bytes/s in each direction.
Ports FlatPorts(const LayoutModel& model, double each = kAllToAll,
                double link_rate = kLinkRate) {
  Ports ports = HealthyPorts(model, 0, each, 0);
  for (auto& [key, s] : ports) {
    s.link_rate = link_rate;
    s.expected_rate = link_rate;
  }
  return ports;
}

void SetThroughput(Ports& ports, const Port& port, double throughput) {
  ports[port].rx_bytes = throughput / 2;
  ports[port].tx_bytes = throughput / 2;
}

std::vector<Finding> Straggle(const Ports& ports,
                              std::vector<const LayoutModel*> models,
                              const AnalysisConfig& config = AnalysisConfig()) {
  FabricView view;
  for (const auto& [key, signals] : ports) {
    view.AddPort(key.first, key.second).s = signals;
  }
  view.Finish();
  AnalysisInput in;
  in.view = &view;
  in.layouts = std::move(models);
  in.config = &config;
  return StragglerNicFindings(in);
}

std::vector<std::string> Where(const std::vector<Finding>& found) {
  std::vector<std::string> out;
  for (const Finding& f : found) {
    out.push_back(
        absl::StrCat(f.job, " ", f.node, " ", f.device, " ", f.group));
  }
  return out;
}

TEST(StragglerNicTest, SlowMemberIsReportedOnceForItsDpAndEpGroup) {
  LayoutModel model = MoeJob();
  ASSERT_EQ(model.GroupOf(Dim::kDp, 43), 3u);
  ASSERT_EQ(model.GroupOf(Dim::kEp, 43), 3u);
  Ports ports = HealthyPorts(model, 1);
  ports[{"gpu-005", "mlx5_3"}].rx_bytes = 2.5e9;
  ports[{"gpu-005", "mlx5_3"}].tx_bytes = 2.6e9;
  std::vector<double> group;
  for (int h = 0; h < 8; ++h) {
    const PortSignals& s = ports[{absl::StrFormat("gpu-%03d", h), "mlx5_3"}];
    group.push_back(s.rx_bytes + s.tx_bytes);
  }
  const double median = Median(group);

  std::vector<Finding> found = Straggle(ports, {&model});
  ASSERT_THAT(found, SizeIs(1));
  const Finding& f = found[0];
  EXPECT_EQ(f.kind, "straggler_nic");
  EXPECT_EQ(f.severity, Severity::kWarning);
  EXPECT_EQ(f.job, "moe-train-42");
  EXPECT_EQ(f.node, "gpu-005");
  EXPECT_THAT(f.nodes, ElementsAre("gpu-005"));
  EXPECT_EQ(f.device, "mlx5_3");
  EXPECT_EQ(f.group, "dp:3");
  EXPECT_EQ(f.evidence_text.at("same_nics_as"), "ep:3");
  EXPECT_EQ(f.evidence_text.at("ranks"), "43");
  EXPECT_DOUBLE_EQ(f.evidence.at("throughput_bytes_per_second"), 5.1e9);
  EXPECT_DOUBLE_EQ(f.evidence.at("rx_bytes_per_second"), 2.5e9);
  EXPECT_DOUBLE_EQ(f.evidence.at("tx_bytes_per_second"), 2.6e9);
  EXPECT_DOUBLE_EQ(f.evidence.at("group_median_bytes_per_second"), median);
  EXPECT_DOUBLE_EQ(f.evidence.at("ratio_to_median"), 5.1e9 / median);
  EXPECT_LT(f.evidence.at("ratio_to_median"), 0.5);
  // Below half the median: how far below, as a factor past the threshold.
  EXPECT_DOUBLE_EQ(f.evidence.at(kOverThresholdEvidence), 0.5 * median / 5.1e9);
  EXPECT_DOUBLE_EQ(f.evidence.at("group_members_reporting"), 8);
  EXPECT_THAT(
      f.summary,
      AllOf(HasSubstr("gpu-005 mlx5_3 moves 5.1 GB/s"),
            HasSubstr(absl::StrCat(FormatRatio(5.1e9 / median),
                                   " the median of dp:3 (",
                                   FormatBytesRate(median), " over 8 NICs)")),
            HasSubstr("moe-train-42"), HasSubstr("rank 43"),
            HasSubstr("other 7 NICs wait"), Not(HasSubstr("link runs"))));
}

TEST(StragglerNicTest, HalfSpeedLinkIsReportedWithItsCause) {
  LayoutModel model = MoeJob();
  Ports ports = HealthyPorts(model, 2);
  // A 400G port that came up at 200G and is saturated there in neither
  // direction: it moves less than half of its peers.
  PortSignals& slow = ports[{"gpu-002", "mlx5_6"}];
  slow.link_rate = 25e9;
  slow.rx_bytes = 4e9;
  slow.tx_bytes = 4e9;
  std::vector<Finding> found = Straggle(ports, {&model});
  ASSERT_THAT(Where(found), ElementsAre("moe-train-42 gpu-002 mlx5_6 dp:6"));
  EXPECT_DOUBLE_EQ(found[0].evidence.at("link_rate_bytes_per_second"), 25e9);
  EXPECT_DOUBLE_EQ(found[0].evidence.at("expected_rate_bytes_per_second"),
                   50e9);
  EXPECT_THAT(found[0].summary,
              HasSubstr("its link runs at 25 GB/s instead of 50 GB/s"));
}

TEST(StragglerNicTest, DownPortIsLeftToLinkFlap) {
  LayoutModel model = MoeJob();
  Ports ports = HealthyPorts(model, 3);
  PortSignals& down = ports[{"gpu-001", "mlx5_1"}];
  down.link_up = false;
  down.rx_bytes = 0;
  down.tx_bytes = 0;
  EXPECT_THAT(Straggle(ports, {&model}), IsEmpty());
  // The same zero on a port that is up is a straggler: not vacuous.
  down.link_up = true;
  EXPECT_THAT(Where(Straggle(ports, {&model})),
              ElementsAre("moe-train-42 gpu-001 mlx5_1 dp:1"));
}

TEST(StragglerNicTest, DownPortsDoNotDragTheMedianDown) {
  LayoutModel model = MoeJob();
  Ports ports = FlatPorts(model);  // 20 GB/s rx+tx each
  // Four of eight down at zero would put the median at 10 GB/s and hide a
  // member at 9 GB/s; the live members' median stays 20 GB/s.
  for (int h : {0, 1, 2, 3}) {
    PortSignals& s = ports[{absl::StrFormat("gpu-%03d", h), "mlx5_0"}];
    s.link_up = false;
    s.rx_bytes = 0;
    s.tx_bytes = 0;
  }
  SetThroughput(ports, {"gpu-004", "mlx5_0"}, 9e9);
  std::vector<Finding> found = Straggle(ports, {&model});
  ASSERT_THAT(Where(found), ElementsAre("moe-train-42 gpu-004 mlx5_0 dp:0"));
  EXPECT_DOUBLE_EQ(found[0].evidence.at("group_median_bytes_per_second"), 20e9);
  EXPECT_DOUBLE_EQ(found[0].evidence.at("group_members_reporting"), 4);
}

TEST(StragglerNicTest, HealthySkewRaisesNothing) {
  LayoutModel model = MoeJob();
  LayoutModel shared = Build(LayoutYaml(
      "shared", 8, "{tp: 2, pp: 1, dp: 32, ep: 8}", kFourSharedRails));
  for (uint32_t seed = 0; seed < 200; ++seed) {
    EXPECT_THAT(Straggle(HealthyPorts(model, seed), {&model}), IsEmpty())
        << "seed " << seed;
    EXPECT_THAT(Straggle(HealthyPorts(shared, seed), {&shared}), IsEmpty())
        << "seed " << seed;
  }
}

TEST(StragglerNicTest, HotExpertDoesNotTurnItsPeersIntoStragglers) {
  LayoutModel model = MoeJob();
  Ports ports = HealthyPorts(model, 4);
  // Two hot experts in ep:2 receive 4-5x: the median of eight does not move.
  ports[{"gpu-003", "mlx5_2"}].rx_bytes = 46e9;
  ports[{"gpu-003", "mlx5_2"}].tx_bytes = 20e9;
  ports[{"gpu-006", "mlx5_2"}].rx_bytes = 44e9;
  EXPECT_THAT(Straggle(ports, {&model}), IsEmpty());
}

TEST(StragglerNicTest, IdleGroupHasNobodyWaiting) {
  LayoutModel model = MoeJob();
  // 10% of a 50 GB/s link is 5 GB/s of median rx+tx.
  Ports idle = FlatPorts(model, 2.45e9);  // median 4.9 GB/s: idle
  SetThroughput(idle, {"gpu-000", "mlx5_0"}, 0.1e9);
  EXPECT_THAT(Straggle(idle, {&model}), IsEmpty());
  Ports busy = FlatPorts(model, 2.5e9);  // median exactly 5 GB/s: busy
  SetThroughput(busy, {"gpu-000", "mlx5_0"}, 0.1e9);
  EXPECT_THAT(Straggle(busy, {&model}), SizeIs(1));
}

TEST(StragglerNicTest, UnknownLinkRatesUseTheAbsoluteBusyFloor) {
  LayoutModel model = MoeJob();
  // min_median_bytes_per_second = 1.25 GB/s.
  for (double unknown : {0.0, kAbsent, kInf, -1.0}) {
    Ports idle = FlatPorts(model, 0.6e9, unknown);  // 1.2 GB/s
    SetThroughput(idle, {"gpu-000", "mlx5_0"}, 0.1e9);
    EXPECT_THAT(Straggle(idle, {&model}), IsEmpty()) << unknown;
    Ports busy = FlatPorts(model, 0.625e9, unknown);  // 1.25 GB/s
    SetThroughput(busy, {"gpu-000", "mlx5_0"}, 0.1e9);
    std::vector<Finding> found = Straggle(busy, {&model});
    ASSERT_THAT(found, SizeIs(1)) << unknown;
    EXPECT_THAT(found[0].evidence,
                Not(testing::Contains(Key("link_rate_bytes_per_second"))));
  }
}

TEST(StragglerNicTest, BelowMedianBoundaryIsStrict) {
  LayoutModel model = MoeJob();
  Ports ports = FlatPorts(model);                     // median 20 GB/s
  SetThroughput(ports, {"gpu-007", "mlx5_7"}, 10e9);  // exactly 0.5x
  EXPECT_THAT(Straggle(ports, {&model}), IsEmpty());
  SetThroughput(ports, {"gpu-007", "mlx5_7"}, 9.9e9);
  std::vector<Finding> found = Straggle(ports, {&model});
  ASSERT_THAT(found, SizeIs(1));
  EXPECT_DOUBLE_EQ(found[0].evidence.at("ratio_to_median"), 0.495);

  AnalysisConfig lenient;
  lenient.straggler_nic.below_median_fraction = 0.4;
  EXPECT_THAT(Straggle(ports, {&model}, lenient), IsEmpty());
}

TEST(StragglerNicTest, DistinctDpAndEpGroupsEachReportTheNic) {
  // tp=2 on 4 NICs per host: GPUs 2k, 2k+1 share mlx5_k. dp groups span all
  // 8 hosts (32 NICs), ep groups two hosts (8 NICs); both TP ranks behind a
  // NIC see the same NIC set, so each set is judged once.
  LayoutModel model = Build(LayoutYaml(
      "shared", 8, "{tp: 2, pp: 1, dp: 32, ep: 8}", kFourSharedRails));
  Ports ports = HealthyPorts(model, 5);
  SetThroughput(ports, {"gpu-000", "mlx5_1"}, 3e9);
  std::vector<Finding> found = Straggle(ports, {&model});
  const std::string dp = GroupName({Dim::kDp, model.GroupOf(Dim::kDp, 2)});
  const std::string dp3 = GroupName({Dim::kDp, model.GroupOf(Dim::kDp, 3)});
  const std::string ep = GroupName({Dim::kEp, model.GroupOf(Dim::kEp, 2)});
  const std::string ep3 = GroupName({Dim::kEp, model.GroupOf(Dim::kEp, 3)});
  ASSERT_THAT(Where(found),
              ElementsAre(absl::StrCat("shared gpu-000 mlx5_1 ", dp),
                          absl::StrCat("shared gpu-000 mlx5_1 ", ep)));
  EXPECT_EQ(found[0].evidence_text.at("same_nics_as"), dp3);
  EXPECT_EQ(found[1].evidence_text.at("same_nics_as"), ep3);
  // Both ranks on the NIC wait on it.
  EXPECT_EQ(found[0].evidence_text.at("ranks"), "2-3");
  EXPECT_DOUBLE_EQ(found[0].evidence.at("group_members_reporting"), 32);
  EXPECT_DOUBLE_EQ(found[1].evidence.at("group_members_reporting"), 8);
}

TEST(StragglerNicTest, SeveralStragglersAcrossJobsAreSorted) {
  LayoutModel a = MoeJob("job-a");
  LayoutModel b = Build(LayoutYaml("job-b", 8, "{tp: 8, pp: 1, dp: 8}",
                                   kEightRails));  // dense: dp groups only
  Ports ports = HealthyPorts(a, 6);
  SetThroughput(ports, {"gpu-006", "mlx5_5"}, 1e9);
  SetThroughput(ports, {"gpu-001", "mlx5_2"}, 2e9);
  SetThroughput(ports, {"gpu-004", "mlx5_2"}, 3e9);
  std::vector<Finding> found = Straggle(ports, {&b, &a});
  EXPECT_THAT(
      Where(found),
      ElementsAre("job-a gpu-001 mlx5_2 dp:2", "job-a gpu-004 mlx5_2 dp:2",
                  "job-a gpu-006 mlx5_5 dp:5", "job-b gpu-001 mlx5_2 dp:2",
                  "job-b gpu-004 mlx5_2 dp:2", "job-b gpu-006 mlx5_5 dp:5"));
  EXPECT_EQ(Where(Straggle(ports, {&a, &b})), Where(found));
  EXPECT_THAT(found[3].evidence_text,
              Not(testing::Contains(Key("same_nics_as"))));
}

TEST(StragglerNicTest, AbsentOrBrokenSignalsNeverFindAndNeverCrash) {
  LayoutModel model = MoeJob();
  Ports nan_ports = HealthyPorts(model, 7);
  for (auto& [key, s] : nan_ports) s = PortSignals();
  EXPECT_THAT(Straggle(nan_ports, {&model}), IsEmpty());

  // A member missing one direction, or reporting an infinite, huge or
  // negative one, is not compared; it is never the straggler.
  for (double broken : {kAbsent, kInf, -kInf, -5e9, 1e308}) {
    Ports ports = FlatPorts(model);
    ports[{"gpu-003", "mlx5_4"}].tx_bytes = broken;
    if (broken == 1e308) ports[{"gpu-003", "mlx5_4"}].rx_bytes = 1e308;
    SetThroughput(ports, {"gpu-005", "mlx5_4"}, 1e9);
    EXPECT_THAT(Where(Straggle(ports, {&model})),
                ElementsAre("moe-train-42 gpu-005 mlx5_4 dp:4"))
        << broken;
  }
}

TEST(StragglerNicTest, NeedsMinGroupSizeReportingMembers) {
  LayoutModel model = MoeJob();
  Ports ports = FlatPorts(model);
  SetThroughput(ports, {"gpu-007", "mlx5_0"}, 1e9);
  for (int h : {0, 1, 2, 3, 4}) {
    ports.erase({absl::StrFormat("gpu-%03d", h), "mlx5_0"});
  }
  EXPECT_THAT(Straggle(ports, {&model}), SizeIs(1));  // 3 left
  ports.erase({"gpu-005", "mlx5_0"});
  EXPECT_THAT(Straggle(ports, {&model}), IsEmpty());  // 2 left
}

TEST(StragglerNicTest, HostileInputsRaiseNothing) {
  LayoutModel model = MoeJob();
  AnalysisConfig config;
  FabricView empty;
  empty.Finish();
  AnalysisInput in;
  EXPECT_THAT(StragglerNicFindings(in), IsEmpty());
  in.view = &empty;
  EXPECT_THAT(StragglerNicFindings(in), IsEmpty());
  in.config = &config;
  in.layouts = {nullptr, &model};
  EXPECT_THAT(StragglerNicFindings(in), IsEmpty());

  // The layout's hosts never reported: only other hosts did.
  Ports ports = FlatPorts(model);
  Ports renamed;
  for (const auto& [key, s] : ports) {
    renamed[{absl::StrCat("x", key.first), key.second}] = s;
  }
  SetThroughput(renamed, {"xgpu-000", "mlx5_0"}, 1e9);
  EXPECT_THAT(Straggle(renamed, {&model}), IsEmpty());

  // No rails: no NIC to look up.
  LayoutModel no_rails =
      Build(LayoutYaml("no-rails", 8, "{tp: 8, pp: 1, dp: 8, ep: 8}", ""));
  SetThroughput(ports, {"gpu-000", "mlx5_0"}, 1e9);
  EXPECT_THAT(Straggle(ports, {&no_rails}), IsEmpty());
  EXPECT_THAT(Straggle(ports, {&model}), SizeIs(1));

  // dp = 1: no group to compare in.
  LayoutModel single =
      Build(LayoutYaml("tp-only", 8, "{tp: 8, pp: 8, dp: 1}", kEightRails));
  EXPECT_THAT(Straggle(ports, {&single}), IsEmpty());
}

}  // namespace
}  // namespace fabricdiag::analysis
