// The agent's bounded queue of reports the collector has not acknowledged.
//
// Reports stay here from the moment they are sampled until the collector
// acknowledges them, so a collector outage or a broken connection loses
// nothing as long as it is shorter than the buffer: 600 reports = 10 minutes
// at the default 1 s interval. The buffer is bounded twice, in reports and
// in bytes of memory: an 8-NIC node's report holds ~1,200 series (~20 KB,
// 12 MB for ten minutes), but a switch or a hostile tree with 20,000
// counters makes reports of ~350 KB, and a count alone would let the agent
// grow by gigabytes during an outage. When either bound is reached the
// OLDEST reports are dropped and counted: after a long outage the collector
// gets the most recent history, and the gap shows up as a jump in seq.
//
//   ReportBuffer buffer;  // 600 reports, 64 MiB: Limits
//   buffer.Push(std::make_shared<const v1::Report>(std::move(report)));
//   for (const auto& r : buffer.After(last_sent_seq, 64)) Send(*r);
//   buffer.Ack(acked_seq);  // from the collector
//
// Thread-safe: the sampling thread pushes while the stream threads read and
// acknowledge. Reports are shared immutable pointers, so replaying a report
// copies nothing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

#include "proto/ingest.pb.h"

namespace fabricdiag::agent {

struct ReportBufferLimits {
  static constexpr size_t kDefaultReports = 600;
  static constexpr size_t kDefaultBytes = size_t{64} << 20;
  size_t max_reports = kDefaultReports;  // 0 is treated as 1
  // Memory of the buffered reports (protobuf SpaceUsedLong). The newest
  // report is kept even when it alone is larger.
  size_t max_bytes = kDefaultBytes;
};

class ReportBuffer {
 public:
  using ReportPtr = std::shared_ptr<const v1::Report>;

  static constexpr size_t kDefaultReports = ReportBufferLimits::kDefaultReports;
  static constexpr size_t kDefaultBytes = ReportBufferLimits::kDefaultBytes;
  using Limits = ReportBufferLimits;

  explicit ReportBuffer(Limits limits = {});

  // Appends `report`, dropping the oldest reports until both limits hold.
  // Seqs must increase; a report whose seq is not greater than the last
  // pushed one (or a null pointer) is refused and false is returned.
  bool Push(ReportPtr report);

  // Removes every report with seq <= `seq`; returns how many were removed.
  size_t Ack(uint64_t seq);

  // Up to `max` reports with seq > `seq`, oldest first.
  std::vector<ReportPtr> After(uint64_t seq, size_t max) const;

  // True when a report with seq > `seq` is buffered.
  bool HasAfter(uint64_t seq) const;

  // Schema ids referenced by buffered reports, ascending, unique.
  std::vector<uint64_t> SchemaIds() const;

  size_t size() const;
  // Memory held by the buffered reports, as counted against max_bytes.
  size_t bytes() const;
  const Limits& limits() const { return limits_; }
  // Reports dropped because the buffer was full, over its lifetime.
  uint64_t dropped() const;

 private:
  struct Entry {
    ReportPtr report;
    size_t bytes;
  };
  void PopFrontLocked();

  const Limits limits_;
  mutable std::mutex mu_;
  std::deque<Entry> reports_;  // ascending seq
  size_t bytes_ = 0;
  uint64_t last_seq_ = 0;
  uint64_t dropped_ = 0;
};

}  // namespace fabricdiag::agent
