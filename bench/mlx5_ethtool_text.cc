#include "bench/mlx5_ethtool_text.h"

#include <fstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "counters/counter_table.h"

namespace fabricdiag::agent {
namespace {

// Port-wide software sums (mlx5e_sw_stats_desc, indices dropped).
constexpr const char* kSwStats[] = {
    "rx_packets",
    "rx_bytes",
    "tx_packets",
    "tx_bytes",
    "tx_tso_packets",
    "tx_tso_bytes",
    "tx_tso_inner_packets",
    "tx_tso_inner_bytes",
    "tx_added_vlan_packets",
    "tx_nop",
    "tx_mpwqe_blks",
    "tx_mpwqe_pkts",
    "rx_lro_packets",
    "rx_lro_bytes",
    "rx_gro_packets",
    "rx_gro_bytes",
    "rx_gro_skbs",
    "rx_gro_match_packets",
    "rx_gro_large_hds",
    "rx_ecn_mark",
    "rx_removed_vlan_packets",
    "rx_csum_unnecessary",
    "rx_csum_none",
    "rx_csum_complete",
    "rx_csum_complete_tail",
    "rx_csum_complete_tail_slow",
    "rx_csum_unnecessary_inner",
    "rx_xdp_drop",
    "rx_xdp_redirect",
    "rx_xdp_tx_xmit",
    "rx_xdp_tx_mpwqe",
    "rx_xdp_tx_inlnw",
    "rx_xdp_tx_nops",
    "rx_xdp_tx_full",
    "rx_xdp_tx_err",
    "rx_xdp_tx_cqe",
    "tx_csum_none",
    "tx_csum_partial",
    "tx_csum_partial_inner",
    "tx_queue_stopped",
    "tx_queue_dropped",
    "tx_xmit_more",
    "tx_recover",
    "tx_cqes",
    "tx_queue_wake",
    "tx_cqe_err",
    "tx_xdp_xmit",
    "tx_xdp_mpwqe",
    "tx_xdp_inlnw",
    "tx_xdp_nops",
    "tx_xdp_full",
    "tx_xdp_err",
    "tx_xdp_cqes",
    "rx_wqe_err",
    "rx_mpwqe_filler_cqes",
    "rx_mpwqe_filler_strides",
    "rx_oversize_pkts_sw_drop",
    "rx_buff_alloc_err",
    "rx_cqe_compress_blks",
    "rx_cqe_compress_pkts",
    "rx_congst_umr",
    "rx_arfs_err",
    "rx_recover",
    "rx_pp_alloc_fast",
    "rx_pp_alloc_slow",
    "rx_pp_alloc_empty",
    "rx_pp_alloc_refill",
    "rx_pp_recycle_cached",
    "rx_pp_recycle_ring",
    "ch_events",
    "ch_poll",
    "ch_arm",
    "ch_aff_change",
    "ch_force_irq",
    "ch_eq_rearm",
};

// Vport counters (mlx5e_grp_vport), RDMA steering included.
constexpr const char* kVportStats[] = {
    "rx_vport_unicast_packets",        "rx_vport_unicast_bytes",
    "tx_vport_unicast_packets",        "tx_vport_unicast_bytes",
    "rx_vport_multicast_packets",      "rx_vport_multicast_bytes",
    "tx_vport_multicast_packets",      "tx_vport_multicast_bytes",
    "rx_vport_broadcast_packets",      "rx_vport_broadcast_bytes",
    "tx_vport_broadcast_packets",      "tx_vport_broadcast_bytes",
    "rx_vport_rdma_unicast_packets",   "rx_vport_rdma_unicast_bytes",
    "tx_vport_rdma_unicast_packets",   "tx_vport_rdma_unicast_bytes",
    "rx_vport_rdma_multicast_packets", "rx_vport_rdma_multicast_bytes",
    "tx_vport_rdma_multicast_packets", "tx_vport_rdma_multicast_bytes",
};

// Physical port (PPCNT) counters the agent exports raw: the ones it
// interprets come from the counter table.
constexpr const char* kUninterpretedPhyStats[] = {
    "rx_in_range_len_errors_phy",
    "rx_out_of_range_len_phy",
    "rx_oversize_pkts_phy",
    "tx_mac_control_phy",
    "rx_mac_control_phy",
    "rx_unsupported_op_phy",
    "tx_errors_phy",
    "rx_undersize_pkts_phy",
    "rx_fragments_phy",
    "rx_jabbers_phy",
    "rx_64_bytes_phy",
    "rx_65_to_127_bytes_phy",
    "rx_128_to_255_bytes_phy",
    "rx_256_to_511_bytes_phy",
    "rx_512_to_1023_bytes_phy",
    "rx_1024_to_1518_bytes_phy",
    "rx_1519_to_2047_bytes_phy",
    "rx_2048_to_4095_bytes_phy",
    "rx_4096_to_8191_bytes_phy",
    "rx_8192_to_10239_bytes_phy",
    "rx_err_lane_0_phy",
    "rx_err_lane_1_phy",
    "rx_err_lane_2_phy",
    "rx_err_lane_3_phy",
    "rx_buffer_passed_thres_phy",
    "rx_if_down_packets",
    "rx_steer_missed_packets",
    "module_unplug",
    "module_bus_stuck",
    "module_high_temp",
    "module_bad_shorted",
    "outbound_pci_buffer_overflow",
    "outbound_pci_stalled_rd_events",
    "outbound_pci_stalled_wr_events",
    "dev_internal_queue_oob",
};

// Per-priority discards the agent exports raw (all eight priorities).
constexpr const char* kUninterpretedPrioStats[] = {
    "rx_prio%d_buf_discard",
    "rx_prio%d_cong_discard",
};

bool IsPfc(const counters::CounterSpec& row) {
  return row.meaning == counters::Meaning::kPfcPauseFrames ||
         row.meaning == counters::Meaning::kPfcPauseDuration ||
         row.meaning == counters::Meaning::kPfcPauseTransitions;
}

std::string WithPriority(absl::string_view pattern, int prio) {
  const size_t at = pattern.find("%d");
  return absl::StrCat(pattern.substr(0, at), prio, pattern.substr(at + 2));
}

}  // namespace

std::vector<std::string> SyntheticMlx5EthtoolNames(int pfc_priority) {
  // The mlx5 rows of the counter table, minus 802.3x global pause (off
  // while PFC runs).
  std::vector<const counters::CounterSpec*> rows;
  for (const counters::CounterSpec* row :
       counters::RowsFor(counters::Family::kEthtool, counters::Driver::kMlx5)) {
    if (!absl::StrContains(row->name, "global_pause")) rows.push_back(row);
  }
  std::vector<std::string> names;
  for (const char* n : kSwStats) names.emplace_back(n);
  for (const char* n : kVportStats) names.emplace_back(n);
  for (const counters::CounterSpec* row : rows) {
    if (!counters::IsPerPriority(*row)) {
      names.push_back(counters::ExpandName(*row, -1));
    }
  }
  for (const char* n : kUninterpretedPhyStats) names.emplace_back(n);
  for (int p = 0; p < 8; ++p) {
    for (const counters::CounterSpec* row : rows) {
      if (counters::IsPerPriority(*row) && !IsPfc(*row)) {
        names.push_back(counters::ExpandName(*row, p));
      }
    }
    for (const char* n : kUninterpretedPrioStats) {
      names.push_back(WithPriority(n, p));
    }
    if (p != pfc_priority) continue;  // PFC lines: enabled priorities only
    for (const counters::CounterSpec* row : rows) {
      if (IsPfc(*row)) names.push_back(counters::ExpandName(*row, p));
    }
  }
  return names;
}

std::string SyntheticMlx5EthtoolStats(uint64_t seed, int pfc_priority) {
  std::string out = "NIC statistics:\n";
  uint64_t v = seed * 0x9E3779B97F4A7C15ull;
  for (const std::string& name : SyntheticMlx5EthtoolNames(pfc_priority)) {
    // xorshift: arbitrary, reproducible, mostly large values.
    v ^= v << 13;
    v ^= v >> 7;
    v ^= v << 17;
    absl::StrAppend(&out, "     ", name, ": ", v >> 20, "\n");
  }
  return out;
}

absl::Status WriteSyntheticEthtoolDir(const std::string& dir,
                                      const std::vector<std::string>& netdevs,
                                      int pfc_priority) {
  const auto write = [](const std::string& path, const std::string& text) {
    std::ofstream out(path, std::ios::trunc);
    out << text;
    out.close();
    return out ? absl::OkStatus()
               : absl::InternalError(absl::StrCat("cannot write ", path));
  };
  absl::Status st = write(
      dir + "/SYNTHETIC.README",
      "SYNTHETIC ethtool -S texts written by fabricdiag_bench "
      "(bench/mlx5_ethtool_text.cc): mlx5 port-level names from en_stats.c, "
      "made-up values. Not a capture of real hardware.\n");
  if (!st.ok()) return st;
  for (size_t i = 0; i < netdevs.size(); ++i) {
    st = write(dir + "/" + netdevs[i],
               SyntheticMlx5EthtoolStats(i + 1, pfc_priority));
    if (!st.ok()) return st;
  }
  return absl::OkStatus();
}

}  // namespace fabricdiag::agent
