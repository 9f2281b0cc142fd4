// The agent's bounded queue of reports the collector has not acknowledged.
//
// Reports stay here from the moment they are sampled until the collector
// acknowledges them, so a collector outage or a broken connection loses
// nothing as long as it is shorter than the buffer: 600 reports = 10 minutes
// at the default 1 s interval (at ~20 KB per report, ~12 MB of memory). When
// the buffer is full the OLDEST report is dropped and counted: after a long
// outage the collector gets the most recent history, and the gap shows up as
// a jump in seq.
//
//   ReportBuffer buffer(600);
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

class ReportBuffer {
 public:
  using ReportPtr = std::shared_ptr<const v1::Report>;

  static constexpr size_t kDefaultCapacity = 600;

  // `capacity` is in reports; 0 is treated as 1.
  explicit ReportBuffer(size_t capacity = kDefaultCapacity);

  // Appends `report`, dropping the oldest report when full. Seqs must
  // increase; a report whose seq is not greater than the last pushed one (or
  // a null pointer) is refused and false is returned.
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
  size_t capacity() const { return capacity_; }
  // Reports dropped because the buffer was full, over its lifetime.
  uint64_t dropped() const;

 private:
  const size_t capacity_;
  mutable std::mutex mu_;
  std::deque<ReportPtr> reports_;  // ascending seq
  uint64_t last_seq_ = 0;
  uint64_t dropped_ = 0;
};

}  // namespace fabricdiag::agent
