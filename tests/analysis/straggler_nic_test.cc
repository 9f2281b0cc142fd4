#include "analysis/straggler_nic.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "analysis/analyzer_util.h"
#include "analysis/layout_model.h"
#include "analysis/layout_parse.h"
#include "proto/layout.pb.h"

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
  names.reserve(static_cast<size_t>(hosts));
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

FabricView ViewOf(const Ports& ports) {
  FabricView view;
  for (const auto& [key, signals] : ports) {
    view.AddPort(key.first, key.second).s = signals;
  }
  view.Finish();
  return view;
}

// Baselines after `passes` windows of `history` (default: enough for them
// to count), as a collector that watched the jobs for a while has.
StragglerBaselines Watched(const std::vector<const LayoutModel*>& models,
                           const Ports& history,
                           const AnalysisConfig& config = AnalysisConfig(),
                           int passes = -1) {
  if (passes < 0) passes = config.straggler_nic.min_history_passes;
  StragglerBaselines baselines;
  const FabricView view = ViewOf(history);
  AnalysisInput in;
  in.view = &view;
  in.layouts = models;
  in.config = &config;
  for (int i = 0; i < passes; ++i) baselines.Update(in);
  return baselines;
}

std::vector<Finding> Straggle(const Ports& ports,
                              std::vector<const LayoutModel*> models,
                              const AnalysisConfig& config,
                              const StragglerBaselines* baselines) {
  const FabricView view = ViewOf(ports);
  AnalysisInput in;
  in.view = &view;
  in.layouts = std::move(models);
  in.config = &config;
  in.straggler_baselines = baselines;
  return StragglerNicFindings(in);
}

// The tests written before baselines: every NIC used to move kAllToAll
// each way, so only what changed against that is judged against its own
// history.
std::vector<Finding> Straggle(const Ports& ports,
                              std::vector<const LayoutModel*> models,
                              const AnalysisConfig& config = AnalysisConfig()) {
  Ports usual;
  for (const LayoutModel* model : models) {
    if (model == nullptr) continue;
    Ports flat = FlatPorts(*model);
    usual.insert(flat.begin(), flat.end());
  }
  const StragglerBaselines baselines = Watched(models, usual, config);
  return Straggle(ports, std::move(models), config, &baselines);
}

std::vector<std::string> Where(const std::vector<Finding>& found) {
  std::vector<std::string> out;
  out.reserve(found.size());
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

// --- own history, expert parallelism and sample evidence -----------------

// An EP job's traffic by design: each NIC carries `skew` (lognormal, drawn
// once per NIC from a fixed seed: routing skew stays with the experts a NIC
// serves) times the group's level, +-10% from window to window.
class SkewedMoe {
 public:
  SkewedMoe(const LayoutModel& model, double sigma, uint32_t seed)
      : model_(model), rng_(seed) {
    std::lognormal_distribution<double> skew(0, sigma);
    for (const auto& [key, s] : FlatPorts(model)) skew_[key] = skew(rng_);
  }
  Ports Window() {
    std::uniform_real_distribution<double> noise(0.9, 1.1);
    Ports ports = FlatPorts(model_);
    for (auto& [key, s] : ports) {
      s.rx_bytes = kAllToAll * skew_[key] * noise(rng_);
      s.tx_bytes = kAllToAll * skew_[key] * noise(rng_);
    }
    return ports;
  }
  double skew(const Port& port) const { return skew_.at(port); }

 private:
  const LayoutModel& model_;
  std::mt19937 rng_;
  std::map<Port, double> skew_;
};

// One pass as the collector runs it: judge, then fold the window in.
std::vector<Finding> Pass(const Ports& ports, const LayoutModel& model,
                          const AnalysisConfig& config,
                          StragglerBaselines* baselines) {
  const FabricView view = ViewOf(ports);
  AnalysisInput in;
  in.view = &view;
  in.layouts = {&model};
  in.config = &config;
  in.straggler_baselines = baselines;
  std::vector<Finding> found = StragglerNicFindings(in);
  baselines->Update(in);
  return found;
}

TEST(StragglerNicHistoryTest, MoeRoutingSkewRaisesNothingOverManyPasses) {
  LayoutModel model = MoeJob();
  const AnalysisConfig config;
  SkewedMoe job(model, /*sigma=*/0.3, /*seed=*/42);
  StragglerBaselines baselines;
  int low_against_group = 0;  // windows the group rule alone would flag
  for (int pass = 0; pass < 400; ++pass) {
    const Ports ports = job.Window();
    std::vector<Finding> found = Pass(ports, model, config, &baselines);
    EXPECT_THAT(Where(found), IsEmpty()) << "pass " << pass;
    // What the median rule alone (the rule before own history) says.
    std::map<char, std::vector<double>> rails;
    for (const auto& [key, sig] : ports) {
      rails[key.second.back()].push_back(sig.rx_bytes + sig.tx_bytes);
    }
    for (const auto& [rail, members] : rails) {
      const double median = Median(members);
      for (double t : members) low_against_group += t < 0.5 * median ? 1 : 0;
    }
  }
  // Not vacuous: sigma 0.3 puts some healthy NICs below half their group's
  // median, which the median rule alone reports.
  EXPECT_GT(low_against_group, 0);
  EXPECT_EQ(baselines.size(), 64u);
}

TEST(StragglerNicHistoryTest, NicThatDropsAgainstItsOwnHistoryIsAStraggler) {
  LayoutModel model = MoeJob();
  const AnalysisConfig config;
  SkewedMoe job(model, 0.3, 11);
  StragglerBaselines baselines;
  for (int pass = 0; pass < 60; ++pass) {
    ASSERT_THAT(Pass(job.Window(), model, config, &baselines), IsEmpty());
  }
  // A NIC of ordinary skew falls to 40% of what it carried; its peers stay.
  const Port slow{"gpu-002", "mlx5_4"};
  ASSERT_NEAR(job.skew(slow), 1, 0.2) << "pick another NIC for this seed";
  const double usual = 2 * kAllToAll * job.skew(slow);
  std::vector<Finding> found;
  for (int pass = 0; pass < 10; ++pass) {
    Ports ports = job.Window();
    SetThroughput(ports, slow, 0.4 * usual);
    found = Pass(ports, model, config, &baselines);
    ASSERT_THAT(Where(found), ElementsAre("moe-train-42 gpu-002 mlx5_4 dp:4"))
        << "pass " << pass;
  }
  // Its own slow windows never lower its baseline: still found.
  const Finding& f = found[0];
  EXPECT_NEAR(f.evidence.at("ratio_to_own_baseline"), 0.4, 0.05);
  EXPECT_NEAR(f.evidence.at("own_baseline_bytes_per_second"), usual,
              0.1 * usual);
  EXPECT_THAT(f.summary, HasSubstr("its own usual"));
  EXPECT_THAT(f.evidence_text, Not(testing::Contains(Key("own_baseline"))));
}

// The NIC of `job` with the least routing skew: a healthy NIC below half
// its group's median, which only its own history tells from a straggler.
Port LeastSkewed(const LayoutModel& model, const SkewedMoe& job) {
  Port least;
  for (const auto& [key, s] : FlatPorts(model)) {
    if (least.first.empty() || job.skew(key) < job.skew(least)) least = key;
  }
  return least;
}

// The first seed from `seed` on whose skew puts a NIC below 0.45: below
// half its group's median.
uint32_t SeedWithASkewedNic(const LayoutModel& model, uint32_t seed) {
  for (;; ++seed) {
    SkewedMoe job(model, 0.3, seed);
    if (job.skew(LeastSkewed(model, job)) < 0.45) return seed;
  }
}

// Every NIC at `factor` of what it carries: the whole job's pace.
Ports Scaled(Ports ports, double factor) {
  for (auto& [key, s] : ports) {
    s.rx_bytes *= factor;
    s.tx_bytes *= factor;
  }
  return ports;
}

// A healthy skewed MoE job slows down as a whole (a data-loader stall, an
// evaluation, the quiet between bursts): every NIC falls against its own
// history, and the least skewed ones sit below half their group's median
// as always. Nobody straggles: the group moves at its pace.
TEST(StragglerNicHistoryTest, AWholeSkewedGroupSlowingDownHasNoStraggler) {
  LayoutModel model = MoeJob();
  const AnalysisConfig config;
  SkewedMoe job(model, /*sigma=*/0.3, SeedWithASkewedNic(model, 42));
  StragglerBaselines baselines;
  for (int pass = 0; pass < 60; ++pass) {
    ASSERT_THAT(Pass(job.Window(), model, config, &baselines), IsEmpty());
  }
  for (int pass = 0; pass < 10; ++pass) {
    const Ports slow = Scaled(job.Window(), 0.6);
    std::vector<Finding> found = Pass(slow, model, config, &baselines);
    EXPECT_THAT(Where(found), IsEmpty()) << "pass " << pass;
  }
  // A straggler in the slow group is still one: its own bar fell with the
  // group's pace, not to nothing.
  Ports slow = Scaled(job.Window(), 0.6);
  Port nic;  // the NIC of the most ordinary skew
  for (const auto& [key, s] : slow) {
    if (nic.first.empty() ||
        std::abs(job.skew(key) - 1) < std::abs(job.skew(nic) - 1)) {
      nic = key;
    }
  }
  SetThroughput(slow, nic, 0.3 * 0.6 * 2 * kAllToAll * job.skew(nic));
  std::vector<Finding> found = Pass(slow, model, config, &baselines);
  ASSERT_THAT(Where(found),
              ElementsAre(absl::StrCat(
                  "moe-train-42 ", nic.first, " ", nic.second,
                  " dp:", nic.second.substr(nic.second.size() - 1))));
  EXPECT_NEAR(found[0].evidence.at("group_level_to_usual"), 0.6, 0.06);
}

// A hot expert, then a PFC storm, on one NIC of a skewed MoE job: while the
// storm starves it, it straggles (the storm is the cause, RunRateAnalyzers
// says so); once both end it moves what it always did, and is no straggler:
// the incast's windows never entered its baseline.
TEST(StragglerNicHistoryTest, NoStragglerOnceAHotExpertAndAStormHaveEnded) {
  LayoutModel model = MoeJob();
  const AnalysisConfig config;
  SkewedMoe job(model, 0.3, SeedWithASkewedNic(model, 42));
  StragglerBaselines baselines;
  for (int pass = 0; pass < 60; ++pass) {
    ASSERT_THAT(Pass(job.Window(), model, config, &baselines), IsEmpty());
  }
  const Port nic = LeastSkewed(model, job);
  const std::string where =
      absl::StrCat("moe-train-42 ", nic.first, " ", nic.second,
                   " dp:", nic.second.substr(nic.second.size() - 1));
  for (int pass = 0; pass < 60; ++pass) {
    Ports hot = job.Window();
    hot[nic].rx_bytes *= 6;  // the incast: 6x what it received
    ASSERT_THAT(Pass(hot, model, config, &baselines), IsEmpty());
  }
  for (int pass = 0; pass < 10; ++pass) {
    Ports storm = job.Window();
    storm[nic].rx_bytes *= 0.02;  // it stopped draining
    storm[nic].tx_bytes *= 0.5;
    EXPECT_THAT(Where(Pass(storm, model, config, &baselines)),
                ElementsAre(where))
        << "pass " << pass;
  }
  for (int pass = 0; pass < 20; ++pass) {
    EXPECT_THAT(Where(Pass(job.Window(), model, config, &baselines)), IsEmpty())
        << "pass " << pass << " after the faults ended";
  }
  const StragglerBaselines::Baseline* b =
      baselines.Find("moe-train-42", nic.first, nic.second);
  ASSERT_NE(b, nullptr);
  EXPECT_NEAR(b->bytes_per_second, 2 * kAllToAll * job.skew(nic),
              0.1 * 2 * kAllToAll * job.skew(nic));
}

TEST(StragglerNicHistoryTest, RestartSeedsTheBaselinesOfOpenStragglers) {
  LayoutModel model = MoeJob();
  const AnalysisConfig config;
  const StragglerBaselines watched =
      Watched({&model}, FlatPorts(model), config);
  Ports ports = FlatPorts(model);
  SetThroughput(ports, {"gpu-005", "mlx5_5"}, 0.3 * 2 * kAllToAll);
  const std::vector<Finding> open = Straggle(ports, {&model}, config, &watched);
  ASSERT_THAT(open, SizeIs(1));
  // A fresh collector knows nothing: the EP straggler is not judged, and
  // passes of it would teach the baselines its slow throughput.
  StragglerBaselines fresh;
  EXPECT_THAT(Straggle(ports, {&model}, config, &fresh), IsEmpty());
  // Seeded with the open findings (and ignoring others), it stays found,
  // pass after pass.
  Finding other = open[0];
  other.kind = "link_degraded";
  other.device = "mlx5_1";
  fresh.Seed({open[0], other});
  EXPECT_EQ(fresh.size(), 1u);
  for (int pass = 0; pass < 50; ++pass) {
    ASSERT_THAT(Where(Pass(ports, model, config, &fresh)),
                ElementsAre("moe-train-42 gpu-005 mlx5_5 dp:5"))
        << "pass " << pass;
  }
  EXPECT_DOUBLE_EQ(
      fresh.Find("moe-train-42", "gpu-005", "mlx5_5")->bytes_per_second,
      2 * kAllToAll);
}

// Every NIC of `model` at its own throughput: 1 + host/10 + nic/100 times
// kAllToAll each way, so a baseline found for the wrong NIC is told apart.
Ports DistinctPorts(const LayoutModel& model) {
  Ports ports = FlatPorts(model);
  for (auto& [key, s] : ports) {
    const double host = std::stod(key.first.substr(4));  // gpu-NNN
    const double nic = key.second.back() - '0';          // mlx5_N
    s.rx_bytes = s.tx_bytes = kAllToAll * (1 + host / 10 + nic / 100);
  }
  return ports;
}

// Checks that every NIC of `model` has, through Of(), the baseline Find()
// gives by name, and that it is the NIC's throughput in `history`.
void ExpectBaselinesByIndexMatchNames(const StragglerBaselines& baselines,
                                      const LayoutModel& model,
                                      const Ports& history) {
  const StragglerBaselines::OfLayout of = baselines.Of(model);
  int checked = 0;
  for (const auto& [key, s] : history) {
    const std::optional<uint32_t> host = model.HostIndex(key.first);
    const std::optional<uint32_t> nic = model.NicIndex(key.second);
    if (!host || !nic) continue;
    const StragglerBaselines::Baseline* by_index = of.Find(*host, *nic);
    ASSERT_NE(by_index, nullptr) << key.first << " " << key.second;
    EXPECT_EQ(by_index, baselines.Find(model.job(), key.first, key.second));
    EXPECT_DOUBLE_EQ(by_index->bytes_per_second, s.rx_bytes + s.tx_bytes)
        << key.first << " " << key.second;
    ++checked;
  }
  EXPECT_GT(checked, 0);
}

TEST(StragglerNicHistoryTest, AReappliedLayoutFindsEachNicsOwnBaseline) {
  const LayoutModel before = MoeJob();
  const AnalysisConfig config;
  const Ports history = DistinctPorts(before);
  StragglerBaselines baselines = Watched({&before}, history, config);
  ExpectBaselinesByIndexMatchNames(baselines, before, history);
  // The job applied again with its hosts in another order, gpu-000 gone and
  // gpu-008 new, its rails reversed: every index means another NIC now.
  const LayoutModel after = Build(
      "job: moe-train-42\ngpus_per_node: 8\n"
      "parallelism: {tp: 8, pp: 1, dp: 8, ep: 8}\n"
      "hosts: [gpu-008, gpu-007, gpu-006, gpu-005, gpu-004, gpu-003, "
      "gpu-002, gpu-001]\nmodel: {experts: 64}\n"
      "rails: [mlx5_7, mlx5_6, mlx5_5, mlx5_4, mlx5_3, mlx5_2, mlx5_1, "
      "mlx5_0]\n");
  ASSERT_NE(after.HostIndex("gpu-005"), before.HostIndex("gpu-005"));
  ASSERT_NE(after.NicIndex("mlx5_1"), before.NicIndex("mlx5_1"));
  // Before a pass has seen the new layout (looked up by name), and after.
  ExpectBaselinesByIndexMatchNames(baselines, after, history);
  // An EP straggler is judged only against its own baseline: found with
  // the new layout's indexes.
  Ports slow = DistinctPorts(after);
  const double usual = slow[{"gpu-005", "mlx5_1"}].rx_bytes * 2;
  SetThroughput(slow, {"gpu-005", "mlx5_1"}, 0.3 * usual);
  std::vector<Finding> found = Straggle(slow, {&after}, config, &baselines);
  ASSERT_THAT(Where(found), ElementsAre("moe-train-42 gpu-005 mlx5_1 dp:6"));
  EXPECT_DOUBLE_EQ(found[0].evidence.at("own_baseline_bytes_per_second"),
                   usual);
  for (int pass = 0; pass < 3; ++pass) {
    found = Pass(slow, after, config, &baselines);
    ASSERT_THAT(Where(found), ElementsAre("moe-train-42 gpu-005 mlx5_1 dp:6"))
        << "pass " << pass;
  }
  Ports kept = history;
  kept.erase({"gpu-005", "mlx5_1"});  // straggling: never folded in
  ExpectBaselinesByIndexMatchNames(baselines, after, kept);
  // gpu-000 is in no layout now: its baselines stay until they are
  // history_passes old, like any NIC no longer judged.
  EXPECT_NE(baselines.Find("moe-train-42", "gpu-000", "mlx5_3"), nullptr);
  EXPECT_EQ(baselines.Find("moe-train-42", "gpu-008", "mlx5_3")->passes, 3);
}

TEST(StragglerNicHistoryTest, BaselinesOfNicsNoLongerJudgedAreForgotten) {
  const LayoutModel a = MoeJob("job-a");
  const LayoutModel b = MoeJob("job-b");
  AnalysisConfig config;
  config.straggler_nic.history_passes = 5;
  const Ports ports = FlatPorts(a);  // the same hosts and NICs as job-b
  StragglerBaselines baselines = Watched({&a, &b}, ports, config, 2);
  ASSERT_EQ(baselines.size(), 128u);
  const FabricView busy = ViewOf(ports);
  const FabricView idle = ViewOf(FlatPorts(a, 0));
  AnalysisInput in;
  in.layouts = {&a};
  in.config = &config;
  in.view = &busy;
  // job-b ends: judged no more, its baselines go after history_passes.
  for (int pass = 1; pass <= config.straggler_nic.history_passes; ++pass) {
    baselines.Update(in);
    ASSERT_EQ(baselines.size(), 128u) << "pass " << pass;
  }
  baselines.Update(in);
  EXPECT_EQ(baselines.size(), 64u);
  EXPECT_EQ(baselines.Find("job-b", "gpu-003", "mlx5_3"), nullptr);
  EXPECT_NE(baselines.Find("job-a", "gpu-003", "mlx5_3"), nullptr);
  // job-a goes idle: an idle group says nothing of its NICs, so they are
  // not judged either.
  in.view = &idle;
  for (int pass = 1; pass <= config.straggler_nic.history_passes; ++pass) {
    baselines.Update(in);
    ASSERT_EQ(baselines.size(), 64u) << "pass " << pass;
  }
  baselines.Update(in);
  EXPECT_EQ(baselines.size(), 0u);
  EXPECT_EQ(baselines.Find("job-a", "gpu-003", "mlx5_3"), nullptr);
  EXPECT_EQ(baselines.Of(a).Find(3, 3), nullptr);
  // Learnt afresh once busy again.
  in.view = &busy;
  baselines.Update(in);
  EXPECT_EQ(baselines.size(), 64u);
  EXPECT_EQ(baselines.Find("job-a", "gpu-001", "mlx5_0")->passes, 1);
  EXPECT_EQ(baselines.Find("job-b", "gpu-001", "mlx5_0"), nullptr);
  // What survives a restart is what is kept.
  StragglerBaselines restored;
  ASSERT_EQ(restored.Restore(baselines.Serialize(), nullptr).value(), 64u);
  ExpectBaselinesByIndexMatchNames(restored, a, ports);
}

// One analysis shard's jobs apart from the others': the bytes of some
// jobs only, and a shard's stored baselines taken in over what was known
// of its jobs, leaving every other job's as it was.
TEST(StragglerNicHistoryTest, AShardsJobsAreSerializedAndAdoptedApart) {
  auto slow = [](const std::string& job, const std::string& nic, double rate) {
    Finding f;
    f.kind = "straggler_nic";
    f.job = job;
    f.node = "gpu-001";
    f.device = nic;
    f.evidence = {{"own_baseline_bytes_per_second", rate},
                  {"own_baseline_passes", 300}};
    return f;
  };
  auto is_a = [](absl::string_view job) { return job == "job-a"; };
  StragglerBaselines known;
  known.Seed({slow("job-a", "mlx5_0", 1e10), slow("job-a", "mlx5_1", 1e10),
              slow("job-b", "mlx5_0", 5e10)});
  StragglerBaselines only_a;
  ASSERT_EQ(only_a.Restore(known.Serialize(is_a), nullptr).value(), 2u);
  EXPECT_EQ(only_a.Find("job-b", "gpu-001", "mlx5_0"), nullptr);
  EXPECT_EQ(known.Serialize(nullptr), known.Serialize());

  StragglerBaselines stored;
  stored.Seed({slow("job-a", "mlx5_2", 2e10), slow("job-b", "mlx5_0", 9e10)});
  EXPECT_EQ(known.Adopt(is_a, std::move(stored)), 1u);
  EXPECT_EQ(known.size(), 2u);
  EXPECT_EQ(known.Find("job-a", "gpu-001", "mlx5_0"), nullptr)
      << "what was known of the shard's jobs is replaced";
  ASSERT_NE(known.Find("job-a", "gpu-001", "mlx5_2"), nullptr);
  EXPECT_EQ(known.Find("job-a", "gpu-001", "mlx5_2")->bytes_per_second, 2e10);
  ASSERT_NE(known.Find("job-b", "gpu-001", "mlx5_0"), nullptr);
  EXPECT_EQ(known.Find("job-b", "gpu-001", "mlx5_0")->bytes_per_second, 5e10)
      << "another shard's job is left alone";
  StragglerBaselines back;
  EXPECT_EQ(back.Restore(known.Serialize(), nullptr).value(), 2u);
}

TEST(StragglerNicHistoryTest, ANicNamePerRankOnEveryHostStaysSmall) {
  // The largest layout the bounds allow where hosts x NIC names is huge:
  // 32,768 hosts of one GPU, each rank placed on a NIC of its own name
  // (1.07e9 host x NIC pairs, of which 32,768 exist). Baselines hold only
  // the NICs that exist.
  v1::Layout layout;
  layout.set_job("wide");
  layout.set_gpus_per_node(1);
  layout.mutable_parallelism()->set_tp(1);
  layout.mutable_parallelism()->set_pp(1);
  layout.mutable_parallelism()->set_dp(kMaxHosts);
  for (uint32_t r = 0; r < kMaxHosts; ++r) {
    v1::RankPlacement* p = layout.add_ranks();
    p->set_rank(r);
    p->set_host(absl::StrCat("host-", r));
    p->set_gpu(0);
    p->set_nic(absl::StrCat("nic-", r));
  }
  absl::StatusOr<LayoutModel> model = LayoutModel::Build(layout);
  ASSERT_TRUE(model.ok()) << model.status();
  ASSERT_EQ(model->Hosts().size(), kMaxHosts);
  ASSERT_EQ(model->Nics().size(), kMaxHosts);
  const AnalysisConfig config;
  const Ports ports = FlatPorts(*model);
  const StragglerBaselines baselines = Watched({&*model}, ports, config);
  EXPECT_EQ(baselines.size(), kMaxHosts);
  const uint32_t last = kMaxHosts - 1;
  const StragglerBaselines::Baseline* b =
      baselines.Of(*model).Find(last, *model->NicIndex("nic-32767"));
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b, baselines.Find("wide", "host-32767", "nic-32767"));
  EXPECT_DOUBLE_EQ(b->bytes_per_second, 2 * kAllToAll);
  EXPECT_EQ(baselines.Of(*model).Find(last, 0), nullptr);  // no such NIC
  EXPECT_EQ(baselines.Of(*model).Find(kMaxHosts, 0), nullptr);
}

TEST(StragglerNicHistoryTest, ANicStragglingInOneOfItsGroupsIsNotFoldedIn) {
  // 16 hosts, tp=8 dp=16 ep=4: rail k across the 16 hosts is dp:k, and
  // each ep group is 4 of its NICs.
  const LayoutModel model = Build(
      LayoutYaml("moe-wide", 16, "{tp: 8, pp: 1, dp: 16, ep: 4}", kEightRails));
  const AnalysisConfig config;
  StragglerBaselines baselines = Watched({&model}, FlatPorts(model), config);
  const absl::Span<const NicRef> ep = model.GroupNics(Dim::kEp, 0);
  ASSERT_EQ(ep.size(), 4u);
  // The whole ep group slows down: it is its own median, so only dp finds
  // its NICs straggling; they must not lower their baselines.
  Ports ports = FlatPorts(model);
  for (const NicRef& ref : ep) {
    SetThroughput(ports,
                  {model.Hosts()[ref.host], std::string(model.Nics()[ref.nic])},
                  0.3 * 2 * kAllToAll);
  }
  const std::vector<Finding> found = Pass(ports, model, config, &baselines);
  ASSERT_THAT(found, SizeIs(4));
  for (const Finding& f : found) EXPECT_EQ(f.group, "dp:0");
  for (const NicRef& ref : ep) {
    const StragglerBaselines::Baseline* b = baselines.Find(
        "moe-wide", model.Hosts()[ref.host], model.Nics()[ref.nic]);
    ASSERT_NE(b, nullptr);
    EXPECT_DOUBLE_EQ(b->bytes_per_second, 2 * kAllToAll);
  }
}

TEST(StragglerNicHistoryTest, NaturallyLowEpNicRaisesNothing) {
  LayoutModel model = MoeJob();
  const AnalysisConfig config;
  StragglerBaselines baselines;
  // gpu-006 mlx5_1 serves cold experts: 45% of its group's median, for the
  // whole job. Below the group threshold, every single pass.
  const Port cold{"gpu-006", "mlx5_1"};
  uint32_t seed = 100;
  for (int pass = 0; pass < 200; ++pass) {
    Ports ports = HealthyPorts(model, ++seed, kAllToAll, 0.1);
    SetThroughput(ports, cold, 0.45 * 2 * kAllToAll);
    EXPECT_THAT(Pass(ports, model, config, &baselines), IsEmpty())
        << "pass " << pass;
  }
  ASSERT_NE(baselines.Find("moe-train-42", "gpu-006", "mlx5_1"), nullptr);
  // It is below its group: the same NIC in a dense job is reported.
  Ports ports = HealthyPorts(model, 1, kAllToAll, 0.1);
  SetThroughput(ports, cold, 0.45 * 2 * kAllToAll);
  LayoutModel dense =
      Build(LayoutYaml("dense", 8, "{tp: 8, pp: 1, dp: 8}", kEightRails));
  EXPECT_THAT(Where(Straggle(ports, {&dense}, config, nullptr)),
              ElementsAre("dense gpu-006 mlx5_1 dp:1"));
}

TEST(StragglerNicHistoryTest, EpNicWithoutBaselineIsNotJudged) {
  LayoutModel model = MoeJob();
  const AnalysisConfig config;
  Ports ports = FlatPorts(model);
  SetThroughput(ports, {"gpu-003", "mlx5_0"}, 0.2 * 2 * kAllToAll);
  EXPECT_THAT(Straggle(ports, {&model}, config, nullptr), IsEmpty());
  // A baseline with too few passes is no baseline either.
  StragglerBaselines young =
      Watched({&model}, FlatPorts(model), config,
              config.straggler_nic.min_history_passes - 1);
  EXPECT_THAT(Straggle(ports, {&model}, config, &young), IsEmpty());
  StragglerBaselines grown = Watched({&model}, FlatPorts(model), config,
                                     config.straggler_nic.min_history_passes);
  EXPECT_THAT(Where(Straggle(ports, {&model}, config, &grown)),
              ElementsAre("moe-train-42 gpu-003 mlx5_0 dp:0"));
}

TEST(StragglerNicHistoryTest, DenseStragglerWithoutHistoryStillFires) {
  LayoutModel dense =
      Build(LayoutYaml("dense", 8, "{tp: 8, pp: 1, dp: 8}", kEightRails));
  Ports ports = HealthyPorts(dense, 3);
  SetThroughput(ports, {"gpu-005", "mlx5_6"}, 3e9);
  std::vector<Finding> found =
      Straggle(ports, {&dense}, AnalysisConfig(), nullptr);
  ASSERT_THAT(Where(found), ElementsAre("dense gpu-005 mlx5_6 dp:6"));
  EXPECT_EQ(found[0].evidence_text.at("own_baseline"),
            "none yet: judged on its group alone");
  EXPECT_THAT(found[0].evidence,
              Not(testing::Contains(Key("ratio_to_own_baseline"))));
}

TEST(StragglerNicHistoryTest,
     ANicStragglingFromItsFirstPassLeavesReadableBytes) {
  // A NIC slow from the start is judged every pass but never folded in: it
  // has an entry and no baseline. What is written must still restore (one
  // such entry once made the whole record unreadable after a restart).
  LayoutModel dense =
      Build(LayoutYaml("dense", 8, "{tp: 8, pp: 1, dp: 8}", kEightRails));
  const AnalysisConfig config;
  StragglerBaselines baselines;
  Ports ports = HealthyPorts(dense, 3);
  SetThroughput(ports, {"gpu-005", "mlx5_6"}, 3e9);
  for (int pass = 0; pass < 3; ++pass) {
    ASSERT_THAT(Where(Pass(ports, dense, config, &baselines)),
                ElementsAre("dense gpu-005 mlx5_6 dp:6"));
  }
  ASSERT_EQ(baselines.size(), 64u);
  ASSERT_EQ(baselines.Find("dense", "gpu-005", "mlx5_6"), nullptr);
  StragglerBaselines restored;
  absl::StatusOr<size_t> added =
      restored.Restore(baselines.Serialize(), nullptr);
  ASSERT_TRUE(added.ok()) << added.status();
  EXPECT_EQ(*added, 63u);
  EXPECT_EQ(restored.Find("dense", "gpu-005", "mlx5_6"), nullptr);
  EXPECT_NE(restored.Find("dense", "gpu-005", "mlx5_5"), nullptr);
}

TEST(StragglerNicHistoryTest, BelowOwnHistoryFractionIsConfigurable) {
  LayoutModel model = MoeJob();
  AnalysisConfig config;
  const StragglerBaselines baselines =
      Watched({&model}, FlatPorts(model), config);
  Ports ports = FlatPorts(model);
  SetThroughput(ports, {"gpu-001", "mlx5_7"}, 0.45 * 2 * kAllToAll);
  EXPECT_THAT(Straggle(ports, {&model}, config, &baselines), SizeIs(1));
  config.straggler_nic.below_own_history_fraction = 0.4;  // 45% is not below
  EXPECT_THAT(Straggle(ports, {&model}, config, &baselines), IsEmpty());
}

// --- sample evidence ---------------------------------------------------------

TEST(SampleEvidenceTest, StaleReadsFoldIntoTheLumpThatCatchesUp) {
  SampleEvidence even =
      SummarizeSamples({0, 1, 2, 3, 4, 5}, {true, true, true, true, true});
  EXPECT_EQ(even.reports, 5);
  EXPECT_EQ(even.intervals, 5);
  EXPECT_DOUBLE_EQ(even.span_seconds, 5);
  EXPECT_DOUBLE_EQ(even.median_interval_seconds, 1);
  EXPECT_DOUBLE_EQ(even.max_interval_seconds, 1);
  // Two stale reads, then the lump: one interval of 3 s.
  SampleEvidence lump =
      SummarizeSamples({0, 1, 2, 3, 4, 5}, {true, false, false, true, true});
  EXPECT_EQ(lump.intervals, 3);
  EXPECT_DOUBLE_EQ(lump.span_seconds, 5);
  EXPECT_DOUBLE_EQ(lump.max_interval_seconds, 3);
  EXPECT_DOUBLE_EQ(lump.median_interval_seconds, 1);
  // Stale at the end: the lump has not come yet.
  SampleEvidence tail =
      SummarizeSamples({0, 1, 2, 3, 4, 5}, {true, true, true, false, false});
  EXPECT_DOUBLE_EQ(tail.span_seconds, 3);
  EXPECT_EQ(SummarizeSamples({0, 1}, {false}).intervals, 0);
  EXPECT_EQ(SummarizeSamples({0, 1}, {true, true}).reports, 0);  // misfit
}

// Where `model` has stragglers when `port` of `ports` has evidence `e` in
// a window of `window_seconds`.
std::vector<std::string> JudgedWithEvidence(const LayoutModel& model,
                                            const Ports& ports,
                                            const Port& port,
                                            const SampleEvidence& e,
                                            double window_seconds) {
  const AnalysisConfig config;
  FabricView view = ViewOf(ports);
  view.window_seconds = window_seconds;
  for (const PortView& p : view.ports()) {
    if (p.node == port.first && p.device == port.second) {
      const_cast<PortView&>(p).samples = e;
    }
  }
  AnalysisInput in;
  in.view = &view;
  in.layouts = {&model};
  in.config = &config;
  return Where(StragglerNicFindings(in));
}

TEST(StragglerNicEvidenceTest, IrregularSamplesRaiseNothing) {
  LayoutModel dense =
      Build(LayoutYaml("dense", 8, "{tp: 8, pp: 1, dp: 8}", kEightRails));
  const Port port{"gpu-004", "mlx5_3"};
  Ports ports = FlatPorts(dense);
  // The window's mean is low because its samples are: a gap, stale reads.
  SetThroughput(ports, port, 0.3 * 2 * kAllToAll);
  auto judged = [&](const SampleEvidence& e) {
    return JudgedWithEvidence(dense, ports, port, e,
                              FabricView().window_seconds);
  };
  const std::vector<double> times = {0, 1, 2, 3, 4, 5};
  // Regular samples: the same mean is a straggler.
  EXPECT_THAT(judged(SummarizeSamples(times, {true, true, true, true, true})),
              ElementsAre("dense gpu-004 mlx5_3 dp:3"));
  // A gap of 3 s then a lump: irregular.
  EXPECT_THAT(judged(SummarizeSamples({0, 1, 4, 5}, {true, true, true})),
              IsEmpty());
  // Stale reads, then the lump (4 s against 1 s).
  EXPECT_THAT(
      judged(SummarizeSamples(times, {false, false, false, true, true})),
      IsEmpty());
  // Stale reads at the end of the window: too little of it covered.
  EXPECT_THAT(judged(SummarizeSamples(times, {true, true, true, false, false})),
              IsEmpty());
  // Nothing moved in the newest report alone: a stale read.
  EXPECT_THAT(judged(SummarizeSamples({0, 1}, {false})), IsEmpty());
  // Nothing moved for a whole window: no stale run lasts that long, the
  // NIC moved nothing (a mean of 0 is a straggler).
  SetThroughput(ports, port, 0);
  EXPECT_THAT(
      judged(SummarizeSamples(times, {false, false, false, false, false})),
      ElementsAre("dense gpu-004 mlx5_3 dp:3"));
  // Agent jitter, intervals up to 2x each other, is regular.
  EXPECT_THAT(judged(SummarizeSamples({0, 0.7, 2.1, 2.9, 3.9, 5},
                                      {true, true, true, true, true})),
              ElementsAre("dense gpu-004 mlx5_3 dp:3"));
}

// A view that says how many reports a full window holds counts its
// coverage in reports: on a busy machine a late read shortens the window's
// span while it still holds every sample.
TEST(StragglerNicEvidenceTest, CoverageCountsReportsWhenTheViewSaysHowMany) {
  LayoutModel dense =
      Build(LayoutYaml("dense", 8, "{tp: 8, pp: 1, dp: 8}", kEightRails));
  const Port port{"gpu-004", "mlx5_3"};
  Ports ports = FlatPorts(dense);
  SetThroughput(ports, port, 0.3 * 2 * kAllToAll);
  auto judged = [&](double window_seconds, SampleEvidence e,
                    int expected_reports) {
    e.expected_reports = expected_reports;
    return JudgedWithEvidence(dense, ports, port, e, window_seconds);
  };
  const auto straggler = ElementsAre("dense gpu-004 mlx5_3 dp:3");
  // The newest 0.5 s sample, read 0.15 s late after one on time: 0.35 s.
  const SampleEvidence late = SummarizeSamples({10.15, 10.5}, {true});
  EXPECT_THAT(judged(0.5, late, 1), straggler);
  EXPECT_THAT(judged(0.5, late, 0), IsEmpty());  // 0.35 s of 0.5 in seconds
  // A 1.5 s window of 3 samples whose ends ran late and early.
  const SampleEvidence jittered =
      SummarizeSamples({0.2, 0.5, 1.0, 1.4}, {true, true, true});
  EXPECT_THAT(judged(1.5, jittered, 3), straggler);
  // Too few reports: a node that just started.
  EXPECT_THAT(judged(1.5, SummarizeSamples({0, 0.5, 1}, {true, true}), 3),
              IsEmpty());
  // Reports enough, but the newest is a stale read: its lump is to come.
  EXPECT_THAT(
      judged(1.5, SummarizeSamples({0, 0.5, 1, 1.5}, {true, true, false}), 3),
      IsEmpty());
  // Nothing moved in any report of a full window: the NIC moved nothing.
  SetThroughput(ports, port, 0);
  EXPECT_THAT(
      judged(1.5, SummarizeSamples({0, 0.4, 0.9, 1.3}, {false, false, false}),
             3),
      straggler);
}

}  // namespace
}  // namespace fabricdiag::analysis
