#include "analysis/fabric_view.h"

#include <algorithm>
#include <iterator>
#include <tuple>
#include <utility>
#include <vector>

namespace fabricdiag::analysis {

SampleEvidence SummarizeSamples(absl::Span<const double> times,
                                const std::vector<bool>& moved) {
  SampleEvidence e;
  if (times.size() < 2 || moved.size() + 1 != times.size()) return e;
  e.reports = static_cast<int>(moved.size());
  e.report_span_seconds = times.back() - times.front();
  std::vector<double> intervals;
  double since = times[0];  // the last report whose traffic moved
  for (size_t i = 0; i < moved.size(); ++i) {
    if (!moved[i]) continue;  // stale: the next sample that moves covers it
    intervals.push_back(times[i + 1] - since);
    since = times[i + 1];
  }
  if (intervals.empty()) return e;
  e.intervals = static_cast<int>(intervals.size());
  e.span_seconds = since - times[0];
  e.max_interval_seconds =
      *std::max_element(intervals.begin(), intervals.end());
  // The lower median: with two intervals, one stale read (1 s and 2 s) is
  // measured against the regular one.
  const auto mid = intervals.begin() + (intervals.size() - 1) / 2;
  std::nth_element(intervals.begin(), mid, intervals.end());
  e.median_interval_seconds = *mid;
  return e;
}

PortView& FabricView::AddPort(std::string node, std::string device) {
  unsorted_ = true;
  PortView& p = ports_.emplace_back();
  p.node = std::move(node);
  p.device = std::move(device);
  return p;
}

namespace {

bool PortOrder(const PortView& a, const PortView& b) {
  return std::tie(a.node, a.device) < std::tie(b.node, b.device);
}

// Moves every port of `runs` (each sorted by PortOrder) into one sorted
// vector, each port once: runs that follow each other are concatenated,
// others merged through a heap of the runs' heads. Equal ports keep the
// order of their runs, as pairwise std::inplace_merge would.
std::vector<PortView> MergeRuns(std::vector<std::vector<PortView>>& runs) {
  size_t total = 0;
  bool in_order = true;
  const PortView* last = nullptr;  // the end of the runs so far
  for (const std::vector<PortView>& run : runs) {
    total += run.size();
    if (run.empty()) continue;
    if (last != nullptr && PortOrder(run.front(), *last)) in_order = false;
    last = &run.back();
  }
  std::vector<PortView> out;
  out.reserve(total);
  if (in_order) {
    for (std::vector<PortView>& run : runs) {
      std::move(run.begin(), run.end(), std::back_inserter(out));
    }
    return out;
  }
  // (run, position) of each non-empty run's next port; a min-heap.
  std::vector<std::pair<size_t, size_t>> heads;
  for (size_t r = 0; r < runs.size(); ++r) {
    if (!runs[r].empty()) heads.emplace_back(r, 0);
  }
  const auto after = [&](const std::pair<size_t, size_t>& a,
                         const std::pair<size_t, size_t>& b) {
    const PortView& pa = runs[a.first][a.second];
    const PortView& pb = runs[b.first][b.second];
    if (PortOrder(pb, pa)) return true;
    if (PortOrder(pa, pb)) return false;
    return a.first > b.first;
  };
  std::make_heap(heads.begin(), heads.end(), after);
  while (!heads.empty()) {
    std::pop_heap(heads.begin(), heads.end(), after);
    auto& [r, i] = heads.back();
    out.push_back(std::move(runs[r][i]));
    if (++i < runs[r].size()) {
      std::push_heap(heads.begin(), heads.end(), after);
    } else {
      heads.pop_back();
    }
  }
  return out;
}

}  // namespace

std::vector<PortView> FabricView::TakePorts() {
  std::vector<PortView> ports;
  if (runs_.empty()) {
    ports = std::move(ports_);
  } else {
    // Not Finish()ed: the runs in the order they came.
    runs_.insert(runs_.begin(), std::move(ports_));
    for (std::vector<PortView>& run : runs_) {
      std::move(run.begin(), run.end(), std::back_inserter(ports));
    }
  }
  ports_.clear();
  runs_.clear();
  unsorted_ = false;
  nodes_.clear();
  return ports;
}

void FabricView::AppendSorted(std::vector<PortView>&& ports) {
  if (!std::is_sorted(ports.begin(), ports.end(), PortOrder)) unsorted_ = true;
  // Ports already here (sorted by Finish(), or unsorted_) are a run too.
  if (!ports_.empty()) runs_.push_back(std::move(ports_));
  ports_.clear();
  runs_.push_back(std::move(ports));
}

void FabricView::Finish() {
  if (!runs_.empty()) {
    // Ports AddPort()ed after the runs (unsorted_) come last.
    if (!ports_.empty()) runs_.push_back(std::move(ports_));
    if (unsorted_) {
      ports_.clear();
      for (std::vector<PortView>& run : runs_) {
        std::move(run.begin(), run.end(), std::back_inserter(ports_));
      }
    } else {
      ports_ = MergeRuns(runs_);
    }
    runs_.clear();
  }
  // Views built in order (a decoded chunk, the series store's) are not
  // sorted again.
  if (unsorted_ && !std::is_sorted(ports_.begin(), ports_.end(), PortOrder)) {
    std::sort(ports_.begin(), ports_.end(), PortOrder);
  }
  unsorted_ = false;
  nodes_.clear();
  nodes_.reserve(ports_.size() / 8 + 1);
  for (uint32_t i = 0; i < ports_.size();) {
    uint32_t j = i;
    while (j < ports_.size() && ports_[j].node == ports_[i].node) ++j;
    nodes_[ports_[i].node] = {i, j};
    i = j;
  }
}

absl::Span<const PortView> FabricView::PortsOf(absl::string_view node) const {
  auto it = nodes_.find(node);
  if (it == nodes_.end()) return {};
  return absl::MakeConstSpan(ports_).subspan(
      it->second.first, it->second.second - it->second.first);
}

const PortView* FabricView::Find(absl::string_view node,
                                 absl::string_view name) const {
  for (const PortView& p : PortsOf(node)) {
    if (p.device == name) return &p;
  }
  for (const PortView& p : PortsOf(node)) {
    if (!p.netdev.empty() && p.netdev == name) return &p;
  }
  return nullptr;
}

}  // namespace fabricdiag::analysis
