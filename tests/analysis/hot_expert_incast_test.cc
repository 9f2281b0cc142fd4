#include "analysis/hot_expert_incast.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
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
#include "analysis/straggler_nic.h"

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
constexpr double kAllToAll = 10e9;  // healthy MoE all-to-all per NIC
constexpr double kInf = std::numeric_limits<double>::infinity();

// A layout file of `hosts` hosts gpu-000..., 8 GPUs each.
std::string LayoutYaml(const std::string& job, int hosts,
                       const std::string& parallelism, const std::string& rails,
                       const std::string& model) {
  std::vector<std::string> names;
  for (int h = 0; h < hosts; ++h)
    names.push_back(absl::StrFormat("gpu-%03d", h));
  std::string yaml = absl::StrCat(
      "job: ", job, "\ngpus_per_node: 8\n", "parallelism: ", parallelism, "\n",
      "hosts: [", absl::StrJoin(names, ", "), "]\n");
  if (!rails.empty()) absl::StrAppend(&yaml, "rails: ", rails, "\n");
  if (!model.empty()) absl::StrAppend(&yaml, "model: ", model, "\n");
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

// 64 ranks on 8 hosts x 8 GPUs; every EP group is one rail across the 8
// hosts (rank r on gpu-(r/8) mlx5_(r%8), EP rank r/8, 8 experts each).
LayoutModel MoeJob(const std::string& job = "moe-train-42") {
  return Build(LayoutYaml(job, 8, "{tp: 8, pp: 1, dp: 8, ep: 8}", kEightRails,
                          "{experts: 64, top_k: 2}"));
}

using Port = std::pair<std::string, std::string>;  // (host, device)
using Ports = std::map<Port, PortSignals>;

// Every NIC of `model` as a healthy MoE all-to-all sees it: `base` bytes/s
// each way with +-`noise` (30%) routing skew from a seeded generator, a
// 400 Gb/s link, a little ECN/CNP noise and PFC enabled on priority 3 but
// idle.
Ports HealthyPorts(const LayoutModel& model, uint32_t seed,
                   double base = kAllToAll, double noise = 0.3) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> skew(1 - noise, 1 + noise);
  std::uniform_real_distribution<double> cnp(0, 300);
  Ports ports;
  for (uint32_t r = 0; r < model.WorldSize(); ++r) {
    Port key{model.HostName(r), std::string(model.NicName(r))};
    if (key.second.empty() || ports.count(key) > 0) continue;
    PortSignals& s = ports[key];
    s.rx_bytes = base * skew(rng);
    s.tx_bytes = base * skew(rng);
    s.link_rate = kLinkRate;
    s.expected_rate = kLinkRate;
    s.cnp_sent = cnp(rng);
    s.cnp_handled = cnp(rng);
    s.ecn_marked = cnp(rng);
    s.rx_discards = 0;
    s.tx_pause_fraction[3] = 0;
    s.rx_pause_fraction[3] = 0;
    s.tx_pause_frames[3] = 0;
    s.rx_pause_frames[3] = 0;
  }
  return ports;
}

FabricView ToView(const Ports& ports) {
  FabricView view;
  for (const auto& [key, signals] : ports) {
    PortView& p = view.AddPort(key.first, key.second);
    p.netdev = absl::StrCat("eth", key.second.substr(key.second.size() - 1));
    p.s = signals;
  }
  view.Finish();
  return view;
}

std::vector<Finding> Incast(const Ports& ports,
                            std::vector<const LayoutModel*> models,
                            const AnalysisConfig& config = AnalysisConfig()) {
  FabricView view = ToView(ports);
  AnalysisInput in;
  in.view = &view;
  in.layouts = std::move(models);
  in.config = &config;
  return HotExpertIncastFindings(in);
}

std::vector<Finding> Stragglers(const Ports& ports,
                                std::vector<const LayoutModel*> models) {
  FabricView view = ToView(ports);
  AnalysisConfig config;
  AnalysisInput in;
  in.view = &view;
  in.layouts = std::move(models);
  in.config = &config;
  return StragglerNicFindings(in);
}

// The median RX of the NICs of the EP group holding `rank`.
double GroupMedianRx(const LayoutModel& model, const Ports& ports,
                     uint32_t rank) {
  std::vector<double> rx;
  for (uint32_t r : model.Group(Dim::kEp, model.GroupOf(Dim::kEp, rank))) {
    rx.push_back(
        ports.at({model.HostName(r), std::string(model.NicName(r))}).rx_bytes);
  }
  return Median(rx);
}

// "kind node device group" of each finding, for compact assertions.
std::vector<std::string> Where(const std::vector<Finding>& found) {
  std::vector<std::string> out;
  for (const Finding& f : found) {
    out.push_back(
        absl::StrCat(f.job, " ", f.node, " ", f.device, " ", f.group));
  }
  return out;
}

TEST(HotExpertIncastTest, LayoutPlacesEachEpGroupOnOneRail) {
  // The tests below rely on this placement; fail loudly if it changes.
  LayoutModel model = MoeJob();
  EXPECT_EQ(GroupName({Dim::kEp, model.GroupOf(Dim::kEp, 26)}), "ep:2");
  EXPECT_THAT(model.Group(Dim::kEp, 2),
              ElementsAre(2, 10, 18, 26, 34, 42, 50, 58));
  EXPECT_EQ(model.ExpertsOf(26)->begin, 24u);
}

TEST(HotExpertIncastTest, HotNicWithCnpsIsAWarningThatNamesRanksAndExperts) {
  LayoutModel model = MoeJob();
  Ports ports = HealthyPorts(model, 1);
  PortSignals& hot = ports[{"gpu-003", "mlx5_2"}];
  hot.rx_bytes = 46e9;
  hot.cnp_sent = 120e3;
  hot.ecn_marked = 150e3;
  const double median = GroupMedianRx(model, ports, 26);

  std::vector<Finding> found = Incast(ports, {&model});
  ASSERT_THAT(found, SizeIs(1));
  const Finding& f = found[0];
  EXPECT_EQ(f.kind, "hot_expert_incast");
  EXPECT_EQ(f.severity, Severity::kWarning);
  EXPECT_EQ(f.job, "moe-train-42");
  EXPECT_EQ(f.node, "gpu-003");
  EXPECT_THAT(f.nodes, ElementsAre("gpu-003"));
  EXPECT_EQ(f.device, "mlx5_2");
  EXPECT_EQ(f.group, "ep:2");
  EXPECT_FALSE(f.immediate);
  EXPECT_EQ(f.evidence_text.at("ranks"), "26");
  EXPECT_EQ(f.evidence_text.at("experts"), "24-31");
  EXPECT_DOUBLE_EQ(f.evidence.at("rx_bytes_per_second"), 46e9);
  EXPECT_DOUBLE_EQ(f.evidence.at("group_median_rx_bytes_per_second"), median);
  EXPECT_DOUBLE_EQ(f.evidence.at("ratio_to_median"), 46e9 / median);
  EXPECT_GE(f.evidence.at("ratio_to_median"), 4);
  // 4x the median and a quarter of the link both hold; the nearer counts.
  EXPECT_DOUBLE_EQ(f.evidence.at(kOverThresholdEvidence),
                   std::min(46e9 / (4 * median), 46e9 / (0.25 * kLinkRate)));
  EXPECT_DOUBLE_EQ(f.evidence.at("group_members_reporting"), 8);
  EXPECT_DOUBLE_EQ(f.evidence.at("link_rate_bytes_per_second"), kLinkRate);
  EXPECT_DOUBLE_EQ(f.evidence.at("rx_link_fraction"), 46e9 / kLinkRate);
  EXPECT_DOUBLE_EQ(f.evidence.at("cnp_sent_per_second"), 120e3);
  EXPECT_DOUBLE_EQ(f.evidence.at("ecn_marked_per_second"), 150e3);
  EXPECT_DOUBLE_EQ(f.evidence.at("tx_pause_fraction"), 0);
  EXPECT_DOUBLE_EQ(f.evidence.at("rx_discards_per_second"), 0);
  EXPECT_THAT(
      f.summary,
      AllOf(HasSubstr("gpu-003 mlx5_2 receives 46 GB/s"),
            HasSubstr(absl::StrCat(FormatRatio(46e9 / median),
                                   " the median of ep:2 (",
                                   FormatBytesRate(median))),
            HasSubstr("moe-train-42"), HasSubstr("rank 26 holds experts 24-31"),
            HasSubstr("CNPs at 120k/s"), HasSubstr("hot expert"),
            Not(HasSubstr("PFC")), Not(HasSubstr("drops"))));
}

TEST(HotExpertIncastTest, TransmittingPauseMakesItCritical) {
  LayoutModel model = MoeJob();
  Ports ports = HealthyPorts(model, 2);
  PortSignals& hot = ports[{"gpu-005", "mlx5_6"}];
  hot.rx_bytes = 45e9;
  hot.cnp_sent = 80e3;
  hot.tx_pause_fraction[3] = 0.12;
  hot.tx_pause_frames[3] = 400;

  std::vector<Finding> found = Incast(ports, {&model});
  ASSERT_THAT(found, SizeIs(1));
  EXPECT_EQ(found[0].severity, Severity::kCritical);
  EXPECT_EQ(found[0].group, "ep:6");
  EXPECT_EQ(found[0].evidence_text.at("experts"), "40-47");
  EXPECT_DOUBLE_EQ(found[0].evidence.at("tx_pause_fraction"), 0.12);
  EXPECT_DOUBLE_EQ(found[0].evidence.at("tx_pause_priority"), 3);
  EXPECT_DOUBLE_EQ(found[0].evidence.at("tx_pause_frames_per_second"), 400);
  EXPECT_THAT(found[0].summary,
              HasSubstr("transmits PFC pause 12% of the time on priority 3"));
}

TEST(HotExpertIncastTest, PauseFramesOnlyDriverAndDiscardsMakeItCritical) {
  LayoutModel model = MoeJob();
  Ports ports = HealthyPorts(model, 3);
  // A driver with frame counters but no pause durations (bnxt without
  // duration support): fraction absent, 500 frames/s.
  PortSignals& frames = ports[{"gpu-001", "mlx5_0"}];
  frames.rx_bytes = 44e9;
  frames.tx_pause_fraction = AbsentPerPriority();
  frames.tx_pause_frames[3] = 500;
  PortSignals& drops = ports[{"gpu-007", "mlx5_4"}];
  drops.rx_bytes = 46e9;
  drops.rx_discards = 340;

  std::vector<Finding> found = Incast(ports, {&model});
  ASSERT_THAT(Where(found), ElementsAre("moe-train-42 gpu-001 mlx5_0 ep:0",
                                        "moe-train-42 gpu-007 mlx5_4 ep:4"));
  EXPECT_EQ(found[0].severity, Severity::kCritical);
  EXPECT_THAT(found[0].evidence,
              Not(testing::Contains(Key("tx_pause_fraction"))));
  EXPECT_THAT(found[0].summary, HasSubstr("PFC pause frames at 500/s"));
  EXPECT_EQ(found[1].severity, Severity::kCritical);
  EXPECT_DOUBLE_EQ(found[1].evidence.at("rx_discards_per_second"), 340);
  EXPECT_THAT(found[1].summary, HasSubstr("drops 340/s packets"));
}

TEST(HotExpertIncastTest, PauseBelowOnePercentStaysAWarning) {
  LayoutModel model = MoeJob();
  Ports ports = HealthyPorts(model, 4);
  PortSignals& hot = ports[{"gpu-002", "mlx5_1"}];
  hot.rx_bytes = 48e9;
  hot.tx_pause_fraction[3] = 0.005;
  ASSERT_GE(48e9, 4 * GroupMedianRx(model, ports, 17));
  std::vector<Finding> found = Incast(ports, {&model});
  ASSERT_THAT(found, SizeIs(1));
  EXPECT_EQ(found[0].severity, Severity::kWarning);
  EXPECT_DOUBLE_EQ(found[0].evidence.at("tx_pause_fraction"), 0.005);
  // Background CNPs (< congestion.cnp_per_second) stay in the evidence only.
  EXPECT_LT(found[0].evidence.at("cnp_sent_per_second"), 300);
  EXPECT_THAT(found[0].summary,
              AllOf(Not(HasSubstr("CNP")), Not(HasSubstr("PFC")),
                    Not(HasSubstr("ECN"))));
}

TEST(HotExpertIncastTest, HealthyRoutingSkewRaisesNothing) {
  LayoutModel model = MoeJob();
  for (uint32_t seed = 0; seed < 200; ++seed) {
    Ports ports = HealthyPorts(model, seed);
    EXPECT_THAT(Incast(ports, {&model}), IsEmpty()) << "seed " << seed;
    EXPECT_THAT(Stragglers(ports, {&model}), IsEmpty()) << "seed " << seed;
  }
}

TEST(HotExpertIncastTest, DataParallelBurstOnEveryMemberRaisesNothing) {
  // The gradient all-reduce moves ~45 GB/s through every NIC at once: every
  // member of every group rises together, so no ratio moves.
  LayoutModel model = MoeJob();
  Ports ports = HealthyPorts(model, 5, 45e9, 0.1);
  for (auto& [key, s] : ports) s.cnp_sent = 20e3;  // busy fabric, marks
  EXPECT_THAT(Incast(ports, {&model}), IsEmpty());
  EXPECT_THAT(Stragglers(ports, {&model}), IsEmpty());
  // The same burst on one NIC only is an incast: the test is not vacuous.
  Ports one = HealthyPorts(model, 5, kAllToAll, 0);
  one[{"gpu-000", "mlx5_0"}].rx_bytes = 45e9;
  EXPECT_THAT(Where(Incast(one, {&model})),
              ElementsAre("moe-train-42 gpu-000 mlx5_0 ep:0"));
}

TEST(HotExpertIncastTest, PipelineEndStageAsymmetryRaisesNothing) {
  // 16 hosts, pp=4: stage s runs on hosts 4s..4s+3; EP groups (size 4) live
  // inside one stage. The last stage (loss, logits) receives 5x what the
  // middle stages do, the first stage less.
  LayoutModel model =
      Build(LayoutYaml("pp-job", 16, "{tp: 8, pp: 4, dp: 4, ep: 4}",
                       kEightRails, "{experts: 64}"));
  Ports ports = HealthyPorts(model, 6, 8e9, 0.2);
  std::vector<double> all_rx;
  for (auto& [key, s] : ports) {
    const int host = std::stoi(key.first.substr(4));
    if (host >= 12) s.rx_bytes *= 5;
    if (host < 4) s.rx_bytes *= 0.6;
    all_rx.push_back(s.rx_bytes);
  }
  for (uint32_t g = 0; g < model.NumGroups(Dim::kEp); ++g) {
    const auto members = model.Group(Dim::kEp, g);
    ASSERT_EQ(model.RankIn(Dim::kPp, members.front()),
              model.RankIn(Dim::kPp, members.back()));
  }
  // A job-wide comparison would call last-stage NICs hot.
  const double job_median = Median(all_rx);
  EXPECT_GE(*std::max_element(all_rx.begin(), all_rx.end()), 4 * job_median);
  EXPECT_THAT(Incast(ports, {&model}), IsEmpty());
  EXPECT_THAT(Stragglers(ports, {&model}), IsEmpty());
}

// Every member at exactly 10 GB/s RX except `hot` at `rx`.
Ports FlatGroup(const LayoutModel& model, double rx, double others = 10e9,
                double link_rate = kLinkRate) {
  Ports ports = HealthyPorts(model, 7);
  for (auto& [key, s] : ports) {
    s.rx_bytes = others;
    s.link_rate = link_rate;
  }
  ports[{"gpu-004", "mlx5_3"}].rx_bytes = rx;
  return ports;
}

TEST(HotExpertIncastTest, RatioBoundaryIsInclusive) {
  LayoutModel model = MoeJob();
  // Default rx_over_median = 4: 40 GB/s over a 10 GB/s median is hot.
  EXPECT_THAT(Where(Incast(FlatGroup(model, 40e9), {&model})),
              ElementsAre("moe-train-42 gpu-004 mlx5_3 ep:3"));
  EXPECT_THAT(Incast(FlatGroup(model, 39.9e9), {&model}), IsEmpty());

  AnalysisConfig strict;
  strict.hot_expert_incast.rx_over_median = 3;
  EXPECT_THAT(Incast(FlatGroup(model, 30e9), {&model}, strict), SizeIs(1));
  EXPECT_THAT(Incast(FlatGroup(model, 29.9e9), {&model}, strict), IsEmpty());
}

TEST(HotExpertIncastTest, IdleGroupNeedsAMeaningfulShareOfTheLink) {
  LayoutModel model = MoeJob();
  // 10x the median, but 25% of a 50 GB/s link is 12.5 GB/s.
  EXPECT_THAT(Incast(FlatGroup(model, 12.4e9, 1e9), {&model}), IsEmpty());
  std::vector<Finding> found = Incast(FlatGroup(model, 12.5e9, 1e9), {&model});
  ASSERT_THAT(found, SizeIs(1));
  EXPECT_DOUBLE_EQ(found[0].evidence.at("ratio_to_median"), 12.5);
}

TEST(HotExpertIncastTest, UnknownLinkRateUsesTheAbsoluteFloor) {
  LayoutModel model = MoeJob();
  // link_rate 0 = unknown: the floor is min_rx_bytes_per_second (2.5 GB/s).
  EXPECT_THAT(Incast(FlatGroup(model, 2.4e9, 0.2e9, 0), {&model}), IsEmpty());
  std::vector<Finding> found =
      Incast(FlatGroup(model, 2.5e9, 0.2e9, 0), {&model});
  ASSERT_THAT(found, SizeIs(1));
  EXPECT_THAT(found[0].evidence,
              Not(testing::Contains(Key("link_rate_bytes_per_second"))));
  // A NaN or infinite link rate is unknown too, never a division.
  EXPECT_THAT(Incast(FlatGroup(model, 2.5e9, 0.2e9, kAbsent), {&model}),
              SizeIs(1));
  EXPECT_THAT(Incast(FlatGroup(model, 2.5e9, 0.2e9, kInf), {&model}),
              SizeIs(1));
}

TEST(HotExpertIncastTest, NeedsMinGroupSizeReportingMembers) {
  LayoutModel model = MoeJob();
  Ports ports = FlatGroup(model, 50e9);
  // Keep only three members of ep:3 reporting: still a group.
  for (int h : {0, 1, 2, 5, 6}) {
    ports.erase({absl::StrFormat("gpu-%03d", h), "mlx5_3"});
  }
  std::vector<Finding> found = Incast(ports, {&model});
  ASSERT_THAT(found, SizeIs(1));
  EXPECT_DOUBLE_EQ(found[0].evidence.at("group_members_reporting"), 3);
  // Two left: a median of two says nothing.
  ports.erase({"gpu-007", "mlx5_3"});
  EXPECT_THAT(Incast(ports, {&model}), IsEmpty());
}

TEST(HotExpertIncastTest, SeveralHotNicsAndJobsAreEachReportedInOrder) {
  LayoutModel a = MoeJob("job-a");
  LayoutModel b = MoeJob("job-b");
  Ports ports = HealthyPorts(a, 8);
  ports[{"gpu-006", "mlx5_5"}].rx_bytes = 49e9;
  ports[{"gpu-003", "mlx5_2"}].rx_bytes = 48e9;
  // Two hot experts in one group: the median of 8 does not move.
  ports[{"gpu-000", "mlx5_2"}].rx_bytes = 47e9;
  // Both jobs declare the same NICs (a shared cluster); each job's groups
  // are judged on their own, and the order of in.layouts does not matter.
  std::vector<Finding> found = Incast(ports, {&b, &a});
  EXPECT_THAT(
      Where(found),
      ElementsAre("job-a gpu-000 mlx5_2 ep:2", "job-a gpu-003 mlx5_2 ep:2",
                  "job-a gpu-006 mlx5_5 ep:5", "job-b gpu-000 mlx5_2 ep:2",
                  "job-b gpu-003 mlx5_2 ep:2", "job-b gpu-006 mlx5_5 ep:5"));
  EXPECT_EQ(Where(Incast(ports, {&a, &b})), Where(found));
}

TEST(HotExpertIncastTest, NicSharedByTwoEpGroupsIsReportedOncePerGroup) {
  // tp=2: GPUs 2k and 2k+1 share NIC mlx5_k, and their ranks belong to two
  // different EP groups of 8 (one per TP rank) spanning two hosts.
  LayoutModel model =
      Build(LayoutYaml("shared", 8, "{tp: 2, pp: 1, dp: 32, ep: 8}",
                       "[mlx5_0, mlx5_0, mlx5_1, mlx5_1, mlx5_2, mlx5_2, "
                       "mlx5_3, mlx5_3]",
                       "{experts: 64}"));
  Ports ports = HealthyPorts(model, 9);
  ports[{"gpu-000", "mlx5_1"}].rx_bytes = 49e9;
  const std::string g2 = GroupName({Dim::kEp, model.GroupOf(Dim::kEp, 2)});
  const std::string g3 = GroupName({Dim::kEp, model.GroupOf(Dim::kEp, 3)});
  ASSERT_NE(g2, g3);

  std::vector<Finding> found = Incast(ports, {&model});
  ASSERT_THAT(found, SizeIs(2));
  std::map<std::string, const Finding*> by_group;
  for (const Finding& f : found) by_group[f.group] = &f;
  ASSERT_THAT(by_group, SizeIs(2));
  // Rank 2 and rank 3 are EP rank 1 of their groups: experts 8-15.
  EXPECT_EQ(by_group.at(g2)->evidence_text.at("ranks"), "2");
  EXPECT_EQ(by_group.at(g3)->evidence_text.at("ranks"), "3");
  EXPECT_EQ(by_group.at(g2)->evidence_text.at("experts"), "8-15");
  EXPECT_EQ(by_group.at(g2)->device, "mlx5_1");
}

TEST(HotExpertIncastTest, SeveralRanksOfOneGroupBehindOneNicMergeExperts) {
  // tp=1, ep=16: each EP group is 16 consecutive ranks on two hosts, two
  // GPUs per NIC, 4 experts per rank.
  LayoutModel model =
      Build(LayoutYaml("dense-ep", 8, "{tp: 1, pp: 1, dp: 64, ep: 16}",
                       "[mlx5_0, mlx5_0, mlx5_1, mlx5_1, mlx5_2, mlx5_2, "
                       "mlx5_3, mlx5_3]",
                       "{experts: 64}"));
  Ports ports = HealthyPorts(model, 10);
  ports[{"gpu-001", "mlx5_2"}].rx_bytes = 49e9;  // ranks 12 and 13
  std::vector<Finding> found = Incast(ports, {&model});
  ASSERT_THAT(found, SizeIs(1));
  EXPECT_EQ(found[0].evidence_text.at("ranks"), "12-13");
  EXPECT_EQ(found[0].evidence_text.at("experts"), "48-55");
  EXPECT_THAT(found[0].summary, HasSubstr("ranks 12-13 hold experts 48-55"));
}

TEST(HotExpertIncastTest, AbsentStrengtheningSignalsStillReportTheRate) {
  LayoutModel model = MoeJob();
  Ports ports = HealthyPorts(model, 11);
  for (auto& [key, s] : ports) {
    s.cnp_sent = kAbsent;
    s.ecn_marked = kAbsent;
    s.rx_discards = kAbsent;
    s.tx_pause_fraction = AbsentPerPriority();
    s.tx_pause_frames = AbsentPerPriority();
  }
  ports[{"gpu-003", "mlx5_2"}].rx_bytes = 48e9;
  ASSERT_GE(48e9, 4 * GroupMedianRx(model, ports, 26));
  std::vector<Finding> found = Incast(ports, {&model});
  ASSERT_THAT(found, SizeIs(1));
  EXPECT_EQ(found[0].severity, Severity::kWarning);
  for (const char* key :
       {"cnp_sent_per_second", "ecn_marked_per_second", "tx_pause_fraction",
        "tx_pause_frames_per_second", "rx_discards_per_second"}) {
    EXPECT_THAT(found[0].evidence, Not(testing::Contains(Key(key)))) << key;
  }
  EXPECT_THAT(found[0].summary, Not(HasSubstr("CNP")));
}

TEST(HotExpertIncastTest, NoExpertCountNamesRanksOnly) {
  LayoutModel model = Build(LayoutYaml(
      "no-model", 8, "{tp: 8, pp: 1, dp: 8, ep: 8}", kEightRails, ""));
  Ports ports = HealthyPorts(model, 12);
  ports[{"gpu-003", "mlx5_2"}].rx_bytes = 45e9;
  std::vector<Finding> found = Incast(ports, {&model});
  ASSERT_THAT(found, SizeIs(1));
  EXPECT_THAT(found[0].evidence_text, Not(testing::Contains(Key("experts"))));
  EXPECT_THAT(found[0].summary, HasSubstr("rank 26 sits behind it"));
}

TEST(HotExpertIncastTest, AbsentOrBrokenRxNeverFindsAndNeverCrashes) {
  LayoutModel model = MoeJob();
  // Everything NaN.
  Ports nan_ports = HealthyPorts(model, 13);
  for (auto& [key, s] : nan_ports) s = PortSignals();
  EXPECT_THAT(Incast(nan_ports, {&model}), IsEmpty());

  // A hot member whose RX is infinite or negative is not a member at all;
  // the rest of the group is still judged.
  for (double broken : {kInf, -kInf, -45e9, kAbsent}) {
    Ports ports = FlatGroup(model, 45e9);
    ports[{"gpu-003", "mlx5_3"}].rx_bytes = broken;
    EXPECT_THAT(Where(Incast(ports, {&model})),
                ElementsAre("moe-train-42 gpu-004 mlx5_3 ep:3"))
        << broken;
  }
}

TEST(HotExpertIncastTest, DownPortIsNotPartOfTheMedian) {
  LayoutModel model = MoeJob();
  Ports ports = FlatGroup(model, 38e9);
  // Four of eight members of ep:3 down with zero RX would halve the median
  // (5 GB/s) and make 38 GB/s look hot; down ports are left to link_flap,
  // the live members' median stays 10 GB/s.
  for (int h : {0, 1, 2, 5}) {
    PortSignals& s = ports[{absl::StrFormat("gpu-%03d", h), "mlx5_3"}];
    s.link_up = false;
    s.rx_bytes = 0;
  }
  EXPECT_THAT(Incast(ports, {&model}), IsEmpty());
  // A down port receiving (stale) bytes is never reported either.
  PortSignals& down_hot = ports[{"gpu-000", "mlx5_3"}];
  down_hot.rx_bytes = 60e9;
  EXPECT_THAT(Incast(ports, {&model}), IsEmpty());
}

TEST(HotExpertIncastTest, HostileInputsRaiseNothing) {
  LayoutModel model = MoeJob();
  AnalysisConfig config;
  FabricView empty;
  empty.Finish();

  AnalysisInput in;
  EXPECT_THAT(HotExpertIncastFindings(in), IsEmpty());  // null view, config
  in.view = &empty;
  EXPECT_THAT(HotExpertIncastFindings(in), IsEmpty());  // null config
  in.config = &config;
  in.layouts = {&model, nullptr};
  EXPECT_THAT(HotExpertIncastFindings(in), IsEmpty());  // empty view

  // The layout names hosts that never reported; the view has other hosts.
  Ports ports = HealthyPorts(model, 15);
  Ports renamed;
  for (const auto& [key, s] : ports) {
    renamed[{absl::StrCat("other-", key.first), key.second}] = s;
  }
  renamed[{"other-gpu-003", "mlx5_2"}].rx_bytes = 49e9;
  EXPECT_THAT(Incast(renamed, {&model}), IsEmpty());

  // No rails: the layout names no NIC, nothing to look up.
  LayoutModel no_rails =
      Build(LayoutYaml("no-rails", 8, "{tp: 8, pp: 1, dp: 8, ep: 8}", "", ""));
  ports[{"gpu-003", "mlx5_2"}].rx_bytes = 49e9;
  EXPECT_THAT(Incast(ports, {&no_rails}), IsEmpty());
  EXPECT_THAT(Incast(ports, {&model}), SizeIs(1));

  // ep = 1: no expert parallelism, no EP groups to judge.
  LayoutModel dense =
      Build(LayoutYaml("dense", 8, "{tp: 8, pp: 1, dp: 8}", kEightRails, ""));
  EXPECT_THAT(Incast(ports, {&dense}), IsEmpty());

  // An idle group (all zero) has no ratio.
  Ports zero = HealthyPorts(model, 16);
  for (auto& [key, s] : zero) s.rx_bytes = 0;
  zero[{"gpu-003", "mlx5_2"}].rx_bytes = 49e9;
  EXPECT_THAT(Incast(zero, {&model}), IsEmpty());
}

}  // namespace
}  // namespace fabricdiag::analysis
