#include "counters/meanings.h"

#include <iterator>

namespace fabricdiag::counters {
namespace {

using M = Meaning;
using S = Signal;

// The /metrics family of a meaning no ethtool statistic has.
constexpr Exposition kNoFamily = {"", "", "", false, false, "", ""};

// Families shared by several meanings: one help text and label set each.
constexpr const char* kPauseStormHelp =
    "Pause-storm events detected by the NIC: warning = stalled past the minor "
    "watermark, error = storm prevention stopped sending pause.";
constexpr const char* kDiscardsHelp =
    "Packets the NIC dropped: rx_discards_phy = port receive buffer full, "
    "tx_discards_phy = could not transmit, rx_out_of_buffer = host posted no "
    "receive buffer.";

constexpr MeaningSpec kMeanings[] = {
    {M::kNone, "", "", S::kNone, S::kNone, Source::kNone, kNoFamily},
    {M::kPfcPauseFrames,
     "pfc_pause_frames",
     "frames",
     S::kRxPauseFrames,
     S::kTxPauseFrames,
     Source::kNone,
     {"fabricdiag_pfc_pause_frames_total", "",
      "PFC pause frames per priority: rx = received from the link partner (it "
      "is congested), tx = sent by this NIC (it is congested).",
      true, true, "", ""}},
    {M::kPfcPauseDuration,
     "pfc_pause_duration",
     "seconds",
     S::kRxPauseFraction,
     S::kTxPauseFraction,
     Source::kNone,
     {"fabricdiag_pfc_pause_duration_seconds_total", "",
      "Time paused by PFC per priority (rx: this port could not send; tx: "
      "this port paused its partner). Growing by ~1 s per second is a PFC "
      "storm.",
      true, true, "", ""}},
    {M::kPfcPauseTransitions,
     "pfc_pause_transitions",
     "events",
     S::kNone,
     S::kNone,
     Source::kNone,
     {"fabricdiag_pfc_pause_transitions_total", "",
      "XOFF to XON transitions per priority.", true, true, "", ""}},
    {M::kGlobalPauseFrames,
     "global_pause_frames",
     "frames",
     S::kNone,
     S::kNone,
     Source::kNone,
     {"fabricdiag_global_pause_frames_total", "",
      "IEEE 802.3x link-level pause frames.", true, false, "", ""}},
    {M::kGlobalPauseDuration,
     "global_pause_duration",
     "seconds",
     S::kNone,
     S::kNone,
     Source::kNone,
     {"fabricdiag_global_pause_duration_seconds_total", "",
      "Time paused by IEEE 802.3x link-level pause.", true, false, "", ""}},
    {M::kPauseStormWarning,
     "pause_storm_warning",
     "events",
     S::kPauseStormWarnings,
     S::kNone,
     Source::kNone,
     {"fabricdiag_pause_storm_events_total", "", kPauseStormHelp, false, false,
      "level", "warning"}},
    {M::kPauseStormError,
     "pause_storm_error",
     "events",
     S::kPauseStormErrors,
     S::kNone,
     Source::kNone,
     {"fabricdiag_pause_storm_events_total", "", kPauseStormHelp, false, false,
      "level", "error"}},
    {M::kPhyBytes,
     "phy_bytes",
     "bytes",
     S::kRxBytes,
     S::kTxBytes,
     Source::kPhy,
     {"fabricdiag_phy_received_bytes_total",
      "fabricdiag_phy_transmitted_bytes_total",
      "Bytes on the physical port, all traffic including RoCE.", false, false,
      "", ""}},
    {M::kPhyPackets,
     "phy_packets",
     "packets",
     S::kNone,
     S::kNone,
     Source::kNone,
     {"fabricdiag_phy_received_packets_total",
      "fabricdiag_phy_transmitted_packets_total",
      "Packets on the physical port, all traffic including RoCE.", false, false,
      "", ""}},
    {M::kRxDiscardsPhy,
     "rx_discards_phy",
     "packets",
     S::kRxDiscards,
     S::kNone,
     Source::kNone,
     {"fabricdiag_nic_discards_total", "", kDiscardsHelp, false, false,
      "reason", "rx_discards_phy"}},
    {M::kTxDiscardsPhy,
     "tx_discards_phy",
     "packets",
     S::kNone,
     S::kNone,
     Source::kNone,
     {"fabricdiag_nic_discards_total", "", kDiscardsHelp, false, false,
      "reason", "tx_discards_phy"}},
    {M::kRxOutOfBuffer,
     "rx_out_of_buffer",
     "packets",
     S::kRxOutOfBuffer,
     S::kNone,
     Source::kNone,
     {"fabricdiag_nic_discards_total", "", kDiscardsHelp, false, false,
      "reason", "rx_out_of_buffer"}},
    // Summed over priorities, then the larger of that and rx_discards_phy.
    {M::kPriorityDiscards,
     "priority_discards",
     "packets",
     S::kRxDiscards,
     S::kNone,
     Source::kNone,
     {"fabricdiag_priority_discards_total", "",
      "Received packets dropped per priority for lack of buffers (on a "
      "lossless priority this means PFC is not working).",
      false, true, "", ""}},
    {M::kPriorityBytes,
     "priority_bytes",
     "bytes",
     S::kNone,
     S::kNone,
     Source::kNone,
     {"fabricdiag_priority_bytes_total", "", "Bytes per L2 priority.", true,
      true, "", ""}},
    {M::kEcnMarked,
     "ecn_marked",
     "packets",
     S::kEcnMarked,
     S::kNone,
     Source::kNone,
     {"fabricdiag_ecn_marked_packets_total", "",
      "Packets the NIC marked ECN CE for congestion, per priority.", false,
      true, "", ""}},
    {M::kCrcErrors,
     "crc_errors",
     "packets",
     S::kCrcErrors,
     S::kNone,
     Source::kNone,
     {"fabricdiag_phy_crc_errors_total", "",
      "Frames received with a bad FCS (cable, optic, connector).", false, false,
      "", ""}},
    {M::kSymbolErrors,
     "symbol_errors",
     "events",
     S::kSymbolErrors,
     S::kNone,
     Source::kNone,
     {"fabricdiag_phy_symbol_errors_total", "",
      "Physical coding (symbol) errors.", false, false, "", ""}},
    {M::kPcsSymbolErrors,
     "pcs_symbol_errors",
     "events",
     S::kPcsSymbolErrors,
     S::kNone,
     Source::kNone,
     {"fabricdiag_phy_uncorrected_symbol_errors_total", "",
      "Symbol errors FEC could not correct: the link is losing traffic.", false,
      false, "", ""}},
    {M::kCorrectedBits,
     "corrected_bits",
     "bits",
     S::kCorrectedBits,
     S::kNone,
     Source::kNone,
     {"fabricdiag_phy_corrected_bits_total", "",
      "Bits corrected by FEC (pre-FEC BER = this / received bits).", false,
      false, "", ""}},
    {M::kReceivedBits,
     "received_bits",
     "bits",
     S::kReceivedBits,
     S::kNone,
     Source::kNone,
     {"fabricdiag_phy_received_bits_total", "",
      "Bits received on the physical port (the BER denominator).", false, false,
      "", ""}},
    {M::kLinkDownEvents,
     "link_down_events",
     "events",
     S::kLinkDownEvents,
     S::kNone,
     Source::kNone,
     {"fabricdiag_phy_link_down_events_total", "",
      "Times the port's link went down (flaps).", false, false, "", ""}},
    {M::kRdmaBytes, "rdma_bytes", "bytes", S::kRxBytes, S::kTxBytes,
     Source::kRdma, kNoFamily},
    {M::kRdmaPackets, "rdma_packets", "packets", S::kNone, S::kNone,
     Source::kNone, kNoFamily},
    {M::kNetdevBytes, "netdev_bytes", "bytes", S::kRxBytes, S::kTxBytes,
     Source::kNetdev, kNoFamily},
    {M::kNetdevPackets, "netdev_packets", "packets", S::kNone, S::kNone,
     Source::kNone, kNoFamily},
    {M::kRxErrors, "rx_errors", "packets", S::kRxErrors, S::kNone,
     Source::kNone, kNoFamily},
    {M::kLinkDowned, "link_downed", "events", S::kLinkDowned, S::kNone,
     Source::kNone, kNoFamily},
    {M::kLinkErrorRecovery, "link_error_recovery", "events",
     S::kLinkErrorRecovery, S::kNone, Source::kNone, kNoFamily},
    {M::kCarrierChanges, "carrier_changes", "events", S::kCarrierChanges,
     S::kNone, Source::kNone, kNoFamily},
    {M::kCnpSent, "cnp_sent", "packets", S::kCnpSent, S::kNone, Source::kNone,
     kNoFamily},
    {M::kCnpHandled, "cnp_handled", "packets", S::kCnpHandled, S::kNone,
     Source::kNone, kNoFamily},
    {M::kOutOfSequence, "out_of_sequence", "events", S::kOutOfSequence,
     S::kNone, Source::kNone, kNoFamily},
    {M::kPacketSeqErr, "packet_seq_err", "events", S::kPacketSeqErr, S::kNone,
     Source::kNone, kNoFamily},
    {M::kLocalAckTimeout, "local_ack_timeout", "events", S::kLocalAckTimeoutErr,
     S::kNone, Source::kNone, kNoFamily},
    {M::kRnrNakRetry, "rnr_nak_retry", "events", S::kRnrNakRetryErr, S::kNone,
     Source::kNone, kNoFamily},
    {M::kRetriesExceeded, "retries_exceeded", "events", S::kRetriesExceeded,
     S::kNone, Source::kNone, kNoFamily},
    {M::kDuplicateRequest, "duplicate_request", "events", S::kDuplicateRequest,
     S::kNone, Source::kNone, kNoFamily},
    {M::kImpliedNakSeqErr, "implied_nak_seq_err", "events",
     S::kImpliedNakSeqErr, S::kNone, Source::kNone, kNoFamily},
    {M::kAdaptiveRetrans, "adaptive_retrans", "events", S::kAdaptiveRetrans,
     S::kNone, Source::kNone, kNoFamily},
    // A switch's queues and PFC watchdog are not port signals: queues are
    // not priorities, and the watchdog reports the partner's storm.
    {M::kQueueBytes, "queue_bytes", "bytes", S::kNone, S::kNone, Source::kNone,
     kNoFamily},
    {M::kQueuePackets, "queue_packets", "packets", S::kNone, S::kNone,
     Source::kNone, kNoFamily},
    {M::kQueueDrops, "queue_drops", "packets", S::kNone, S::kNone,
     Source::kNone, kNoFamily},
    {M::kQueueEcnMarked, "queue_ecn_marked", "packets", S::kNone, S::kNone,
     Source::kNone, kNoFamily},
    {M::kPfcWatchdogStorms, "pfc_watchdog_storms", "events", S::kNone, S::kNone,
     Source::kNone, kNoFamily},
    {M::kPfcWatchdogRestorations, "pfc_watchdog_restorations", "events",
     S::kNone, S::kNone, Source::kNone, kNoFamily},
};

// One row per meaning, at the index of its value: SpecOf() indexes.
static_assert(std::size(kMeanings) == kMeaningCount,
              "every Meaning needs its row in kMeanings");
constexpr bool RowsInOrder() {
  for (int i = 0; i < kMeaningCount; ++i) {
    if (static_cast<int>(kMeanings[i].meaning) != i) return false;
  }
  return true;
}
static_assert(RowsInOrder(), "kMeanings rows must follow the Meaning values");

}  // namespace

absl::Span<const MeaningSpec> Meanings() { return kMeanings; }

const MeaningSpec& SpecOf(Meaning m) {
  const int i = static_cast<int>(m);
  return i < kMeaningCount ? kMeanings[i] : kMeanings[0];
}

const char* SignalName(Signal s) {
  for (const SignalInfo& info : kSignals) {
    if (info.signal == s) return info.name;
  }
  return "";
}

}  // namespace fabricdiag::counters
