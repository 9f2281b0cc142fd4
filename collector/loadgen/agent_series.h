// The series a fabricdiag-agent reports for one RoCE NIC of a GPU node, for
// the load generator: real names, subsystems, units and meanings (so that
// the collector's view builder maps them onto analysis signals, as it does
// for real agents), and a plausible healthy rate for each.
//
// Per NIC (150 series, the "~150 counters"): the 21 IB PMA
// counters, 29 mlx5 hw_counters and 3 port attributes of mlx5_N port 1;
// 23 statistics and 6 attributes of netdev ethN; 68 ethtool statistics of
// ethN (PHY, PFC on priority 3, per-priority bytes and discards, vport).
// About a fifth of them move every second (bytes, packets, requests, CNPs),
// as on a NIC carrying RDMA traffic; the rest (errors, discards, idle
// priorities) stay at 0.
//
//   std::vector<LoadSeries> nic = AgentNicSeries(/*nic=*/2);
//   v1::Inventory inventory = AgentInventory(/*nics=*/8);
//
// Pure; thread-safe.
#pragma once

#include <vector>

#include "proto/ingest.pb.h"

namespace fabricdiag::collector::loadgen {

struct LoadSeries {
  v1::Series series;
  double rate = 0;      // base units per second, healthy
  bool moving = false;  // varies from report to report
};

// The series of NIC `nic` (mlx5_<nic> port 1, netdev eth<nic>).
std::vector<LoadSeries> AgentNicSeries(int nic);

// RDMA devices mlx5_0.., their port 1 (ACTIVE, 400 Gb/s, Ethernet) and
// netdevs eth0.., as an agent's first Inventory says.
v1::Inventory AgentInventory(int nics);

}  // namespace fabricdiag::collector::loadgen
