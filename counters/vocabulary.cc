#include "counters/vocabulary.h"

#include "absl/strings/match.h"

namespace fabricdiag::counters {

const char* SubsystemName(Subsystem s) {
  switch (s) {
    case Subsystem::kRdmaPortCounters:
      return "rdma_port_counters";
    case Subsystem::kRdmaPortCountersExt:
      return "rdma_port_counters_ext";
    case Subsystem::kRdmaPortHwCounters:
      return "rdma_port_hw_counters";
    case Subsystem::kRdmaDeviceHwCounters:
      return "rdma_device_hw_counters";
    case Subsystem::kRdmaPortAttribute:
      return "rdma_port_attribute";
    case Subsystem::kNetdevStatistics:
      return "netdev_statistics";
    case Subsystem::kNetdevAttribute:
      return "netdev_attribute";
    case Subsystem::kEthtool:
      return "ethtool";
    case Subsystem::kVerbs:
      return "verbs";
    case Subsystem::kGnmi:
      return "gnmi";
  }
  return "unknown";
}

const char* MeaningName(Meaning m) {
  switch (m) {
    case Meaning::kNone:
      return "";
    case Meaning::kPfcPauseFrames:
      return "pfc_pause_frames";
    case Meaning::kPfcPauseDuration:
      return "pfc_pause_duration";
    case Meaning::kPfcPauseTransitions:
      return "pfc_pause_transitions";
    case Meaning::kGlobalPauseFrames:
      return "global_pause_frames";
    case Meaning::kGlobalPauseDuration:
      return "global_pause_duration";
    case Meaning::kPauseStormWarning:
      return "pause_storm_warning";
    case Meaning::kPauseStormError:
      return "pause_storm_error";
    case Meaning::kPhyBytes:
      return "phy_bytes";
    case Meaning::kPhyPackets:
      return "phy_packets";
    case Meaning::kRxDiscardsPhy:
      return "rx_discards_phy";
    case Meaning::kTxDiscardsPhy:
      return "tx_discards_phy";
    case Meaning::kRxOutOfBuffer:
      return "rx_out_of_buffer";
    case Meaning::kPriorityDiscards:
      return "priority_discards";
    case Meaning::kPriorityBytes:
      return "priority_bytes";
    case Meaning::kEcnMarked:
      return "ecn_marked";
    case Meaning::kCrcErrors:
      return "crc_errors";
    case Meaning::kSymbolErrors:
      return "symbol_errors";
    case Meaning::kPcsSymbolErrors:
      return "pcs_symbol_errors";
    case Meaning::kCorrectedBits:
      return "corrected_bits";
    case Meaning::kReceivedBits:
      return "received_bits";
    case Meaning::kLinkDownEvents:
      return "link_down_events";
    case Meaning::kRdmaBytes:
      return "rdma_bytes";
    case Meaning::kRdmaPackets:
      return "rdma_packets";
    case Meaning::kNetdevBytes:
      return "netdev_bytes";
    case Meaning::kNetdevPackets:
      return "netdev_packets";
    case Meaning::kRxErrors:
      return "rx_errors";
    case Meaning::kLinkDowned:
      return "link_downed";
    case Meaning::kLinkErrorRecovery:
      return "link_error_recovery";
    case Meaning::kCarrierChanges:
      return "carrier_changes";
    case Meaning::kCnpSent:
      return "cnp_sent";
    case Meaning::kCnpHandled:
      return "cnp_handled";
    case Meaning::kOutOfSequence:
      return "out_of_sequence";
    case Meaning::kPacketSeqErr:
      return "packet_seq_err";
    case Meaning::kLocalAckTimeout:
      return "local_ack_timeout";
    case Meaning::kRnrNakRetry:
      return "rnr_nak_retry";
    case Meaning::kRetriesExceeded:
      return "retries_exceeded";
    case Meaning::kDuplicateRequest:
      return "duplicate_request";
    case Meaning::kImpliedNakSeqErr:
      return "implied_nak_seq_err";
    case Meaning::kAdaptiveRetrans:
      return "adaptive_retrans";
    case Meaning::kQueueBytes:
      return "queue_bytes";
    case Meaning::kQueuePackets:
      return "queue_packets";
    case Meaning::kQueueDrops:
      return "queue_drops";
    case Meaning::kQueueEcnMarked:
      return "queue_ecn_marked";
    case Meaning::kPfcWatchdogStorms:
      return "pfc_watchdog_storms";
    case Meaning::kPfcWatchdogRestorations:
      return "pfc_watchdog_restorations";
  }
  return "";
}

const char* DirectionName(Direction d) {
  switch (d) {
    case Direction::kNone:
      return "";
    case Direction::kRx:
      return "rx";
    case Direction::kTx:
      return "tx";
  }
  return "";
}

const char* DriverName(Driver d) {
  switch (d) {
    case Driver::kUnknown:
      return "";
    case Driver::kAny:
      return "any";
    case Driver::kMlx5:
      return "mlx5";
    case Driver::kMlx4:
      return "mlx4";
    case Driver::kBnxt:
      return "bnxt";
    case Driver::kIce:
      return "ice";
    case Driver::kIrdma:
      return "irdma";
    case Driver::kRxe:
      return "rxe";
    case Driver::kHfi1:
      return "hfi1";
    case Driver::kVeth:
      return "veth";
  }
  return "";
}

Driver DriverFromKernelModule(absl::string_view module) {
  struct Entry {
    absl::string_view module;
    Driver driver;
  };
  static constexpr Entry kModules[] = {
      {"mlx5_core", Driver::kMlx5}, {"mlx4_core", Driver::kMlx4},
      {"bnxt_en", Driver::kBnxt},   {"ice", Driver::kIce},
      {"hfi1", Driver::kHfi1},      {"veth", Driver::kVeth},
  };
  for (const Entry& e : kModules) {
    if (e.module == module) return e.driver;
  }
  return Driver::kUnknown;
}

Driver RdmaDriverFromKernelModule(absl::string_view module) {
  if (module == "ice" || module == "i40e") return Driver::kIrdma;
  return DriverFromKernelModule(module);
}

Driver DriverFromRdmaDeviceName(absl::string_view device) {
  // The kernel names RDMA devices "<driver prefix><index>"
  // (ib_register_device's name format in each driver).
  struct Entry {
    absl::string_view prefix;
    Driver driver;
  };
  static constexpr Entry kPrefixes[] = {
      {"mlx5_", Driver::kMlx5},   {"mlx4_", Driver::kMlx4},
      {"bnxt_re", Driver::kBnxt}, {"irdma", Driver::kIrdma},
      {"rxe", Driver::kRxe},      {"hfi1_", Driver::kHfi1},
  };
  for (const Entry& e : kPrefixes) {
    if (absl::StartsWith(device, e.prefix)) return e.driver;
  }
  return Driver::kUnknown;
}

}  // namespace fabricdiag::counters
