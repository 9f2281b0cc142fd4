#include "agent/counter_families.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace fabricdiag::agent {
namespace {

// counters/ and counters_ext/ (IB PMA PortCounters). The data counters are
// already scaled to bytes by the source (the kernel reports 4-octet words).
void AddRdmaPortCounter(const Sample& s, Families* f) {
  struct Named {
    const char* counter;
    const char* family;
    const char* help;
  };
  static constexpr Named kNamed[] = {
      {"port_xmit_data", "fabricdiag_rdma_port_transmitted_bytes_total",
       "Bytes transmitted by the RDMA port on all VLs (counters/port_xmit_data "
       "x 4)."},
      {"port_rcv_data", "fabricdiag_rdma_port_received_bytes_total",
       "Bytes received by the RDMA port on all VLs (counters/port_rcv_data x "
       "4)."},
      {"port_xmit_packets", "fabricdiag_rdma_port_transmitted_packets_total",
       "Packets transmitted by the RDMA port (counters/port_xmit_packets)."},
      {"port_rcv_packets", "fabricdiag_rdma_port_received_packets_total",
       "Packets received by the RDMA port (counters/port_rcv_packets)."},
      // counters_ext/ of kernels before v4.5.
      {"port_xmit_data_64", "fabricdiag_rdma_port_transmitted_bytes_total",
       "Bytes transmitted by the RDMA port on all VLs (counters/port_xmit_data "
       "x 4)."},
      {"port_rcv_data_64", "fabricdiag_rdma_port_received_bytes_total",
       "Bytes received by the RDMA port on all VLs (counters/port_rcv_data x "
       "4)."},
      {"port_xmit_packets_64", "fabricdiag_rdma_port_transmitted_packets_total",
       "Packets transmitted by the RDMA port (counters/port_xmit_packets)."},
      {"port_rcv_packets_64", "fabricdiag_rdma_port_received_packets_total",
       "Packets received by the RDMA port (counters/port_rcv_packets)."},
  };
  for (const Named& n : kNamed) {
    if (s.desc->name == n.counter) {
      f->Add(n.family, n.help, PromType::kCounter, PortLabels(s), Base());
      return;
    }
  }
  Labels labels = PortLabels(s);
  labels.push_back({"statistic", s.desc->name});
  f->Add("fabricdiag_rdma_port_statistic_total",
         "IB PMA port counter from counters/ or counters_ext/, as the kernel "
         "counted it (errors, discards, xmit_wait ticks).",
         PromType::kCounter, labels, Base());
}

void AddNetdevStatistic(const Sample& s, Families* f) {
  struct Named {
    const char* statistic;
    const char* family;
    const char* help;
  };
  static constexpr Named kNamed[] = {
      {"rx_bytes", "fabricdiag_netdev_received_bytes_total",
       "Bytes received by the netdev (statistics/rx_bytes; on mlx5 RoCE "
       "traffic bypasses this counter, see fabricdiag_phy_*)."},
      {"tx_bytes", "fabricdiag_netdev_transmitted_bytes_total",
       "Bytes transmitted by the netdev (statistics/tx_bytes)."},
      {"rx_packets", "fabricdiag_netdev_received_packets_total",
       "Packets received by the netdev (statistics/rx_packets)."},
      {"tx_packets", "fabricdiag_netdev_transmitted_packets_total",
       "Packets transmitted by the netdev (statistics/tx_packets)."},
  };
  Labels labels = {{"netdev", s.desc->device}};
  for (const Named& n : kNamed) {
    if (s.desc->name == n.statistic) {
      f->Add(n.family, n.help, PromType::kCounter, labels, Base());
      return;
    }
  }
  labels.push_back({"statistic", s.desc->name});
  f->Add("fabricdiag_netdev_statistic_total",
         "Netdev statistic from statistics/ (errors, drops, ...).",
         PromType::kCounter, labels, Base());
}

void AddNetdevAttribute(const Sample& s, Families* f) {
  Labels labels = {{"netdev", s.desc->device}};
  if (s.desc->name == "carrier_changes") {
    f->Add("fabricdiag_netdev_carrier_changes_total",
           "Times the netdev's carrier went up or down (link flaps).",
           PromType::kCounter, labels, Base());
  } else if (s.desc->name == "carrier_up_count") {
    f->Add("fabricdiag_netdev_carrier_up_total",
           "Times the netdev's carrier came up.", PromType::kCounter, labels,
           Base());
  } else if (s.desc->name == "carrier_down_count") {
    f->Add("fabricdiag_netdev_carrier_down_total",
           "Times the netdev's carrier went down.", PromType::kCounter, labels,
           Base());
  } else if (s.desc->name == "speed_bytes_per_second") {
    f->Add(
        "fabricdiag_netdev_speed_bytes_per_second",
        "Negotiated link speed of the netdev; absent while the link is down.",
        PromType::kGauge, labels, Base());
  } else if (s.desc->name == "mtu") {
    f->Add("fabricdiag_netdev_mtu_bytes", "MTU of the netdev.",
           PromType::kGauge, labels, Base());
  } else if (s.desc->name == "carrier") {
    f->Add("fabricdiag_netdev_carrier", "1 when the netdev has carrier.",
           PromType::kGauge, labels, Base());
  } else {
    labels.push_back({"attribute", s.desc->name});
    f->Add(
        "fabricdiag_netdev_attribute",
        "Other numeric netdev attribute from sysfs.",
        s.desc->kind == Kind::kCounter ? PromType::kUntyped : PromType::kGauge,
        labels, Base());
  }
}

// Pause frames and durations (PFC per priority and 802.3x link-level), and
// the NIC's pause-storm events.
void AddPauseMeaning(const Sample& s, Families* f) {
  Labels labels = {{"netdev", s.desc->device}};
  const std::string direction = DirectionName(s.desc->direction);
  const std::string priority = absl::StrCat(s.desc->priority);
  switch (s.desc->meaning) {
    case Meaning::kPfcPauseFrames:
      labels.push_back({"direction", direction});
      labels.push_back({"priority", priority});
      f->Add("fabricdiag_pfc_pause_frames_total",
             "PFC pause frames per priority: rx = received from the link "
             "partner (it is congested), tx = sent by this NIC (it is "
             "congested).",
             PromType::kCounter, labels, Base());
      return;
    case Meaning::kPfcPauseDuration:
      labels.push_back({"direction", direction});
      labels.push_back({"priority", priority});
      f->Add("fabricdiag_pfc_pause_duration_seconds_total",
             "Time paused by PFC per priority (rx: this port could not send; "
             "tx: this port paused its partner). Growing by ~1 s per second "
             "is a PFC storm.",
             PromType::kCounter, labels, Base());
      return;
    case Meaning::kPfcPauseTransitions:
      labels.push_back({"direction", direction});
      labels.push_back({"priority", priority});
      f->Add("fabricdiag_pfc_pause_transitions_total",
             "XOFF to XON transitions per priority.", PromType::kCounter,
             labels, Base());
      return;
    case Meaning::kGlobalPauseFrames:
      labels.push_back({"direction", direction});
      f->Add("fabricdiag_global_pause_frames_total",
             "IEEE 802.3x link-level pause frames.", PromType::kCounter, labels,
             Base());
      return;
    case Meaning::kGlobalPauseDuration:
      labels.push_back({"direction", direction});
      f->Add("fabricdiag_global_pause_duration_seconds_total",
             "Time paused by IEEE 802.3x link-level pause.", PromType::kCounter,
             labels, Base());
      return;
    case Meaning::kPauseStormWarning:
    case Meaning::kPauseStormError:
      labels.push_back({"level", s.desc->meaning == Meaning::kPauseStormWarning
                                     ? "warning"
                                     : "error"});
      f->Add("fabricdiag_pause_storm_events_total",
             "Pause-storm events detected by the NIC: warning = stalled past "
             "the minor watermark, error = storm prevention stopped sending "
             "pause.",
             PromType::kCounter, labels, Base());
      return;
    default:  // AddEthtoolMeaning sends only the meanings above here
      return;
  }
}

// The physical port: all traffic including RoCE, and the link's errors.
void AddPhyMeaning(const Sample& s, Families* f) {
  const Labels labels = {{"netdev", s.desc->device}};
  switch (s.desc->meaning) {
    case Meaning::kPhyBytes:
      f->Add(s.desc->direction == Direction::kTx
                 ? "fabricdiag_phy_transmitted_bytes_total"
                 : "fabricdiag_phy_received_bytes_total",
             "Bytes on the physical port, all traffic including RoCE.",
             PromType::kCounter, labels, Base());
      return;
    case Meaning::kPhyPackets:
      f->Add(s.desc->direction == Direction::kTx
                 ? "fabricdiag_phy_transmitted_packets_total"
                 : "fabricdiag_phy_received_packets_total",
             "Packets on the physical port, all traffic including RoCE.",
             PromType::kCounter, labels, Base());
      return;
    case Meaning::kCrcErrors:
      f->Add("fabricdiag_phy_crc_errors_total",
             "Frames received with a bad FCS (cable, optic, connector).",
             PromType::kCounter, labels, Base());
      return;
    case Meaning::kSymbolErrors:
      f->Add("fabricdiag_phy_symbol_errors_total",
             "Physical coding (symbol) errors.", PromType::kCounter, labels,
             Base());
      return;
    case Meaning::kPcsSymbolErrors:
      f->Add("fabricdiag_phy_uncorrected_symbol_errors_total",
             "Symbol errors FEC could not correct: the link is losing "
             "traffic.",
             PromType::kCounter, labels, Base());
      return;
    case Meaning::kCorrectedBits:
      f->Add("fabricdiag_phy_corrected_bits_total",
             "Bits corrected by FEC (pre-FEC BER = this / received bits).",
             PromType::kCounter, labels, Base());
      return;
    case Meaning::kReceivedBits:
      f->Add("fabricdiag_phy_received_bits_total",
             "Bits received on the physical port (the BER denominator).",
             PromType::kCounter, labels, Base());
      return;
    case Meaning::kLinkDownEvents:
      f->Add("fabricdiag_phy_link_down_events_total",
             "Times the port's link went down (flaps).", PromType::kCounter,
             labels, Base());
      return;
    default:  // AddEthtoolMeaning sends only the meanings above here
      return;
  }
}

// Drops, and bytes and ECN marks per priority.
void AddPriorityMeaning(const Sample& s, Families* f) {
  Labels labels = {{"netdev", s.desc->device}};
  const std::string direction = DirectionName(s.desc->direction);
  const std::string priority = absl::StrCat(s.desc->priority);
  switch (s.desc->meaning) {
    case Meaning::kRxDiscardsPhy:
    case Meaning::kTxDiscardsPhy:
    case Meaning::kRxOutOfBuffer:
      labels.push_back({"reason", MeaningName(s.desc->meaning)});
      f->Add("fabricdiag_nic_discards_total",
             "Packets the NIC dropped: rx_discards_phy = port receive buffer "
             "full, tx_discards_phy = could not transmit, rx_out_of_buffer = "
             "host posted no receive buffer.",
             PromType::kCounter, labels, Base());
      return;
    case Meaning::kPriorityDiscards:
      labels.push_back({"priority", priority});
      f->Add("fabricdiag_priority_discards_total",
             "Received packets dropped per priority for lack of buffers (on a "
             "lossless priority this means PFC is not working).",
             PromType::kCounter, labels, Base());
      return;
    case Meaning::kPriorityBytes:
      labels.push_back({"direction", direction});
      labels.push_back({"priority", priority});
      f->Add("fabricdiag_priority_bytes_total", "Bytes per L2 priority.",
             PromType::kCounter, labels, Base());
      return;
    case Meaning::kEcnMarked:
      labels.push_back({"priority", priority});
      f->Add("fabricdiag_ecn_marked_packets_total",
             "Packets the NIC marked ECN CE for congestion, per priority.",
             PromType::kCounter, labels, Base());
      return;
    default:  // AddEthtoolMeaning sends only the meanings above here
      return;
  }
}

// Ethtool statistics whose meaning the source recognised, under
// driver-independent names. Every meaning is listed, so that a new one
// cannot be forgotten here (-Wswitch).
void AddEthtoolMeaning(const Sample& s, Families* f) {
  switch (s.desc->meaning) {
    case Meaning::kNone:
    // Meanings of sysfs counters, exported under their sysfs families; no
    // ethtool spelling has them.
    case Meaning::kRdmaBytes:
    case Meaning::kRdmaPackets:
    case Meaning::kNetdevBytes:
    case Meaning::kNetdevPackets:
    case Meaning::kRxErrors:
    case Meaning::kLinkDowned:
    case Meaning::kLinkErrorRecovery:
    case Meaning::kCarrierChanges:
    case Meaning::kCnpSent:
    case Meaning::kCnpHandled:
    case Meaning::kOutOfSequence:
    case Meaning::kPacketSeqErr:
    case Meaning::kLocalAckTimeout:
    case Meaning::kRnrNakRetry:
    case Meaning::kRetriesExceeded:
    case Meaning::kDuplicateRequest:
    case Meaning::kImpliedNakSeqErr:
    case Meaning::kAdaptiveRetrans:
    // Switch queue and PFC watchdog meanings: gNMI only.
    case Meaning::kQueueBytes:
    case Meaning::kQueuePackets:
    case Meaning::kQueueDrops:
    case Meaning::kQueueEcnMarked:
    case Meaning::kPfcWatchdogStorms:
    case Meaning::kPfcWatchdogRestorations:
      return;
    case Meaning::kPfcPauseFrames:
    case Meaning::kPfcPauseDuration:
    case Meaning::kPfcPauseTransitions:
    case Meaning::kGlobalPauseFrames:
    case Meaning::kGlobalPauseDuration:
    case Meaning::kPauseStormWarning:
    case Meaning::kPauseStormError:
      AddPauseMeaning(s, f);
      return;
    case Meaning::kPhyBytes:
    case Meaning::kPhyPackets:
    case Meaning::kCrcErrors:
    case Meaning::kSymbolErrors:
    case Meaning::kPcsSymbolErrors:
    case Meaning::kCorrectedBits:
    case Meaning::kReceivedBits:
    case Meaning::kLinkDownEvents:
      AddPhyMeaning(s, f);
      return;
    case Meaning::kRxDiscardsPhy:
    case Meaning::kTxDiscardsPhy:
    case Meaning::kRxOutOfBuffer:
    case Meaning::kPriorityDiscards:
    case Meaning::kPriorityBytes:
    case Meaning::kEcnMarked:
      AddPriorityMeaning(s, f);
      return;
  }
}

}  // namespace

void AddSample(const Sample& s, Families* f) {
  switch (s.desc->subsystem) {
    case Subsystem::kRdmaPortCounters:
    case Subsystem::kRdmaPortCountersExt:
      AddRdmaPortCounter(s, f);
      return;
    case Subsystem::kRdmaPortHwCounters: {
      Labels labels = PortLabels(s);
      labels.push_back({"statistic", s.desc->name});
      f->Add("fabricdiag_rdma_port_hw_statistic_total",
             "Driver-defined per-port RDMA counter from hw_counters/ "
             "(retransmissions, CNPs, ECN marks, ...).",
             s.desc->kind == Kind::kCounter ? PromType::kCounter
                                            : PromType::kGauge,
             labels, Base());
      return;
    }
    case Subsystem::kRdmaDeviceHwCounters:
      f->Add("fabricdiag_rdma_device_hw_statistic_total",
             "Driver-defined device-wide RDMA counter from hw_counters/.",
             s.desc->kind == Kind::kCounter ? PromType::kCounter
                                            : PromType::kGauge,
             {{"device", s.desc->device}, {"statistic", s.desc->name}}, Base());
      return;
    case Subsystem::kRdmaPortAttribute:
      if (s.desc->name == "rate_bytes_per_second") {
        f->Add("fabricdiag_rdma_port_rate_bytes_per_second",
               "Link rate of the RDMA port from its sysfs rate file.",
               PromType::kGauge, PortLabels(s), Base());
      } else if (s.desc->name == "state_id") {
        f->Add("fabricdiag_rdma_port_state",
               "Logical port state: 1 DOWN, 2 INIT, 3 ARMED, 4 ACTIVE, 5 "
               "ACTIVE_DEFER.",
               PromType::kGauge, PortLabels(s), Base());
      } else if (s.desc->name == "phys_state_id") {
        f->Add("fabricdiag_rdma_port_physical_state",
               "Physical port state: 1 Sleep, 2 Polling, 3 Disabled, 4 "
               "PortConfigurationTraining, 5 LinkUp, 6 LinkErrorRecovery, 7 "
               "Phy Test.",
               PromType::kGauge, PortLabels(s), Base());
      }
      return;
    case Subsystem::kNetdevStatistics:
      AddNetdevStatistic(s, f);
      return;
    case Subsystem::kNetdevAttribute:
      AddNetdevAttribute(s, f);
      return;
    case Subsystem::kEthtool:
      AddEthtoolMeaning(s, f);
      f->Add("fabricdiag_ethtool_statistic",
             "Raw ethtool statistic as the driver names and counts it.",
             PromType::kUntyped,
             {{"netdev", s.desc->device}, {"statistic", s.desc->name}}, Raw());
      return;
    case Subsystem::kVerbs:
      if (s.desc->name == "expected_rate_bytes_per_second") {
        f->Add("fabricdiag_verbs_port_expected_rate_bytes_per_second",
               "Link rate implied by the port's active speed and width "
               "(ibv_query_port).",
               PromType::kGauge, PortLabels(s), Base());
      } else if (s.desc->name == "active_mtu_bytes") {
        f->Add("fabricdiag_verbs_port_active_mtu_bytes",
               "Active MTU of the RDMA port (ibv_query_port).",
               PromType::kGauge, PortLabels(s), Base());
      } else if (s.desc->name == "active_width_lanes") {
        f->Add("fabricdiag_verbs_port_active_width_lanes",
               "Active link width in lanes (ibv_query_port).", PromType::kGauge,
               PortLabels(s), Base());
      } else if (s.desc->name == "state") {
        f->Add("fabricdiag_verbs_port_state",
               "Port state from ibv_query_port (enum ibv_port_state).",
               PromType::kGauge, PortLabels(s), Base());
      }
      return;
    case Subsystem::kGnmi:  // the gNMI bridge's, never an agent's
      return;
  }
}

}  // namespace fabricdiag::agent
