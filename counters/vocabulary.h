// The words fabricdiag uses for counters, shared by the agent, the
// collector, the simulator and the tests: where a value comes from
// (Subsystem), how it behaves (Kind), what it means whatever a driver calls
// it (Meaning), its direction and the driver that spells it.
//
// The numeric values of Subsystem, Kind, Meaning and Direction are those of
// the wire enums in proto/ingest.proto (counters/wire.h converts, with
// static checks), so they must never be renumbered: add at the end.
//
//   Meaning m = Meaning::kPfcPauseDuration;
//   MeaningName(m);                           // "pfc_pause_duration"
//   DriverFromKernelModule("mlx5_core");      // Driver::kMlx5
//
// Pure; thread-safe.
#pragma once

#include <cstdint>

#include "absl/strings/string_view.h"

namespace fabricdiag::counters {

// Where a sample came from. The names are stable: they appear in metric
// labels, in the JSON snapshot and on the wire.
enum class Subsystem : uint8_t {
  kRdmaPortCounters = 1,      // class/infiniband/D/ports/N/counters/* (PMA)
  kRdmaPortCountersExt = 2,   // class/infiniband/D/ports/N/counters_ext/*
  kRdmaPortHwCounters = 3,    // class/infiniband/D/ports/N/hw_counters/*
  kRdmaDeviceHwCounters = 4,  // class/infiniband/D/hw_counters/*
  kRdmaPortAttribute = 5,     // numeric port attributes: rate, state ids
  kNetdevStatistics = 6,      // class/net/IF/statistics/*
  kNetdevAttribute = 7,       // class/net/IF/{carrier_changes,speed,mtu,...}
  kEthtool = 8,               // SIOCETHTOOL GSTATS or `ethtool -S` text
  kVerbs = 9,                 // ibv_query_port attributes
  // A switch's gNMI streaming telemetry, as a gNMI client receives it
  // (docs/topology-format.md); devices are the switch's interface names.
  kGnmi = 10,
};

// "rdma_port_counters", "netdev_statistics", "ethtool", ...
const char* SubsystemName(Subsystem s);

// Counters only grow (until a reset or a wrap); gauges go up and down.
enum class Kind : uint8_t { kCounter = 1, kGauge = 2 };

// What a counter means, independent of how a driver spells it: mlx5
// `tx_prio3_pause_duration` and bnxt_en `pfc_pri3_tx_duration_us` are both
// kPfcPauseDuration (tx, priority 3); mlx5 `np_cnp_sent` and irdma `cnpSent`
// are both kCnpSent. The exporter and the analyzers never look at
// driver-specific names. docs/counters.md lists every spelling.
enum class Meaning : uint8_t {
  kNone = 0,
  kPfcPauseFrames = 1,       // per priority and direction
  kPfcPauseDuration = 2,     // per priority and direction; seconds
  kPfcPauseTransitions = 3,  // per priority, rx
  kGlobalPauseFrames = 4,    // 802.3x link pause, per direction
  kGlobalPauseDuration = 5,  // per direction; seconds
  kPauseStormWarning = 6,    // the NIC's pause-storm watchdog: warning level
  kPauseStormError = 7,      // ... storm prevention stopped sending pause
  kPhyBytes = 8,             // bytes on the wire, per direction
  kPhyPackets = 9,           // packets on the wire, per direction
  kRxDiscardsPhy = 10,       // port receive buffer overflow drops
  kTxDiscardsPhy = 11,
  kRxOutOfBuffer = 12,     // no posted receive buffer (host too slow)
  kPriorityDiscards = 13,  // per priority, rx
  kPriorityBytes = 14,     // per priority and direction
  kEcnMarked = 15,         // CE-marked packets; per priority or a total (-1)
  kCrcErrors = 16,
  kSymbolErrors = 17,     // PHY symbol errors (pre-FEC coding errors)
  kPcsSymbolErrors = 18,  // not corrected by FEC
  kCorrectedBits = 19,    // FEC-corrected bits
  kReceivedBits = 20,     // BER denominator
  kLinkDownEvents = 21,   // PHY link-down events
  kRdmaBytes = 22,        // RDMA port data, per direction (RoCE included)
  kRdmaPackets = 23,
  kNetdevBytes = 24,  // the kernel netdev's bytes (RoCE bypasses it on mlx5)
  kNetdevPackets = 25,
  kRxErrors = 26,           // received packets with an error
  kLinkDowned = 27,         // IB link_downed: link error recovery failed
  kLinkErrorRecovery = 28,  // IB link_error_recovery
  kCarrierChanges = 29,     // netdev carrier up/down transitions
  kCnpSent = 30,            // congestion notification packets this NIC sent
  kCnpHandled = 31,         // CNPs this NIC received and slowed down for
  kOutOfSequence = 32,      // responder saw a PSN gap
  kPacketSeqErr = 33,       // PSN sequence-error NAKs received
  kLocalAckTimeout = 34,    // requester ACK timer expired
  kRnrNakRetry = 35,        // RNR NAKs received
  kRetriesExceeded = 36,    // transport or RNR retries exhausted (fatal)
  kDuplicateRequest = 37,   // the peer retransmitted something done already
  kImpliedNakSeqErr = 38,   // read/atomic response skipped ahead
  kAdaptiveRetrans = 39,    // adaptive retransmissions and their timeouts
  // A switch's egress queues (not priorities: the queue a priority maps to
  // is switch configuration).
  kQueueBytes = 40,      // bytes an egress queue transmitted
  kQueuePackets = 41,    // packets an egress queue transmitted
  kQueueDrops = 42,      // packets an egress queue dropped
  kQueueEcnMarked = 43,  // packets an egress queue marked CE
  // A switch's PFC watchdog: a queue its link partner kept paused past the
  // detection time (the partner is the storm), and its restoration.
  kPfcWatchdogStorms = 44,
  kPfcWatchdogRestorations = 45,
};
inline constexpr int kMeaningCount = 46;

// "pfc_pause_frames", ...; "" for kNone.
const char* MeaningName(Meaning m);

enum class Direction : uint8_t { kNone = 0, kRx = 1, kTx = 2 };
const char* DirectionName(Direction d);  // "", "rx", "tx"

// The driver that spells a counter. kAny: the name is defined by a standard
// (IBA PMA counters, the kernel's netdev statistics), not by a driver.
// kUnknown is what a caller passes when it cannot tell.
enum class Driver : uint8_t {
  kUnknown = 0,
  kAny,
  kMlx5,   // NVIDIA/Mellanox ConnectX-4 and later (mlx5_core, mlx5_ib)
  kMlx4,   // ConnectX-3 (mlx4_core)
  kBnxt,   // Broadcom NetXtreme-C/E (bnxt_en, bnxt_re)
  kIce,    // Intel E810 (ice; RDMA through irdma)
  kIrdma,  // Intel RDMA (irdma) hw_counters
  kRxe,    // soft-RoCE
  kHfi1,   // Omni-Path
  kVeth,
};
const char* DriverName(Driver d);  // "mlx5", "bnxt", ...; "" for kUnknown

// The driver of a PCI function from its kernel module (the basename of
// `device/driver`): "mlx5_core" -> kMlx5. kUnknown for others.
Driver DriverFromKernelModule(absl::string_view module);

// The driver whose hw_counters an RDMA device on a PCI function of kernel
// module `module` has: as DriverFromKernelModule, except that the Intel
// Ethernet modules (ice, i40e) carry the irdma RDMA driver.
Driver RdmaDriverFromKernelModule(absl::string_view module);

// The driver of an RDMA device from its kernel name ("mlx5_3", "bnxt_re0",
// "rxe0"); kUnknown when the name says nothing (udev may rename devices, so
// prefer DriverFromKernelModule).
Driver DriverFromRdmaDeviceName(absl::string_view device);

}  // namespace fabricdiag::counters
