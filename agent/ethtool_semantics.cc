#include "agent/ethtool_semantics.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/strip.h"

namespace fabricdiag::agent {
namespace {

constexpr double kMicroseconds = 1e-6;

// One spelling of one concept. `pattern` is an exact name, or contains "{p}"
// where the driver prints a single priority digit 0..7.
struct Rule {
  const char* pattern;
  Meaning meaning;
  Direction direction;
  const char* unit;
  double scale = 1.0;
  Kind kind = Kind::kCounter;
  uint32_t width_bits = 64;
};

using D = Direction;
using M = Meaning;

// Sources: mlx5 drivers/net/ethernet/mellanox/mlx5/core/en_stats.c and
// Documentation/networking/device_drivers/ethernet/mellanox/mlx5/counters.rst;
// bnxt_en drivers/net/ethernet/broadcom/bnxt/bnxt_ethtool.c; ice
// drivers/net/ethernet/intel/ice/ice_ethtool.c; veth drivers/net/veth.c.
// Details and confidence per name: the counter reference COUNTERS.md §4-6.
constexpr Rule kRules[] = {
    // ---- mlx5: per-priority PFC. These lines exist only for priorities
    // with PFC enabled (en_stats.c mlx5e_grp_per_prio_pfc_*).
    {"rx_prio{p}_pause", M::kPfcPauseFrames, D::kRx, "frames"},
    {"tx_prio{p}_pause", M::kPfcPauseFrames, D::kTx, "frames"},
    // counters.rst: "duration of pause ... (in microSec)".
    {"rx_prio{p}_pause_duration", M::kPfcPauseDuration, D::kRx, "seconds",
     kMicroseconds},
    {"tx_prio{p}_pause_duration", M::kPfcPauseDuration, D::kTx, "seconds",
     kMicroseconds},
    {"rx_prio{p}_pause_transition", M::kPfcPauseTransitions, D::kRx, "events"},
    // ---- mlx5: 802.3x global pause, read from the prio-0 slot; only
    // present while global pause is enabled. Durations in microseconds.
    {"rx_global_pause", M::kGlobalPauseFrames, D::kRx, "frames"},
    {"tx_global_pause", M::kGlobalPauseFrames, D::kTx, "frames"},
    {"rx_global_pause_duration", M::kGlobalPauseDuration, D::kRx, "seconds",
     kMicroseconds},
    {"tx_global_pause_duration", M::kGlobalPauseDuration, D::kTx, "seconds",
     kMicroseconds},
    {"rx_global_pause_transition", M::kNone, D::kRx, "events"},
    // ---- mlx5: pause storm prevention (device stalled sending pauses).
    {"tx_pause_storm_warning_events", M::kPauseStormWarning, D::kTx, "events"},
    {"tx_pause_storm_error_events", M::kPauseStormError, D::kTx, "events"},
    // ---- mlx5: physical port (PPCNT, 64-bit unless noted).
    {"rx_bytes_phy", M::kPhyBytes, D::kRx, "bytes"},
    {"tx_bytes_phy", M::kPhyBytes, D::kTx, "bytes"},
    {"rx_packets_phy", M::kPhyPackets, D::kRx, "packets"},
    {"tx_packets_phy", M::kPhyPackets, D::kTx, "packets"},
    {"rx_discards_phy", M::kRxDiscardsPhy, D::kRx, "packets"},
    {"tx_discards_phy", M::kTxDiscardsPhy, D::kTx, "packets"},
    {"rx_out_of_buffer", M::kRxOutOfBuffer, D::kRx, "packets"},
    // All link-level pause frames; whether PFC frames are included is not
    // documented, so no Meaning (it would double-count with rx_prioN_pause).
    {"rx_pause_ctrl_phy", M::kNone, D::kRx, "frames"},
    {"tx_pause_ctrl_phy", M::kNone, D::kTx, "frames"},
    {"rx_crc_errors_phy", M::kCrcErrors, D::kRx, "packets"},
    {"rx_symbol_err_phy", M::kSymbolErrors, D::kRx, "errors"},
    {"rx_pcs_symbol_err_phy", M::kPcsSymbolErrors, D::kRx, "errors"},
    {"rx_corrected_bits_phy", M::kCorrectedBits, D::kRx, "bits"},
    {"rx_bits_phy", M::kReceivedBits, D::kRx, "bits"},
    // en_stats.c stores link_down_events in a 32-bit field.
    {"link_down_events_phy", M::kLinkDownEvents, D::kNone, "events", 1.0,
     Kind::kCounter, 32},
    // Read with MLX5E_READ_CTR32_BE.
    {"rx_pci_signal_integrity", M::kNone, D::kRx, "events", 1.0, Kind::kCounter,
     32},
    {"tx_pci_signal_integrity", M::kNone, D::kTx, "events", 1.0, Kind::kCounter,
     32},
    // Percent (0..100) of the last second without PCIe credits: a gauge.
    // (The *_events variants are counters and fall through to the default.)
    {"outbound_pci_stalled_rd", M::kNone, D::kNone, "percent", 1.0,
     Kind::kGauge, 32},
    {"outbound_pci_stalled_wr", M::kNone, D::kNone, "percent", 1.0,
     Kind::kGauge, 32},
    // ---- mlx5: per priority traffic, drops, ECN.
    {"rx_prio{p}_bytes", M::kPriorityBytes, D::kRx, "bytes"},
    {"tx_prio{p}_bytes", M::kPriorityBytes, D::kTx, "bytes"},
    {"rx_prio{p}_packets", M::kNone, D::kRx, "packets"},
    {"tx_prio{p}_packets", M::kNone, D::kTx, "packets"},
    {"rx_prio{p}_discards", M::kPriorityDiscards, D::kRx, "packets"},
    {"rx_prio{p}_marked", M::kEcnMarked, D::kRx, "packets"},

    // ---- bnxt_en (port stats and the PFC "ext" stats).
    {"rx_pfc_ena_frames_pri{p}", M::kPfcPauseFrames, D::kRx, "frames"},
    {"tx_pfc_ena_frames_pri{p}", M::kPfcPauseFrames, D::kTx, "frames"},
    {"pfc_pri{p}_rx_duration_us", M::kPfcPauseDuration, D::kRx, "seconds",
     kMicroseconds},
    {"pfc_pri{p}_tx_duration_us", M::kPfcPauseDuration, D::kTx, "seconds",
     kMicroseconds},
    {"pfc_pri{p}_rx_transitions", M::kPfcPauseTransitions, D::kRx, "events"},
    {"pfc_pri{p}_tx_transitions", M::kPfcPauseTransitions, D::kTx, "events"},
    {"rx_pause_frames", M::kGlobalPauseFrames, D::kRx, "frames"},
    {"tx_pause_frames", M::kGlobalPauseFrames, D::kTx, "frames"},
    // Firmware pause-storm detection; the driver does not say which level
    // of storm these are, so both map to the warning.
    {"continuous_pause_events", M::kPauseStormWarning, D::kNone, "events"},
    {"continuous_roce_pause_events", M::kPauseStormWarning, D::kNone, "events"},
    // Mapped as the port drop counters following COUNTERS.md §5; they are
    // the sum of the per-ring discards (ring had no buffer), so they may be
    // closer to mlx5 rx_out_of_buffer than to rx_discards_phy.
    {"rx_total_discard_pkts", M::kRxDiscardsPhy, D::kRx, "packets"},
    {"tx_total_discard_pkts", M::kTxDiscardsPhy, D::kTx, "packets"},
    {"rx_fcs_err_frames", M::kCrcErrors, D::kRx, "packets"},
    // Per priority (not per CoS queue: rx_bytes_cos3 is not a priority).
    {"rx_bytes_pri{p}", M::kPriorityBytes, D::kRx, "bytes"},
    {"tx_bytes_pri{p}", M::kPriorityBytes, D::kTx, "bytes"},
    {"rx_packets_pri{p}", M::kNone, D::kRx, "packets"},
    {"tx_packets_pri{p}", M::kNone, D::kTx, "packets"},

    // ---- ice (".nic" = port-level counters). XOFF frames pause the
    // priority; XON frames resume it and are not pause.
    {"rx_priority_{p}_xoff.nic", M::kPfcPauseFrames, D::kRx, "frames"},
    {"tx_priority_{p}_xoff.nic", M::kPfcPauseFrames, D::kTx, "frames"},
    {"rx_priority_{p}_xon.nic", M::kNone, D::kRx, "frames"},
    {"tx_priority_{p}_xon.nic", M::kNone, D::kTx, "frames"},
    {"link_xoff_rx.nic", M::kGlobalPauseFrames, D::kRx, "frames"},
    {"link_xoff_tx.nic", M::kGlobalPauseFrames, D::kTx, "frames"},
    {"link_xon_rx.nic", M::kNone, D::kRx, "frames"},
    {"link_xon_tx.nic", M::kNone, D::kTx, "frames"},
    {"rx_dropped.nic", M::kRxDiscardsPhy, D::kRx, "packets"},
    {"rx_crc_errors.nic", M::kCrcErrors, D::kRx, "packets"},

    // ---- veth: the peer's ifindex (0 when none) is a value, not a count.
    {"peer_ifindex", M::kNone, D::kNone, "", 1.0, Kind::kGauge},
};

// Matches `name` against `pattern`; on a "{p}" pattern stores the priority.
bool Matches(absl::string_view pattern, absl::string_view name, int* priority) {
  size_t hole = pattern.find("{p}");
  if (hole == absl::string_view::npos) return name == pattern;
  absl::string_view prefix = pattern.substr(0, hole);
  absl::string_view suffix = pattern.substr(hole + 3);
  // Exactly one digit between prefix and suffix.
  if (name.size() != prefix.size() + 1 + suffix.size()) return false;
  if (!absl::StartsWith(name, prefix) || !absl::EndsWith(name, suffix)) {
    return false;
  }
  char digit = name[prefix.size()];
  if (digit < '0' || digit > '7') return false;  // 802.1p has 8 priorities
  *priority = digit - '0';
  return true;
}

// Consumes one or more leading decimal digits.
bool ConsumeDigits(absl::string_view* s) {
  size_t n = 0;
  while (n < s->size() &&
         absl::ascii_isdigit(static_cast<unsigned char>((*s)[n]))) {
    ++n;
  }
  s->remove_prefix(n);
  return n > 0;
}

// `name` is `prefix` + digits + `after`, followed by anything.
bool NumberedPrefix(absl::string_view name, absl::string_view prefix,
                    absl::string_view after) {
  if (!absl::ConsumePrefix(&name, prefix)) return false;
  if (!ConsumeDigits(&name)) return false;
  return absl::StartsWith(name, after);
}

}  // namespace

StatSemantics ClassifyEthtoolStat(absl::string_view name) {
  StatSemantics s;
  for (const Rule& rule : kRules) {
    int priority = -1;
    if (!Matches(rule.pattern, name, &priority)) continue;
    s.meaning = rule.meaning;
    s.direction = rule.direction;
    s.priority = priority;
    s.scale = rule.scale;
    s.unit = rule.unit;
    s.kind = rule.kind;
    s.width_bits = rule.width_bits;
    return s;
  }
  return s;
}

bool IsPerQueueStat(absl::string_view name) {
  // bnxt_en: "[3]: rx_ucast_packets".
  if (NumberedPrefix(name, "[", "]: ")) return true;
  // mlx5 rings and channels: rx0_, tx3_, ch0_; HTB queues qos_tx0_; the PTP
  // channel ptp_* (en_stats.c). "rx_prio0_" has no digit right after "rx".
  if (NumberedPrefix(name, "rx", "_") || NumberedPrefix(name, "tx", "_") ||
      NumberedPrefix(name, "ch", "_") || NumberedPrefix(name, "qos_tx", "_") ||
      absl::StartsWith(name, "ptp_")) {
    return true;
  }
  // veth, ice, virtio_net: rx_queue_0_xdp_packets, tx_queue_12_bytes.
  if (NumberedPrefix(name, "rx_queue_", "_") ||
      NumberedPrefix(name, "tx_queue_", "_")) {
    return true;
  }
  // i40e: tx-0.tx_packets, rx-3.rx_bytes.
  return NumberedPrefix(name, "rx-", ".") || NumberedPrefix(name, "tx-", ".");
}

}  // namespace fabricdiag::agent
