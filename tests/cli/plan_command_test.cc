#include <nlohmann/json.hpp>

#include "absl/strings/str_replace.h"
#include "cli/commands.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cli/test_env.h"

namespace fabricdiag::cli {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing::kValidLayoutYaml;
using ::testing::Not;
using testing::TestEnv;
using testing::WriteTempFile;

// tp=8 on nodes of 8 GPUs whose NVLink domains hold 4: every TP group
// leaves its domain (same host, two domains).
constexpr char kCrossingLayout[] = R"(job: split-nvlink
gpus_per_node: 8
nvlink_domain: 4
parallelism: {tp: 8, pp: 1, dp: 2}
hosts: [gpu-000, gpu-001]
model: {params: 7.0e9, hidden: 4096, layers: 32}
)";

// tp=4 on 2-GPU nodes: TP groups span two hosts.
constexpr char kCrossHostLayout[] = R"(job: cross-host
gpus_per_node: 2
parallelism: {tp: 4, pp: 1, dp: 1}
hosts: [node-a, node-b]
rails: [mlx5_0, mlx5_1]
)";

TEST(PlanCommandTest, PrintsGroupsOfTheWorkedExample) {
  TestEnv t;
  const std::string file = WriteTempFile("l.yaml", kValidLayoutYaml);
  EXPECT_EQ(PlanCommand(file, CommandOptions(), t.env), kExitOk);
  const std::string out = t.out.str();
  EXPECT_THAT(
      out,
      AllOf(HasSubstr("layout moe-train-42: 16 ranks on 2 hosts, 8 GPUs per "
                      "node, NVLink domain of 8 GPUs (2 domains)"),
            HasSubstr("tp: 8 groups of 2 ranks\n"),
            HasSubstr("    tp:0  r0=gpu-000/0/mlx5_0 r1=gpu-000/1/mlx5_1\n"),
            // docs/layout-format.md: ep groups {0,2,4,6} {8,10,12,14} ...
            HasSubstr("ep: 4 groups of 4 ranks\n"),
            HasSubstr("    ep:0  r0=gpu-000/0/mlx5_0 r2=gpu-000/2/mlx5_2 "
                      "r4=gpu-000/4/mlx5_4 r6=gpu-000/6/mlx5_6\n"),
            HasSubstr("    ep:2  r8=gpu-001/0/mlx5_0 r10="),
            // dp groups {0,2,...,14}: 8 members, all shown.
            HasSubstr("    dp:0  r0=gpu-000/0/mlx5_0 r2="),
            HasSubstr("... (+5 more groups)"),
            HasSubstr("TP groups leaving their NVLink domain: none"),
            HasSubstr("not predicted: tp: the layout has no model section")));
  EXPECT_THAT(out, Not(HasSubstr("cp:")));
  EXPECT_THAT(t.err.str(), IsEmpty());
}

TEST(PlanCommandTest, NamesTpGroupsLeavingTheirNvlinkDomain) {
  TestEnv t;
  const std::string file = WriteTempFile("l.yaml", kCrossHostLayout);
  EXPECT_EQ(PlanCommand(file, CommandOptions(), t.env), kExitOk);
  EXPECT_THAT(t.out.str(),
              AllOf(HasSubstr("TP groups leaving their NVLink domain: 1 of 1"),
                    HasSubstr("  tp:0 spans 2 NVLink domains on hosts node-a, "
                              "node-b\n")));

  TestEnv split;
  const std::string file2 = WriteTempFile("l2.yaml", kCrossingLayout);
  EXPECT_EQ(PlanCommand(file2, CommandOptions(), split.env), kExitOk);
  EXPECT_THAT(split.out.str(),
              AllOf(HasSubstr("2 of 2"),
                    HasSubstr("tp:1 spans 2 NVLink domains on hosts gpu-001"),
                    // Without a NIC in the layout, members show host/gpu.
                    HasSubstr("r0=gpu-000/0 r1=gpu-000/1"),
                    // A model section without the sizes TP needs.
                    HasSubstr("not predicted: tp: needs model.micro_batch")));
}

TEST(PlanCommandTest, Json) {
  TestEnv t;
  CommandOptions options;
  options.json = true;
  const std::string file = WriteTempFile("l.yaml", kCrossHostLayout);
  EXPECT_EQ(PlanCommand(file, options, t.env), kExitOk);
  const nlohmann::json j = nlohmann::json::parse(t.out.str());
  EXPECT_EQ(j["job"], "cross-host");
  EXPECT_EQ(j["ranks"], 4);
  EXPECT_EQ(j["dimensions"][0]["dim"], "tp");
  EXPECT_EQ(j["dimensions"][0]["size"], 4);
  EXPECT_EQ(j["dimensions"][0]["groups"][0]["members"][3]["host"], "node-b");
  EXPECT_EQ(j["dimensions"][0]["groups"][0]["members"][3]["nic"], "mlx5_1");
  EXPECT_EQ(j["tp_groups_crossing_nvlink"], 1);
  ASSERT_EQ(j["tp_crossings"].size(), 1u);
  EXPECT_EQ(j["tp_crossings"][0]["group"], "tp:0");
  EXPECT_EQ(j["tp_crossings"][0]["hosts"],
            nlohmann::json::array({"node-a", "node-b"}));
  EXPECT_EQ(j["has_model"], false);
  EXPECT_EQ(j["traffic"][0]["available"], false);
}

TEST(PlanCommandTest, LargeLayoutIsSummarised) {
  // 2,048 GPUs: TP 8, PP 8, DP 32, EP 8 (issue 3's 4D example).
  std::string hosts;
  for (int i = 0; i < 256; ++i) {
    hosts += (i ? ", " : "") + std::string("n") + std::to_string(i);
  }
  TestEnv t;
  const std::string file =
      WriteTempFile("big.yaml",
                    "job: big\ngpus_per_node: 8\nparallelism: {tp: 8, pp: 8, "
                    "dp: 32, ep: 8}\nhosts: [" +
                        hosts + "]\n");
  EXPECT_EQ(PlanCommand(file, CommandOptions(), t.env), kExitOk);
  EXPECT_THAT(t.out.str(), AllOf(HasSubstr("2048 ranks on 256 hosts"),
                                 HasSubstr("dp: 64 groups of 32 ranks"),
                                 HasSubstr("... (+24 more)")));
  EXPECT_LT(t.out.str().size(), 8000u);
}

TEST(PlanCommandTest, InvalidLayoutNamesTheField) {
  TestEnv t;
  const std::string file = WriteTempFile(
      "l.yaml", absl::StrReplaceAll(kValidLayoutYaml, {{"parallelism:\n",
                                                        "parallelism:\n  "
                                                        "order: tp-xx-dp\n"}}));
  EXPECT_EQ(PlanCommand(file, CommandOptions(), t.env), kExitInvalid);
  EXPECT_THAT(t.err.str(),
              AllOf(HasSubstr(file), HasSubstr("parallelism.order")));
  EXPECT_THAT(t.out.str(), IsEmpty());
}

TEST(PlanCommandTest, MissingFile) {
  TestEnv t;
  EXPECT_EQ(PlanCommand("/nonexistent.yaml", CommandOptions(), t.env),
            kExitInvalid);
  EXPECT_THAT(t.err.str(), HasSubstr("/nonexistent.yaml: cannot read"));
}

}  // namespace
}  // namespace fabricdiag::cli
