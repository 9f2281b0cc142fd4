#include "sim/sysfs_files.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace fabricdiag::sim {
namespace {

std::string Num(uint64_t v) { return absl::StrCat(v, "\n"); }

std::string RateText(int gbps) {
  return gbps >= 400 ? "400 Gb/sec (4X NDR)\n" : "200 Gb/sec (4X HDR)\n";
}

}  // namespace

std::vector<FileEntry> RdmaDeviceFiles(const SimNic& nic, size_t nic_index,
                                       const PortCounters& c,
                                       bool with_static) {
  std::vector<FileEntry> out;
  const auto& v = c.value;
  if (with_static) {
    // A ConnectX-7 (MT4129) with firmware of the 28.39 line.
    out.push_back({"fw_ver", "28.39.1002\n"});
    out.push_back({"board_id", "MT_0000000838\n"});
    out.push_back({"hca_type", "MT4129\n"});
    out.push_back({"node_type", "1: CA\n"});
    out.push_back({"node_guid", absl::StrFormat("b83f:d203:%04x:%04x\n",
                                                (nic_index >> 16) & 0xffff,
                                                nic_index & 0xffff)});
    out.push_back({absl::StrCat("device/net/", nic.netdev, "/"), ""});
    out.push_back({"ports/1/link_layer", "Ethernet\n"});
    out.push_back({"ports/1/gid_attrs/ndevs/0", nic.netdev + "\n"});
    out.push_back({"ports/1/gid_attrs/ndevs/1", nic.netdev + "\n"});
    out.push_back({"ports/1/gid_attrs/types/0", "IB/RoCE v1\n"});
    out.push_back({"ports/1/gid_attrs/types/1", "RoCE v2\n"});
    out.push_back({"ports/1/hw_counters/lifespan", "10\n"});  // a setting
  }
  out.push_back({"ports/1/state", c.link_up ? "4: ACTIVE\n" : "1: DOWN\n"});
  out.push_back(
      {"ports/1/phys_state", c.link_up ? "5: LinkUp\n" : "3: Disabled\n"});
  out.push_back({"ports/1/rate", RateText(c.speed_gbps)});
  const std::string k = "ports/1/counters/";
  // IB port_*_data count 4-octet words (IBA PortCounters, sysfs ABI).
  out.push_back({k + "port_xmit_data", Num(v[kTxBytes] / 4)});
  out.push_back({k + "port_rcv_data", Num(v[kRxBytes] / 4)});
  out.push_back({k + "port_xmit_packets", Num(v[kTxPackets])});
  out.push_back({k + "port_rcv_packets", Num(v[kRxPackets])});
  out.push_back({k + "symbol_error", Num(v[kSymbolErrors])});
  out.push_back({k + "link_downed", Num(v[kLinkDowned])});
  out.push_back({k + "link_error_recovery", Num(v[kLinkErrorRecovery])});
  out.push_back({k + "port_rcv_errors", Num(v[kRcvErrors])});
  out.push_back({k + "port_xmit_discards", Num(v[kXmitDiscards])});
  const std::string h = "ports/1/hw_counters/";
  out.push_back({h + "np_cnp_sent", Num(v[kNpCnpSent])});
  out.push_back({h + "rp_cnp_handled", Num(v[kRpCnpHandled])});
  out.push_back({h + "np_ecn_marked_roce_packets", Num(v[kNpEcnMarked])});
  out.push_back({h + "out_of_sequence", Num(v[kOutOfSequence])});
  out.push_back({h + "packet_seq_err", Num(v[kPacketSeqErr])});
  out.push_back({h + "local_ack_timeout_err", Num(v[kLocalAckTimeoutErr])});
  out.push_back({h + "rnr_nak_retry_err", Num(v[kRnrNakRetryErr])});
  out.push_back({h + "duplicate_request", Num(v[kDuplicateRequest])});
  out.push_back({h + "implied_nak_seq_err", Num(v[kImpliedNakSeqErr])});
  out.push_back({h + "roce_adp_retrans", Num(v[kRoceAdpRetrans])});
  out.push_back({h + "req_transport_retries_exceeded",
                 Num(v[kReqTransportRetriesExceeded])});
  return out;
}

std::vector<FileEntry> NetdevFiles(const PortCounters& c, bool switch_port,
                                   bool with_static) {
  std::vector<FileEntry> out;
  const auto& v = c.value;
  if (with_static) {
    out.push_back({"mtu", switch_port ? "9216\n" : "9000\n"});
    out.push_back({"type", "1\n"});
  }
  out.push_back({"operstate", c.link_up ? "up\n" : "down\n"});
  out.push_back({"carrier", c.link_up ? "1\n" : "0\n"});
  out.push_back({"carrier_changes", Num(v[kCarrierChanges])});
  // Mb/s; SPEED_UNKNOWN (-1) while the link is down (net-sysfs.c).
  out.push_back({"speed", c.link_up ? absl::StrCat(c.speed_gbps * 1000, "\n")
                                    : std::string("-1\n")});
  const std::string s = "statistics/";
  const Counter tx = switch_port ? kTxBytes : kStackTxBytes;
  const Counter rx = switch_port ? kRxBytes : kStackRxBytes;
  const Counter txp = switch_port ? kTxPackets : kStackTxPackets;
  const Counter rxp = switch_port ? kRxPackets : kStackRxPackets;
  out.push_back({s + "tx_bytes", Num(v[tx])});
  out.push_back({s + "rx_bytes", Num(v[rx])});
  out.push_back({s + "tx_packets", Num(v[txp])});
  out.push_back({s + "rx_packets", Num(v[rxp])});
  // mlx5e_get_stats: rx_crc_errors = FCS errors, rx_errors their sum,
  // rx_dropped ~ rx_discards_phy (recent kernels, COUNTERS.md §4).
  out.push_back({s + "rx_crc_errors", Num(v[kCrcErrors])});
  out.push_back({s + "rx_errors", Num(v[kCrcErrors])});
  out.push_back({s + "tx_errors", Num(0)});
  out.push_back({s + "rx_dropped", Num(v[kRxDiscardsPhy])});
  out.push_back({s + "tx_dropped", Num(v[kXmitDiscards])});
  return out;
}

std::string EthtoolStatsText(const PortCounters& c) {
  const auto& v = c.value;
  std::string out = "NIC statistics:\n";
  auto line = [&out](absl::string_view name, uint64_t value) {
    absl::StrAppend(&out, "     ", name, ": ", value, "\n");
  };
  line("rx_bytes_phy", v[kRxBytes]);
  line("tx_bytes_phy", v[kTxBytes]);
  line("rx_packets_phy", v[kRxPackets]);
  line("tx_packets_phy", v[kTxPackets]);
  line("rx_discards_phy", v[kRxDiscardsPhy]);
  line("rx_out_of_buffer", v[kRxOutOfBuffer]);
  line("rx_crc_errors_phy", v[kCrcErrors]);
  line("rx_symbol_err_phy", v[kSymbolErrorsPhy]);
  line("rx_pcs_symbol_err_phy", v[kPcsSymbolErrors]);
  line("rx_corrected_bits_phy", v[kCorrectedBits]);
  line("rx_bits_phy", v[kRxBits]);
  line("link_down_events_phy", v[kLinkDownEvents]);
  for (int p = 0; p < kPriorities; ++p) {
    line(absl::StrCat("rx_prio", p, "_discards"), v[kRxPrioDiscards + p]);
  }
  // en_stats.c per-priority PFC group order.
  for (int p = 0; p < kPriorities; ++p) {
    line(absl::StrCat("rx_prio", p, "_pause"), v[kRxPauseFrames + p]);
    line(absl::StrCat("rx_prio", p, "_pause_duration"), v[kRxPauseMicros + p]);
    line(absl::StrCat("tx_prio", p, "_pause"), v[kTxPauseFrames + p]);
    line(absl::StrCat("tx_prio", p, "_pause_duration"), v[kTxPauseMicros + p]);
    line(absl::StrCat("rx_prio", p, "_pause_transition"),
         v[kRxPauseTransitions + p]);
  }
  line("tx_pause_storm_warning_events", v[kPauseStormWarning]);
  line("tx_pause_storm_error_events", v[kPauseStormError]);
  return out;
}

}  // namespace fabricdiag::sim
