#include "client/collector_list.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace fabricdiag::client {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(ParseCollectorListTest, AcceptsOneOrMoreHostPorts) {
  EXPECT_THAT(*ParseCollectorList("c0:9811"), ElementsAre("c0:9811"));
  EXPECT_THAT(*ParseCollectorList("c0:9811, 10.0.0.2:9811,[fd00::3]:9811"),
              ElementsAre("c0:9811", "10.0.0.2:9811", "[fd00::3]:9811"));
}

TEST(ParseCollectorListTest, NamesTheBadEntry) {
  absl::StatusOr<std::vector<std::string>> bad_port =
      ParseCollectorList("c0:9811,c1:98110");
  EXPECT_EQ(bad_port.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad_port.status().message(),
              HasSubstr("--collector=c1:98110: the port must be"));
  EXPECT_THAT(ParseCollectorList("c0:9811,c1").status().message(),
              HasSubstr("--collector=c1: expected HOST:PORT"));
  EXPECT_THAT(ParseCollectorList("c0:9811,,c1:9811").status().message(),
              HasSubstr("entry 2 is empty"));
  EXPECT_THAT(ParseCollectorList("c0:9811,c0:9811").status().message(),
              HasSubstr("\"c0:9811\" is listed twice"));
}

// The published FNV-1a 64 test vectors: a different hash (or a signed-char
// slip) fails here before it silently moves nodes between collectors.
TEST(Fnv1a64Test, MatchesTheReferenceVectors) {
  EXPECT_EQ(Fnv1a64(""), 0xcbf29ce484222325u);
  EXPECT_EQ(Fnv1a64("a"), 0xaf63dc4c8601ec8cu);
  EXPECT_EQ(Fnv1a64("foobar"), 0x85944171f73967e8u);
  EXPECT_EQ(Fnv1a64("\xff"), 0xaf64724c8602eb6eu);
}

// Fixed node names against a fixed list size: the start index is part of
// the deployment (which collector holds which node's history), so a change
// here must be deliberate.
TEST(PreferredCollectorIndexTest, IsFnv1aOfTheNodeModuloTheListSize) {
  EXPECT_EQ(PreferredCollectorIndex("gpu-001", 3), 2u);
  EXPECT_EQ(PreferredCollectorIndex("gpu-002", 3), 0u);
  EXPECT_EQ(PreferredCollectorIndex("gpu-003", 3), 1u);
  EXPECT_EQ(PreferredCollectorIndex("gpu-017", 3), 1u);
  EXPECT_EQ(PreferredCollectorIndex("node-a", 2), 1u);
  EXPECT_EQ(PreferredCollectorIndex("node-b", 2), 0u);
  EXPECT_EQ(PreferredCollectorIndex("gpu-001", 1), 0u);
}

TEST(PreferredCollectorIndexTest, SpreadsNodesOverTheCollectors) {
  std::vector<int> per_collector(4);
  for (int i = 0; i < 400; ++i) {
    char node[16];
    snprintf(node, sizeof(node), "gpu-%03d", i);
    ++per_collector[PreferredCollectorIndex(node, 4)];
  }
  for (int n : per_collector) {
    EXPECT_GT(n, 60);
    EXPECT_LT(n, 140);
  }
}

// A collector's handed-off agents never stay on it and spread evenly over
// the others; a list of one keeps the agent where it is.
TEST(HandoffCollectorIndexTest, SpreadsHandedOffNodesOverTheOthers) {
  for (size_t count : {2u, 3u, 5u}) {
    for (size_t current = 0; current < count; ++current) {
      std::vector<int> per_collector(count);
      for (int i = 0; i < 600; ++i) {
        char node[16];
        snprintf(node, sizeof(node), "gpu-%03d", i);
        const size_t next = HandoffCollectorIndex(node, current, count);
        ASSERT_LT(next, count);
        ++per_collector[next];
      }
      EXPECT_EQ(per_collector[current], 0) << count << " " << current;
      const int even = 600 / static_cast<int>(count - 1);
      for (size_t k = 0; k < count; ++k) {
        if (k == current) continue;
        EXPECT_GT(per_collector[k], even * 7 / 10) << count << " " << k;
        EXPECT_LT(per_collector[k], even * 13 / 10) << count << " " << k;
      }
    }
  }
  EXPECT_EQ(HandoffCollectorIndex("gpu-001", 0, 1), 0u);
  // Pinned: every agent picks the same, whatever its version.
  EXPECT_EQ(Fmix64(0), 0u);
  EXPECT_EQ(Fmix64(1), 0xb456bcfc34c2cb2cu);
  EXPECT_EQ(HandoffCollectorIndex("gpu-001", 2, 3),
            (2 + 1 + Fmix64(Fnv1a64("gpu-001")) % 2) % 3);
}

// Nodes that one collector of three took (their placement hash agrees
// modulo 3) still spread over both others: the low bits of FNV-1a, which
// follow the placement, once sent all of them to the same one.
TEST(HandoffCollectorIndexTest, TheAgentsOfOneCollectorSpreadOverBothOthers) {
  for (size_t current = 0; current < 3; ++current) {
    std::vector<int> per_collector(3);
    for (int i = 0; i < 3000; ++i) {
      char node[16];
      snprintf(node, sizeof(node), "vnode-%05d", i);
      if (PreferredCollectorIndex(node, 3) != current) continue;
      ++per_collector[HandoffCollectorIndex(node, current, 3)];
    }
    for (size_t k = 0; k < 3; ++k) {
      if (k == current) continue;
      EXPECT_GT(per_collector[k], 350) << current << " " << k;
    }
  }
}

}  // namespace
}  // namespace fabricdiag::client
