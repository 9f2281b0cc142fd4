#include "agent/snapshotter.h"

#include <string>
#include <utility>

namespace fabricdiag::agent {

Snapshotter::Snapshotter(std::vector<std::unique_ptr<Source>> sources,
                         const Clock& clock)
    : sources_(std::move(sources)), clock_(clock) {}

Snapshot Snapshotter::Take() {
  Snapshot snapshot;
  snapshot.wall_time = clock_.Now();
  snapshot.samples.reserve(last_samples_);
  snapshot.series_owners.reserve(last_owners_);
  for (const std::unique_ptr<Source>& source : sources_) {
    const int64_t start = clock_.MonotonicNanos();
    SourceStatus status = source->Collect(&snapshot);
    status.duration = absl::Nanoseconds(clock_.MonotonicNanos() - start);
    if (status.source.empty()) status.source = std::string(source->name());
    snapshot.sources.push_back(std::move(status));
  }
  // Rates are computed against the moment the reads finished: sysfs reads
  // take microseconds, so the skew across one snapshot is negligible next
  // to a sampling interval.
  snapshot.monotonic_nanos = clock_.MonotonicNanos();
  last_samples_ = snapshot.samples.size();
  last_owners_ = snapshot.series_owners.size();
  return snapshot;
}

}  // namespace fabricdiag::agent
