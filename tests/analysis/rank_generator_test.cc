#include "analysis/rank_generator.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace fabricdiag::analysis {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

std::vector<std::vector<uint32_t>> AsLists(const RankGroups& groups) {
  std::vector<std::vector<uint32_t>> out;
  for (uint32_t g = 0; g < groups.num_groups; ++g) {
    auto span = groups.group(g);
    out.emplace_back(span.begin(), span.end());
  }
  return out;
}

using Lists = std::vector<std::vector<uint32_t>>;

TEST(MaskedOrthogonalRankGroupsTest, DocstringExampleOfMegatron) {
  // parallel_size [tp, dp, pp] = [2, 3, 4], mask selects dp: groups are
  // numbered by tp_rank + 2 * pp_rank; the last one is [19, 21, 23].
  const uint32_t sizes[] = {2, 3, 4};
  const bool mask[] = {false, true, false};
  RankGroups dp = MaskedOrthogonalRankGroups(sizes, mask);
  ASSERT_EQ(dp.num_groups, 8u);
  ASSERT_EQ(dp.group_size, 3u);
  EXPECT_THAT(dp.group(0), ElementsAre(0, 2, 4));
  EXPECT_THAT(dp.group(1), ElementsAre(1, 3, 5));
  EXPECT_THAT(dp.group(2), ElementsAre(6, 8, 10));
  EXPECT_THAT(dp.group(7), ElementsAre(19, 21, 23));
}

TEST(MaskedOrthogonalRankGroupsTest, TwoMaskedAxesEnumerateFastestFirst) {
  // tp-dp over [2, 2, 2] (tp, dp, pp): ranks differing in tp and dp.
  const uint32_t sizes[] = {2, 2, 2};
  const bool mask[] = {true, true, false};
  EXPECT_EQ(AsLists(MaskedOrthogonalRankGroups(sizes, mask)),
            (Lists{{0, 1, 2, 3}, {4, 5, 6, 7}}));
  const bool mask2[] = {true, false, true};
  EXPECT_EQ(AsLists(MaskedOrthogonalRankGroups(sizes, mask2)),
            (Lists{{0, 1, 4, 5}, {2, 3, 6, 7}}));
}

TEST(MaskedOrthogonalRankGroupsTest, NoMaskGivesSingletons) {
  const uint32_t sizes[] = {3, 2};
  const bool mask[] = {false, false};
  EXPECT_EQ(AsLists(MaskedOrthogonalRankGroups(sizes, mask)),
            (Lists{{0}, {1}, {2}, {3}, {4}, {5}}));
}

TEST(RankGeneratorTest, MegatronInitializeDocstringExample) {
  // initialize_model_parallel's docstring: 16 GPUs, tp=2, pp=4 (dp=2),
  // order tp-dp-pp.
  auto order = ParseOrder("tp-dp-pp");
  ASSERT_TRUE(order.ok());
  Degrees d;
  d.tp = 2;
  d.dp = 2;
  d.pp = 4;
  auto gen = RankGenerator::Create(d, *order);
  ASSERT_TRUE(gen.ok()) << gen.status();
  EXPECT_EQ(gen->world_size(), 16u);
  EXPECT_EQ(AsLists(*gen->GetRanks("dp")), (Lists{{0, 2},
                                                  {1, 3},
                                                  {4, 6},
                                                  {5, 7},
                                                  {8, 10},
                                                  {9, 11},
                                                  {12, 14},
                                                  {13, 15}}));
  EXPECT_EQ(AsLists(*gen->GetRanks("tp")), (Lists{{0, 1},
                                                  {2, 3},
                                                  {4, 5},
                                                  {6, 7},
                                                  {8, 9},
                                                  {10, 11},
                                                  {12, 13},
                                                  {14, 15}}));
  EXPECT_EQ(
      AsLists(*gen->GetRanks("pp")),
      (Lists{{0, 4, 8, 12}, {1, 5, 9, 13}, {2, 6, 10, 14}, {3, 7, 11, 15}}));
}

TEST(RankGeneratorTest, OmittedDimensionOfDegreeOneIsAppended) {
  auto order = ParseOrder("tp-pp-dp");
  ASSERT_TRUE(order.ok());
  Degrees d;
  d.tp = 2;
  d.pp = 2;
  d.dp = 2;
  auto gen = RankGenerator::Create(d, *order);
  ASSERT_TRUE(gen.ok()) << gen.status();
  EXPECT_EQ(AsLists(*gen->GetRanks("cp")).size(), 8u);
  EXPECT_EQ(AsLists(*gen->GetRanks("dp")),
            (Lists{{0, 4}, {1, 5}, {2, 6}, {3, 7}}));
}

TEST(RankGeneratorTest, OmittedDimensionWithDegreeIsAnError) {
  auto order = ParseOrder("tp-pp-dp");
  ASSERT_TRUE(order.ok());
  Degrees d;
  d.tp = 2;
  d.cp = 2;
  auto gen = RankGenerator::Create(d, *order);
  ASSERT_FALSE(gen.ok());
  EXPECT_THAT(gen.status().message(), HasSubstr("omits cp, whose degree is 2"));
}

TEST(RankGeneratorTest, UnknownTokenInQuery) {
  auto gen = RankGenerator::Create(Degrees{}, *ParseOrder("tp"));
  ASSERT_TRUE(gen.ok());
  EXPECT_FALSE(gen->GetRanks("xp").ok());
}

struct OrderCase {
  const char* order;
  bool ok;
  const char* message;  // substring of the error
};

class ParseOrderTest : public ::testing::TestWithParam<OrderCase> {};

TEST_P(ParseOrderTest, Parses) {
  const OrderCase& c = GetParam();
  auto tokens = ParseOrder(c.order);
  EXPECT_EQ(tokens.ok(), c.ok) << c.order;
  if (!c.ok) {
    EXPECT_THAT(tokens.status().message(), HasSubstr(c.message));
  }
}

INSTANTIATE_TEST_SUITE_P(
    Orders, ParseOrderTest,
    ::testing::Values(OrderCase{"tp-cp-ep-dp-pp", true, ""},
                      OrderCase{"tp-pp-dp", true, ""},
                      OrderCase{"TP-DP-PP", true, ""},
                      OrderCase{"", false, "must not be empty"},
                      OrderCase{"tp-xp-dp", false, "unknown dimension \"xp\""},
                      OrderCase{"tp--dp", false, "unknown dimension \"\""},
                      OrderCase{"tp-dp-tp", false, "\"tp\" appears twice"},
                      OrderCase{"tp-dp-pp-", false, "unknown dimension"}));

TEST(ParseOrderTest, LowercasesLikeMegatron) {
  EXPECT_THAT(*ParseOrder("Tp-Pp-dP"), ElementsAreArray({"tp", "pp", "dp"}));
}

}  // namespace
}  // namespace fabricdiag::analysis
