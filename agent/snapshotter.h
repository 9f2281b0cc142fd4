// Runs every source once and assembles one Snapshot.
//
// First the device sources (RDMA sysfs, netdev, verbs: each finds its own
// devices), then the RDMA device behind each netdev is linked
// (device_links.h), then the netdev statistics sources (ethtool) read the
// netdevs found in this round, handed to them explicitly. Each source's
// duration is measured here, so every SourceStatus reports its own cost and
// one failing source never hides the others.
//
//   Snapshotter snapshotter(std::move(sources), std::move(netdev_sources),
//                           clock);
//   Snapshot snap = snapshotter.Take();
//
// Not thread-safe: Take() is called by one sampling thread.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "agent/sample.h"
#include "agent/source.h"
#include "common/clock.h"

namespace fabricdiag::agent {

class Snapshotter {
 public:
  Snapshotter(std::vector<std::unique_ptr<Source>> sources,
              std::vector<std::unique_ptr<NetdevStatsSource>> netdev_sources,
              const Clock& clock);

  Snapshot Take();

 private:
  std::vector<std::unique_ptr<Source>> sources_;
  std::vector<std::unique_ptr<NetdevStatsSource>> netdev_sources_;
  const Clock& clock_;
  // Sizes of the previous snapshot, to allocate each vector once.
  size_t last_samples_ = 0;
  size_t last_owners_ = 0;
};

}  // namespace fabricdiag::agent
