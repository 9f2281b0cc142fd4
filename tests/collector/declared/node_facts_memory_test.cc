// The embedded node facts backend against the store contract.
#include "collector/declared/node_facts_memory.h"

#include <gtest/gtest.h>

#include <memory>

#include "collector/declared/node_facts_cache.h"
#include "tests/collector/declared/node_facts_contract.h"

namespace fabricdiag::collector {
namespace {

using testing::NodeFactsContractTest;

std::unique_ptr<NodeFactsStore> NewMemoryStore() {
  return std::make_unique<MemoryNodeFacts>();
}

INSTANTIATE_TEST_SUITE_P(Memory, NodeFactsContractTest,
                         ::testing::Values(&NewMemoryStore),
                         testing::StoreName);

TEST(MemoryNodeFactsTest, CountsNodesAndRefusals) {
  MemoryNodeFacts facts;
  v1::NodeFacts f;
  f.set_node("gpu-001");
  ASSERT_TRUE(facts.Put(f).ok());
  f.set_node("");
  EXPECT_FALSE(facts.Put(f).ok());
  EXPECT_EQ(facts.nodes(), 1u);
  EXPECT_EQ(facts.rejected(), 1u);
}

// A snapshot taken after a write shares every other node's facts with the
// one before (a pointer per node, not a copy of each), and the one before
// keeps the written node's facts as they were.
TEST(MemoryNodeFactsTest, SnapshotsShareWhatAWriteLeftAlone) {
  MemoryNodeFacts facts;
  v1::NodeFacts f;
  for (const char* node : {"gpu-001", "gpu-002"}) {
    f.set_node(node);
    f.set_gpus_read(true);
    ASSERT_TRUE(facts.Put(f).ok());
  }
  const std::shared_ptr<const NodeFactsMap> before = facts.Snapshot();
  f.set_node("gpu-001");
  f.add_gpu_nics()->set_device("mlx5_0");
  ASSERT_TRUE(facts.Put(f).ok());
  const std::shared_ptr<const NodeFactsMap> after = facts.Snapshot();
  ASSERT_NE(before, after);
  EXPECT_EQ(after->at("gpu-002").get(), before->at("gpu-002").get());
  EXPECT_NE(after->at("gpu-001").get(), before->at("gpu-001").get());
  EXPECT_EQ(before->at("gpu-001")->gpu_nics_size(), 0);
  EXPECT_EQ(after->at("gpu-001")->gpu_nics_size(), 1);
  // Facts equal to the held ones write nothing: the same snapshot.
  ASSERT_TRUE(facts.Put(f).ok());
  EXPECT_EQ(facts.Snapshot(), after);
}

TEST(NodeFactsMetricsTest, EveryFamilyWithItsValue) {
  std::string out;
  AppendNodeFactsMetrics({3, 2, 1}, &out);
  EXPECT_NE(out.find("fabricdiag_node_facts_nodes 3\n"), std::string::npos);
  EXPECT_NE(out.find("fabricdiag_node_facts_writes_failed_total 2\n"),
            std::string::npos);
  EXPECT_NE(out.find("fabricdiag_node_facts_queue_dropped_total 1\n"),
            std::string::npos);
  EXPECT_NE(out.find("# TYPE fabricdiag_node_facts_nodes gauge"),
            std::string::npos);
}

}  // namespace
}  // namespace fabricdiag::collector
