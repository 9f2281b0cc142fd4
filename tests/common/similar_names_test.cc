// The "looks alike" rules of `fabricdiag layout check`, each on its own,
// their order, the bound, and names that look like nothing.
#include "common/similar_names.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace fabricdiag {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

TEST(NameEditDistanceTest, CountsEditsIgnoringCase) {
  EXPECT_EQ(NameEditDistance("", ""), 0U);
  EXPECT_EQ(NameEditDistance("gpu-000", "gpu-000"), 0U);
  EXPECT_EQ(NameEditDistance("GPU-000", "gpu-000"), 0U);
  EXPECT_EQ(NameEditDistance("gpu-09", "gpu-009"), 1U);
  EXPECT_EQ(NameEditDistance("mlx5_0", "mlx5_1"), 1U);
  EXPECT_EQ(NameEditDistance("kitten", "sitting"), 3U);
  EXPECT_EQ(NameEditDistance("", "abc"), 3U);
}

TEST(LookAlikeNamesTest, ShortNameOfAnFqdnAndTheOtherWayRound) {
  const std::vector<std::string> hosts = {"gpu-008", "gpu-009", "cpu-1"};
  EXPECT_THAT(LookAlikeNames("gpu-009.example.com", hosts, 1),
              ElementsAre("gpu-009"));
  EXPECT_THAT(LookAlikeNames("gpu-009", {"gpu-009.example.com", "x"}),
              ElementsAre("gpu-009.example.com"));
  // Its own short name first, then that name's neighbours.
  EXPECT_THAT(LookAlikeNames("gpu-009.example.com", hosts),
              ElementsAre("gpu-009", "gpu-008"));
}

TEST(LookAlikeNamesTest, CaseOnlyComesFirst) {
  EXPECT_THAT(LookAlikeNames("GPU-001", {"gpu-002", "gpu-001"}),
              ElementsAre("gpu-001", "gpu-002"));
}

TEST(LookAlikeNamesTest, SmallEditDistance) {
  EXPECT_THAT(LookAlikeNames("gpu-09", {"gpu-009", "login"}),
              ElementsAre("gpu-009"));
  EXPECT_THAT(LookAlikeNames("mlx5_0", {"mlx5_1", "ib0"}),
              ElementsAre("mlx5_1"));
}

TEST(LookAlikeNamesTest, SameStemWhateverTheNumber) {
  // Distance 2 and 3 from "mlx5_0" but the same stem "mlx5_".
  EXPECT_THAT(LookAlikeNames("mlx5_0", {"mlx5_10", "mlx5_123", "bnxt_re0"}),
              ElementsAre("mlx5_10", "mlx5_123"));
}

TEST(LookAlikeNamesTest, MostAlikeFirstThenShorterFirstAndAtMostMax) {
  const std::vector<std::string> nics = {"mlx5_11", "mlx5_10", "mlx5_3",
                                         "mlx5_9", "mlx5_2"};
  // All at distance 1 from "mlx5_1" (a substitution or an insertion):
  // shorter first among equals, so mlx5_10 and mlx5_11 come last.
  EXPECT_THAT(LookAlikeNames("mlx5_1", nics),
              ElementsAre("mlx5_2", "mlx5_3", "mlx5_9"));
  EXPECT_THAT(LookAlikeNames("mlx5_1", nics, 5),
              ElementsAre("mlx5_2", "mlx5_3", "mlx5_9", "mlx5_10", "mlx5_11"));
  EXPECT_THAT(LookAlikeNames("mlx5_1", nics, 0), IsEmpty());
}

TEST(LookAlikeNamesTest, NothingAlike) {
  EXPECT_THAT(LookAlikeNames("gpu-000", {"storage-a", "login"}), IsEmpty());
  EXPECT_THAT(LookAlikeNames("gpu-000", {}), IsEmpty());
  // A one-character stem is no stem: "a1" and "a7" are different things.
  EXPECT_THAT(LookAlikeNames("a100", {"a7"}), IsEmpty());
}

TEST(LookAlikeNamesTest, ACandidateListedTwiceIsNamedOnce) {
  EXPECT_THAT(LookAlikeNames("gpu-1", {"gpu-2", "gpu-2"}),
              ElementsAre("gpu-2"));
}

}  // namespace
}  // namespace fabricdiag
