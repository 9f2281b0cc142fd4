#include "analysis/plan_report.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace fabricdiag::analysis {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

v1::Layout MakeLayout(uint32_t gpus_per_node, uint32_t hosts, uint32_t tp,
                      uint32_t pp, uint32_t dp) {
  v1::Layout layout;
  layout.set_job("plan-job");
  layout.set_gpus_per_node(gpus_per_node);
  layout.mutable_parallelism()->set_tp(tp);
  layout.mutable_parallelism()->set_pp(pp);
  layout.mutable_parallelism()->set_dp(dp);
  for (uint32_t h = 0; h < hosts; ++h) {
    layout.add_hosts(absl::StrFormat("gpu-%03d", h));
  }
  for (uint32_t g = 0; g < gpus_per_node; ++g) {
    layout.add_rails(absl::StrCat("mlx5_", g));
  }
  return layout;
}

void SetGpt(v1::Layout& layout) {
  v1::ModelSpec* m = layout.mutable_model();
  m->set_params(175e9);
  m->set_hidden(12288);
  m->set_layers(96);
  m->set_seq_len(2048);
  m->set_micro_batch(1);
  m->set_micro_batches(8);
  m->set_dtype_bytes(2);
}

PlanReport Build(const v1::Layout& proto, const LinkParams& link = {}) {
  absl::StatusOr<LayoutModel> layout = LayoutModel::Build(proto);
  EXPECT_TRUE(layout.ok()) << layout.status();
  absl::StatusOr<PlanReport> report = BuildPlanReport(*layout, link);
  EXPECT_TRUE(report.ok()) << report.status();
  return *std::move(report);
}

nlohmann::json Parse(const std::string& text) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << text;
  return j;
}

TEST(PlanReportTest, FormatsBytesAndSecondsInReadableUnits) {
  EXPECT_EQ(FormatBytes(0), "0 B");
  EXPECT_EQ(FormatBytes(512), "512 B");
  EXPECT_EQ(FormatBytes(352321536), "352.3 MB");
  EXPECT_EQ(FormatBytes(1398632812500.0), "1.40 TB");
  EXPECT_EQ(FormatBytes(6986328125.0), "6.99 GB");
  EXPECT_EQ(FormatSeconds(0), "0 s");
  EXPECT_EQ(FormatSeconds(0.1397266), "139.7 ms");
  EXPECT_EQ(FormatSeconds(1.117), "1.12 s");
  EXPECT_EQ(FormatSeconds(12e-6), "12.0 us");
}

TEST(PlanReportTest, DenseJobShowsGroupsTrafficAndBusiestNics) {
  // 32 ranks: tp=8 per node, pp=2, dp=2.
  v1::Layout proto = MakeLayout(8, 4, 8, 2, 2);
  SetGpt(proto);
  PlanReport r = Build(proto);
  EXPECT_EQ(r.ranks, 32u);
  EXPECT_EQ(r.tp_groups_crossing, 0u);
  ASSERT_EQ(r.traffic.size(), 3u);  // tp, pp, dp
  EXPECT_EQ(r.traffic[0].dim, "tp");
  EXPECT_EQ(r.traffic[1].dim, "pp");
  EXPECT_EQ(r.traffic[2].dim, "dp");
  // 48 layers per stage x 8 micro-batches x 352,321,536 bytes.
  EXPECT_DOUBLE_EQ(r.traffic[0].bytes_per_rank, 352321536.0 * 48 * 8);
  EXPECT_TRUE(r.unavailable.empty());
  ASSERT_TRUE(r.serial_seconds.has_value());
  EXPECT_GT(*r.serial_seconds, 0);
  EXPECT_EQ(r.nics, 32u);
  ASSERT_EQ(r.busiest_nics.size(), kPlanNicsShown);

  const std::string text = RenderPlanText(r);
  EXPECT_THAT(text, HasSubstr("layout plan-job: 32 ranks on 4 hosts"));
  EXPECT_THAT(text, HasSubstr("tp:0  r0=gpu-000/0/mlx5_0 r1=gpu-000/1/mlx5_1"));
  EXPECT_THAT(text, HasSubstr("TP groups leaving their NVLink domain: none"));
  EXPECT_THAT(text, HasSubstr("all-reduce"));
  EXPECT_THAT(text, HasSubstr("total if nothing overlaps"));
  EXPECT_THAT(text, HasSubstr("busiest NICs per step (of 32)"));
  EXPECT_THAT(text, Not(HasSubstr("not predicted")));

  nlohmann::json j = Parse(RenderPlanJson(r));
  EXPECT_EQ(j["job"], "plan-job");
  EXPECT_EQ(j["has_model"], true);
  ASSERT_EQ(j["traffic"].size(), 3u);
  EXPECT_EQ(j["traffic"][0]["dim"], "tp");
  EXPECT_EQ(j["traffic"][0]["bytes_per_call"].get<int64_t>(), 50331648);
  EXPECT_EQ(j["traffic"][0]["bytes_per_rank"].get<int64_t>(),
            int64_t{352321536} * 48 * 8);
  EXPECT_GT(j["traffic"][2]["seconds"].get<double>(), 0);
  EXPECT_EQ(j["dimensions"][0]["dim"], "tp");
  EXPECT_EQ(j["dimensions"][0]["groups"][0]["members"][3]["nic"], "mlx5_3");
  EXPECT_TRUE(j["serial_seconds"].is_number());
}

TEST(PlanReportTest, TpGroupsLeavingNvlinkShowTheExtraTimePerStep) {
  // 4 GPUs per node, tp=8: every TP group spans two hosts.
  v1::Layout proto = MakeLayout(4, 4, 8, 1, 2);
  SetGpt(proto);
  PlanReport r = Build(proto);
  EXPECT_EQ(r.tp_groups, 2u);
  EXPECT_EQ(r.tp_groups_crossing, 2u);
  ASSERT_EQ(r.tp_crossings.size(), 2u);
  const PlanTpCrossing& c = r.tp_crossings[1];
  EXPECT_EQ(c.group, "tp:1");
  EXPECT_EQ(c.domains, 2u);
  EXPECT_EQ(c.hosts, (std::vector<std::string>{"gpu-002", "gpu-003"}));
  ASSERT_TRUE(c.extra_seconds_per_step.has_value());
  // TP traffic per rank per step: 96 layers x 8 micro-batches x 352.3 MB,
  // a quarter of it per NIC at 50 GB/s instead of all of it at 450 GB/s.
  const double bytes = 352321536.0 * 96 * 8;
  const double latency_nic = 96 * 8 * 4 * (12 * 3.4e-6 + 2 * 9.6e-6);
  const double latency_nvlink = 96 * 8 * 4 * (14 * 3.4e-6);
  EXPECT_NEAR(
      *c.extra_seconds_per_step,
      (latency_nic + bytes / 4 / 50e9) - (latency_nvlink + bytes / 450e9),
      1e-9);

  const std::string text = RenderPlanText(r);
  EXPECT_THAT(text, HasSubstr("TP groups leaving their NVLink domain: 2 of 2"));
  EXPECT_THAT(text, HasSubstr("tp:1 spans 2 NVLink domains on hosts gpu-002, "
                              "gpu-003; +"));
  EXPECT_THAT(text, HasSubstr("per step vs inside NVLink"));
  nlohmann::json j = Parse(RenderPlanJson(r));
  EXPECT_EQ(j["tp_groups_crossing_nvlink"], 2);
  EXPECT_NEAR(j["tp_crossings"][1]["extra_seconds_per_step"].get<double>(),
              *c.extra_seconds_per_step, 1e-12);
  EXPECT_EQ(j["tp_crossings"][1]["hosts"][1], "gpu-003");
}

TEST(PlanReportTest, WithoutModelSaysWhatIsNotPredictedAndStillShowsGroups) {
  v1::Layout proto = MakeLayout(4, 4, 8, 1, 2);
  PlanReport r = Build(proto);
  EXPECT_FALSE(r.has_model);
  EXPECT_FALSE(r.serial_seconds.has_value());
  EXPECT_TRUE(r.busiest_nics.empty());
  ASSERT_EQ(r.unavailable.size(), 2u);
  EXPECT_EQ(r.unavailable[0], "tp: the layout has no model section");
  EXPECT_EQ(r.unavailable[1], "dp: the layout has no model section");
  ASSERT_EQ(r.tp_crossings.size(), 2u);
  EXPECT_FALSE(r.tp_crossings[0].extra_seconds_per_step.has_value());

  const std::string text = RenderPlanText(r);
  EXPECT_THAT(text, HasSubstr("not predicted: tp: the layout has no model"));
  EXPECT_THAT(text, HasSubstr("tp:0 spans 2 NVLink domains on hosts "
                              "gpu-000, gpu-001\n"));
  EXPECT_THAT(text, HasSubstr("dp: 8 groups of 2 ranks"));
  EXPECT_THAT(text, Not(HasSubstr("total if nothing overlaps")));
  nlohmann::json j = Parse(RenderPlanJson(r));
  EXPECT_EQ(j["has_model"], false);
  EXPECT_TRUE(j["serial_seconds"].is_null());
  EXPECT_TRUE(j["tp_crossings"][0]["extra_seconds_per_step"].is_null());
  EXPECT_EQ(j["traffic"][0]["available"], false);
  EXPECT_EQ(j["traffic"][0]["unavailable_reason"],
            "the layout has no model section");
}

TEST(PlanReportTest, PartialModelNamesTheMissingFields) {
  v1::Layout proto = MakeLayout(8, 4, 8, 1, 4);
  proto.mutable_model()->set_params(7e9);
  proto.mutable_model()->set_dtype_bytes(2);
  PlanReport r = Build(proto);
  ASSERT_EQ(r.unavailable.size(), 1u);
  EXPECT_THAT(r.unavailable[0], HasSubstr("tp: needs model.micro_batch"));
  EXPECT_THAT(r.unavailable[0], HasSubstr("model.hidden"));
  EXPECT_THAT(r.unavailable[0], Not(HasSubstr("model.params")));
  EXPECT_TRUE(r.serial_seconds.has_value());  // dp is still predicted
  EXPECT_THAT(RenderPlanText(r), HasSubstr("not predicted: tp: needs"));
}

TEST(PlanReportTest, LargeJobsAreCappedButCountsAreExact) {
  // 4,096 ranks of pure DP: one group of 4,096, 4,096 NICs.
  v1::Layout proto = MakeLayout(8, 512, 1, 1, 4096);
  proto.mutable_model()->set_params(7e9);
  proto.mutable_model()->set_dtype_bytes(2);
  PlanReport r = Build(proto);
  const PlanDimension& dp = r.dimensions[2];
  ASSERT_EQ(dp.dim, "dp");
  EXPECT_EQ(dp.count, 1u);
  ASSERT_EQ(dp.groups.size(), 1u);
  EXPECT_EQ(dp.groups[0].size, 4096u);
  EXPECT_EQ(dp.groups[0].members.size(), kPlanMembersShown);
  const PlanDimension& tp = r.dimensions[0];
  EXPECT_EQ(tp.count, 4096u);
  EXPECT_EQ(tp.groups.size(), kPlanGroupsShown);
  EXPECT_EQ(r.nics, 4096u);
  EXPECT_EQ(r.busiest_nics.size(), kPlanNicsShown);
  const std::string text = RenderPlanText(r);
  EXPECT_THAT(text, HasSubstr("... (+4088 more)"));
  EXPECT_THAT(text, HasSubstr("... (+4093 more groups)"));
  EXPECT_LT(text.size(), 8000u);
  EXPECT_LT(RenderPlanJson(r).size(), 20000u);
}

TEST(PlanReportTest, SingleGpuHasNoTraffic) {
  v1::Layout proto = MakeLayout(1, 1, 1, 1, 1);
  SetGpt(proto);
  PlanReport r = Build(proto);
  EXPECT_TRUE(r.traffic.empty());
  EXPECT_THAT(RenderPlanText(r), HasSubstr("none: every parallel degree is 1"));
  EXPECT_TRUE(Parse(RenderPlanJson(r))["traffic"].empty());
}

TEST(PlanReportTest, InvalidLinkParamsAreAnError) {
  absl::StatusOr<LayoutModel> layout =
      LayoutModel::Build(MakeLayout(8, 1, 8, 1, 1));
  ASSERT_TRUE(layout.ok());
  LinkParams link;
  link.nvlink_bytes_per_second = -1;
  absl::StatusOr<PlanReport> r = BuildPlanReport(*layout, link);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("nvlink_bytes_per_second"));
}

TEST(PlanReportTest, LinkParamsChangeThePrediction) {
  v1::Layout proto = MakeLayout(8, 64, 1, 1, 512);
  proto.mutable_model()->set_params(7e9);
  proto.mutable_model()->set_dtype_bytes(4);
  LinkParams slow;
  slow.nic_bytes_per_second = 25e9;  // 200G NICs
  slow.alpha_nic = 0;
  slow.alpha_nvlink = 0;
  PlanReport r = Build(proto, slow);
  ASSERT_EQ(r.traffic.size(), 1u);
  EXPECT_DOUBLE_EQ(r.traffic[0].seconds, 6986328125.0 / 25e9);
  nlohmann::json j = Parse(RenderPlanJson(r));
  EXPECT_EQ(j["link"]["nic_bytes_per_second"].get<int64_t>(), 25000000000);
  EXPECT_THAT(RenderPlanText(r), HasSubstr("NIC 25.00 GB/s"));
}

}  // namespace
}  // namespace fabricdiag::analysis
