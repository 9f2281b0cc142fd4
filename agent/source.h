// The interface every data source of the agent implements.
//
// A source reads one kind of data (RDMA sysfs, netdev sysfs, ethtool, verbs)
// and appends it to a Snapshot. It must never fail the whole snapshot
// because one device or file is bad: it appends what it could read, and
// reports the failures in the returned SourceStatus. Sources re-discover
// devices on every call (or on a cheap schedule of their own), so NICs that
// appear or vanish at runtime are handled without a restart.
//
// Collect() is called from one thread at a time.
#pragma once

#include "absl/strings/string_view.h"
#include "agent/sample.h"

namespace fabricdiag::agent {

class Source {
 public:
  virtual ~Source() = default;

  // Stable name: "rdma_sysfs", "netdev", "ethtool", "verbs".
  virtual absl::string_view name() const = 0;

  // Appends samples and info to `snapshot`. Returns this source's status;
  // `duration` is filled in by the caller.
  virtual SourceStatus Collect(Snapshot* snapshot) = 0;
};

}  // namespace fabricdiag::agent
