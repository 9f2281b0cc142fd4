#include "collector/topology/topology_keeper.h"

#include <algorithm>
#include <chrono>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "common/prom_text.h"

namespace fabricdiag::collector {
TopologyKeeper::TopologyKeeper(const NodeFactsStore* facts,
                               const LayoutRegistry* registry,
                               const TopologyBuilder* builder,
                               const Clock* clock)
    : facts_(facts), registry_(registry), builder_(builder), clock_(clock) {
  built_.views =
      Build(NodeFactsMap(), /*generation=*/0, *registry_->Snapshot());
}

TopologyKeeper::~TopologyKeeper() { Stop(); }

std::shared_ptr<const TopologyViews> TopologyKeeper::Build(
    const NodeFactsMap& facts, uint64_t generation,
    const RegistrySnapshot& declared) const {
  // Sorted by node, so that the same facts draw the same topology whatever
  // order the map holds them in (every collector of a cluster draws it).
  std::vector<const v1::NodeFacts*> sorted;
  sorted.reserve(facts.size());
  for (const auto& [node, f] : facts) sorted.push_back(f.get());
  std::sort(sorted.begin(), sorted.end(),
            [](const v1::NodeFacts* a, const v1::NodeFacts* b) {
              return a->node() < b->node();
            });
  BuiltTopology built = builder_->Build(sorted, declared.topology.get());
  auto views = std::make_shared<TopologyViews>();
  views->declared = declared.topology;
  views->declared_version = declared.topology_version;
  views->discovered =
      std::make_shared<const v1::Topology>(std::move(built.discovered));
  auto effective =
      std::make_shared<const v1::Topology>(std::move(built.effective));
  views->effective_index =
      std::make_shared<const analysis::TopologyIndex>(effective.get());
  views->effective = std::move(effective);
  if (views->declared != nullptr) {
    views->cabling = std::make_shared<const analysis::CablingMismatches>(
        analysis::CablingMismatchesOf(*views->declared, *views->discovered));
  }
  views->problems = std::move(built.problems);
  views->facts_generation = generation;
  return views;
}

bool TopologyKeeper::Refresh() {
  const uint64_t generation = facts_->Generation();
  std::shared_ptr<const RegistrySnapshot> declared = registry_->Snapshot();
  if (built_once_ && generation == built_generation_ &&
      declared->topology == built_declared_) {
    return false;
  }
  const int64_t start = clock_->MonotonicNanos();
  std::shared_ptr<const NodeFactsMap> facts = facts_->Snapshot();
  std::shared_ptr<const TopologyViews> views =
      Build(*facts, generation, *declared);
  const double seconds =
      static_cast<double>(clock_->MonotonicNanos() - start) / 1e9;
  if (!built_once_ || views->problems != Current()->problems) {
    for (const std::string& problem : views->problems) {
      LogWarning(absl::StrCat("discovered topology: ", problem));
    }
  }
  built_once_ = true;
  built_generation_ = generation;
  built_declared_ = declared->topology;
  std::lock_guard<std::mutex> lock(mu_);
  built_.views = std::move(views);
  ++built_.rebuilds;
  built_.rebuild_seconds = seconds;
  return true;
}

void TopologyKeeper::Start(absl::Duration poll) {
  Refresh();
  thread_ = std::thread([this, poll] {
    const auto wait = std::chrono::nanoseconds(absl::ToInt64Nanoseconds(poll));
    // Facts that move before this are drawn then; a declared topology that
    // changed is drawn at once (`topology diff` waits for that drawing).
    auto paced_until = std::chrono::steady_clock::now();
    std::unique_lock<std::mutex> lock(thread_mu_);
    while (!cv_.wait_for(lock, wait, [this] { return stopping_; })) {
      lock.unlock();
      if ((std::chrono::steady_clock::now() >= paced_until ||
           registry_->Snapshot()->topology != built_declared_) &&
          Refresh()) {
        paced_until =
            std::chrono::steady_clock::now() +
            std::chrono::nanoseconds(absl::ToInt64Nanoseconds(
                kDrawingPace * absl::Seconds(Latest().rebuild_seconds)));
      }
      lock.lock();
    }
  });
}

void TopologyKeeper::Stop() {
  {
    std::lock_guard<std::mutex> lock(thread_mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

TopologyKeeper::Built TopologyKeeper::Latest() const {
  std::lock_guard<std::mutex> lock(mu_);
  return built_;
}

std::shared_ptr<const TopologyViews> TopologyKeeper::Current() const {
  return Latest().views;
}

void TopologyKeeper::AppendMetrics(std::string* out) const {
  const Built built = Latest();
  const v1::Topology& discovered = *built.views->discovered;
  PromWriter w(out);
  w.Family("fabricdiag_topology_discovered_links",
           "Cables in the topology discovered over LLDP, by kind: host "
           "(a host NIC to a switch port) or switch (two switch ports).",
           PromType::kGauge);
  w.Sample({{"kind", "host"}}, discovered.links_size());
  w.Sample({{"kind", "switch"}}, discovered.switch_links_size());
  w.Family("fabricdiag_topology_discovered_switches",
           "Switches in the topology discovered over LLDP.", PromType::kGauge);
  w.Sample(discovered.switches_size());
  w.Family("fabricdiag_topology_problems",
           "What the last discovery could not place (the collector logs "
           "each).",
           PromType::kGauge);
  w.Sample(static_cast<double>(built.views->problems.size()));
  w.Family("fabricdiag_topology_rebuild_seconds",
           "How long the last drawing of the discovered and effective "
           "topologies took.",
           PromType::kGauge);
  w.Sample(built.rebuild_seconds);
  w.Family("fabricdiag_topology_rebuilds_total",
           "Drawings of the discovered topology, one per change of the "
           "nodes' LLDP facts or of the declared topology.",
           PromType::kCounter);
  w.Sample(static_cast<double>(built.rebuilds));
}

}  // namespace fabricdiag::collector
