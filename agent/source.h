// The interfaces of the agent's data sources.
//
// A Source discovers its own devices and reads one kind of data (RDMA
// sysfs, netdev sysfs, verbs); a NetdevStatsSource reads the statistics of
// the netdevs it is given (ethtool), which the Snapshotter hands it from
// what the netdev source found in the same round. Neither depends on the
// order sources run in. A source appends what it reads to a Snapshot. It must
// never fail the whole snapshot because one device or file is bad: it appends
// what it could read, and reports the failures in the returned SourceStatus.
// Sources re-discover devices on every call (or on a cheap schedule of their
// own), so NICs that appear or vanish at runtime are handled without a restart.
//
// Collect() is called from one thread at a time.
#pragma once

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "agent/sample.h"

namespace fabricdiag::agent {

class Source {
 public:
  virtual ~Source() = default;

  // Stable name: "rdma_sysfs", "netdev", "verbs".
  virtual absl::string_view name() const = 0;

  // Appends samples and info to `snapshot`. Returns this source's status;
  // `duration` is filled in by the caller.
  virtual SourceStatus Collect(Snapshot* snapshot) = 0;
};

class NetdevStatsSource {
 public:
  virtual ~NetdevStatsSource() = default;

  // Stable name: "ethtool".
  virtual absl::string_view name() const = 0;

  // Appends the samples of `netdevs` to `snapshot` (which it does not
  // otherwise change; `netdevs` may be snapshot->netdevs). Returns this
  // source's status; `duration` is filled in by the caller.
  virtual SourceStatus Collect(absl::Span<const NetdevInfo> netdevs,
                               Snapshot* snapshot) = 0;
};

}  // namespace fabricdiag::agent
