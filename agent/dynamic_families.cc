#include "agent/dynamic_families.h"

#include <cstdint>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "agent/gpu_nic_pairing.h"
#include "common/http_server_metrics.h"

namespace fabricdiag::agent {
namespace {

void AddInfo(const Snapshot& snap, Families* f) {
  for (const RdmaDeviceInfo& d : snap.rdma_devices) {
    f->AddDynamic(
        "fabricdiag_rdma_device_info",
        "RDMA device identity; value is always 1.", PromType::kGauge,
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
        "RDMA port description; value is always 1.", PromType::kGauge,
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
        PromType::kGauge,
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
        PromType::kGauge,
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
        PromType::kGauge,
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
        PromType::kGauge,
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
      PromType::kGauge,
      [&] {
        return Labels{{"source", l.source}};
      },
      static_cast<double>(l.set.neighbors.size()));
  f->AddDynamic(
      "fabricdiag_lldp_up",
      "1 when the last LLDP read succeeded (lldpd answered, or the file "
      "parsed); 0 when lldpd is absent or the read failed.",
      PromType::kGauge,
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
        PromType::kCounter,
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
        PromType::kCounter,
        [&, r = reason] {
          return Labels{{"source", l.source}, {"reason", r}};
        },
        static_cast<double>(count));
  }
  f->AddDynamic(
      "fabricdiag_lldp_fields_truncated_total",
      "LLDP neighbor texts cut to 255 bytes.", PromType::kCounter,
      [&] {
        return Labels{{"source", l.source}};
      },
      static_cast<double>(l.issues.truncated));
}

void AddHealth(const Snapshot& snap, const AgentHealth& h, Families* f) {
  f->AddDynamic(
      "fabricdiag_agent_build_info", "The agent's version; value is always 1.",
      PromType::kGauge,
      [&] {
        return Labels{{"version", h.version}};
      },
      1);
  for (const SourceStatus& s : snap.sources) {
    f->AddDynamic(
        "fabricdiag_agent_source_success",
        "1 when the source read everything it found in the last snapshot.",
        PromType::kGauge,
        [&] {
          return Labels{{"source", s.source}};
        },
        s.ok ? 1 : 0);
    f->AddDynamic(
        "fabricdiag_agent_source_duration_seconds",
        "Time the source took in the last snapshot.", PromType::kGauge,
        [&] {
          return Labels{{"source", s.source}};
        },
        absl::ToDoubleSeconds(s.duration));
    f->AddDynamic(
        "fabricdiag_agent_source_errors",
        "Files or devices the source failed to read in the last snapshot.",
        PromType::kGauge,
        [&] {
          return Labels{{"source", s.source}};
        },
        s.errors);
  }
  f->AddDynamic("fabricdiag_agent_snapshot_duration_seconds",
                "Time the last full snapshot took.", PromType::kGauge, NoLabels,
                absl::ToDoubleSeconds(h.snapshot_duration));
  f->AddDynamic("fabricdiag_agent_snapshots_total",
                "Snapshots taken since start.", PromType::kCounter, NoLabels,
                static_cast<double>(h.snapshots));
  f->AddDynamic("fabricdiag_agent_last_snapshot_timestamp_seconds",
                "Wall time of the last snapshot.", PromType::kGauge, NoLabels,
                absl::ToDoubleSeconds(snap.wall_time - absl::UnixEpoch()));
  f->AddDynamic(
      "fabricdiag_agent_resets_detected_total",
      "Counters seen going backwards without wrapping (driver reload, "
      "clear); no rate is reported for that interval.",
      PromType::kCounter, NoLabels, static_cast<double>(h.counter_resets));
  f->AddDynamic("fabricdiag_agent_wraps_detected_total",
                "Fixed-width counters seen wrapping around.",
                PromType::kCounter, NoLabels,
                static_cast<double>(h.counter_wraps));
  f->AddDynamic(
      "fabricdiag_agent_rates_refused_total",
      "Rates not reported because they cannot be true, by reason: "
      "above_line_rate, a byte rate above the fastest speed its port "
      "reported.",
      PromType::kCounter,
      [] {
        return Labels{{"reason", "above_line_rate"}};
      },
      static_cast<double>(h.rates_above_line_rate));
  for (const auto& [kind, count] : {std::pair("rdma", snap.rdma_devices.size()),
                                    std::pair("netdev", snap.netdevs.size())}) {
    f->AddDynamic(
        "fabricdiag_agent_devices", "Devices seen in the last snapshot.",
        PromType::kGauge,
        [k = kind] {
          return Labels{{"kind", k}};
        },
        static_cast<double>(count));
  }
  f->AddDynamic("fabricdiag_agent_samples", "Values read in the last snapshot.",
                PromType::kGauge, NoLabels,
                static_cast<double>(snap.samples.size()));
  if (h.http.has_value()) {
    for (const HttpServerMetric& m : HttpServerMetrics(*h.http)) {
      f->AddDynamic(m.name, m.help,
                    m.counter ? PromType::kCounter : PromType::kGauge, NoLabels,
                    m.value);
    }
  }
  if (h.stream.has_value()) {
    const AgentHealth::Stream& s = *h.stream;
    f->AddDynamic("fabricdiag_agent_stream_connected",
                  "1 while the stream to the collector is up.",
                  PromType::kGauge, NoLabels, s.connected ? 1 : 0);
    f->AddDynamic("fabricdiag_agent_stream_reports_buffered",
                  "Reports kept until the collector acknowledges them.",
                  PromType::kGauge, NoLabels, static_cast<double>(s.buffered));
    f->AddDynamic("fabricdiag_agent_stream_buffer_bytes",
                  "Memory of the reports kept until the collector acknowledges "
                  "them (bounded by --stream_buffer_size).",
                  PromType::kGauge, NoLabels,
                  static_cast<double>(s.buffered_bytes));
    f->AddDynamic("fabricdiag_agent_stream_reports_dropped_total",
                  "Reports lost because the buffer overflowed during an outage "
                  "(oldest first).",
                  PromType::kCounter, NoLabels, static_cast<double>(s.dropped));
    f->AddDynamic("fabricdiag_agent_stream_reports_sent_total",
                  "Reports written to the collector stream (replays included).",
                  PromType::kCounter, NoLabels, static_cast<double>(s.sent));
    f->AddDynamic("fabricdiag_agent_stream_reconnects_total",
                  "Times the stream to the collector was re-established.",
                  PromType::kCounter, NoLabels,
                  static_cast<double>(s.reconnects));
    // One series, relabelled on failover: which collector of --collector
    // holds this node's recent history (with stream_connected: whether the
    // stream to it is up right now).
    f->AddDynamic(
        "fabricdiag_agent_stream_collector_info",
        "The collector of --collector the agent streams to, or tries to "
        "next; value is always 1.",
        PromType::kGauge,
        [&] {
          return Labels{{"collector", s.collector}};
        },
        1);
    f->AddDynamic(
        "fabricdiag_agent_stream_failovers_total",
        "Times the agent moved to the next collector of --collector after "
        "a stream ended.",
        PromType::kCounter, NoLabels, static_cast<double>(s.failovers));
    f->AddDynamic(
        "fabricdiag_agent_stream_handoffs_total",
        "Times a collector handed the agent's stream to another collector "
        "of --collector (a cluster's analysis leader sheds a share of its "
        "agents).",
        PromType::kCounter, NoLabels, static_cast<double>(s.handoffs));
  }
}

// A fixed-width PMA counter stuck at all-ones: a separate gauge, decided per
// snapshot.
void AddSaturated(const Sample& s, Families* f) {
  f->AddDynamic(
      "fabricdiag_rdma_port_statistic_saturated",
      "1 when a fixed-width IB PMA counter sits at all-ones and has "
      "stopped counting; its value is a floor, not traffic.",
      PromType::kGauge,
      [&] {
        Labels labels = PortLabels(s);
        labels.push_back({"statistic", s.desc->name});
        return labels;
      },
      1.0);
}

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

}  // namespace

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

}  // namespace fabricdiag::agent
