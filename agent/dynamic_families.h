// The families decided per snapshot rather than per device scan: saturated
// counters, device, port, GPU-NIC and LLDP descriptions, and the agent's
// own health (sources, snapshots, stream, HTTP server).
//
//   DynamicKey(snapshot, health, &key);
//   if (key != previous_key) AddDynamicFamilies(snapshot, health, &f);
//
// Pure; thread-safe.
#pragma once

#include <string>

#include "agent/agent_health.h"
#include "agent/metric_families.h"
#include "agent/sample.h"

namespace fabricdiag::agent {

// Adds the series of the families decided per snapshot, in the same order
// on every call (values_only() relies on it).
void AddDynamicFamilies(const Snapshot& snap, const AgentHealth& h,
                        Families* f);

// Everything the series and headers of AddSaturated, AddInfo and AddHealth
// depend on (their values aside): a render whose key equals the previous
// one's reuses their prepared text. A label added to those functions must
// be added here.
void DynamicKey(const Snapshot& snap, const AgentHealth& h, std::string* key);

}  // namespace fabricdiag::agent
