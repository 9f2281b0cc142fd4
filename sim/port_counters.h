// The counters of one simulated port (a host NIC or a switch port), as
// per-second rates (what the counter model computes for one tick) and as
// accumulated raw values (what the tree writer prints).
//
// One enum indexes both. Per-priority counters take 8 consecutive slots:
// `kTxPauseMicros + p`. Values are in the unit of the file they end up in
// (pause durations in microseconds as mlx5 prints them, docs/counters.md;
// bytes in bytes: the writer divides port_*_data by 4 itself). Values
// accumulate in 64 bits: the writer keeps them within each counter's width.
//
//   PortRates r;
//   r.per_second[kTxBytes] = 10e9;
//   SetPauseFraction(&r, Direction::kTx, 3, 0.95);
//   PortCounters c;
//   Accumulate(r, /*seconds=*/1.0, &c);
//   uint64_t sent = c.value[kTxBytes];
//
// Pure; a PortCounters is a plain value.
#pragma once

#include <array>
#include <cstdint>
#include <optional>

#include "counters/counter_table.h"

namespace fabricdiag::sim {

inline constexpr int kPriorities = 8;

enum Counter : int {
  // Wire traffic, all of it (RoCE included): ethtool *_phy, IB port_*.
  kTxBytes = 0,
  kRxBytes,
  kTxPackets,
  kRxPackets,
  // Kernel-stack traffic only: /sys/class/net/IF/statistics on a host NIC
  // (mlx5 netdev stats are the software ring sums, RoCE is not in them,
  // docs/counters.md). Unused on switch ports, whose netdevs count the wire.
  kStackTxBytes,
  kStackRxBytes,
  kStackTxPackets,
  kStackRxPackets,
  // Per priority, 8 slots each.
  kRxPauseFrames,
  kTxPauseFrames = kRxPauseFrames + kPriorities,
  kRxPauseMicros = kTxPauseFrames + kPriorities,
  kTxPauseMicros = kRxPauseMicros + kPriorities,
  kRxPauseTransitions = kTxPauseMicros + kPriorities,
  kRxPrioDiscards = kRxPauseTransitions + kPriorities,
  kPauseStormWarning = kRxPrioDiscards + kPriorities,
  kPauseStormError,
  kRxDiscardsPhy,
  kRxOutOfBuffer,
  kXmitDiscards,
  kCrcErrors,
  kSymbolErrors,     // IB PMA symbol_error (16-bit, saturates)
  kSymbolErrorsPhy,  // mlx5 rx_symbol_err_phy: the same events, 64-bit
  kPcsSymbolErrors,
  kCorrectedBits,
  kRxBits,
  kRcvErrors,
  kLinkErrorRecovery,
  // mlx5 hw_counters (drivers/infiniband/hw/mlx5/counters.c).
  kNpCnpSent,
  kRpCnpHandled,
  kNpEcnMarked,
  kOutOfSequence,
  kPacketSeqErr,
  kLocalAckTimeoutErr,
  kRnrNakRetryErr,
  kDuplicateRequest,
  kImpliedNakSeqErr,
  kRoceAdpRetrans,
  kReqTransportRetriesExceeded,
  // Moved by link state transitions, never by a rate.
  kLinkDowned,      // IB PMA link_downed, 8-bit
  kLinkDownEvents,  // mlx5 link_down_events_phy, 32-bit
  kCarrierChanges,  // netdev carrier_changes, atomic_t
  kNumCounters,
};

enum class Side { kRx, kTx };

struct PortRates {
  std::array<double, kNumCounters> per_second{};
  bool present = true;  // false: the device is gone (nic_gone)
  bool link_up = true;
  int speed_gbps = 400;  // 400 or 200 (half_speed)
};

// Pause on priority `p` for `fraction` (0..1) of the time, with the frames
// and XOFF/XON transitions that take (a 400G pause quantum of 65535 x 512
// bit times is 84 us; a stuck receiver refreshes it every ~half quantum).
void SetPauseFraction(PortRates* rates, Side side, int p, double fraction);
double PauseFraction(const PortRates& rates, Side side, int p);

struct PortCounters {
  std::array<uint64_t, kNumCounters> value{};
  // Fractions of a count not yet added (rate x seconds is rarely whole).
  std::array<double, kNumCounters> carry{};
  bool present = true;
  bool link_up = true;
  int speed_gbps = 400;
};

// Adds `rates` x `seconds` to `counters`, then applies the link state of
// `rates`: a down transition adds 1 to kLinkDowned, kLinkDownEvents and
// kCarrierChanges, an up transition 1 to kCarrierChanges. A device that
// comes back (present false -> true) starts from zero, like a driver
// reload. Negative or non-finite rates count nothing.
void Accumulate(const PortRates& rates, double seconds, PortCounters* counters);

// The simulated counter behind a counter of `meaning` in `family`: what the
// sysfs files, the `ethtool -S` text and the gNMI leaves print for it. Per
// family, as drivers differ: the IB PMA keeps its own 16-bit symbol error
// counter besides the PHY's 64-bit one; a host netdev counts only the
// kernel stack's traffic (a switch port's, `switch_port`, the wire's).
// nullopt: not simulated, the counter stays 0. Per-priority counters take
// the priority's slot from the one returned (`*counter + p`).
std::optional<Counter> CounterOf(counters::Family family,
                                 counters::Meaning meaning,
                                 counters::Direction direction,
                                 bool switch_port);

}  // namespace fabricdiag::sim
