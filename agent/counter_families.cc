#include "agent/counter_families.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "counters/meanings.h"

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

// Ethtool statistics whose meaning the source recognised, under the
// driver-independent family its row of the meaning table gives
// (counters/meanings.cc). Meanings without one are those of sysfs
// counters, exported under their sysfs families, and the switches'.
void AddEthtoolMeaning(const Sample& s, Families* f) {
  const counters::Exposition& e = counters::SpecOf(s.desc->meaning).exposition;
  if (e.family.empty()) return;
  Labels labels = {{"netdev", s.desc->device}};
  if (!e.fixed_label.empty()) {
    labels.push_back({std::string(e.fixed_label), std::string(e.fixed_value)});
  }
  if (e.direction_label) {
    labels.push_back({"direction", DirectionName(s.desc->direction)});
  }
  if (e.priority_label) {
    labels.push_back({"priority", absl::StrCat(s.desc->priority)});
  }
  const bool tx = s.desc->direction == Direction::kTx && !e.tx_family.empty();
  f->Add(tx ? e.tx_family : e.family, e.help, PromType::kCounter, labels,
         Base());
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
