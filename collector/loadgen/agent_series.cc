#include "collector/loadgen/agent_series.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace fabricdiag::collector::loadgen {
namespace {

// A healthy RoCE NIC: 30% of a 400 Gb/s link each way in 4 KB packets,
// little congestion, no errors.
constexpr double kLinkBytes = 5e10;
constexpr double kBytes = 0.3 * kLinkBytes;
constexpr double kPackets = kBytes / 4096;

class Builder {
 public:
  explicit Builder(std::vector<LoadSeries>* out) : out_(out) {}

  // A counter of `subsystem`; `rate` > 0 marks it as moving.
  v1::Series& Add(v1::Subsystem subsystem, const std::string& device,
                  uint32_t port, const char* name, const char* unit,
                  double rate = 0) {
    LoadSeries s;
    s.series.set_subsystem(subsystem);
    s.series.set_device(device);
    s.series.set_port(port);
    s.series.set_name(name);
    s.series.set_unit(unit);
    s.series.set_kind(v1::KIND_COUNTER);
    s.series.set_width_bits(64);
    s.series.set_scale(1);
    s.series.set_priority(-1);
    s.rate = rate;
    s.moving = rate > 0;
    out_->push_back(std::move(s));
    return out_->back().series;
  }
  v1::Series& Gauge(v1::Subsystem subsystem, const std::string& device,
                    uint32_t port, const char* name, const char* unit) {
    v1::Series& s = Add(subsystem, device, port, name, unit);
    s.set_kind(v1::KIND_GAUGE);
    return s;
  }
  // An ethtool statistic with its classified meaning.
  v1::Series& Ethtool(const std::string& netdev, const std::string& name,
                      const char* unit, double rate, v1::Meaning meaning,
                      v1::Direction direction, int priority = -1) {
    v1::Series& s =
        Add(v1::SUBSYSTEM_ETHTOOL, netdev, 0, name.c_str(), unit, rate);
    s.set_meaning(meaning);
    s.set_direction(direction);
    s.set_priority(priority);
    return s;
  }

 private:
  std::vector<LoadSeries>* out_;
};

}  // namespace

std::vector<LoadSeries> AgentNicSeries(int nic) {
  std::vector<LoadSeries> out;
  out.reserve(150);
  Builder b(&out);
  const std::string dev = absl::StrCat("mlx5_", nic);
  const std::string eth = absl::StrCat("eth", nic);

  // class/infiniband/mlx5_N/ports/1/counters (IB PMA).
  const v1::Subsystem pma = v1::SUBSYSTEM_RDMA_PORT_COUNTERS;
  b.Add(pma, dev, 1, "port_xmit_data", "bytes", kBytes).set_scale(4);
  b.Add(pma, dev, 1, "port_rcv_data", "bytes", kBytes).set_scale(4);
  b.Add(pma, dev, 1, "port_xmit_packets", "packets", kPackets);
  b.Add(pma, dev, 1, "port_rcv_packets", "packets", kPackets);
  b.Add(pma, dev, 1, "unicast_xmit_packets", "packets", kPackets);
  b.Add(pma, dev, 1, "unicast_rcv_packets", "packets", kPackets);
  for (const char* name :
       {"multicast_xmit_packets", "multicast_rcv_packets", "symbol_error",
        "link_error_recovery", "link_downed", "port_rcv_errors",
        "port_rcv_remote_physical_errors", "port_rcv_switch_relay_errors",
        "port_xmit_discards", "port_xmit_constraint_errors",
        "port_rcv_constraint_errors", "local_link_integrity_errors",
        "excessive_buffer_overrun_errors", "VL15_dropped"}) {
    b.Add(pma, dev, 1, name, "packets");
  }
  b.Add(pma, dev, 1, "port_xmit_wait", "ticks", 2e3);

  // .../ports/1/hw_counters (mlx5).
  const v1::Subsystem hw = v1::SUBSYSTEM_RDMA_PORT_HW_COUNTERS;
  for (const char* name : {"duplicate_request",
                           "implied_nak_seq_err",
                           "local_ack_timeout_err",
                           "out_of_buffer",
                           "out_of_sequence",
                           "packet_seq_err",
                           "req_cqe_error",
                           "req_cqe_flush_error",
                           "req_remote_access_errors",
                           "req_remote_invalid_request",
                           "resp_cqe_error",
                           "resp_cqe_flush_error",
                           "resp_local_length_error",
                           "resp_remote_access_errors",
                           "rnr_nak_retry_err",
                           "roce_adp_retrans",
                           "roce_adp_retrans_to",
                           "roce_slow_restart",
                           "roce_slow_restart_cnps",
                           "roce_slow_restart_trans",
                           "rp_cnp_ignored",
                           "rx_atomic_requests",
                           "rx_dct_connect",
                           "rx_icrc_encapsulated"}) {
    b.Add(hw, dev, 1, name, "packets");
  }
  b.Add(hw, dev, 1, "np_cnp_sent", "packets", 50);
  b.Add(hw, dev, 1, "np_ecn_marked_roce_packets", "packets", 50);
  b.Add(hw, dev, 1, "rp_cnp_handled", "packets", 50);
  b.Add(hw, dev, 1, "rx_read_requests", "packets", 1e5);
  b.Add(hw, dev, 1, "rx_write_requests", "packets", 3e5);

  // Port attributes (gauges the agent derives from state, phys_state, rate).
  const v1::Subsystem attr = v1::SUBSYSTEM_RDMA_PORT_ATTRIBUTE;
  b.Gauge(attr, dev, 1, "state_id", "");
  b.Gauge(attr, dev, 1, "phys_state_id", "");
  b.Gauge(attr, dev, 1, "rate_bytes_per_second", "bytes_per_second");

  // class/net/ethN/statistics: RoCE bypasses them on mlx5, so only the
  // host's own IP traffic moves.
  const v1::Subsystem stats = v1::SUBSYSTEM_NETDEV_STATISTICS;
  b.Add(stats, eth, 0, "rx_packets", "packets", 200);
  b.Add(stats, eth, 0, "tx_packets", "packets", 200);
  b.Add(stats, eth, 0, "rx_bytes", "bytes", 2e5);
  b.Add(stats, eth, 0, "tx_bytes", "bytes", 2e5);
  for (const char* name :
       {"rx_errors", "tx_errors", "rx_dropped", "tx_dropped", "multicast",
        "collisions", "rx_length_errors", "rx_over_errors", "rx_crc_errors",
        "rx_frame_errors", "rx_fifo_errors", "rx_missed_errors",
        "tx_aborted_errors", "tx_carrier_errors", "tx_fifo_errors",
        "tx_heartbeat_errors", "tx_window_errors", "rx_compressed",
        "tx_compressed"}) {
    b.Add(stats, eth, 0, name, "packets");
  }
  const v1::Subsystem nattr = v1::SUBSYSTEM_NETDEV_ATTRIBUTE;
  for (const char* name :
       {"carrier_changes", "carrier_up_count", "carrier_down_count"}) {
    b.Add(nattr, eth, 0, name, "events").set_width_bits(32);
  }
  b.Gauge(nattr, eth, 0, "speed_bytes_per_second", "bytes_per_second");
  b.Gauge(nattr, eth, 0, "mtu", "bytes");
  b.Gauge(nattr, eth, 0, "carrier", "");

  // ethtool -S ethN, as the agent classifies it.
  using M = v1::Meaning;
  const v1::Direction rx = v1::DIRECTION_RX, tx = v1::DIRECTION_TX,
                      none = v1::DIRECTION_NONE;
  b.Ethtool(eth, "rx_bytes_phy", "bytes", kBytes * 1.02, M::MEANING_PHY_BYTES,
            rx);
  b.Ethtool(eth, "tx_bytes_phy", "bytes", kBytes * 1.02, M::MEANING_PHY_BYTES,
            tx);
  b.Ethtool(eth, "rx_packets_phy", "packets", kPackets, M::MEANING_PHY_PACKETS,
            rx);
  b.Ethtool(eth, "tx_packets_phy", "packets", kPackets, M::MEANING_PHY_PACKETS,
            tx);
  b.Ethtool(eth, "rx_bits_phy", "bits", kBytes * 8.16, M::MEANING_RECEIVED_BITS,
            rx);
  b.Ethtool(eth, "rx_discards_phy", "packets", 0, M::MEANING_RX_DISCARDS_PHY,
            rx);
  b.Ethtool(eth, "tx_discards_phy", "packets", 0, M::MEANING_TX_DISCARDS_PHY,
            tx);
  b.Ethtool(eth, "rx_out_of_buffer", "packets", 0, M::MEANING_RX_OUT_OF_BUFFER,
            rx);
  b.Ethtool(eth, "rx_crc_errors_phy", "packets", 0, M::MEANING_CRC_ERRORS, rx);
  b.Ethtool(eth, "rx_symbol_err_phy", "events", 0, M::MEANING_SYMBOL_ERRORS,
            rx);
  b.Ethtool(eth, "rx_pcs_symbol_err_phy", "events", 0,
            M::MEANING_PCS_SYMBOL_ERRORS, rx);
  b.Ethtool(eth, "rx_corrected_bits_phy", "bits", 0, M::MEANING_CORRECTED_BITS,
            rx);
  b.Ethtool(eth, "link_down_events_phy", "events", 0,
            M::MEANING_LINK_DOWN_EVENTS, none);
  b.Ethtool(eth, "rx_pause_ctrl_phy", "packets", 0,
            M::MEANING_GLOBAL_PAUSE_FRAMES, rx);
  b.Ethtool(eth, "tx_pause_ctrl_phy", "packets", 0,
            M::MEANING_GLOBAL_PAUSE_FRAMES, tx);
  b.Ethtool(eth, "tx_pause_storm_warning_events", "events", 0,
            M::MEANING_PAUSE_STORM_WARNING, tx);
  b.Ethtool(eth, "tx_pause_storm_error_events", "events", 0,
            M::MEANING_PAUSE_STORM_ERROR, tx);
  for (int p = 0; p < 8; ++p) {
    const double bytes = p == 3 ? kBytes : 0;  // RoCE on priority 3
    b.Ethtool(eth, absl::StrCat("rx_prio", p, "_bytes"), "bytes", bytes,
              M::MEANING_PRIORITY_BYTES, rx, p);
    b.Ethtool(eth, absl::StrCat("tx_prio", p, "_bytes"), "bytes", bytes,
              M::MEANING_PRIORITY_BYTES, tx, p);
    b.Ethtool(eth, absl::StrCat("rx_prio", p, "_discards"), "packets", 0,
              M::MEANING_PRIORITY_DISCARDS, rx, p);
  }
  // PFC is enabled on priority 3; pauses are rare on a healthy fabric.
  b.Ethtool(eth, "rx_prio3_pause", "packets", 0, M::MEANING_PFC_PAUSE_FRAMES,
            rx, 3);
  b.Ethtool(eth, "tx_prio3_pause", "packets", 0, M::MEANING_PFC_PAUSE_FRAMES,
            tx, 3);
  b.Ethtool(eth, "rx_prio3_pause_duration", "seconds", 0,
            M::MEANING_PFC_PAUSE_DURATION, rx, 3)
      .set_scale(1e-6);
  b.Ethtool(eth, "tx_prio3_pause_duration", "seconds", 0,
            M::MEANING_PFC_PAUSE_DURATION, tx, 3)
      .set_scale(1e-6);
  b.Ethtool(eth, "rx_prio3_pause_transition", "events", 0,
            M::MEANING_PFC_PAUSE_TRANSITIONS, rx, 3);
  const M no = M::MEANING_NONE;
  for (const char* dir : {"rx", "tx"}) {
    for (const char* kind : {"unicast", "multicast", "broadcast"}) {
      const bool unicast = std::string(kind) == "unicast";
      b.Ethtool(eth, absl::StrCat(dir, "_vport_", kind, "_packets"), "packets",
                unicast ? 200 : 0, no, none);
      b.Ethtool(eth, absl::StrCat(dir, "_vport_", kind, "_bytes"), "bytes",
                unicast ? 2e5 : 0, no, none);
    }
    for (const char* kind : {"unicast", "multicast"}) {
      const bool unicast = std::string(kind) == "unicast";
      b.Ethtool(eth, absl::StrCat(dir, "_vport_rdma_", kind, "_packets"),
                "packets", unicast ? kPackets : 0, no, none);
      b.Ethtool(eth, absl::StrCat(dir, "_vport_rdma_", kind, "_bytes"), "bytes",
                unicast ? kBytes : 0, no, none);
    }
  }
  b.Ethtool(eth, "rx_cache_reuse", "packets", 0, no, none);
  b.Ethtool(eth, "rx_cache_full", "packets", 0, no, none);
  return out;
}

v1::Inventory AgentInventory(int nics) {
  v1::Inventory inv;
  for (int nic = 0; nic < nics; ++nic) {
    const std::string dev = absl::StrCat("mlx5_", nic);
    const std::string eth = absl::StrCat("eth", nic);
    v1::RdmaDevice* d = inv.add_rdma_devices();
    d->set_name(dev);
    d->set_fw_ver("28.39.1002");
    d->set_board_id("MT_0000000838");
    d->set_hca_type("MT4129");
    d->add_netdevs(eth);
    v1::RdmaPort* p = inv.add_rdma_ports();
    p->set_device(dev);
    p->set_port(1);
    p->set_state_id(4);
    p->set_state("ACTIVE");
    p->set_phys_state_id(5);
    p->set_phys_state("LinkUp");
    p->set_rate_bytes_per_second(kLinkBytes);
    p->set_rate_text("400 Gb/sec (4X NDR)");
    p->set_link_layer("Ethernet");
    p->add_netdevs(eth);
    v1::Netdev* n = inv.add_netdevs();
    n->set_name(eth);
    n->set_operstate("up");
    n->set_rdma_device(dev);
    n->set_rdma_port(1);
    n->set_speed_bytes_per_second(kLinkBytes);
  }
  return inv;
}

}  // namespace fabricdiag::collector::loadgen
