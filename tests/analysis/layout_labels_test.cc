#include "analysis/layout_labels.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "analysis/layout_model.h"
#include "analysis/layout_parse.h"

namespace fabricdiag::analysis {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::Pair;
using ::testing::StartsWith;
using ::testing::UnorderedElementsAre;

constexpr char kLayout[] = R"(job: llama-70b
gpus_per_node: 8
parallelism: {tp: 8, pp: 1, dp: 2}
hosts: [gpu-000, gpu-001]
)";

// kLayout with `labels` set to the YAML `labels`.
std::string WithLabels(const std::string& labels) {
  return absl::StrCat(kLayout, "labels: ", labels, "\n");
}

// The message of parsing and building `text`; "" when both succeed.
std::string Error(const std::string& text) {
  absl::StatusOr<v1::Layout> layout = ParseLayout(text);
  if (!layout.ok()) return std::string(layout.status().message());
  absl::StatusOr<LayoutModel> model = LayoutModel::Build(*layout);
  if (!model.ok()) return std::string(model.status().message());
  return "";
}

TEST(LayoutLabelsTest, ParsedFromYamlAndJsonAndBuilt) {
  absl::StatusOr<v1::Layout> yaml =
      ParseLayout(WithLabels("{team: ml-infra, project: llama}"));
  ASSERT_TRUE(yaml.ok()) << yaml.status();
  EXPECT_THAT(yaml->labels(), UnorderedElementsAre(Pair("team", "ml-infra"),
                                                   Pair("project", "llama")));
  absl::StatusOr<v1::Layout> json = ParseLayout(
      R"({"job": "j", "gpus_per_node": 8, "parallelism": {"tp": 8, "pp": 1,
          "dp": 1}, "hosts": ["gpu-0"], "labels": {"team": "vision"}})");
  ASSERT_TRUE(json.ok()) << json.status();
  EXPECT_THAT(json->labels(), UnorderedElementsAre(Pair("team", "vision")));
  absl::StatusOr<LayoutModel> model = LayoutModel::Build(*yaml);
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ(model->layout().labels().at("team"), "ml-infra");
}

TEST(LayoutLabelsTest, PrintedAndReadBackOnlyWhenSet) {
  absl::StatusOr<v1::Layout> with = ParseLayout(WithLabels("{team: ml}"));
  ASSERT_TRUE(with.ok()) << with.status();
  const std::string json = LayoutToJson(*with);
  EXPECT_THAT(json, HasSubstr(R"("labels":{"team":"ml"})"));
  absl::StatusOr<v1::Layout> back = ParseLayout(json);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_THAT(back->labels(), UnorderedElementsAre(Pair("team", "ml")));

  absl::StatusOr<v1::Layout> without = ParseLayout(kLayout);
  ASSERT_TRUE(without.ok()) << without.status();
  EXPECT_THAT(LayoutToJson(*without), Not(HasSubstr("labels")));
}

TEST(LayoutLabelsTest, BadLabelsNameTheField) {
  EXPECT_THAT(Error(WithLabels("[team]")),
              StartsWith("labels: expected a mapping, got"));
  EXPECT_THAT(Error(WithLabels("{team: [a, b]}")),
              StartsWith("labels.team: expected a string"));
  EXPECT_THAT(Error(WithLabels("{team: }")),
              StartsWith("labels.team: expected a string, got null"));
  EXPECT_THAT(Error(WithLabels("{Team: ml}")),
              StartsWith("labels.\"Team\": a key must match [a-z_]"));
  EXPECT_THAT(Error(WithLabels("{9lives: ml}")),
              StartsWith("labels.\"9lives\": a key must match"));
  EXPECT_THAT(Error(WithLabels("{team-name: ml}")),
              StartsWith("labels.\"team-name\": a key must match"));
  EXPECT_THAT(
      Error(WithLabels(absl::StrCat("{", std::string(64, 'k'), ": ml}"))),
      HasSubstr("a key must match"));
  EXPECT_EQ(Error(WithLabels(absl::StrCat("{", std::string(63, 'k'), ": ml}"))),
            "");
  EXPECT_EQ(Error(WithLabels("{team: \"\"}")),
            "labels.team: the value is empty");
  EXPECT_EQ(Error(WithLabels("{team: \"ml\\ninfra\"}")),
            "labels.team: \"ml\\ninfra\" is not printable UTF-8");
  EXPECT_EQ(Error(WithLabels("{team: {a: b}}")),
            "labels.team: expected a string, got a mapping");
  EXPECT_THAT(Error(WithLabels("{team: a, team: b}")),
              StartsWith("labels.team: given twice"));
}

TEST(LayoutLabelsTest, ValuesAreBounded) {
  EXPECT_EQ(
      Error(WithLabels(absl::StrCat("{team: ", std::string(128, 'v'), "}"))),
      "");
  EXPECT_EQ(
      Error(WithLabels(absl::StrCat("{team: ", std::string(129, 'v'), "}"))),
      "labels.team: the value is 129 bytes, more than the limit of 128");
  // UTF-8 is a value like any other; a broken sequence is not.
  EXPECT_EQ(Error(WithLabels("{team: \"équipe-ü\"}")), "");
  v1::Layout layout = *ParseLayout(kLayout);
  for (const char* bad : {"\xc3", "\xc0\xaf", "\xed\xa0\x80", "a\x7f",
                          "\xf4\x90\x80\x80", "\xe0\x80\xaf"}) {
    (*layout.mutable_labels())["team"] = bad;
    EXPECT_THAT(std::string(ValidateLayoutLabels(layout.labels()).message()),
                StartsWith("labels.team: "))
        << absl::CEscape(bad);
  }
}

TEST(LayoutLabelsTest, AtMostSixteen) {
  std::string sixteen = "{";
  for (int i = 0; i < 16; ++i) absl::StrAppend(&sixteen, "k", i, ": v, ");
  EXPECT_EQ(Error(WithLabels(sixteen + "}")), "");
  EXPECT_EQ(Error(WithLabels(sixteen + "k16: v}")),
            "labels: 17 labels exceed the limit of 16");
  // Built from a message (the gRPC apply) rather than parsed: the same.
  v1::Layout layout = *ParseLayout(kLayout);
  for (int i = 0; i < 17; ++i) {
    (*layout.mutable_labels())[absl::StrCat("k", i)] = "v";
  }
  EXPECT_EQ(LayoutModel::Build(layout).status().message(),
            "labels: 17 labels exceed the limit of 16");
}

}  // namespace
}  // namespace fabricdiag::analysis
