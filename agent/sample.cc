#include "agent/sample.h"

namespace fabricdiag::agent {

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

}  // namespace fabricdiag::agent
