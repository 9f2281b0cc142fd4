// Series descriptions built from the counter table, for every agent source
// and for anything that must describe series exactly as the agent does
// (the simulator's virtual agents, tests).
//
//   SeriesDesc d = DescribeCounter(Subsystem::kRdmaPortHwCounters,
//                                  counters::Driver::kMlx5, "mlx5_0", 1,
//                                  "np_cnp_sent");
//   // d.meaning == Meaning::kCnpSent, d.width_bits == 64, d.unit == "events"
//
//   std::vector<SeriesDesc> g = RdmaPortAttributeDescs("mlx5_0", 1);
//
// Pure; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "agent/sample.h"
#include "counters/vocabulary.h"

namespace fabricdiag::agent {

// The description of counter `name` of `subsystem` on `device` (and RDMA
// `port`; 0 for device-level files and netdevs), driven by `driver`: width,
// unit, scale, meaning, direction and priority from counters::Classify. For
// an IB PMA data or packet counter (whose width depends on the PMA) the
// width is 32 and *pma_width, when given, is set to true.
SeriesDesc DescribeCounter(Subsystem subsystem, counters::Driver driver,
                           std::string device, uint32_t port, std::string name,
                           bool* pma_width = nullptr);

// The gauges the agent derives from an RDMA port's state, phys_state and
// rate files, in this order: state_id, phys_state_id, rate_bytes_per_second.
std::vector<SeriesDesc> RdmaPortAttributeDescs(const std::string& device,
                                               uint32_t port);

// The gauges the agent derives from a netdev's speed, mtu and carrier
// files, in this order: speed_bytes_per_second, mtu, carrier.
std::vector<SeriesDesc> NetdevAttributeDescs(const std::string& netdev);

}  // namespace fabricdiag::agent
