#include "agent/exposition.h"

#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace fabricdiag::agent {
namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;
using Labels = std::vector<ClientMetric::Label>;

// Collects metrics into families keyed by name. The help text and type of a
// family are fixed by its first use.
class Families {
 public:
  void Add(const std::string& name, const char* help, MetricType type,
           Labels labels, double value) {
    auto [it, inserted] = families_.try_emplace(name);
    MetricFamily& family = it->second;
    if (inserted) {
      family.name = name;
      family.help = help;
      family.type = type;
    }
    ClientMetric metric;
    metric.label = std::move(labels);
    switch (type) {
      case MetricType::Counter:
        metric.counter.value = value;
        break;
      case MetricType::Gauge:
        metric.gauge.value = value;
        break;
      default:
        metric.untyped.value = value;
        break;
    }
    family.metric.push_back(std::move(metric));
  }

  std::vector<MetricFamily> Take() {
    std::vector<MetricFamily> out;
    out.reserve(families_.size());
    for (auto& [name, family] : families_) out.push_back(std::move(family));
    return out;
  }

 private:
  std::map<std::string, MetricFamily> families_;
};

Labels PortLabels(const Sample& s) {
  return {{"device", s.desc->device}, {"port", absl::StrCat(s.desc->port)}};
}

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
  if (s.saturated) {
    Labels labels = PortLabels(s);
    labels.push_back({"statistic", s.desc->name});
    f->Add("fabricdiag_rdma_port_statistic_saturated",
           "1 when a fixed-width IB PMA counter sits at all-ones and has "
           "stopped counting; its value is a floor, not traffic.",
           MetricType::Gauge, std::move(labels), 1);
  }
  for (const Named& n : kNamed) {
    if (s.desc->name == n.counter) {
      f->Add(n.family, n.help, MetricType::Counter, PortLabels(s),
             s.BaseValue());
      return;
    }
  }
  Labels labels = PortLabels(s);
  labels.push_back({"statistic", s.desc->name});
  f->Add("fabricdiag_rdma_port_statistic_total",
         "IB PMA port counter from counters/ or counters_ext/, as the kernel "
         "counted it (errors, discards, xmit_wait ticks).",
         MetricType::Counter, std::move(labels), s.BaseValue());
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
      f->Add(n.family, n.help, MetricType::Counter, std::move(labels),
             s.BaseValue());
      return;
    }
  }
  labels.push_back({"statistic", s.desc->name});
  f->Add("fabricdiag_netdev_statistic_total",
         "Netdev statistic from statistics/ (errors, drops, ...).",
         MetricType::Counter, std::move(labels), s.BaseValue());
}

void AddNetdevAttribute(const Sample& s, Families* f) {
  Labels labels = {{"netdev", s.desc->device}};
  if (s.desc->name == "carrier_changes") {
    f->Add("fabricdiag_netdev_carrier_changes_total",
           "Times the netdev's carrier went up or down (link flaps).",
           MetricType::Counter, std::move(labels), s.BaseValue());
  } else if (s.desc->name == "carrier_up_count") {
    f->Add("fabricdiag_netdev_carrier_up_total",
           "Times the netdev's carrier came up.", MetricType::Counter,
           std::move(labels), s.BaseValue());
  } else if (s.desc->name == "carrier_down_count") {
    f->Add("fabricdiag_netdev_carrier_down_total",
           "Times the netdev's carrier went down.", MetricType::Counter,
           std::move(labels), s.BaseValue());
  } else if (s.desc->name == "speed_bytes_per_second") {
    f->Add(
        "fabricdiag_netdev_speed_bytes_per_second",
        "Negotiated link speed of the netdev; absent while the link is down.",
        MetricType::Gauge, std::move(labels), s.BaseValue());
  } else if (s.desc->name == "mtu") {
    f->Add("fabricdiag_netdev_mtu_bytes", "MTU of the netdev.",
           MetricType::Gauge, std::move(labels), s.BaseValue());
  } else if (s.desc->name == "carrier") {
    f->Add("fabricdiag_netdev_carrier", "1 when the netdev has carrier.",
           MetricType::Gauge, std::move(labels), s.BaseValue());
  } else {
    labels.push_back({"attribute", s.desc->name});
    f->Add("fabricdiag_netdev_attribute",
           "Other numeric netdev attribute from sysfs.",
           s.desc->kind == Kind::kCounter ? MetricType::Untyped
                                          : MetricType::Gauge,
           std::move(labels), s.BaseValue());
  }
}

// Ethtool statistics whose meaning the source recognised, under
// driver-independent names.
void AddEthtoolMeaning(const Sample& s, Families* f) {
  Labels labels = {{"netdev", s.desc->device}};
  const std::string direction = DirectionName(s.desc->direction);
  const std::string priority = absl::StrCat(s.desc->priority);
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
      return;
    case Meaning::kPfcPauseFrames:
      labels.push_back({"direction", direction});
      labels.push_back({"priority", priority});
      f->Add("fabricdiag_pfc_pause_frames_total",
             "PFC pause frames per priority: rx = received from the link "
             "partner (it is congested), tx = sent by this NIC (it is "
             "congested).",
             MetricType::Counter, std::move(labels), s.BaseValue());
      return;
    case Meaning::kPfcPauseDuration:
      labels.push_back({"direction", direction});
      labels.push_back({"priority", priority});
      f->Add("fabricdiag_pfc_pause_duration_seconds_total",
             "Time paused by PFC per priority (rx: this port could not send; "
             "tx: this port paused its partner). Growing by ~1 s per second "
             "is a PFC storm.",
             MetricType::Counter, std::move(labels), s.BaseValue());
      return;
    case Meaning::kPfcPauseTransitions:
      labels.push_back({"direction", direction});
      labels.push_back({"priority", priority});
      f->Add("fabricdiag_pfc_pause_transitions_total",
             "XOFF to XON transitions per priority.", MetricType::Counter,
             std::move(labels), s.BaseValue());
      return;
    case Meaning::kGlobalPauseFrames:
      labels.push_back({"direction", direction});
      f->Add("fabricdiag_global_pause_frames_total",
             "IEEE 802.3x link-level pause frames.", MetricType::Counter,
             std::move(labels), s.BaseValue());
      return;
    case Meaning::kGlobalPauseDuration:
      labels.push_back({"direction", direction});
      f->Add("fabricdiag_global_pause_duration_seconds_total",
             "Time paused by IEEE 802.3x link-level pause.",
             MetricType::Counter, std::move(labels), s.BaseValue());
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
             MetricType::Counter, std::move(labels), s.BaseValue());
      return;
    case Meaning::kPhyBytes:
      f->Add(s.desc->direction == Direction::kTx
                 ? "fabricdiag_phy_transmitted_bytes_total"
                 : "fabricdiag_phy_received_bytes_total",
             "Bytes on the physical port, all traffic including RoCE.",
             MetricType::Counter, std::move(labels), s.BaseValue());
      return;
    case Meaning::kPhyPackets:
      f->Add(s.desc->direction == Direction::kTx
                 ? "fabricdiag_phy_transmitted_packets_total"
                 : "fabricdiag_phy_received_packets_total",
             "Packets on the physical port, all traffic including RoCE.",
             MetricType::Counter, std::move(labels), s.BaseValue());
      return;
    case Meaning::kRxDiscardsPhy:
    case Meaning::kTxDiscardsPhy:
    case Meaning::kRxOutOfBuffer:
      labels.push_back({"reason", MeaningName(s.desc->meaning)});
      f->Add("fabricdiag_nic_discards_total",
             "Packets the NIC dropped: rx_discards_phy = port receive buffer "
             "full, tx_discards_phy = could not transmit, rx_out_of_buffer = "
             "host posted no receive buffer.",
             MetricType::Counter, std::move(labels), s.BaseValue());
      return;
    case Meaning::kPriorityDiscards:
      labels.push_back({"priority", priority});
      f->Add("fabricdiag_priority_discards_total",
             "Received packets dropped per priority for lack of buffers (on a "
             "lossless priority this means PFC is not working).",
             MetricType::Counter, std::move(labels), s.BaseValue());
      return;
    case Meaning::kPriorityBytes:
      labels.push_back({"direction", direction});
      labels.push_back({"priority", priority});
      f->Add("fabricdiag_priority_bytes_total", "Bytes per L2 priority.",
             MetricType::Counter, std::move(labels), s.BaseValue());
      return;
    case Meaning::kEcnMarked:
      labels.push_back({"priority", priority});
      f->Add("fabricdiag_ecn_marked_packets_total",
             "Packets the NIC marked ECN CE for congestion, per priority.",
             MetricType::Counter, std::move(labels), s.BaseValue());
      return;
    case Meaning::kCrcErrors:
      f->Add("fabricdiag_phy_crc_errors_total",
             "Frames received with a bad FCS (cable, optic, connector).",
             MetricType::Counter, std::move(labels), s.BaseValue());
      return;
    case Meaning::kSymbolErrors:
      f->Add("fabricdiag_phy_symbol_errors_total",
             "Physical coding (symbol) errors.", MetricType::Counter,
             std::move(labels), s.BaseValue());
      return;
    case Meaning::kPcsSymbolErrors:
      f->Add("fabricdiag_phy_uncorrected_symbol_errors_total",
             "Symbol errors FEC could not correct: the link is losing "
             "traffic.",
             MetricType::Counter, std::move(labels), s.BaseValue());
      return;
    case Meaning::kCorrectedBits:
      f->Add("fabricdiag_phy_corrected_bits_total",
             "Bits corrected by FEC (pre-FEC BER = this / received bits).",
             MetricType::Counter, std::move(labels), s.BaseValue());
      return;
    case Meaning::kReceivedBits:
      f->Add("fabricdiag_phy_received_bits_total",
             "Bits received on the physical port (the BER denominator).",
             MetricType::Counter, std::move(labels), s.BaseValue());
      return;
    case Meaning::kLinkDownEvents:
      f->Add("fabricdiag_phy_link_down_events_total",
             "Times the port's link went down (flaps).", MetricType::Counter,
             std::move(labels), s.BaseValue());
      return;
  }
}

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
             s.desc->kind == Kind::kCounter ? MetricType::Counter
                                            : MetricType::Gauge,
             std::move(labels), s.BaseValue());
      return;
    }
    case Subsystem::kRdmaDeviceHwCounters:
      f->Add("fabricdiag_rdma_device_hw_statistic_total",
             "Driver-defined device-wide RDMA counter from hw_counters/.",
             s.desc->kind == Kind::kCounter ? MetricType::Counter
                                            : MetricType::Gauge,
             {{"device", s.desc->device}, {"statistic", s.desc->name}},
             s.BaseValue());
      return;
    case Subsystem::kRdmaPortAttribute:
      if (s.desc->name == "rate_bytes_per_second") {
        f->Add("fabricdiag_rdma_port_rate_bytes_per_second",
               "Link rate of the RDMA port from its sysfs rate file.",
               MetricType::Gauge, PortLabels(s), s.BaseValue());
      } else if (s.desc->name == "state_id") {
        f->Add("fabricdiag_rdma_port_state",
               "Logical port state: 1 DOWN, 2 INIT, 3 ARMED, 4 ACTIVE, 5 "
               "ACTIVE_DEFER.",
               MetricType::Gauge, PortLabels(s), s.BaseValue());
      } else if (s.desc->name == "phys_state_id") {
        f->Add("fabricdiag_rdma_port_physical_state",
               "Physical port state: 1 Sleep, 2 Polling, 3 Disabled, 4 "
               "PortConfigurationTraining, 5 LinkUp, 6 LinkErrorRecovery, 7 "
               "Phy Test.",
               MetricType::Gauge, PortLabels(s), s.BaseValue());
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
             MetricType::Untyped,
             {{"netdev", s.desc->device}, {"statistic", s.desc->name}},
             static_cast<double>(s.raw));
      return;
    case Subsystem::kVerbs:
      if (s.desc->name == "expected_rate_bytes_per_second") {
        f->Add("fabricdiag_verbs_port_expected_rate_bytes_per_second",
               "Link rate implied by the port's active speed and width "
               "(ibv_query_port).",
               MetricType::Gauge, PortLabels(s), s.BaseValue());
      } else if (s.desc->name == "active_mtu_bytes") {
        f->Add("fabricdiag_verbs_port_active_mtu_bytes",
               "Active MTU of the RDMA port (ibv_query_port).",
               MetricType::Gauge, PortLabels(s), s.BaseValue());
      } else if (s.desc->name == "active_width_lanes") {
        f->Add("fabricdiag_verbs_port_active_width_lanes",
               "Active link width in lanes (ibv_query_port).",
               MetricType::Gauge, PortLabels(s), s.BaseValue());
      } else if (s.desc->name == "state") {
        f->Add("fabricdiag_verbs_port_state",
               "Port state from ibv_query_port (enum ibv_port_state).",
               MetricType::Gauge, PortLabels(s), s.BaseValue());
      }
      return;
  }
}

void AddInfo(const Snapshot& snap, Families* f) {
  for (const RdmaDeviceInfo& d : snap.rdma_devices) {
    f->Add("fabricdiag_rdma_device_info",
           "RDMA device identity; value is always 1.", MetricType::Gauge,
           {{"device", d.name},
            {"fw_version", d.fw_ver},
            {"board_id", d.board_id},
            {"hca_type", d.hca_type},
            {"node_guid", d.node_guid}},
           1);
  }
  for (const RdmaPortInfo& p : snap.rdma_ports) {
    f->Add("fabricdiag_rdma_port_info",
           "RDMA port description; value is always 1.", MetricType::Gauge,
           {{"device", p.device},
            {"port", absl::StrCat(p.port)},
            {"link_layer", p.link_layer},
            {"state", p.state},
            {"phys_state", p.phys_state},
            {"netdev", absl::StrJoin(p.netdevs, ",")}},
           1);
  }
  for (const NetdevInfo& n : snap.netdevs) {
    f->Add(
        "fabricdiag_netdev_info", "Netdev description; value is always 1.",
        MetricType::Gauge,
        {{"netdev", n.name},
         {"operstate", n.operstate},
         {"rdma_device", n.rdma_device},
         {"rdma_port", n.rdma_device.empty() ? "" : absl::StrCat(n.rdma_port)}},
        1);
    f->Add("fabricdiag_netdev_up", "1 when the netdev's operstate is up.",
           MetricType::Gauge, {{"netdev", n.name}},
           n.operstate == "up" ? 1 : 0);
  }
}

void AddHealth(const Snapshot& snap, const AgentHealth& h, Families* f) {
  f->Add("fabricdiag_agent_build_info",
         "The agent's version; value is always 1.", MetricType::Gauge,
         {{"version", h.version}}, 1);
  for (const SourceStatus& s : snap.sources) {
    f->Add("fabricdiag_agent_source_success",
           "1 when the source read everything it found in the last snapshot.",
           MetricType::Gauge, {{"source", s.source}}, s.ok ? 1 : 0);
    f->Add("fabricdiag_agent_source_duration_seconds",
           "Time the source took in the last snapshot.", MetricType::Gauge,
           {{"source", s.source}}, absl::ToDoubleSeconds(s.duration));
    f->Add("fabricdiag_agent_source_errors",
           "Files or devices the source failed to read in the last snapshot.",
           MetricType::Gauge, {{"source", s.source}}, s.errors);
  }
  f->Add("fabricdiag_agent_snapshot_duration_seconds",
         "Time the last full snapshot took.", MetricType::Gauge, {},
         absl::ToDoubleSeconds(h.snapshot_duration));
  f->Add("fabricdiag_agent_snapshots_total", "Snapshots taken since start.",
         MetricType::Counter, {}, static_cast<double>(h.snapshots));
  f->Add("fabricdiag_agent_last_snapshot_timestamp_seconds",
         "Wall time of the last snapshot.", MetricType::Gauge, {},
         absl::ToDoubleSeconds(snap.wall_time - absl::UnixEpoch()));
  f->Add("fabricdiag_agent_resets_detected_total",
         "Counters seen going backwards without wrapping (driver reload, "
         "clear); no rate is reported for that interval.",
         MetricType::Counter, {}, static_cast<double>(h.counter_resets));
  f->Add("fabricdiag_agent_wraps_detected_total",
         "Fixed-width counters seen wrapping around.", MetricType::Counter, {},
         static_cast<double>(h.counter_wraps));
  f->Add("fabricdiag_agent_devices", "Devices seen in the last snapshot.",
         MetricType::Gauge, {{"kind", "rdma"}},
         static_cast<double>(snap.rdma_devices.size()));
  f->Add("fabricdiag_agent_devices", "Devices seen in the last snapshot.",
         MetricType::Gauge, {{"kind", "netdev"}},
         static_cast<double>(snap.netdevs.size()));
  f->Add("fabricdiag_agent_samples", "Values read in the last snapshot.",
         MetricType::Gauge, {}, static_cast<double>(snap.samples.size()));
  if (h.stream.has_value()) {
    const AgentHealth::Stream& s = *h.stream;
    f->Add("fabricdiag_agent_stream_connected",
           "1 while the stream to the collector is up.", MetricType::Gauge, {},
           s.connected ? 1 : 0);
    f->Add("fabricdiag_agent_stream_reports_buffered",
           "Reports kept until the collector acknowledges them.",
           MetricType::Gauge, {}, static_cast<double>(s.buffered));
    f->Add("fabricdiag_agent_stream_reports_dropped_total",
           "Reports lost because the buffer overflowed during an outage.",
           MetricType::Counter, {}, static_cast<double>(s.dropped));
    f->Add("fabricdiag_agent_stream_reports_sent_total",
           "Reports written to the collector stream (replays included).",
           MetricType::Counter, {}, static_cast<double>(s.sent));
    f->Add("fabricdiag_agent_stream_reconnects_total",
           "Times the stream to the collector was re-established.",
           MetricType::Counter, {}, static_cast<double>(s.reconnects));
  }
}

}  // namespace

std::vector<MetricFamily> SnapshotToFamilies(const Snapshot& snapshot,
                                             const AgentHealth& health) {
  Families families;
  for (const Sample& s : snapshot.samples) AddSample(s, &families);
  AddInfo(snapshot, &families);
  AddHealth(snapshot, health, &families);
  return families.Take();
}

void SnapshotCollectable::Publish(std::shared_ptr<const Snapshot> snapshot,
                                  AgentHealth health) {
  std::lock_guard<std::mutex> lock(mu_);
  snapshot_ = std::move(snapshot);
  health_ = std::move(health);
}

std::vector<MetricFamily> SnapshotCollectable::Collect() const {
  std::shared_ptr<const Snapshot> snapshot;
  AgentHealth health;
  {
    std::lock_guard<std::mutex> lock(mu_);
    snapshot = snapshot_;
    health = health_;
  }
  if (snapshot == nullptr) return {};
  return SnapshotToFamilies(*snapshot, health);
}

}  // namespace fabricdiag::agent
