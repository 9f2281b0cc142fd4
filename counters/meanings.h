// The one table of counter meanings: for every Meaning (counters/vocabulary.h)
// its name, its base unit, the analysis signal it feeds and how, and the
// metric family the agent exports it under. The code that differs per
// meaning reads its row here instead of switching on the meaning:
//
// - MeaningName() and the ingest wire enum (proto/ingest.proto: the test
//   checks every row against MEANING_<NAME>);
// - the collector's signal map (collector/runner/signal_map.h), which
//   folds a port's counters into analysis::PortSignals by `signal`;
// - the cluster feature wire (cluster/feature_wire.cc), whose PortBlock
//   slots are the Signal values below;
// - the agent's /metrics families of ethtool statistics
//   (`exposition`, docs/metrics.md).
//
// A new meaning is a value at the end of Meaning, its MEANING_ value in
// proto/ingest.proto, one row in meanings.cc (the build fails until the row
// is there, tests/counters/meanings_test.cc until it is complete), the
// counter-table rows that spell it and the simulator's counter for it
// (sim/port_counters.h). A meaning that feeds a new signal also needs a
// Signal slot here and its PortSignals field (docs/architecture.md).
//
//   const MeaningSpec& m = SpecOf(Meaning::kCnpSent);
//   m.name;     // "cnp_sent"
//   m.signal;   // Signal::kCnpSent
//
// Pure; thread-safe (constant data).
#pragma once

#include <cstdint>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "counters/vocabulary.h"

namespace fabricdiag::counters {

// The per-port signals of the analyzers (analysis::PortSignals), numbered by
// their slot in the cluster feature wire format (proto/cluster.proto,
// PortBlock). Slots are only ever appended: a new signal takes the next
// free slot (62), never a number in between.
enum class Signal : uint8_t {
  kRxBytes = 0,
  kTxBytes = 1,
  kPauseStormWarnings = 2,
  kPauseStormErrors = 3,
  kCnpSent = 4,
  kCnpHandled = 5,
  kEcnMarked = 6,
  kRxDiscards = 7,
  kRxOutOfBuffer = 8,
  kSymbolErrors = 9,
  kRxErrors = 10,
  kCrcErrors = 11,
  kPcsSymbolErrors = 12,
  kCorrectedBits = 13,
  kReceivedBits = 14,
  kLinkDowned = 15,
  kLinkErrorRecovery = 16,
  kCarrierChanges = 17,
  kLinkDownEvents = 18,
  kOutOfSequence = 19,
  kPacketSeqErr = 20,
  kLocalAckTimeoutErr = 21,
  kRnrNakRetryErr = 22,
  kRetriesExceeded = 23,
  kDuplicateRequest = 24,
  kImpliedNakSeqErr = 25,
  kAdaptiveRetrans = 26,
  // From the node's inventory, not from counters: no meaning feeds them.
  kLinkRate = 27,
  kExpectedRate = 28,
  // Per priority: 8 slots each, this one for priority 0.
  kRxPauseFraction = 29,
  kTxPauseFraction = 37,
  kRxPauseFrames = 45,
  kTxPauseFrames = 53,
  // Not a slot: the meaning feeds no signal.
  kNone = 255,
};
// The slots in use: the last per-priority signal's 8.
inline constexpr int kSignalSlots = 61;
// Slots below this one hold a signal without priorities, one value each.
inline constexpr int kScalarSignalSlots = 29;
// The signals in slot order, kNone excluded, with their names.
struct SignalInfo {
  Signal signal;
  const char* name;  // its analysis::PortSignals field
};
inline constexpr SignalInfo kSignals[] = {
    {Signal::kRxBytes, "rx_bytes"},
    {Signal::kTxBytes, "tx_bytes"},
    {Signal::kPauseStormWarnings, "pause_storm_warnings"},
    {Signal::kPauseStormErrors, "pause_storm_errors"},
    {Signal::kCnpSent, "cnp_sent"},
    {Signal::kCnpHandled, "cnp_handled"},
    {Signal::kEcnMarked, "ecn_marked"},
    {Signal::kRxDiscards, "rx_discards"},
    {Signal::kRxOutOfBuffer, "rx_out_of_buffer"},
    {Signal::kSymbolErrors, "symbol_errors"},
    {Signal::kRxErrors, "rx_errors"},
    {Signal::kCrcErrors, "crc_errors"},
    {Signal::kPcsSymbolErrors, "pcs_symbol_errors"},
    {Signal::kCorrectedBits, "corrected_bits"},
    {Signal::kReceivedBits, "received_bits"},
    {Signal::kLinkDowned, "link_downed"},
    {Signal::kLinkErrorRecovery, "link_error_recovery"},
    {Signal::kCarrierChanges, "carrier_changes"},
    {Signal::kLinkDownEvents, "link_down_events"},
    {Signal::kOutOfSequence, "out_of_sequence"},
    {Signal::kPacketSeqErr, "packet_seq_err"},
    {Signal::kLocalAckTimeoutErr, "local_ack_timeout_err"},
    {Signal::kRnrNakRetryErr, "rnr_nak_retry_err"},
    {Signal::kRetriesExceeded, "retries_exceeded"},
    {Signal::kDuplicateRequest, "duplicate_request"},
    {Signal::kImpliedNakSeqErr, "implied_nak_seq_err"},
    {Signal::kAdaptiveRetrans, "adaptive_retrans"},
    {Signal::kLinkRate, "link_rate"},
    {Signal::kExpectedRate, "expected_rate"},
    {Signal::kRxPauseFraction, "rx_pause_fraction"},
    {Signal::kTxPauseFraction, "tx_pause_fraction"},
    {Signal::kRxPauseFrames, "rx_pause_frames"},
    {Signal::kTxPauseFrames, "tx_pause_frames"},
};

// A signal with a value per priority (8 slots).
constexpr bool IsPerPriority(Signal s) {
  return s != Signal::kNone && static_cast<int>(s) >= kScalarSignalSlots;
}

// Which counter a traffic signal (rx_bytes, tx_bytes) is read from when a
// port has several: the RDMA port counters count RoCE; the physical port's
// ethtool counters count everything; the netdev statistics miss RoCE on
// mlx5. Higher is better; kNone: not a traffic source.
enum class Source : uint8_t { kNone = 0, kNetdev = 1, kPhy = 2, kRdma = 3 };

// The labels of a meaning's metric family on the agent's /metrics, after
// `netdev`: `fixed` (when its name is set), then `direction`, then
// `priority`.
struct Exposition {
  // "fabricdiag_pfc_pause_frames_total"; "" when no ethtool statistic has
  // the meaning (its sysfs counters keep their sysfs families).
  absl::string_view family;
  // The family of tx counters, when the direction picks the family
  // ("fabricdiag_phy_transmitted_bytes_total") instead of a label.
  absl::string_view tx_family;
  const char* help;
  bool direction_label;
  bool priority_label;
  absl::string_view fixed_label;  // "level", "reason"; "" none
  absl::string_view fixed_value;  // "warning", "rx_discards_phy"
};

struct MeaningSpec {
  Meaning meaning;
  // Stable: metric label values, the JSON snapshot, docs/counters.md.
  const char* name;
  // The base unit of its counters after scaling ("seconds" for pause
  // durations printed in microseconds).
  absl::string_view unit;
  // The signal it feeds; Signal::kNone when no analyzer uses it.
  Signal signal;
  // Set when the direction picks the signal: rx counters feed `signal`, tx
  // counters `tx_signal`, counters without a direction nothing.
  Signal tx_signal;
  // For traffic signals: the source's rank.
  Source source;
  Exposition exposition;
};

// Every meaning, kNone first, indexed by its value.
absl::Span<const MeaningSpec> Meanings();

// The row of `m` (kNone's for a value out of range).
const MeaningSpec& SpecOf(Meaning m);

// "rx_bytes", "rx_pause_fraction", ...: the analysis::PortSignals field;
// "" for kNone.
const char* SignalName(Signal s);

}  // namespace fabricdiag::counters
