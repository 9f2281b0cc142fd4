#include "agent/report_buffer.h"

#include <algorithm>
#include <utility>

namespace fabricdiag::agent {
namespace {

// First position whose seq is > `seq` (reports_ is sorted by seq).
template <typename Deque>
auto FirstAfter(Deque& reports, uint64_t seq) {
  return std::upper_bound(
      reports.begin(), reports.end(), seq,
      [](uint64_t s, const auto& entry) { return s < entry.report->seq(); });
}

}  // namespace

ReportBuffer::ReportBuffer(Limits limits) : limits_(limits) {}

void ReportBuffer::PopFrontLocked() {
  bytes_ -= reports_.front().bytes;
  reports_.pop_front();
}

bool ReportBuffer::Push(ReportPtr report) {
  if (report == nullptr) return false;
  // Measured outside the lock: it walks the message's fields.
  const size_t bytes = report->SpaceUsedLong();
  std::lock_guard<std::mutex> lock(mu_);
  if (report->seq() <= last_seq_) return false;
  last_seq_ = report->seq();
  const size_t max_reports = std::max<size_t>(limits_.max_reports, 1);
  while (!reports_.empty() && (reports_.size() >= max_reports ||
                               bytes_ + bytes > limits_.max_bytes)) {
    PopFrontLocked();
    ++dropped_;
  }
  reports_.push_back({std::move(report), bytes});
  bytes_ += bytes;
  return true;
}

size_t ReportBuffer::Ack(uint64_t seq) {
  std::lock_guard<std::mutex> lock(mu_);
  auto end = FirstAfter(reports_, seq);
  const size_t n = static_cast<size_t>(end - reports_.begin());
  for (size_t i = 0; i < n; ++i) PopFrontLocked();
  return n;
}

std::vector<ReportBuffer::ReportPtr> ReportBuffer::After(uint64_t seq,
                                                         size_t max) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<ReportPtr> out;
  for (auto it = FirstAfter(reports_, seq);
       it != reports_.end() && out.size() < max; ++it) {
    out.push_back(it->report);
  }
  return out;
}

bool ReportBuffer::HasAfter(uint64_t seq) const {
  std::lock_guard<std::mutex> lock(mu_);
  return !reports_.empty() && reports_.back().report->seq() > seq;
}

std::vector<uint64_t> ReportBuffer::SchemaIds() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<uint64_t> ids;
  for (const Entry& e : reports_) {
    // Reports of one schema are contiguous, so this dedups cheaply.
    if (ids.empty() || ids.back() != e.report->schema_id()) {
      ids.push_back(e.report->schema_id());
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

size_t ReportBuffer::bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return bytes_;
}

uint64_t ReportBuffer::dropped() const {
  std::lock_guard<std::mutex> lock(mu_);
  return dropped_;
}

}  // namespace fabricdiag::agent
