// The name tables: which metric family, help text and labels each counter
// sample of a snapshot is exported under (docs/metrics.md lists every
// family). RDMA sysfs counters, netdev statistics and attributes, verbs port
// attributes, and ethtool statistics both raw and, where the source
// recognised their meaning, under driver-independent names.
//
//   Families f;
//   f.set_sample(i);
//   AddSample(snapshot.samples[i], &f);
//
// Pure; thread-safe.
#pragma once

#include "agent/metric_families.h"
#include "agent/sample.h"

namespace fabricdiag::agent {

// Adds the series of sample `s` (none for a sample the agent does not
// export).
void AddSample(const Sample& s, Families* f);

}  // namespace fabricdiag::agent
