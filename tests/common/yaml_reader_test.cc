#include "common/yaml_reader.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace fabricdiag::yaml {
namespace {

using ::testing::HasSubstr;

std::string Message(const absl::Status& s) { return std::string(s.message()); }

TEST(LoadDocumentTest, BoundsTheTextBeforeBuildingATree) {
  Limits limits;
  limits.max_bytes = 100;
  limits.max_depth = 3;
  limits.max_values = 20;
  EXPECT_TRUE(LoadDocument("a: [1, 2, {b: c}]", "doc", limits).ok());
  EXPECT_THAT(
      Message(LoadDocument(std::string(101, ' '), "doc", limits).status()),
      HasSubstr("doc: the text is 101 bytes; the limit is 100"));
  EXPECT_THAT(Message(LoadDocument("a: [[[[1]]]]", "doc", limits).status()),
              HasSubstr("nests deeper than 3 levels (line 1)"));
  EXPECT_THAT(
      Message(LoadDocument("[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]",
                           "doc", limits)
                  .status()),
      HasSubstr("has more than 20 values"));
  EXPECT_THAT(
      Message(LoadDocument("a: 1\n---\nb: 2\n", "doc", limits).status()),
      HasSubstr("more than one YAML document"));
  EXPECT_THAT(Message(LoadDocument("a: [", "doc", limits).status()),
              HasSubstr("doc: not valid YAML or JSON"));
  // Without a name the message is not prefixed.
  EXPECT_THAT(Message(LoadDocument("a: [", "", limits).status()),
              ::testing::StartsWith("not valid YAML or JSON"));
}

// The raw-text pass that bounds flow nesting before yaml-cpp's scanner
// reads ahead must not refuse what the real parse accepts: brackets in
// quoted scalars, comments and block-context plain scalars do not nest.
TEST(LoadDocumentTest, TheRawTextPassCountsOnlyRealFlowCollections) {
  Limits limits;
  limits.max_depth = 3;
  limits.max_values = 20;
  const std::string many(40, '[');
  for (const std::string& text : std::vector<std::string>{
           "a: \"" + many + "\"\n",
           "a: '" + many + "''" + many + "'\n",
           "a: 1  # " + many + "\n",
           "a: x" + many + "\n",
           std::string("a: [\"[[[[\", '{{{{', b]\n"),
           std::string("a: {b: [c, d]}\n"),
           std::string("- [a]\n- [b]\n- [c]\n- [d]\n- [e]\n- [f]\n"),
       }) {
    SCOPED_TRACE(text);
    absl::StatusOr<YAML::Node> n = LoadDocument(text, "doc", limits);
    EXPECT_TRUE(n.ok()) << n.status();
  }
  // Real nesting and flow values are bounded on the raw text, with the
  // line of the collection too deep.
  EXPECT_THAT(
      Message(
          LoadDocument("a: 1\nb:\n  - [{c: [d]}]\n", "doc", limits).status()),
      HasSubstr("nests deeper than 3 levels (line 3)"));
  EXPECT_THAT(
      Message(LoadDocument(std::string(1000, '{'), "doc", limits).status()),
      HasSubstr("nests deeper than 3 levels (line 1)"));
  EXPECT_THAT(
      Message(LoadDocument("a: [" + std::string(40, ',') + "]", "doc", limits)
                  .status()),
      HasSubstr("has more than 20 values"));
}

TEST(LoadDocumentTest, AliasBombsAreCountedBeforeTheyExpand) {
  // Each level refers to the previous one nine times: 9^9 values expanded.
  std::string bomb = "a0: &a0 [x,x,x,x,x,x,x,x,x]\n";
  for (int i = 1; i < 9; ++i) {
    bomb += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [";
    for (int k = 0; k < 9; ++k) {
      bomb += (k ? ",*a" : "*a") + std::to_string(i - 1);
    }
    bomb += "]\n";
  }
  Limits limits;
  limits.max_values = 50;
  EXPECT_THAT(Message(LoadDocument(bomb, "doc", limits).status()),
              HasSubstr("has more than 50 values"));
}

TEST(FieldsTest, UnknownRepeatedAndNonStringKeysNameTheField) {
  absl::StatusOr<YAML::Node> n = LoadDocument("{a: 1, b: [2]}", "doc", {});
  ASSERT_TRUE(n.ok());
  absl::StatusOr<Fields> f = Fields::Read(*n, "top", "doc", {"a", "b"});
  ASSERT_TRUE(f.ok()) << f.status();
  ASSERT_TRUE(f->Require("a").ok());
  EXPECT_EQ(Message(f->Require("c").status()), "top.c: required");
  EXPECT_EQ(Message(Fields::Read(*n, "top", "doc", {"a"}).status()),
            "top.b: unknown key");
  absl::StatusOr<YAML::Node> twice = LoadDocument("{a: 1, a: 2}", "doc", {});
  ASSERT_TRUE(twice.ok());
  EXPECT_EQ(Message(Fields::Read(*twice, "", "doc", {"a"}).status()),
            "a: given twice");
  absl::StatusOr<YAML::Node> list = LoadDocument("[1]", "doc", {});
  EXPECT_EQ(Message(Fields::Read(*list, "", "doc", {"a"}).status()),
            "doc: expected a mapping, got a list");
}

TEST(ReadTest, NumbersAndIntegersAreStrict) {
  auto node = [](const char* text) { return *LoadDocument(text, "", {}); };
  EXPECT_EQ(*ReadUint(node("8"), "x"), 8u);
  EXPECT_THAT(Message(ReadUint(node("\"8\""), "x").status()),
              HasSubstr("expected an integer, got the string \"8\""));
  EXPECT_THAT(Message(ReadUint(node("-1"), "x").status()),
              HasSubstr("must not be negative"));
  EXPECT_THAT(Message(ReadUint(node("8.0"), "x").status()),
              HasSubstr("expected an integer"));
  EXPECT_THAT(Message(ReadUint(node("99999999999"), "x").status()),
              HasSubstr("is too large"));
  EXPECT_EQ(*ReadNumber(node("-2.5"), "x"), -2.5);
  EXPECT_THAT(Message(ReadNonNegativeNumber(node("-2.5"), "x").status()),
              HasSubstr("must not be negative"));
  EXPECT_THAT(Message(ReadNumber(node(".inf"), "x").status()),
              HasSubstr("expected a number"));
  EXPECT_THAT(Message(CheckList(node("[1,2,3]"), "l", 2)),
              HasSubstr("l: 3 entries exceed the limit of 2"));
}

}  // namespace
}  // namespace fabricdiag::yaml
