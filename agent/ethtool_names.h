// Which ethtool statistics the agent exports by default. Pure.
//
// What a statistic means is the counter table's business
// (counters/counter_table.h); this file knows the naming schemes drivers use
// for per-queue statistics, which a big NIC has thousands of and which the
// port-level statistics already sum up.
//
//   if (!IsPerQueueStat("rx0_packets")) { ... }   // skipped by default
#pragma once

#include "absl/strings/string_view.h"

namespace fabricdiag::agent {

// True for per-queue/per-ring/per-channel stats:
//   mlx5      rx0_*, tx3_*, ch0_*, ptp_*, qos_tx0_*  (en_stats.c)
//   veth/ice  rx_queue_0_*, tx_queue_0_*
//   bnxt_en   "[0]: rx_ucast_packets"
//   i40e      tx-0.tx_packets, rx-3.rx_bytes
// Per-priority stats (rx_prio0_*) are not per-queue.
bool IsPerQueueStat(absl::string_view name);

}  // namespace fabricdiag::agent
