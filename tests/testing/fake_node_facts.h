// A NodeFactsStore held in a map, for tests of what reads the facts (the
// topology keeper, the analysis runner fed from LLDP): Put bumps the
// generation as every real store does.
//
//   FakeNodeFacts facts;
//   facts.Put(node_facts);
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <utility>

#include "collector/declared/node_facts.h"

namespace fabricdiag::testing {

class FakeNodeFacts final : public collector::NodeFactsStore {
 public:
  absl::Status Put(const v1::NodeFacts& facts) override {
    std::lock_guard<std::mutex> lock(mu_);
    auto next = std::make_shared<collector::NodeFactsMap>(*map_);
    (*next)[facts.node()] = std::make_shared<const v1::NodeFacts>(facts);
    map_ = std::move(next);
    ++generation_;
    return absl::OkStatus();
  }
  absl::Status Delete(absl::string_view node) override {
    std::lock_guard<std::mutex> lock(mu_);
    auto next = std::make_shared<collector::NodeFactsMap>(*map_);
    if (next->erase(node) == 0) return absl::OkStatus();
    map_ = std::move(next);
    ++generation_;
    return absl::OkStatus();
  }
  std::shared_ptr<const collector::NodeFactsMap> Snapshot() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return map_;
  }
  uint64_t Generation() const override { return generation_.load(); }

 private:
  mutable std::mutex mu_;
  std::shared_ptr<const collector::NodeFactsMap> map_ =
      std::make_shared<collector::NodeFactsMap>();
  std::atomic<uint64_t> generation_{0};
};

}  // namespace fabricdiag::testing
