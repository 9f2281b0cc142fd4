#include "agent/snapshotter.h"

#include <string>
#include <utility>

#include "agent/device_links.h"

namespace fabricdiag::agent {

Snapshotter::Snapshotter(
    std::vector<std::unique_ptr<Source>> sources,
    std::vector<std::unique_ptr<NetdevStatsSource>> netdev_sources,
    const Clock& clock)
    : sources_(std::move(sources)),
      netdev_sources_(std::move(netdev_sources)),
      clock_(clock) {}

Snapshot Snapshotter::Take() {
  Snapshot snapshot;
  snapshot.wall_time = clock_.Now();
  snapshot.samples.reserve(last_samples_);
  snapshot.series_owners.reserve(last_owners_);
  auto timed = [this, &snapshot](absl::string_view name, auto collect) {
    const int64_t start = clock_.MonotonicNanos();
    SourceStatus status = collect();
    status.duration = absl::Nanoseconds(clock_.MonotonicNanos() - start);
    if (status.source.empty()) status.source = std::string(name);
    snapshot.sources.push_back(std::move(status));
  };
  for (const std::unique_ptr<Source>& source : sources_) {
    timed(source->name(), [&] { return source->Collect(&snapshot); });
  }
  LinkNetdevsToRdma(&snapshot);
  for (const std::unique_ptr<NetdevStatsSource>& source : netdev_sources_) {
    timed(source->name(),
          [&] { return source->Collect(snapshot.netdevs, &snapshot); });
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
