#include "collector/store/series_store.h"

#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/hash/hash.h"
#include "absl/strings/str_cat.h"

namespace fabricdiag::collector {

SeriesStore::SeriesStore(Options options, const Clock& clock)
    : options_(options), clock_(clock) {}

SeriesStore::Shard& SeriesStore::ShardOf(absl::string_view node) const {
  return shards_[absl::Hash<absl::string_view>()(node) % kShards];
}

std::shared_ptr<NodeSeries> SeriesStore::OpenNode(absl::string_view node) {
  Shard& shard = ShardOf(node);
  absl::MutexLock lock(&shard.mu);
  auto it = shard.nodes.find(node);
  if (it != shard.nodes.end()) return it->second;
  auto created = std::make_shared<NodeSeries>(
      std::string(node), options_.window_samples, &layouts_);
  shard.nodes.emplace(std::string(node), created);
  membership_.fetch_add(1, std::memory_order_release);
  return created;
}

std::shared_ptr<NodeSeries> SeriesStore::FindNode(
    absl::string_view node) const {
  Shard& shard = ShardOf(node);
  absl::MutexLock lock(&shard.mu);
  auto it = shard.nodes.find(node);
  return it == shard.nodes.end() ? nullptr : it->second;
}

bool SeriesStore::DropNode(absl::string_view node) {
  Shard& shard = ShardOf(node);
  absl::MutexLock lock(&shard.mu);
  auto it = shard.nodes.find(node);
  if (it == shard.nodes.end() || it->second->Streaming(clock_.Now())) {
    return false;
  }
  shard.nodes.erase(it);
  membership_.fetch_add(1, std::memory_order_release);
  return true;
}

absl::StatusOr<std::shared_ptr<NodeSeries>> SeriesStore::NodeOrError(
    absl::string_view node) const {
  std::shared_ptr<NodeSeries> n = FindNode(node);
  if (n == nullptr) {
    return absl::NotFoundError(
        absl::StrCat("node '", node, "' never reported"));
  }
  return n;
}

std::vector<std::shared_ptr<NodeSeries>> SeriesStore::AllNodes() const {
  std::vector<std::shared_ptr<NodeSeries>> all;
  for (const Shard& shard : shards_) {
    absl::MutexLock lock(&shard.mu);
    for (const auto& [name, node] : shard.nodes) all.push_back(node);
  }
  return all;
}

std::shared_ptr<const SeriesStore::SortedNodes> SeriesStore::NodesByName()
    const {
  absl::MutexLock lock(&sorted_mu_);
  // Read before the nodes: a change made while they are read moves it
  // again, and the next call reads them anew.
  const uint64_t membership = membership_.load(std::memory_order_acquire);
  if (sorted_ != nullptr && sorted_membership_ == membership) return sorted_;
  auto sorted = std::make_shared<SortedNodes>(AllNodes());
  std::sort(sorted->begin(), sorted->end(),
            [](const std::shared_ptr<NodeSeries>& a,
               const std::shared_ptr<NodeSeries>& b) {
              return a->name() < b->name();
            });
  sorted_ = std::move(sorted);
  sorted_membership_ = membership;
  return sorted_;
}

std::vector<NodeStatus> SeriesStore::ListNodes(
    absl::Duration down_after) const {
  return ListNodes([down_after](const NodeInfo& info, absl::Time now) {
    return info.last_report != absl::InfinitePast() &&
           now - info.last_report < down_after;
  });
}

std::vector<NodeStatus> SeriesStore::ListNodes(const NodeUpRule& rule) const {
  const absl::Time now = clock_.Now();
  std::vector<NodeStatus> out;
  for (const auto& node : AllNodes()) {
    NodeStatus s;
    s.info = node->Info();
    s.up = rule(s.info, now);
    out.push_back(std::move(s));
  }
  std::sort(out.begin(), out.end(),
            [](const NodeStatus& a, const NodeStatus& b) {
              return a.info.node < b.info.node;
            });
  return out;
}

absl::StatusOr<std::vector<SeriesMeta>> SeriesStore::ListSeries(
    absl::string_view node) const {
  absl::StatusOr<std::shared_ptr<NodeSeries>> n = NodeOrError(node);
  if (!n.ok()) return n.status();
  return (*n)->ListSeries();
}

absl::StatusOr<RatePoint> SeriesStore::Latest(absl::string_view node,
                                              const SeriesKey& key) const {
  absl::StatusOr<std::shared_ptr<NodeSeries>> n = NodeOrError(node);
  if (!n.ok()) return n.status();
  return (*n)->Latest(key);
}

absl::StatusOr<std::vector<RatePoint>> SeriesStore::Window(
    absl::string_view node, const SeriesKey& key, absl::Time since) const {
  absl::StatusOr<std::shared_ptr<NodeSeries>> n = NodeOrError(node);
  if (!n.ok()) return n.status();
  return (*n)->Window(key, since);
}

SeriesStore::GridArrivals SeriesStore::ArrivalsFor(
    absl::Time grid, absl::Duration interval) const {
  GridArrivals out;
  const absl::Duration slack = interval / 20;
  const absl::Time previous = grid - interval;
  const int64_t interval_ms = absl::ToInt64Milliseconds(interval);
  for (const auto& node : AllNodes()) {
    const NodeSeries::Arrival a = node->LastArrival();
    if (static_cast<int64_t>(a.interval_ms) != interval_ms) continue;
    if (a.last_report >= grid - slack) {
      ++out.arrived;
    } else if (a.last_report >= previous - slack &&
               a.last_report < previous + interval / 2) {
      ++out.awaited;
    }
  }
  return out;
}

StoreMemory SeriesStore::Memory() const {
  StoreMemory m;
  m.bytes = sizeof(*this);
  absl::flat_hash_set<const SeriesLayout*> layouts;
  for (const auto& node : AllNodes()) {
    ++m.nodes;
    m.series += node->series_count();
    m.bytes += node->MemoryBytes() + node->name().size() + 64;  // map entry
    std::shared_ptr<const SeriesLayout> layout = node->layout();
    // A layout shared by many nodes is counted once.
    if (layout != nullptr && layouts.insert(layout.get()).second) {
      m.bytes += layout->MemoryBytes();
    }
  }
  m.layouts = layouts.size();
  return m;
}

}  // namespace fabricdiag::collector
