#include "agent/exposition.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "agent/gpu_nic_pairing.h"
#include "common/gzip.h"
#include "common/http_server_metrics.h"

namespace fabricdiag::agent {
namespace {

enum class Type { kCounter, kGauge, kUntyped };

const char* TypeName(Type t) {
  switch (t) {
    case Type::kCounter:
      return "counter";
    case Type::kGauge:
      return "gauge";
    case Type::kUntyped:
      return "untyped";
  }
  return "untyped";
}

using Labels = std::vector<std::pair<std::string, std::string>>;

// Where a series' value comes from: the sample being mapped, in base units
// or exactly as the kernel printed it.
enum class ValueRef { kBase, kRaw };
ValueRef Base() { return ValueRef::kBase; }
ValueRef Raw() { return ValueRef::kRaw; }

// Label values escape backslash, double quote and newline; HELP text
// backslash and newline (exposition format 0.0.4).
void AppendEscaped(absl::string_view s, bool quotes, std::string* out) {
  for (char c : s) {
    if (c == '\\') {
      out->append("\\\\");
    } else if (c == '\n') {
      out->append("\\n");
    } else if (quotes && c == '"') {
      out->append("\\\"");
    } else {
      out->push_back(c);
    }
  }
}

// "name{k="v",...}" (no braces without labels).
std::string SeriesText(absl::string_view name, const Labels& labels) {
  std::string out(name);
  if (labels.empty()) return out;
  out.push_back('{');
  for (size_t i = 0; i < labels.size(); ++i) {
    if (i > 0) out.push_back(',');
    absl::StrAppend(&out, labels[i].first, "=\"");
    AppendEscaped(labels[i].second, true, &out);
    out.push_back('"');
  }
  out.push_back('}');
  return out;
}

// Metric families being assembled, keyed (and so sorted) by name. The help
// text and type of a family are fixed by its first series.
class Families {
 public:
  struct Entry {
    std::string series;   // "name{labels}"
    int64_t sample = -1;  // index into the snapshot's samples, or -1
    ValueRef ref = ValueRef::kBase;
    double value = 0;   // when sample < 0
    uint32_t call = 0;  // AddDynamic: which call of this render it was
  };
  struct Family {
    std::string help;
    Type type = Type::kUntyped;
    std::vector<Entry> entries;
  };

  // The sample the next Add(..., ValueRef) calls refer to.
  void set_sample(int64_t index) { sample_ = index; }

  void Add(absl::string_view name, const char* help, Type type,
           const Labels& labels, ValueRef ref) {
    Family& f = Get(name, help, type);
    f.entries.push_back({SeriesText(name, labels), sample_, ref, 0});
  }
  void Add(absl::string_view name, const char* help, Type type,
           const Labels& labels, double value) {
    Family& f = Get(name, help, type);
    f.entries.push_back({SeriesText(name, labels), -1, ValueRef::kBase, value});
  }

  // A series decided per render. Once its families are prepared, a render
  // only needs the values: with values_only() set, the labels are never
  // built and the values are recorded in call order instead.
  template <typename LabelsFn>
  void AddDynamic(absl::string_view name, const char* help, Type type,
                  LabelsFn&& labels, double value) {
    if (values_only_ != nullptr) {
      values_only_->push_back(value);
      return;
    }
    Family& f = Get(name, help, type);
    f.entries.push_back(
        {SeriesText(name, labels()), -1, ValueRef::kBase, value, calls_++});
  }
  void set_values_only(std::vector<double>* values) { values_only_ = values; }

  std::map<std::string, Family>& map() { return families_; }

 private:
  Family& Get(absl::string_view name, const char* help, Type type) {
    auto [it, inserted] = families_.try_emplace(std::string(name));
    if (inserted) {
      it->second.help = help;
      it->second.type = type;
    }
    return it->second;
  }

  std::map<std::string, Family> families_;
  int64_t sample_ = -1;
  uint32_t calls_ = 0;
  std::vector<double>* values_only_ = nullptr;
};

Labels NoLabels() { return {}; }

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
  for (const Named& n : kNamed) {
    if (s.desc->name == n.counter) {
      f->Add(n.family, n.help, Type::kCounter, PortLabels(s), Base());
      return;
    }
  }
  Labels labels = PortLabels(s);
  labels.push_back({"statistic", s.desc->name});
  f->Add("fabricdiag_rdma_port_statistic_total",
         "IB PMA port counter from counters/ or counters_ext/, as the kernel "
         "counted it (errors, discards, xmit_wait ticks).",
         Type::kCounter, labels, Base());
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
      f->Add(n.family, n.help, Type::kCounter, labels, Base());
      return;
    }
  }
  labels.push_back({"statistic", s.desc->name});
  f->Add("fabricdiag_netdev_statistic_total",
         "Netdev statistic from statistics/ (errors, drops, ...).",
         Type::kCounter, labels, Base());
}

void AddNetdevAttribute(const Sample& s, Families* f) {
  Labels labels = {{"netdev", s.desc->device}};
  if (s.desc->name == "carrier_changes") {
    f->Add("fabricdiag_netdev_carrier_changes_total",
           "Times the netdev's carrier went up or down (link flaps).",
           Type::kCounter, labels, Base());
  } else if (s.desc->name == "carrier_up_count") {
    f->Add("fabricdiag_netdev_carrier_up_total",
           "Times the netdev's carrier came up.", Type::kCounter, labels,
           Base());
  } else if (s.desc->name == "carrier_down_count") {
    f->Add("fabricdiag_netdev_carrier_down_total",
           "Times the netdev's carrier went down.", Type::kCounter, labels,
           Base());
  } else if (s.desc->name == "speed_bytes_per_second") {
    f->Add(
        "fabricdiag_netdev_speed_bytes_per_second",
        "Negotiated link speed of the netdev; absent while the link is down.",
        Type::kGauge, labels, Base());
  } else if (s.desc->name == "mtu") {
    f->Add("fabricdiag_netdev_mtu_bytes", "MTU of the netdev.", Type::kGauge,
           labels, Base());
  } else if (s.desc->name == "carrier") {
    f->Add("fabricdiag_netdev_carrier", "1 when the netdev has carrier.",
           Type::kGauge, labels, Base());
  } else {
    labels.push_back({"attribute", s.desc->name});
    f->Add("fabricdiag_netdev_attribute",
           "Other numeric netdev attribute from sysfs.",
           s.desc->kind == Kind::kCounter ? Type::kUntyped : Type::kGauge,
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
             Type::kCounter, labels, Base());
      return;
    case Meaning::kPfcPauseDuration:
      labels.push_back({"direction", direction});
      labels.push_back({"priority", priority});
      f->Add("fabricdiag_pfc_pause_duration_seconds_total",
             "Time paused by PFC per priority (rx: this port could not send; "
             "tx: this port paused its partner). Growing by ~1 s per second "
             "is a PFC storm.",
             Type::kCounter, labels, Base());
      return;
    case Meaning::kPfcPauseTransitions:
      labels.push_back({"direction", direction});
      labels.push_back({"priority", priority});
      f->Add("fabricdiag_pfc_pause_transitions_total",
             "XOFF to XON transitions per priority.", Type::kCounter, labels,
             Base());
      return;
    case Meaning::kGlobalPauseFrames:
      labels.push_back({"direction", direction});
      f->Add("fabricdiag_global_pause_frames_total",
             "IEEE 802.3x link-level pause frames.", Type::kCounter, labels,
             Base());
      return;
    case Meaning::kGlobalPauseDuration:
      labels.push_back({"direction", direction});
      f->Add("fabricdiag_global_pause_duration_seconds_total",
             "Time paused by IEEE 802.3x link-level pause.", Type::kCounter,
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
             Type::kCounter, labels, Base());
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
             Type::kCounter, labels, Base());
      return;
    case Meaning::kPhyPackets:
      f->Add(s.desc->direction == Direction::kTx
                 ? "fabricdiag_phy_transmitted_packets_total"
                 : "fabricdiag_phy_received_packets_total",
             "Packets on the physical port, all traffic including RoCE.",
             Type::kCounter, labels, Base());
      return;
    case Meaning::kCrcErrors:
      f->Add("fabricdiag_phy_crc_errors_total",
             "Frames received with a bad FCS (cable, optic, connector).",
             Type::kCounter, labels, Base());
      return;
    case Meaning::kSymbolErrors:
      f->Add("fabricdiag_phy_symbol_errors_total",
             "Physical coding (symbol) errors.", Type::kCounter, labels,
             Base());
      return;
    case Meaning::kPcsSymbolErrors:
      f->Add("fabricdiag_phy_uncorrected_symbol_errors_total",
             "Symbol errors FEC could not correct: the link is losing "
             "traffic.",
             Type::kCounter, labels, Base());
      return;
    case Meaning::kCorrectedBits:
      f->Add("fabricdiag_phy_corrected_bits_total",
             "Bits corrected by FEC (pre-FEC BER = this / received bits).",
             Type::kCounter, labels, Base());
      return;
    case Meaning::kReceivedBits:
      f->Add("fabricdiag_phy_received_bits_total",
             "Bits received on the physical port (the BER denominator).",
             Type::kCounter, labels, Base());
      return;
    case Meaning::kLinkDownEvents:
      f->Add("fabricdiag_phy_link_down_events_total",
             "Times the port's link went down (flaps).", Type::kCounter, labels,
             Base());
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
             Type::kCounter, labels, Base());
      return;
    case Meaning::kPriorityDiscards:
      labels.push_back({"priority", priority});
      f->Add("fabricdiag_priority_discards_total",
             "Received packets dropped per priority for lack of buffers (on a "
             "lossless priority this means PFC is not working).",
             Type::kCounter, labels, Base());
      return;
    case Meaning::kPriorityBytes:
      labels.push_back({"direction", direction});
      labels.push_back({"priority", priority});
      f->Add("fabricdiag_priority_bytes_total", "Bytes per L2 priority.",
             Type::kCounter, labels, Base());
      return;
    case Meaning::kEcnMarked:
      labels.push_back({"priority", priority});
      f->Add("fabricdiag_ecn_marked_packets_total",
             "Packets the NIC marked ECN CE for congestion, per priority.",
             Type::kCounter, labels, Base());
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
             s.desc->kind == Kind::kCounter ? Type::kCounter : Type::kGauge,
             labels, Base());
      return;
    }
    case Subsystem::kRdmaDeviceHwCounters:
      f->Add("fabricdiag_rdma_device_hw_statistic_total",
             "Driver-defined device-wide RDMA counter from hw_counters/.",
             s.desc->kind == Kind::kCounter ? Type::kCounter : Type::kGauge,
             {{"device", s.desc->device}, {"statistic", s.desc->name}}, Base());
      return;
    case Subsystem::kRdmaPortAttribute:
      if (s.desc->name == "rate_bytes_per_second") {
        f->Add("fabricdiag_rdma_port_rate_bytes_per_second",
               "Link rate of the RDMA port from its sysfs rate file.",
               Type::kGauge, PortLabels(s), Base());
      } else if (s.desc->name == "state_id") {
        f->Add("fabricdiag_rdma_port_state",
               "Logical port state: 1 DOWN, 2 INIT, 3 ARMED, 4 ACTIVE, 5 "
               "ACTIVE_DEFER.",
               Type::kGauge, PortLabels(s), Base());
      } else if (s.desc->name == "phys_state_id") {
        f->Add("fabricdiag_rdma_port_physical_state",
               "Physical port state: 1 Sleep, 2 Polling, 3 Disabled, 4 "
               "PortConfigurationTraining, 5 LinkUp, 6 LinkErrorRecovery, 7 "
               "Phy Test.",
               Type::kGauge, PortLabels(s), Base());
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
             Type::kUntyped,
             {{"netdev", s.desc->device}, {"statistic", s.desc->name}}, Raw());
      return;
    case Subsystem::kVerbs:
      if (s.desc->name == "expected_rate_bytes_per_second") {
        f->Add("fabricdiag_verbs_port_expected_rate_bytes_per_second",
               "Link rate implied by the port's active speed and width "
               "(ibv_query_port).",
               Type::kGauge, PortLabels(s), Base());
      } else if (s.desc->name == "active_mtu_bytes") {
        f->Add("fabricdiag_verbs_port_active_mtu_bytes",
               "Active MTU of the RDMA port (ibv_query_port).", Type::kGauge,
               PortLabels(s), Base());
      } else if (s.desc->name == "active_width_lanes") {
        f->Add("fabricdiag_verbs_port_active_width_lanes",
               "Active link width in lanes (ibv_query_port).", Type::kGauge,
               PortLabels(s), Base());
      } else if (s.desc->name == "state") {
        f->Add("fabricdiag_verbs_port_state",
               "Port state from ibv_query_port (enum ibv_port_state).",
               Type::kGauge, PortLabels(s), Base());
      }
      return;
    case Subsystem::kGnmi:  // the gNMI bridge's, never an agent's
      return;
  }
}

void AddInfo(const Snapshot& snap, Families* f) {
  for (const RdmaDeviceInfo& d : snap.rdma_devices) {
    f->AddDynamic(
        "fabricdiag_rdma_device_info",
        "RDMA device identity; value is always 1.", Type::kGauge,
        [&] {
          return Labels{{"device", d.name},
                        {"fw_version", d.fw_ver},
                        {"board_id", d.board_id},
                        {"hca_type", d.hca_type},
                        {"node_guid", d.node_guid}};
        },
        1);
  }
  for (const RdmaPortInfo& p : snap.rdma_ports) {
    f->AddDynamic(
        "fabricdiag_rdma_port_info",
        "RDMA port description; value is always 1.", Type::kGauge,
        [&] {
          return Labels{{"device", p.device},
                        {"port", absl::StrCat(p.port)},
                        {"link_layer", p.link_layer},
                        {"state", p.state},
                        {"phys_state", p.phys_state},
                        {"netdev", absl::StrJoin(p.netdevs, ",")}};
        },
        1);
  }
  for (const NetdevInfo& n : snap.netdevs) {
    f->AddDynamic(
        "fabricdiag_netdev_info", "Netdev description; value is always 1.",
        Type::kGauge,
        [&] {
          return Labels{
              {"netdev", n.name},
              {"operstate", n.operstate},
              {"rdma_device", n.rdma_device},
              {"rdma_port",
               n.rdma_device.empty() ? "" : absl::StrCat(n.rdma_port)}};
        },
        1);
    f->AddDynamic(
        "fabricdiag_netdev_up", "1 when the netdev's operstate is up.",
        Type::kGauge,
        [&] {
          return Labels{{"netdev", n.name}};
        },
        n.operstate == "up" ? 1 : 0);
  }
}

void AddGpuNics(const Snapshot& snap, Families* f) {
  for (const GpuNicPair& p : snap.gpu_nics) {
    f->AddDynamic(
        "fabricdiag_gpu_nic_info",
        "Each GPU (numbered by ascending PCI address) and its nearest RDMA "
        "NIC by PCIe path (pcie_switch, root_port, numa; none: no NIC that "
        "near, device empty); value is always 1.",
        Type::kGauge,
        [&] {
          return Labels{
              {"gpu", absl::StrCat(p.gpu)},
              {"pci", p.gpu_pci},
              {"device", p.device},
              {"netdev", p.netdev},
              {"distance", std::string(PcieDistanceName(p.distance))}};
        },
        1);
  }
}

// LLDP neighbors and how reading them fares (docs/metrics.md).
void AddLldp(const LldpState& l, Families* f) {
  for (const LldpNeighbor& n : l.set.neighbors) {
    f->AddDynamic(
        "fabricdiag_lldp_neighbor_info",
        "LLDP neighbor heard on a netdev (its system name, chassis id and "
        "port id, with their types); value is always 1.",
        Type::kGauge,
        [&] {
          return Labels{{"netdev", n.netdev},
                        {"chassis", n.chassis_id},
                        {"port", n.port_id},
                        {"system_name", n.system_name},
                        {"port_description", n.port_description},
                        {"port_id_type", n.port_id_type},
                        {"chassis_id_type", n.chassis_id_type},
                        {"management_address", n.management_address}};
        },
        1);
  }
  f->AddDynamic(
      "fabricdiag_lldp_neighbors", "LLDP neighbors of the watched netdevs.",
      Type::kGauge,
      [&] {
        return Labels{{"source", l.source}};
      },
      static_cast<double>(l.set.neighbors.size()));
  f->AddDynamic(
      "fabricdiag_lldp_up",
      "1 when the last LLDP read succeeded (lldpd answered, or the file "
      "parsed); 0 when lldpd is absent or the read failed.",
      Type::kGauge,
      [&] {
        return Labels{{"source", l.source}};
      },
      l.up ? 1 : 0);
  for (const auto& [result, count] :
       {std::pair("ok", l.reads_ok),
        std::pair("unavailable", l.reads_unavailable),
        std::pair("error", l.reads_failed)}) {
    f->AddDynamic(
        "fabricdiag_lldp_reads_total",
        "LLDP reads by result: ok, unavailable (no lldpd: no neighbors, not "
        "an error), error (unreadable file, invalid JSON, lldpd failure).",
        Type::kCounter,
        [&, r = result] {
          return Labels{{"source", l.source}, {"result", r}};
        },
        static_cast<double>(count));
  }
  for (const auto& [reason, count] :
       {std::pair("missing_field", l.issues.missing_field),
        std::pair("invalid_netdev", l.issues.invalid_netdev),
        std::pair("unknown_netdev", l.issues.unknown_netdev),
        std::pair("too_many", l.issues.too_many)}) {
    f->AddDynamic(
        "fabricdiag_lldp_neighbors_dropped_total",
        "LLDP neighbors dropped by reason: missing_field (no interface, "
        "chassis id or port id), invalid_netdev, unknown_netdev (not a "
        "netdev the agent watches), too_many.",
        Type::kCounter,
        [&, r = reason] {
          return Labels{{"source", l.source}, {"reason", r}};
        },
        static_cast<double>(count));
  }
  f->AddDynamic(
      "fabricdiag_lldp_fields_truncated_total",
      "LLDP neighbor texts cut to 255 bytes.", Type::kCounter,
      [&] {
        return Labels{{"source", l.source}};
      },
      static_cast<double>(l.issues.truncated));
}

void AddHealth(const Snapshot& snap, const AgentHealth& h, Families* f) {
  f->AddDynamic(
      "fabricdiag_agent_build_info", "The agent's version; value is always 1.",
      Type::kGauge,
      [&] {
        return Labels{{"version", h.version}};
      },
      1);
  for (const SourceStatus& s : snap.sources) {
    f->AddDynamic(
        "fabricdiag_agent_source_success",
        "1 when the source read everything it found in the last snapshot.",
        Type::kGauge,
        [&] {
          return Labels{{"source", s.source}};
        },
        s.ok ? 1 : 0);
    f->AddDynamic(
        "fabricdiag_agent_source_duration_seconds",
        "Time the source took in the last snapshot.", Type::kGauge,
        [&] {
          return Labels{{"source", s.source}};
        },
        absl::ToDoubleSeconds(s.duration));
    f->AddDynamic(
        "fabricdiag_agent_source_errors",
        "Files or devices the source failed to read in the last snapshot.",
        Type::kGauge,
        [&] {
          return Labels{{"source", s.source}};
        },
        s.errors);
  }
  f->AddDynamic("fabricdiag_agent_snapshot_duration_seconds",
                "Time the last full snapshot took.", Type::kGauge, NoLabels,
                absl::ToDoubleSeconds(h.snapshot_duration));
  f->AddDynamic("fabricdiag_agent_snapshots_total",
                "Snapshots taken since start.", Type::kCounter, NoLabels,
                static_cast<double>(h.snapshots));
  f->AddDynamic("fabricdiag_agent_last_snapshot_timestamp_seconds",
                "Wall time of the last snapshot.", Type::kGauge, NoLabels,
                absl::ToDoubleSeconds(snap.wall_time - absl::UnixEpoch()));
  f->AddDynamic(
      "fabricdiag_agent_resets_detected_total",
      "Counters seen going backwards without wrapping (driver reload, "
      "clear); no rate is reported for that interval.",
      Type::kCounter, NoLabels, static_cast<double>(h.counter_resets));
  f->AddDynamic("fabricdiag_agent_wraps_detected_total",
                "Fixed-width counters seen wrapping around.", Type::kCounter,
                NoLabels, static_cast<double>(h.counter_wraps));
  for (const auto& [kind, count] : {std::pair("rdma", snap.rdma_devices.size()),
                                    std::pair("netdev", snap.netdevs.size())}) {
    f->AddDynamic(
        "fabricdiag_agent_devices", "Devices seen in the last snapshot.",
        Type::kGauge,
        [k = kind] {
          return Labels{{"kind", k}};
        },
        static_cast<double>(count));
  }
  f->AddDynamic("fabricdiag_agent_samples", "Values read in the last snapshot.",
                Type::kGauge, NoLabels,
                static_cast<double>(snap.samples.size()));
  if (h.http.has_value()) {
    for (const HttpServerMetric& m : HttpServerMetrics(*h.http)) {
      f->AddDynamic(m.name, m.help, m.counter ? Type::kCounter : Type::kGauge,
                    NoLabels, m.value);
    }
  }
  if (h.stream.has_value()) {
    const AgentHealth::Stream& s = *h.stream;
    f->AddDynamic("fabricdiag_agent_stream_connected",
                  "1 while the stream to the collector is up.", Type::kGauge,
                  NoLabels, s.connected ? 1 : 0);
    f->AddDynamic("fabricdiag_agent_stream_reports_buffered",
                  "Reports kept until the collector acknowledges them.",
                  Type::kGauge, NoLabels, static_cast<double>(s.buffered));
    f->AddDynamic("fabricdiag_agent_stream_buffer_bytes",
                  "Memory of the reports kept until the collector acknowledges "
                  "them (bounded by --stream_buffer_size).",
                  Type::kGauge, NoLabels,
                  static_cast<double>(s.buffered_bytes));
    f->AddDynamic("fabricdiag_agent_stream_reports_dropped_total",
                  "Reports lost because the buffer overflowed during an outage "
                  "(oldest first).",
                  Type::kCounter, NoLabels, static_cast<double>(s.dropped));
    f->AddDynamic("fabricdiag_agent_stream_reports_sent_total",
                  "Reports written to the collector stream (replays included).",
                  Type::kCounter, NoLabels, static_cast<double>(s.sent));
    f->AddDynamic("fabricdiag_agent_stream_reconnects_total",
                  "Times the stream to the collector was re-established.",
                  Type::kCounter, NoLabels, static_cast<double>(s.reconnects));
    // One series, relabelled on failover: which collector of --collector
    // holds this node's recent history (with stream_connected: whether the
    // stream to it is up right now).
    f->AddDynamic(
        "fabricdiag_agent_stream_collector_info",
        "The collector of --collector the agent streams to, or tries to "
        "next; value is always 1.",
        Type::kGauge,
        [&] {
          return Labels{{"collector", s.collector}};
        },
        1);
    f->AddDynamic(
        "fabricdiag_agent_stream_failovers_total",
        "Times the agent moved to the next collector of --collector after "
        "a stream ended.",
        Type::kCounter, NoLabels, static_cast<double>(s.failovers));
    f->AddDynamic(
        "fabricdiag_agent_stream_handoffs_total",
        "Times a collector handed the agent's stream to another collector "
        "of --collector (a cluster's analysis leader sheds a share of its "
        "agents).",
        Type::kCounter, NoLabels, static_cast<double>(s.handoffs));
  }
}

// A fixed-width PMA counter stuck at all-ones: a separate gauge, decided per
// snapshot.
void AddSaturated(const Sample& s, Families* f) {
  f->AddDynamic(
      "fabricdiag_rdma_port_statistic_saturated",
      "1 when a fixed-width IB PMA counter sits at all-ones and has "
      "stopped counting; its value is a floor, not traffic.",
      Type::kGauge,
      [&] {
        Labels labels = PortLabels(s);
        labels.push_back({"statistic", s.desc->name});
        return labels;
      },
      1.0);
}

std::string Header(const std::string& name, const Families::Family& f) {
  std::string out = absl::StrCat("# HELP ", name, " ");
  AppendEscaped(f.help, false, &out);
  absl::StrAppend(&out, "\n# TYPE ", name, " ", TypeName(f.type), "\n");
  return out;
}

// How a prepared series turns its sample's raw value into the value
// printed: SeriesDesc::BaseValue (or the raw value itself) with the
// description's scale looked up once, so that a render does not visit the
// descriptions.
struct ValueScale {
  bool divide = false;  // raw / factor, else raw * factor
  double factor = 1;

  static ValueScale Of(const SeriesDesc& desc, ValueRef ref) {
    ValueScale v;
    if (ref == ValueRef::kRaw) return v;
    // The same arithmetic as SeriesDesc::BaseValue.
    if (desc.scale > 0 && desc.scale < 1) {
      v.divide = true;
      v.factor = std::round(1.0 / desc.scale);
    } else {
      v.factor = desc.scale;
    }
    return v;
  }
  double Apply(uint64_t raw) const {
    const auto value = static_cast<double>(raw);
    return divide ? value / factor : value * factor;
  }
};

// "00" "01" ... "99": two digits per lookup.
constexpr char kDigitPairs[] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536"
    "37383940414243444546474849505152535455565758596061626364656667686970717273"
    "7475767778798081828384858687888990919293949596979899";

// The 8 digits of `x` < 10^8, zero-padded. The four pairs come from two
// independent divisions, not from a chain of eight.
void PutEightDigits(uint32_t x, char* out) {
  const uint32_t high = x / 10000;
  const uint32_t low = x % 10000;
  std::memcpy(out, kDigitPairs + size_t{2} * (high / 100), 2);
  std::memcpy(out + 2, kDigitPairs + size_t{2} * (high % 100), 2);
  std::memcpy(out + 4, kDigitPairs + size_t{2} * (low / 100), 2);
  std::memcpy(out + 6, kDigitPairs + size_t{2} * (low % 100), 2);
}

// Decimal digits of `v`, no leading zeros ("0" for 0); returns the length
// (at most 20).
size_t PutUnsigned(uint64_t v, char* out) {
  constexpr uint64_t kTenToEight = 100000000;
  char digits[24];
  char* const end = digits + sizeof(digits);
  char* first = end - 8;
  PutEightDigits(static_cast<uint32_t>(v % kTenToEight), first);
  v /= kTenToEight;
  if (v != 0) {
    first -= 8;
    PutEightDigits(static_cast<uint32_t>(v % kTenToEight), first);
    v /= kTenToEight;
    if (v != 0) {
      first -= 8;
      PutEightDigits(static_cast<uint32_t>(v), first);  // v < 1845
    }
  }
  while (first < end - 1 && *first == '0') ++first;
  const auto n = static_cast<size_t>(end - first);
  std::memcpy(out, first, n);
  return n;
}

}  // namespace

size_t FormatValueTo(double value, char* out) {
  if (std::isnan(value)) {
    std::copy_n("NaN", 3, out);
    return 3;
  }
  if (std::isinf(value)) {
    std::copy_n(value > 0 ? "+Inf" : "-Inf", 4, out);
    return 4;
  }
  // Integral values below 2^53 (nearly every counter) are exact, and their
  // shortest round-trip digits padded with zeros are the integer itself:
  // the text below, without its work. (-0 keeps its sign below.)
  constexpr double kExactIntegers = 9007199254740992.0;  // 2^53
  if (std::fabs(value) < kExactIntegers && std::trunc(value) == value &&
      !(value == 0 && std::signbit(value))) {
    if (value < 0) {
      *out = '-';
      return 1 + PutUnsigned(static_cast<uint64_t>(-value), out + 1);
    }
    return PutUnsigned(static_cast<uint64_t>(value), out);
  }
  return internal::FormatShortestTo(value, out);
}

std::string FormatValue(double value) {
  char text[kMaxValueTextBytes];
  return std::string(text, FormatValueTo(value, text));
}

namespace internal {

size_t FormatShortestTo(double value, char* out) {
  if (std::isnan(value) || std::isinf(value)) {
    return FormatValueTo(value, out);  // no digits to lay out
  }
  // The shortest digits that round-trip, from scientific notation
  // ("-1.2345e+07"), laid out as printf's %g lays out 16 digits.
  char sci[64];
  const std::to_chars_result r = std::to_chars(sci, sci + sizeof(sci), value,
                                               std::chars_format::scientific);
  const char* in = sci;
  const char* const end = r.ptr;
  char* p = out;
  if (*in == '-') *p++ = *in++;
  const char* const e = std::find(in, end, 'e');
  // At most 17 significant digits (the shortest round trip of a double).
  char digits[24];
  size_t n = 0;
  for (const char* c = in; c < e; ++c) {
    if (*c != '.') digits[n++] = *c;
  }
  // "e+19", "e-07": a sign and at least two digits.
  int exponent = 0;
  std::from_chars(e + 2, end, exponent);
  if (e[1] == '-') exponent = -exponent;
  auto put = [&p](const char* from, size_t count) {
    std::memcpy(p, from, count);
    p += count;
  };
  if (exponent < -4 || exponent >= 16) {
    *p++ = digits[0];
    if (n > 1) {
      *p++ = '.';
      put(digits + 1, n - 1);
    }
    put(e, static_cast<size_t>(end - e));
  } else if (exponent < 0) {
    const size_t zeros = static_cast<size_t>(-exponent - 1);
    put("0.", 2);
    std::memset(p, '0', zeros);
    p += zeros;
    put(digits, n);
  } else {
    const size_t whole = static_cast<size_t>(exponent) + 1;
    if (n <= whole) {
      put(digits, n);
      std::memset(p, '0', whole - n);
      p += whole - n;
    } else {
      put(digits, whole);
      *p++ = '.';
      put(digits + whole, n - whole);
    }
  }
  return static_cast<size_t>(p - out);
}

std::string FormatShortest(double value) {
  char text[kMaxValueTextBytes];
  return std::string(text, FormatShortestTo(value, text));
}

}  // namespace internal

// The prepared text of one set of sample series. `text` holds, in
// exposition order, everything but the values: each family's header
// followed by the "name{labels} " of its series. Each entry knows where its
// series' piece of `text` ends, so that a render is: per entry, copy the
// text since the previous entry's end, then format the value and a newline.
struct ExpositionRenderer::Plan {
  struct Entry {
    uint32_t sample = 0;
    uint32_t text_end = 0;  // end of "[header]name{labels} " in `text`
    ValueScale scale;
  };
  struct Family {
    std::string name;
    uint32_t first_entry = 0;
  };
  // The descriptions the plan was built for, in snapshot order, and the
  // tables that own them (kept alive, so that an equal pointer is the same
  // description).
  std::vector<const SeriesDesc*> descs;
  std::vector<std::shared_ptr<const void>> owners;
  std::string text;
  std::vector<Entry> entries;    // in exposition order
  std::vector<Family> families;  // sorted by name

  // The families decided per render (saturation, devices, the agent
  // itself), prepared the same way for as long as their series stay the
  // same (DynamicKey): `dynamic_text` holds their headers and series, and
  // only the values change from render to render.
  struct DynamicEntry {
    uint32_t call = 0;      // index into dynamic_values
    uint32_t text_end = 0;  // in dynamic_text
  };
  bool dynamic_ready = false;
  std::string dynamic_key;
  std::string key_scratch;
  std::string dynamic_text;
  std::vector<DynamicEntry> dynamic_entries;  // in exposition order
  // {k, end}: the dynamic entries up to `end` go before plan family k.
  std::vector<std::pair<size_t, size_t>> dynamic_groups;
  std::vector<double> dynamic_values;  // of this render, in call order

  bool Matches(const Snapshot& snap) const {
    if (snap.samples.size() != descs.size()) return false;
    for (size_t i = 0; i < descs.size(); ++i) {
      if (snap.samples[i].desc != descs[i]) return false;
    }
    return true;
  }
};

namespace {

// Appends `v` to `key`, length first, so that different sequences of
// fields never make the same key.
void KeyField(absl::string_view v, std::string* key) {
  const auto n = static_cast<uint32_t>(v.size());
  key->append(reinterpret_cast<const char*>(&n), sizeof(n));
  key->append(v.data(), v.size());
}
void KeyNumber(uint64_t v, std::string* key) {
  key->append(reinterpret_cast<const char*>(&v), sizeof(v));
}

// Everything the series and headers of AddSaturated, AddInfo and AddHealth
// depend on (their values aside): a render whose key equals the previous
// one's reuses their prepared text. A label added to those functions must
// be added here.
void DynamicKey(const Snapshot& snap, const AgentHealth& h, std::string* key) {
  key->clear();
  for (size_t i = 0; i < snap.samples.size(); ++i) {
    if (snap.samples[i].saturated) KeyNumber(i, key);
  }
  KeyNumber(snap.rdma_devices.size(), key);
  for (const RdmaDeviceInfo& d : snap.rdma_devices) {
    for (const std::string* v :
         {&d.name, &d.fw_ver, &d.board_id, &d.hca_type, &d.node_guid}) {
      KeyField(*v, key);
    }
  }
  KeyNumber(snap.rdma_ports.size(), key);
  for (const RdmaPortInfo& p : snap.rdma_ports) {
    KeyNumber(p.port, key);
    for (const std::string* v :
         {&p.device, &p.link_layer, &p.state, &p.phys_state}) {
      KeyField(*v, key);
    }
    KeyNumber(p.netdevs.size(), key);
    for (const std::string& n : p.netdevs) KeyField(n, key);
  }
  KeyNumber(snap.netdevs.size(), key);
  for (const NetdevInfo& n : snap.netdevs) {
    KeyField(n.name, key);
    KeyField(n.operstate, key);
    KeyField(n.rdma_device, key);
    KeyNumber(n.rdma_port, key);
  }
  KeyNumber(snap.gpu_nics.size(), key);
  for (const GpuNicPair& p : snap.gpu_nics) {
    KeyNumber(static_cast<uint64_t>(p.gpu), key);
    KeyNumber(static_cast<uint64_t>(p.distance), key);
    for (const std::string* v : {&p.gpu_pci, &p.device, &p.netdev}) {
      KeyField(*v, key);
    }
  }
  KeyNumber(snap.lldp != nullptr ? 1 : 0, key);
  if (snap.lldp != nullptr) {
    KeyField(snap.lldp->source, key);
    KeyNumber(snap.lldp->set.neighbors.size(), key);
    for (const LldpNeighbor& n : snap.lldp->set.neighbors) {
      for (const std::string* v :
           {&n.netdev, &n.chassis_id, &n.port_id, &n.system_name,
            &n.port_description, &n.port_id_type, &n.chassis_id_type,
            &n.management_address}) {
        KeyField(*v, key);
      }
    }
  }
  KeyField(h.version, key);
  KeyNumber(snap.sources.size(), key);
  for (const SourceStatus& s : snap.sources) KeyField(s.source, key);
  KeyNumber(h.http.has_value() ? 1 : 0, key);
  KeyNumber(h.stream.has_value() ? 1 : 0, key);
  if (h.stream.has_value()) KeyField(h.stream->collector, key);
}

void AddDynamicFamilies(const Snapshot& snap, const AgentHealth& h,
                        Families* f) {
  for (const Sample& s : snap.samples) {
    if (s.saturated) AddSaturated(s, f);
  }
  AddInfo(snap, f);
  AddGpuNics(snap, f);
  if (snap.lldp != nullptr) AddLldp(*snap.lldp, f);
  AddHealth(snap, h, f);
}

}  // namespace

ExpositionRenderer::ExpositionRenderer() = default;
ExpositionRenderer::~ExpositionRenderer() = default;

void ExpositionRenderer::Render(const Snapshot& snapshot,
                                const AgentHealth& health, std::string* out) {
  if (plan_ == nullptr || !plan_->Matches(snapshot)) {
    auto plan = std::make_unique<Plan>();
    Families families;
    for (size_t i = 0; i < snapshot.samples.size(); ++i) {
      families.set_sample(static_cast<int64_t>(i));
      AddSample(snapshot.samples[i], &families);
      plan->descs.push_back(snapshot.samples[i].desc);
    }
    plan->owners = snapshot.series_owners;
    for (auto& [name, f] : families.map()) {
      plan->families.push_back(
          {name, static_cast<uint32_t>(plan->entries.size())});
      plan->text.append(Header(name, f));
      for (const Families::Entry& e : f.entries) {
        plan->text.append(e.series);
        plan->text.push_back(' ');
        Plan::Entry& entry = plan->entries.emplace_back();
        entry.sample = static_cast<uint32_t>(e.sample);
        entry.text_end = static_cast<uint32_t>(plan->text.size());
        entry.scale =
            ValueScale::Of(*snapshot.samples[entry.sample].desc, e.ref);
      }
    }
    plan_ = std::move(plan);
    ++plans_built_;
  }
  Plan& plan = *plan_;

  // What is decided per snapshot: saturation, devices, the agent itself.
  plan.dynamic_values.clear();
  DynamicKey(snapshot, health, &plan.key_scratch);
  if (plan.dynamic_ready && plan.key_scratch == plan.dynamic_key) {
    Families values;
    values.set_values_only(&plan.dynamic_values);
    AddDynamicFamilies(snapshot, health, &values);
  }
  if (plan.dynamic_values.size() != plan.dynamic_entries.size() ||
      !plan.dynamic_ready || plan.key_scratch != plan.dynamic_key) {
    PrepareDynamic(snapshot, health);
  }

  // The values are formatted straight into *out, in one pass: room for the
  // longest value of every series, given back at the end. (Growing *out to
  // a size it had before writes nothing; keeping each value's text to skip
  // the counters that did not move cost more in memory traffic than
  // formatting them again.)
  constexpr size_t kValueRoom = kMaxValueTextBytes + 1;  // and '\n'
  out->resize(plan.text.size() + plan.dynamic_text.size() +
              (plan.entries.size() + plan.dynamic_entries.size()) * kValueRoom);
  char* p = out->data();
  // Copies the text since the previous entry of the same text, then the
  // entry's value.
  auto put = [&p](const std::string& text, size_t* pos, uint32_t text_end,
                  double value) {
    std::memcpy(p, text.data() + *pos, text_end - *pos);
    p += text_end - *pos;
    *pos = text_end;
    p += FormatValueTo(value, p);
    *p++ = '\n';
  };
  size_t text_pos = 0;
  size_t dynamic_pos = 0;
  size_t dynamic_entry = 0;
  size_t group = 0;
  auto put_dynamic_before = [&](size_t family) {
    for (; group < plan.dynamic_groups.size() &&
           plan.dynamic_groups[group].first == family;
         ++group) {
      for (; dynamic_entry < plan.dynamic_groups[group].second;
           ++dynamic_entry) {
        const Plan::DynamicEntry& e = plan.dynamic_entries[dynamic_entry];
        put(plan.dynamic_text, &dynamic_pos, e.text_end,
            plan.dynamic_values[e.call]);
      }
    }
  };
  const Sample* const samples = snapshot.samples.data();
  for (size_t k = 0; k < plan.families.size(); ++k) {
    put_dynamic_before(k);
    const size_t last = k + 1 < plan.families.size()
                            ? plan.families[k + 1].first_entry
                            : plan.entries.size();
    for (size_t i = plan.families[k].first_entry; i < last; ++i) {
      const Plan::Entry& e = plan.entries[i];
      put(plan.text, &text_pos, e.text_end,
          e.scale.Apply(samples[e.sample].raw));
    }
  }
  put_dynamic_before(plan.families.size());
  out->resize(static_cast<size_t>(p - out->data()));
}

void ExpositionRenderer::PrepareDynamic(const Snapshot& snapshot,
                                        const AgentHealth& health) {
  Plan& plan = *plan_;
  Families dynamic;
  AddDynamicFamilies(snapshot, health, &dynamic);
  plan.dynamic_text.clear();
  plan.dynamic_entries.clear();
  plan.dynamic_groups.clear();
  plan.dynamic_values.clear();
  size_t before = 0;  // the plan family the next dynamic one goes before
  for (const auto& [name, f] : dynamic.map()) {
    while (before < plan.families.size() && plan.families[before].name < name) {
      ++before;
    }
    plan.dynamic_text.append(Header(name, f));
    for (const Families::Entry& e : f.entries) {
      plan.dynamic_text.append(e.series);
      plan.dynamic_text.push_back(' ');
      Plan::DynamicEntry& entry = plan.dynamic_entries.emplace_back();
      entry.call = e.call;
      entry.text_end = static_cast<uint32_t>(plan.dynamic_text.size());
      if (plan.dynamic_values.size() <= e.call) {
        plan.dynamic_values.resize(e.call + 1);
      }
      plan.dynamic_values[e.call] = e.value;
    }
    if (plan.dynamic_groups.empty() ||
        plan.dynamic_groups.back().first != before) {
      plan.dynamic_groups.emplace_back(before, 0);
    }
    plan.dynamic_groups.back().second = plan.dynamic_entries.size();
  }
  std::swap(plan.dynamic_key, plan.key_scratch);
  plan.dynamic_ready = true;
}

void MetricsPage::Publish(std::shared_ptr<const Snapshot> snapshot,
                          AgentHealth health) {
  std::lock_guard<std::mutex> lock(mu_);
  snapshot_ = std::move(snapshot);
  health_ = std::move(health);
  ++generation_;
}

HttpResponse MetricsPage::Serve(const HttpRequest& request) {
  HttpResponse r;
  std::lock_guard<std::mutex> lock(mu_);
  if (snapshot_ == nullptr) {
    r.status = 503;
    r.body = "no snapshot yet: the agent is starting\n";
    r.compressible = false;
    return r;
  }
  if (rendered_generation_ != generation_) {
    renderer_.Render(*snapshot_, health_, &text_);
    gzipped_.clear();
    rendered_generation_ = generation_;
  }
  r.content_type = "text/plain; version=0.0.4; charset=utf-8";
  if (request.accepts_gzip) {
    if (gzipped_.empty()) {
      absl::StatusOr<std::string> z = GzipCompress(text_);
      if (z.ok()) gzipped_ = *std::move(z);
    }
    r.gzip_body = gzipped_;
  }
  r.body = text_;
  return r;
}

}  // namespace fabricdiag::agent
