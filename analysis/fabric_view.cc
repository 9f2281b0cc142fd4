#include "analysis/fabric_view.h"

#include <algorithm>
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

}  // namespace

std::vector<PortView> FabricView::TakePorts() {
  std::vector<PortView> ports = std::move(ports_);
  ports_.clear();
  run_ends_.clear();
  unsorted_ = false;
  nodes_.clear();
  return ports;
}

void FabricView::AppendSorted(std::vector<PortView>&& ports) {
  if (!std::is_sorted(ports.begin(), ports.end(), PortOrder)) unsorted_ = true;
  // Ports already here (sorted by Finish(), or unsorted_) are a run too.
  if (run_ends_.empty() && !ports_.empty()) run_ends_.push_back(ports_.size());
  if (ports_.empty()) {
    ports_ = std::move(ports);
  } else {
    ports_.insert(ports_.end(), std::make_move_iterator(ports.begin()),
                  std::make_move_iterator(ports.end()));
  }
  run_ends_.push_back(ports_.size());
}

void FabricView::Finish() {
  if (unsorted_) {
    std::sort(ports_.begin(), ports_.end(), PortOrder);
  } else {
    // Sorted runs (merged views): merged pairwise in linear time.
    for (size_t r = 1; r < run_ends_.size(); ++r) {
      std::inplace_merge(ports_.begin(), ports_.begin() + run_ends_[r - 1],
                         ports_.begin() + run_ends_[r], PortOrder);
    }
  }
  run_ends_.clear();
  unsorted_ = false;
  nodes_.clear();
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
