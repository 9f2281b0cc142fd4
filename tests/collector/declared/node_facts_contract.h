// The NodeFactsStore contract (collector/declared/node_facts.h), as
// parameterized tests every backend instantiates with a factory:
//
//   INSTANTIATE_TEST_SUITE_P(Memory, NodeFactsContractTest,
//                            ::testing::Values(&NewMemoryStore),
//                            testing::StoreName);
//
// Writes may become visible later than Put returns (the cluster backend
// writes from its own thread and reads through its watcher), so the tests
// wait, bounded, for what they Put.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "collector/declared/node_facts.h"

namespace fabricdiag::collector::testing {

// A fresh, empty store, or nullptr when the backend cannot run here (the
// test is then skipped, saying why in the factory's log).
using NodeFactsStoreFactory = std::unique_ptr<NodeFactsStore> (*)();

// Names the one instantiation of a backend "Store" (a function address
// would change from run to run).
std::string StoreName(
    const ::testing::TestParamInfo<NodeFactsStoreFactory>& info);

class NodeFactsContractTest
    : public ::testing::TestWithParam<NodeFactsStoreFactory> {
 protected:
  void SetUp() override;
  std::unique_ptr<NodeFactsStore> store_;
};

}  // namespace fabricdiag::collector::testing
