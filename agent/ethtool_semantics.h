// What an ethtool statistic means, whatever the driver calls it. Pure.
//
// Drivers spell the same concept differently (COUNTERS.md §5): the PFC pause
// frames received on priority 3 are mlx5 `rx_prio3_pause`, bnxt_en
// `rx_pfc_ena_frames_pri3` and ice `rx_priority_3_xoff.nic`. The classifier
// maps each known spelling onto a Meaning, a direction and a priority, and
// fixes the unit: raw * scale is the value in `unit`.
//
//   StatSemantics s = ClassifyEthtoolStat("tx_prio3_pause_duration");
//   // s.meaning == Meaning::kPfcPauseDuration, s.direction == Direction::kTx,
//   // s.priority == 3, s.scale == 1e-6, s.unit == "seconds"
//   if (!IsPerQueueStat("rx0_packets")) { ... }   // skipped by default
//
// Unknown names get Meaning::kNone, a 64-bit counter with scale 1 and an
// empty unit; they are still exported under their driver name.
#pragma once

#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"
#include "agent/sample.h"

namespace fabricdiag::agent {

struct StatSemantics {
  Meaning meaning = Meaning::kNone;
  Direction direction = Direction::kNone;
  int priority = -1;   // 0..7 for per-priority stats, else -1
  double scale = 1.0;  // base-unit value = raw * scale
  std::string unit;    // base unit after scaling: "frames", "seconds", ...
  Kind kind = Kind::kCounter;
  uint32_t width_bits = 64;  // where the driver reads a 32-bit register
};

// Classifies one ethtool stat name (exact spelling, case-sensitive).
// Priorities must be 0..7: "rx_prio8_pause" is not a PFC counter.
StatSemantics ClassifyEthtoolStat(absl::string_view name);

// True for per-queue/per-ring/per-channel stats, which a big NIC has
// thousands of and which the port-level stats already sum up:
//   mlx5      rx0_*, tx3_*, ch0_*, ptp_*, qos_tx0_*  (en_stats.c)
//   veth/ice  rx_queue_0_*, tx_queue_0_*
//   bnxt_en   "[0]: rx_ucast_packets"
//   i40e      tx-0.tx_packets, rx-3.rx_bytes
// Per-priority stats (rx_prio0_*) are not per-queue.
bool IsPerQueueStat(absl::string_view name);

}  // namespace fabricdiag::agent
