#include "agent/report_buffer.h"

#include <algorithm>
#include <utility>

namespace fabricdiag::agent {
namespace {

// First position whose seq is > `seq` (reports_ is sorted by seq).
template <typename Deque>
auto FirstAfter(Deque& reports, uint64_t seq) {
  return std::upper_bound(reports.begin(), reports.end(), seq,
                          [](uint64_t s, const ReportBuffer::ReportPtr& r) {
                            return s < r->seq();
                          });
}

}  // namespace

ReportBuffer::ReportBuffer(size_t capacity)
    : capacity_(std::max<size_t>(capacity, 1)) {}

bool ReportBuffer::Push(ReportPtr report) {
  if (report == nullptr) return false;
  std::lock_guard<std::mutex> lock(mu_);
  if (report->seq() <= last_seq_) return false;
  last_seq_ = report->seq();
  if (reports_.size() >= capacity_) {
    reports_.pop_front();
    ++dropped_;
  }
  reports_.push_back(std::move(report));
  return true;
}

size_t ReportBuffer::Ack(uint64_t seq) {
  std::lock_guard<std::mutex> lock(mu_);
  auto end = FirstAfter(reports_, seq);
  size_t n = static_cast<size_t>(end - reports_.begin());
  reports_.erase(reports_.begin(), end);
  return n;
}

std::vector<ReportBuffer::ReportPtr> ReportBuffer::After(uint64_t seq,
                                                         size_t max) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<ReportPtr> out;
  for (auto it = FirstAfter(reports_, seq);
       it != reports_.end() && out.size() < max; ++it) {
    out.push_back(*it);
  }
  return out;
}

bool ReportBuffer::HasAfter(uint64_t seq) const {
  std::lock_guard<std::mutex> lock(mu_);
  return !reports_.empty() && reports_.back()->seq() > seq;
}

std::vector<uint64_t> ReportBuffer::SchemaIds() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<uint64_t> ids;
  for (const ReportPtr& r : reports_) {
    // Reports of one schema are contiguous, so this dedups cheaply.
    if (ids.empty() || ids.back() != r->schema_id()) {
      ids.push_back(r->schema_id());
    }
  }
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

size_t ReportBuffer::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return reports_.size();
}

uint64_t ReportBuffer::dropped() const {
  std::lock_guard<std::mutex> lock(mu_);
  return dropped_;
}

}  // namespace fabricdiag::agent
