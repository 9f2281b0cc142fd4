#include "analysis/layout_parse.h"

#include <gmock/gmock.h>
#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <random>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "analysis/layout_model.h"

namespace fabricdiag::analysis {
namespace {

using ::google::protobuf::util::MessageDifferencer;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

// The example layout of docs/layout-format.md, with every optional field
// and comment of the original contract.
constexpr char kInterfacesYaml[] =
    R"(job: moe-train-42          # [A-Za-z0-9._-]{1,64}
gpus_per_node: 8
nvlink_domain: 8           # optional: GPUs that share NVLink; default gpus_per_node (72 on an NVL72 rack)
parallelism:
  tp: 8
  pp: 2
  dp: 4                    # tp*cp*pp*dp must equal the number of ranks
  cp: 1                    # optional, default 1
  ep: 4                    # optional, default 1; must divide dp*cp
  order: tp-cp-ep-dp-pp    # optional, Megatron-LM order string, first letter group varies fastest
hosts: [gpu-000, gpu-001, gpu-002, gpu-003, gpu-004, gpu-005, gpu-006, gpu-007]
rails: [mlx5_0, mlx5_1, mlx5_2, mlx5_3, mlx5_4, mlx5_5, mlx5_6, mlx5_7]  # optional: NIC of local GPU i
# ranks: [{rank: 0, host: gpu-000, gpu: 0, nic: mlx5_0}, ...]  # optional explicit placement, overrides hosts/rails
model:                     # optional; enables traffic and time prediction
  params: 1.4e11
  hidden: 8192
  layers: 80
  seq_len: 4096
  micro_batch: 1
  micro_batches: 16
  dtype_bytes: 2
  experts: 64
  top_k: 2
)";

// The same layout as JSON.
constexpr char kInterfacesJson[] = R"({
  "job": "moe-train-42",
  "gpus_per_node": 8,
  "nvlink_domain": 8,
  "parallelism": {"tp": 8, "pp": 2, "dp": 4, "cp": 1, "ep": 4,
                  "order": "tp-cp-ep-dp-pp"},
  "hosts": ["gpu-000", "gpu-001", "gpu-002", "gpu-003", "gpu-004",
            "gpu-005", "gpu-006", "gpu-007"],
  "rails": ["mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3", "mlx5_4", "mlx5_5",
            "mlx5_6", "mlx5_7"],
  "model": {"params": 1.4e11, "hidden": 8192, "layers": 80, "seq_len": 4096,
            "micro_batch": 1, "micro_batches": 16, "dtype_bytes": 2,
            "experts": 64, "top_k": 2}
})";

TEST(ParseLayoutTest, InterfacesExampleYaml) {
  auto layout = ParseLayout(kInterfacesYaml);
  ASSERT_TRUE(layout.ok()) << layout.status();
  EXPECT_EQ(layout->job(), "moe-train-42");
  EXPECT_EQ(layout->gpus_per_node(), 8u);
  ASSERT_TRUE(layout->has_nvlink_domain());
  EXPECT_EQ(layout->parallelism().tp(), 8u);
  EXPECT_EQ(layout->parallelism().ep(), 4u);
  EXPECT_EQ(layout->parallelism().order(), "tp-cp-ep-dp-pp");
  EXPECT_EQ(layout->hosts_size(), 8);
  EXPECT_EQ(layout->rails(7), "mlx5_7");
  EXPECT_EQ(layout->ranks_size(), 0);
  EXPECT_DOUBLE_EQ(layout->model().params(), 1.4e11);
  EXPECT_EQ(layout->model().top_k(), 2u);

  auto model = LayoutModel::Build(*layout);
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(model->WorldSize(), 64u);
  // TP 8 = one host each; ep:0 = ranks 0, 8, 16, 24 on four hosts, 16 of
  // the 64 experts each.
  EXPECT_THAT(model->Group(Dim::kEp, 0), ElementsAre(0, 8, 16, 24));
  EXPECT_EQ(model->ExpertsOf(24)->begin, 48u);
  EXPECT_EQ(model->NicName(27), "mlx5_3");
}

TEST(ParseLayoutTest, JsonEquivalentGivesTheSameMessage) {
  auto yaml = ParseLayout(kInterfacesYaml);
  auto json = ParseLayout(kInterfacesJson);
  ASSERT_TRUE(yaml.ok()) << yaml.status();
  ASSERT_TRUE(json.ok()) << json.status();
  EXPECT_TRUE(MessageDifferencer::Equals(*yaml, *json))
      << yaml->DebugString() << "\nvs\n"
      << json->DebugString();
}

TEST(ParseLayoutTest, JsonOutputReadsBack) {
  auto layout = ParseLayout(kInterfacesYaml);
  ASSERT_TRUE(layout.ok()) << layout.status();
  auto model = LayoutModel::Build(*layout);
  ASSERT_TRUE(model.ok());
  const std::string json = LayoutToJson(model->layout());
  EXPECT_THAT(json, HasSubstr("\"job\":\"moe-train-42\""));
  auto back = ParseLayout(json);
  ASSERT_TRUE(back.ok()) << back.status() << "\n" << json;
  EXPECT_TRUE(MessageDifferencer::Equals(model->layout(), *back)) << json;
}

TEST(ParseLayoutTest, ExplicitRanksWithZerosReadBack) {
  constexpr char kText[] = R"(
job: two
gpus_per_node: 1
parallelism: {tp: 1, pp: 1, dp: 2}
ranks:
  - {rank: 0, host: h0, gpu: 0, nic: mlx5_0}
  - {rank: 1, host: h1, gpu: 0}
)";
  auto layout = ParseLayout(kText);
  ASSERT_TRUE(layout.ok()) << layout.status();
  ASSERT_EQ(layout->ranks_size(), 2);
  EXPECT_EQ(layout->ranks(1).host(), "h1");
  EXPECT_EQ(layout->ranks(0).nic(), "mlx5_0");
  EXPECT_FALSE(layout->parallelism().has_cp());  // absent, not 0
  // rank 0 / gpu 0 survive the JSON round trip; what the collector says
  // of a resolved rank's NIC is no field of the file and is left out.
  EXPECT_THAT(LayoutToJson(*layout), Not(HasSubstr("nic_source")));
  v1::Layout resolved = *layout;
  resolved.mutable_ranks(0)->set_nic_source("rank");
  EXPECT_THAT(LayoutToJson(resolved), HasSubstr("\"nic_source\":\"rank\""));
  auto back = ParseLayout(LayoutToJson(*layout));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_TRUE(MessageDifferencer::Equals(*layout, *back));
  auto model = LayoutModel::Build(*back);
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(model->HostName(1), "h1");
}

struct BadText {
  const char* name;
  std::string text;
  const char* field;  // the message starts with "<field>: "
  const char* detail;
};

// A valid layout with `from` replaced by `to` (once).
std::string Edit(absl::string_view from, absl::string_view to) {
  std::string text = kInterfacesYaml;
  size_t at = text.find(std::string(from));
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), std::string(to));
  return text;
}

class BadLayoutTextTest : public ::testing::TestWithParam<BadText> {};

TEST_P(BadLayoutTextTest, IsRejectedNamingTheField) {
  const BadText& c = GetParam();
  auto layout = ParseLayout(c.text);
  absl::Status status = layout.status();
  // Some mistakes are only meaningful to the model: the CLI runs both.
  if (layout.ok()) status = LayoutModel::Build(*layout).status();
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()),
              StartsWith(absl::StrCat(c.field, ": ")));
  EXPECT_THAT(std::string(status.message()), HasSubstr(c.detail));
}

const BadText kBadTexts[] = {
    {"UnknownTopLevelKey", Edit("gpus_per_node: 8", "gpus_per_nod: 8"),
     "gpus_per_nod", "unknown key"},
    {"UnknownNestedKey", Edit("  cp: 1", "  xp: 1"), "parallelism.xp",
     "unknown key"},
    {"DuplicateKey", Edit("  cp: 1", "  tp: 2"), "parallelism.tp",
     "given twice"},
    {"FloatForInt", Edit("tp: 8", "tp: 8.0"), "parallelism.tp",
     "expected an integer, got \"8.0\""},
    {"ExponentForInt", Edit("hidden: 8192", "hidden: 8.192e3"), "model.hidden",
     "expected an integer"},
    {"QuotedInt", Edit("tp: 8", "tp: \"8\""), "parallelism.tp",
     "expected an integer, got the string \"8\""},
    {"HexInt", Edit("tp: 8", "tp: 0x8"), "parallelism.tp",
     "expected an integer"},
    {"WordForInt", Edit("tp: 8", "tp: eight"), "parallelism.tp",
     "expected an integer, got \"eight\""},
    {"Negative", Edit("dp: 4", "dp: -4"), "parallelism.dp",
     "must not be negative, got -4"},
    {"Huge", Edit("pp: 2", "pp: 99999999999999999999999"), "parallelism.pp",
     "is too large"},
    {"JustAboveUint32", Edit("pp: 2", "pp: 4294967296"), "parallelism.pp",
     "is too large"},
    {"Zero", Edit("pp: 2", "pp: 0"), "parallelism.pp", "must be at least 1"},
    {"ScalarForList",
     Edit("hosts: [gpu-000, gpu-001, gpu-002, gpu-003, gpu-004, gpu-005, "
          "gpu-006, gpu-007]",
          "hosts: gpu-000"),
     "hosts", "expected a list, got \"gpu-000\""},
    {"ListForScalar", Edit("job: moe-train-42", "job: [moe-train-42]"), "job",
     "expected a string, got a list"},
    {"MappingForList",
     Edit("rails: [mlx5_0, mlx5_1, mlx5_2, mlx5_3, mlx5_4, mlx5_5, mlx5_6, "
          "mlx5_7]",
          "rails: {a: 1}"),
     "rails", "expected a list, got a mapping"},
    {"NullInt", Edit("gpus_per_node: 8", "gpus_per_node:"), "gpus_per_node",
     "expected an integer, got null"},
    {"HostListEntryNotString", Edit("gpu-003,", "[gpu-003],"), "hosts[3]",
     "expected a string, got a list"},
    {"MissingTp", Edit("  tp: 8\n", ""), "parallelism.tp", "required"},
    {"MissingJob", Edit("job: moe-train-42", "jobb: moe-train-42"), "jobb",
     "unknown key"},
    {"ParamsAsString", Edit("params: 1.4e11", "params: lots"), "model.params",
     "expected a number, got \"lots\""},
    {"ParamsNegative", Edit("params: 1.4e11", "params: -1.4e11"),
     "model.params", "must not be negative"},
    {"ParamsInfinite", Edit("params: 1.4e11", "params: .inf"), "model.params",
     "expected a number"},
    {"UnknownModelKey", Edit("top_k: 2", "topk: 2"), "model.topk",
     "unknown key"},
    {"JobNameInvalid", Edit("job: moe-train-42", "job: \"x y\""), "job",
     "\"x y\" must match [A-Za-z0-9][A-Za-z0-9._-]{0,63}"},
    {"EpDoesNotDivide", Edit("ep: 4", "ep: 3"), "parallelism.ep",
     "3 does not divide dp*cp = 4"},
    {"HostsTooFew", Edit("gpu-006, gpu-007", "gpu-006"), "hosts",
     "7 hosts x 8 gpus = 56 ranks, but tp*cp*pp*dp = 64"},
    {"UnknownOrderLetter",
     Edit("order: tp-cp-ep-dp-pp", "order: tp-cp-ep-dp-qq"),
     "parallelism.order", "unknown dimension \"qq\""},
    {"RanksNotMappings", Edit("# ranks:", "ranks: [1, 2]\n#"), "ranks[0]",
     "expected a mapping, got \"1\""},
    {"RanksUnknownKey",
     Edit("# ranks:", "ranks: [{rank: 0, host: h, gpu: 0, port: 1}]\n#"),
     "ranks[0].port", "unknown key"},
    {"RanksGpuFloat",
     Edit("# ranks:",
          "ranks: [{rank: 0, host: h, gpu: 0}, {rank: 1, host: h, gpu: "
          "1.5}]\n#"),
     "ranks[1].gpu", "expected an integer, got \"1.5\""},
    {"RanksMissingHost", Edit("# ranks:", "ranks: [{rank: 0, gpu: 0}]\n#"),
     "ranks[0].host", "required"},
    {"NotAMapping", "[1, 2, 3]", "layout", "expected a mapping, got a list"},
    {"Scalar", "hello", "layout", "expected a mapping, got \"hello\""},
    {"Empty", "", "layout", "expected a mapping, got null"},
    {"OnlyComment", "# nothing\n", "layout", "expected a mapping"},
    {"TwoDocuments", absl::StrCat(kInterfacesYaml, "---\njob: other\n"),
     "layout", "holds more than one YAML document"},
    {"Malformed", "job: [unclosed\n", "layout", "not valid YAML or JSON"},
    {"MalformedJson", "{\"job\": \"a\",", "layout", "not valid YAML or JSON"},
    {"JsonQuotedNumber",
     absl::StrReplaceAll(kInterfacesJson, {{"\"gpus_per_node\": 8",
                                            "\"gpus_per_node\": \"8\""}}),
     "gpus_per_node", "expected an integer, got the string \"8\""},
    {"ComplexKey", "? [a, b]\n: 1\n", "layout", "a key must be a string"},
};

INSTANTIATE_TEST_SUITE_P(
    Cases, BadLayoutTextTest, ::testing::ValuesIn(kBadTexts),
    [](const ::testing::TestParamInfo<BadText>& param_info) {
      return std::string(param_info.param.name);
    });

// --- hostile input -----------------------------------------------------------

TEST(HostileLayoutTest, BinaryJunkIsAnErrorNotACrash) {
  std::mt19937 rng(42);
  for (int round = 0; round < 200; ++round) {
    std::string junk(static_cast<size_t>(rng() % 4096), '\0');
    for (char& c : junk) c = static_cast<char>(rng() & 0xff);
    auto layout = ParseLayout(junk);
    EXPECT_FALSE(layout.ok()) << round;
    EXPECT_EQ(layout.status().code(), absl::StatusCode::kInvalidArgument);
    // Junk is escaped and cut, never echoed whole.
    EXPECT_LT(layout.status().message().size(), 400u);
  }
}

TEST(HostileLayoutTest, JunkInsideAValidLayout) {
  std::string text = kInterfacesYaml;
  text.replace(text.find("moe-train-42"), 12, std::string("\x01\xff\x7f", 3));
  auto layout = ParseLayout(text);
  absl::Status status =
      layout.ok() ? LayoutModel::Build(*layout).status() : layout.status();
  EXPECT_FALSE(status.ok());
}

TEST(HostileLayoutTest, DeepFlowNestingIsBounded) {
  const std::string text =
      absl::StrCat("job: ", std::string(100000, '['), std::string(100000, ']'));
  auto layout = ParseLayout(text);
  ASSERT_FALSE(layout.ok());
  EXPECT_THAT(std::string(layout.status().message()),
              HasSubstr("nests deeper than"));
}

TEST(HostileLayoutTest, DeepBlockNestingIsBounded) {
  std::string text;
  for (int i = 0; i < 3000; ++i) {
    text += std::string(static_cast<size_t>(i), ' ') + "a:\n";
  }
  auto layout = ParseLayout(text);
  ASSERT_FALSE(layout.ok());
  EXPECT_EQ(layout.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(HostileLayoutTest, TenMegabyteStringIsRejectedBriefly) {
  const std::string text = Edit(
      "job: moe-train-42", absl::StrCat("job: ", std::string(10 << 20, 'x')));
  auto layout = ParseLayout(text);
  ASSERT_TRUE(layout.ok()) << layout.status();  // well-formed YAML
  absl::Status status = LayoutModel::Build(*layout).status();
  ASSERT_FALSE(status.ok());
  EXPECT_THAT(std::string(status.message()), StartsWith("job: \"xxxx"));
  EXPECT_LT(status.message().size(), 200u);
}

TEST(HostileLayoutTest, OversizedTextIsRejectedBeforeParsing) {
  const std::string text(kMaxDocumentBytes + 1, ' ');
  auto layout = ParseLayout(text);
  ASSERT_FALSE(layout.ok());
  EXPECT_THAT(std::string(layout.status().message()),
              HasSubstr("the limit is 16777216"));
}

TEST(HostileLayoutTest, AliasBombDoesNotExpand) {
  // Billion laughs: 10 levels of 10 aliases each would be 10^10 strings if
  // expanded. yaml-cpp shares aliased nodes and the parser only walks the
  // schema, so this fails fast on the first wrong type.
  std::string text =
      "a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n";
  for (int i = 1; i < 10; ++i) {
    std::string line = absl::StrCat("a", i, ": &a", i, " [");
    for (int k = 0; k < 10; ++k) {
      absl::StrAppend(&line, k ? ", " : "", "*a", i - 1);
    }
    absl::StrAppend(&text, line, "]\n");
  }
  // The same bomb as the entries of a known list.
  std::string in_hosts =
      "job: j\ngpus_per_node: 8\nparallelism: {tp: 1, pp: 1, dp: 8}\nhosts: [";
  for (int i = 0; i < 10; ++i) {
    std::string entry = absl::StrCat(i ? ", " : "", "&b", i, " [");
    for (int k = 0; k < 10; ++k) {
      absl::StrAppend(&entry, k ? ", " : "",
                      i == 0 ? "lol" : absl::StrCat("*b", i - 1));
    }
    absl::StrAppend(&in_hosts, entry, "]");
  }
  in_hosts += "]\n";
  const auto start = std::chrono::steady_clock::now();
  auto as_unknown_key = ParseLayout(text);
  auto as_hosts = ParseLayout(in_hosts);
  const auto elapsed = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(as_unknown_key.ok());
  EXPECT_EQ(as_unknown_key.status().message(), "a0: unknown key");
  ASSERT_FALSE(as_hosts.ok());
  EXPECT_EQ(as_hosts.status().message(),
            "hosts[0]: expected a string, got a list");
  EXPECT_LT(elapsed, std::chrono::seconds(5));
}

TEST(HostileLayoutTest, AliasBombUnderAKnownField) {
  std::string text =
      "job: j\ngpus_per_node: 8\nparallelism: {tp: 1, pp: 1, dp: 8}\n"
      "model: {hidden: &a0 [x, x, x, x, x, x, x, x, x, x]}\n";
  auto layout = ParseLayout(text);
  ASSERT_FALSE(layout.ok());
  EXPECT_THAT(std::string(layout.status().message()),
              StartsWith("model.hidden: expected an integer, got a list"));
}

TEST(HostileLayoutTest, TooManyValuesAreBounded) {
  // 1,000,001 one-digit list entries in 2 MB: yaml-cpp would spend ~0.5 GB
  // on them.
  std::string text = "hosts: [";
  text.reserve(2 * 1000 * 1000 + 16);
  for (int i = 0; i < 1000 * 1000; ++i) text += "1,";
  text += "1]";
  auto layout = ParseLayout(text);
  ASSERT_FALSE(layout.ok());
  EXPECT_THAT(std::string(layout.status().message()),
              HasSubstr("has more than 1000000 values"));
}

// --- topology ----------------------------------------------------------------

// The example topology of docs/topology-format.md, with the comments of
// the original contract.
constexpr char kTopologyYaml[] = R"(switches:
  - name: leaf-0
    uplinks: [swp49, swp50, swp51, swp52]   # its ECMP group towards the spines
links:
  - {host: gpu-000, nic: mlx5_0, switch: leaf-0, port: swp1}
)";

TEST(ParseTopologyTest, InterfacesExample) {
  auto topo = ParseTopology(kTopologyYaml);
  ASSERT_TRUE(topo.ok()) << topo.status();
  ASSERT_EQ(topo->switches_size(), 1);
  EXPECT_EQ(topo->switches(0).name(), "leaf-0");
  EXPECT_THAT(topo->switches(0).uplinks(),
              ElementsAre("swp49", "swp50", "swp51", "swp52"));
  ASSERT_EQ(topo->links_size(), 1);
  EXPECT_EQ(topo->links(0).switch_(), "leaf-0");
  EXPECT_EQ(topo->links(0).port(), "swp1");

  auto back = ParseTopology(TopologyToJson(*topo));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_TRUE(MessageDifferencer::Equals(*topo, *back));
}

TEST(ParseTopologyTest, EmptyTopologyIsValid) {
  EXPECT_TRUE(ParseTopology("{}").ok());
  EXPECT_TRUE(ParseTopology("switches: []\n").ok());
}

class BadTopologyTest : public ::testing::TestWithParam<BadText> {};

TEST_P(BadTopologyTest, IsRejectedNamingTheField) {
  const BadText& c = GetParam();
  auto topo = ParseTopology(c.text);
  ASSERT_FALSE(topo.ok());
  EXPECT_EQ(topo.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(topo.status().message()),
              StartsWith(absl::StrCat(c.field, ": ")));
  EXPECT_THAT(std::string(topo.status().message()), HasSubstr(c.detail));
}

std::string EditTopology(absl::string_view from, absl::string_view to) {
  return absl::StrReplaceAll(kTopologyYaml, {{from, to}});
}

const BadText kBadTopologies[] = {
    {"UnknownKey", "switches: []\nlinkz: []\n", "linkz", "unknown key"},
    {"LinkToUndeclaredSwitch", EditTopology("switch: leaf-0", "switch: leaf-9"),
     "links[0].switch", "\"leaf-9\" is not in switches"},
    {"UplinksScalar", EditTopology("[swp49, swp50, swp51, swp52]", "swp49"),
     "switches[0].uplinks", "expected a list, got \"swp49\""},
    {"DuplicateUplink", EditTopology("swp50", "swp49"),
     "switches[0].uplinks[1]",
     "\"swp49\" is already used by "
     "switches[0].uplinks[0]"},
    {"LinkOnUplinkPort", EditTopology("port: swp1", "port: swp52"),
     "links[0].port", "leaf-0 swp52 is already used by switches[0].uplinks[3]"},
    {"LinkMissingPort", EditTopology(", port: swp1", ""), "links[0].port",
     "required"},
    {"BadSwitchName", EditTopology("name: leaf-0", "name: \"leaf 0\""),
     "switches[0].name", "is not a valid switch name"},
    {"BadNic", EditTopology("nic: mlx5_0", "nic: \"\""), "links[0].nic",
     "is not a valid NIC name"},
    {"LinksNotAList", "links: {host: a}\n", "links",
     "expected a list, got a mapping"},
};

INSTANTIATE_TEST_SUITE_P(
    Cases, BadTopologyTest, ::testing::ValuesIn(kBadTopologies),
    [](const ::testing::TestParamInfo<BadText>& param_info) {
      return std::string(param_info.param.name);
    });

#ifndef FABRICDIAG_SANITIZED  // a size check; 30 s sanitized
// A fabric of `nodes` GPU nodes x 8 NICs, 16 nodes per leaf (128 host
// ports, 4 uplinks each), in the flow style of docs/topology-format.md.
std::string FabricTopology(int nodes) {
  const int leaves = (nodes + 15) / 16;
  std::string yaml = "switches:\n";
  for (int l = 0; l < leaves; ++l) {
    absl::StrAppend(&yaml, "  - name: leaf-", l,
                    "\n    uplinks: [swp129, swp130, swp131, swp132]\n");
  }
  yaml += "links:\n";
  for (int n = 0; n < nodes; ++n) {
    for (int k = 0; k < 8; ++k) {
      absl::StrAppend(&yaml, "  - {host: gpu-", n, ", nic: mlx5_", k,
                      ", switch: leaf-", n / 16, ", port: swp",
                      (n % 16) * 8 + k + 1, "}\n");
    }
  }
  return yaml;
}

TEST(TopologyLimitsTest, A200kGpuFabricParses) {
  // 25,000 nodes x 8 NICs, 1,563 leaves: ~1.8M values, ~15 MB.
  const std::string text = FabricTopology(25000);
  auto topo = ParseTopology(text);
  ASSERT_TRUE(topo.ok()) << topo.status();
  EXPECT_EQ(topo->links_size(), 200000);
  EXPECT_EQ(topo->switches_size(), 1563);
  EXPECT_EQ(topo->links(199999).host(), "gpu-24999");
}
#endif  // FABRICDIAG_SANITIZED

TEST(TopologyLimitsTest, TheBoundsHoldTwiceThatFabric) {
  EXPECT_GE(kMaxTopologyLinks, 2u * 200000);
  EXPECT_GE(kMaxTopologyValues, 2u * (9 * 200000 + 9 * 1563));
  // ~75 bytes per link in the flow style above.
  EXPECT_GE(kMaxTopologyBytes, 2u * 200000 * 75);
}

TEST(TopologyLimitsTest, TooManyValuesAreRefusedBeforeParsing) {
  // kMaxTopologyValues + 1 one-digit entries in ~8 MB: counted on the raw
  // text, before yaml-cpp would spend ~2 GB on them.
  std::string text = "links: [";
  text.reserve(2 * kMaxTopologyValues + 16);
  for (uint64_t i = 0; i < kMaxTopologyValues; ++i) text += "1,";
  text += "1]";
  const auto start = std::chrono::steady_clock::now();
  auto topo = ParseTopology(text);
  const auto elapsed = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(topo.ok());
  EXPECT_THAT(
      std::string(topo.status().message()),
      HasSubstr(absl::StrCat("has more than ", kMaxTopologyValues, " values")));
  EXPECT_LT(elapsed, std::chrono::seconds(5));
}

TEST(TopologyLimitsTest, OversizedTextIsRefusedBeforeParsing) {
  auto topo = ParseTopology(std::string(kMaxTopologyBytes + 1, ' '));
  ASSERT_FALSE(topo.ok());
  EXPECT_THAT(std::string(topo.status().message()),
              HasSubstr(absl::StrCat("the limit is ", kMaxTopologyBytes)));
}

TEST(TopologyLimitsTest, TooManyLinksOrSwitchesAreRefused) {
  // Within the value bound, over the list bounds (the entries are not read).
  for (const auto& [key, max] :
       {std::pair<std::string, uint32_t>{"links", kMaxTopologyLinks},
        std::pair<std::string, uint32_t>{"switches", kMaxTopologySwitches}}) {
    std::string text = key + ": [";
    for (uint32_t i = 0; i < max; ++i) text += "0,";
    text += "0]";
    auto topo = ParseTopology(text);
    ASSERT_FALSE(topo.ok()) << key;
    EXPECT_EQ(
        topo.status().message(),
        absl::StrCat(key, ": ", max + 1, " entries exceed the limit of ", max));
  }
}

// Switch links and chassis ids (docs/topology-format.md, "Fields").
constexpr char kSwitchLinksYaml[] = R"(switches:
  - {name: leaf-0, uplinks: [swp49, swp50], chassis_id: "12:27:29:d0:18:68"}
  - {name: spine-0, chassis_id: spine-0 chassis}
  - {name: spine-1}
links:
  - {host: gpu-000, nic: mlx5_0, switch: leaf-0, port: swp1}
switch_links:
  - {switch_a: leaf-0, port_a: swp49, switch_b: spine-0, port_b: swp1}
  - {switch_a: leaf-0, port_a: swp50, switch_b: spine-1, port_b: swp1}
)";

TEST(ParseTopologyTest, SwitchLinksAndChassisIds) {
  auto topo = ParseTopology(kSwitchLinksYaml);
  ASSERT_TRUE(topo.ok()) << topo.status();
  EXPECT_EQ(topo->switches(0).chassis_id(), "12:27:29:d0:18:68");
  EXPECT_EQ(topo->switches(1).chassis_id(), "spine-0 chassis");
  ASSERT_EQ(topo->switch_links_size(), 2);
  EXPECT_EQ(topo->switch_links(1).switch_a(), "leaf-0");
  EXPECT_EQ(topo->switch_links(1).port_a(), "swp50");
  EXPECT_EQ(topo->switch_links(1).switch_b(), "spine-1");
  EXPECT_EQ(topo->switch_links(1).port_b(), "swp1");
  auto back = ParseTopology(TopologyToJson(*topo));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_TRUE(MessageDifferencer::Equals(*topo, *back));
}

TEST(ParseTopologyTest, DerivedFieldsArePrintedOnlyForDisplay) {
  auto topo = ParseTopology(kSwitchLinksYaml);
  ASSERT_TRUE(topo.ok()) << topo.status();
  topo->mutable_switches(0)->set_tier(1);
  topo->mutable_links(0)->set_source(v1::LINK_SOURCE_DISCOVERED);
  // The file format leaves them out, so that what is printed reads back
  // (the discovered topology adopted as the declared one).
  const std::string file = TopologyToJson(*topo);
  EXPECT_THAT(file, Not(HasSubstr("tier")));
  EXPECT_THAT(file, Not(HasSubstr("source")));
  EXPECT_TRUE(ParseTopology(file).ok());
  EXPECT_THAT(file, Not(HasSubstr("\"uplinks\":[]")));  // spine-0: none
  const std::string shown = TopologyToJson(*topo, TopologyJson::kWithDerived);
  EXPECT_THAT(shown, HasSubstr("\"tier\":1"));
  EXPECT_THAT(shown, HasSubstr("\"source\":\"LINK_SOURCE_DISCOVERED\""));
  // A file that says them is refused: they are never declared.
  auto refused = ParseTopology(shown);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(std::string(refused.status().message()),
              HasSubstr("unknown key"));
}

std::string EditSwitchLinks(absl::string_view from, absl::string_view to) {
  return absl::StrReplaceAll(kSwitchLinksYaml, {{from, to}});
}

const BadText kBadSwitchLinks[] = {
    {"SwitchLinkUnknownKey", EditSwitchLinks("port_b: swp1}", "port_c: swp1}"),
     "switch_links[0].port_c", "unknown key"},
    {"SwitchLinkMissingPort",
     EditSwitchLinks("switch_b: spine-1, port_b: swp1", "switch_b: spine-1"),
     "switch_links[1].port_b", "required"},
    {"SwitchLinkUndeclaredSwitch",
     EditSwitchLinks("switch_b: spine-1", "switch_b: spine-9"),
     "switch_links[1].switch_b", "\"spine-9\" is not in switches"},
    {"SwitchLinkBadPort",
     EditSwitchLinks("port_a: swp50", "port_a: \"swp 50\""),
     "switch_links[1].port_a", "is not a valid port name"},
    {"SwitchLinkOnHostPort", EditSwitchLinks("port_a: swp50", "port_a: swp1"),
     "switch_links[1].port_a", "leaf-0 swp1 is cabled to a host by links[0]"},
    {"SwitchPortTwice",
     EditSwitchLinks("switch_b: spine-1, port_b: swp1",
                     "switch_b: spine-0, port_b: swp1"),
     "switch_links[1].port_b",
     "spine-0 swp1 is already used by switch_links[0].port_b"},
    {"SwitchLinksNotAList", "switch_links: {switch_a: a}\n", "switch_links",
     "expected a list, got a mapping"},
    {"ChassisIdTwice",
     EditSwitchLinks("chassis_id: spine-0 chassis",
                     "chassis_id: \"12:27:29:D0:18:68\""),
     "switches[1].chassis_id",
     "is already the chassis id of switches[0].chassis_id"},
    {"ChassisIdNotPrintable",
     EditSwitchLinks("chassis_id: spine-0 chassis",
                     "chassis_id: \"spine\\x01\""),
     "switches[1].chassis_id", "is not a chassis id"},
    {"ChassisIdTooLong",
     EditSwitchLinks("chassis_id: spine-0 chassis",
                     "chassis_id: " + std::string(256, 'c')),
     "switches[1].chassis_id", "is not a chassis id"},
    {"ChassisIdNotAString",
     EditSwitchLinks("chassis_id: spine-0 chassis", "chassis_id: [a]"),
     "switches[1].chassis_id", "expected a string"},
    {"TierIsNeverDeclared",
     EditSwitchLinks("{name: spine-1}", "{name: spine-1, tier: 2}"),
     "switches[2].tier", "unknown key"},
};

INSTANTIATE_TEST_SUITE_P(
    SwitchLinks, BadTopologyTest, ::testing::ValuesIn(kBadSwitchLinks),
    [](const ::testing::TestParamInfo<BadText>& param_info) {
      return std::string(param_info.param.name);
    });

// The gnmi block of a switch that streams gNMI (docs/topology-format.md).
constexpr char kGnmiTopologyYaml[] = R"(switches:
  - name: leaf-0
    uplinks: [swp49, swp50]
  - name: leaf-1
    uplinks: [Ethernet192, Ethernet200]
    gnmi: {address: "10.0.0.11:9339", dialect: openconfig,   # or sonic
           tls_ca: /etc/fabricdiag/switch-ca.pem, credentials_file: /etc/fabricdiag/leaf-1.cred}
  - name: leaf-2
    gnmi: {address: "[fd00::12]:50051", dialect: sonic, insecure: true}
links:
  - {host: gpu-000, nic: mlx5_0, switch: leaf-1, port: Ethernet0}
)";

TEST(ParseTopologyTest, GnmiBlock) {
  auto topo = ParseTopology(kGnmiTopologyYaml);
  ASSERT_TRUE(topo.ok()) << topo.status();
  ASSERT_EQ(topo->switches_size(), 3);
  EXPECT_FALSE(topo->switches(0).has_gnmi());
  const v1::GnmiTarget& g = topo->switches(1).gnmi();
  EXPECT_EQ(g.address(), "10.0.0.11:9339");
  EXPECT_EQ(g.dialect(), "openconfig");
  EXPECT_EQ(g.tls_ca(), "/etc/fabricdiag/switch-ca.pem");
  EXPECT_EQ(g.credentials_file(), "/etc/fabricdiag/leaf-1.cred");
  EXPECT_FALSE(g.insecure());
  EXPECT_EQ(topo->switches(2).gnmi().dialect(), "sonic");
  EXPECT_TRUE(topo->switches(2).gnmi().insecure());

  // `topology show` prints it, and what it prints reads back.
  const std::string json = TopologyToJson(*topo);
  EXPECT_THAT(
      json, HasSubstr("\"credentials_file\":\"/etc/fabricdiag/leaf-1.cred\""));
  auto back = ParseTopology(json);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_TRUE(MessageDifferencer::Equals(*topo, *back));
}

std::string EditGnmi(absl::string_view from, absl::string_view to) {
  return absl::StrReplaceAll(kGnmiTopologyYaml, {{from, to}});
}

const BadText kBadGnmiBlocks[] = {
    {"UnknownKey", EditGnmi("dialect: sonic", "dialect: sonic, password: x"),
     "switches[2].gnmi.password", "unknown key"},
    {"NotAMapping",
     EditGnmi("gnmi: {address: \"[fd00::12]:50051\", dialect: "
              "sonic, insecure: true}",
              "gnmi: 10.0.0.12:50051"),
     "switches[2].gnmi", "expected a mapping"},
    {"MissingAddress", EditGnmi("address: \"[fd00::12]:50051\", ", ""),
     "switches[2].gnmi.address", "is not HOST:PORT"},
    {"AddressWithoutPort", EditGnmi("10.0.0.11:9339", "10.0.0.11"),
     "switches[1].gnmi.address", "\"10.0.0.11\" is not HOST:PORT"},
    {"PortOutOfRange", EditGnmi("10.0.0.11:9339", "10.0.0.11:70000"),
     "switches[1].gnmi.address", "is not HOST:PORT"},
    {"AddressWithPath", EditGnmi("10.0.0.11:9339", "10.0.0.11/x:9339"),
     "switches[1].gnmi.address", "is not HOST:PORT"},
    {"MissingDialect", EditGnmi("dialect: sonic, ", ""),
     "switches[2].gnmi.dialect", "required: openconfig or sonic"},
    {"UnknownDialect", EditGnmi("dialect: sonic", "dialect: eos"),
     "switches[2].gnmi.dialect", "\"eos\" is not a dialect"},
    {"NoCaWithoutInsecure", EditGnmi("insecure: true", "insecure: false"),
     "switches[2].gnmi.tls_ca", "required"},
    {"CaWithInsecure",
     EditGnmi("insecure: true", "insecure: true, tls_ca: /etc/ca.pem"),
     "switches[2].gnmi.tls_ca", "given with insecure: true"},
    {"CredentialsOverPlaintext",
     EditGnmi("insecure: true", "insecure: true, credentials_file: /etc/c"),
     "switches[2].gnmi.credentials_file", "only over TLS"},
    {"InsecureQuoted", EditGnmi("insecure: true", "insecure: \"true\""),
     "switches[2].gnmi.insecure", "expected true or false"},
    {"InsecureYes", EditGnmi("insecure: true", "insecure: yes"),
     "switches[2].gnmi.insecure", "expected true or false"},
    {"RelativeCa", EditGnmi("/etc/fabricdiag/switch-ca.pem", "switch-ca.pem"),
     "switches[1].gnmi.tls_ca", "is not an absolute path"},
    {"RelativeCredentials",
     EditGnmi("/etc/fabricdiag/leaf-1.cred", "leaf-1.cred"),
     "switches[1].gnmi.credentials_file", "is not an absolute path"},
    {"AddressList", EditGnmi("\"10.0.0.11:9339\"", "[a, b]"),
     "switches[1].gnmi.address", "expected a string"},
};

INSTANTIATE_TEST_SUITE_P(
    Gnmi, BadTopologyTest, ::testing::ValuesIn(kBadGnmiBlocks),
    [](const ::testing::TestParamInfo<BadText>& param_info) {
      return std::string(param_info.param.name);
    });

TEST(ParseTopologyTest, DuplicatesAcrossEntries) {
  const std::string two_switches =
      absl::StrCat("switches:\n  - {name: leaf-0}\n  - {name: leaf-0}\n");
  auto topo = ParseTopology(two_switches);
  ASSERT_FALSE(topo.ok());
  EXPECT_EQ(topo.status().message(),
            "switches[1].name: \"leaf-0\" is listed twice (also switches[0])");

  const std::string nic_twice = absl::StrCat(
      kTopologyYaml,
      "  - {host: gpu-000, nic: mlx5_0, switch: leaf-0, port: swp2}\n");
  topo = ParseTopology(nic_twice);
  ASSERT_FALSE(topo.ok());
  EXPECT_EQ(topo.status().message(),
            "links[1]: gpu-000 mlx5_0 is already linked by links[0]");

  const std::string port_twice = absl::StrCat(
      kTopologyYaml,
      "  - {host: gpu-001, nic: mlx5_0, switch: leaf-0, port: swp1}\n");
  topo = ParseTopology(port_twice);
  ASSERT_FALSE(topo.ok());
  EXPECT_EQ(topo.status().message(),
            "links[1].port: leaf-0 swp1 is already used by links[0]");
}

}  // namespace
}  // namespace fabricdiag::analysis
