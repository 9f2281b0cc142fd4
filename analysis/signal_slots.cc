#include "analysis/signal_slots.h"

#include <cstddef>
#include <cstdint>
#include <iterator>

#include "counters/meanings.h"

namespace fabricdiag::analysis {
namespace {

using counters::Signal;

// Every signal's PortSignals field, in slot order (counters/meanings.h).
struct SignalField {
  Signal signal;
  double PortSignals::*value;              // a signal without priorities
  PerPriority PortSignals::*per_priority;  // or one per priority
};
#define FABRICDIAG_SCALAR(S, field) \
  { Signal::S, &PortSignals::field, nullptr }
#define FABRICDIAG_PER_PRIORITY(S, field) \
  { Signal::S, nullptr, &PortSignals::field }
constexpr SignalField kFields[] = {
    FABRICDIAG_SCALAR(kRxBytes, rx_bytes),
    FABRICDIAG_SCALAR(kTxBytes, tx_bytes),
    FABRICDIAG_SCALAR(kPauseStormWarnings, pause_storm_warnings),
    FABRICDIAG_SCALAR(kPauseStormErrors, pause_storm_errors),
    FABRICDIAG_SCALAR(kCnpSent, cnp_sent),
    FABRICDIAG_SCALAR(kCnpHandled, cnp_handled),
    FABRICDIAG_SCALAR(kEcnMarked, ecn_marked),
    FABRICDIAG_SCALAR(kRxDiscards, rx_discards),
    FABRICDIAG_SCALAR(kRxOutOfBuffer, rx_out_of_buffer),
    FABRICDIAG_SCALAR(kSymbolErrors, symbol_errors),
    FABRICDIAG_SCALAR(kRxErrors, rx_errors),
    FABRICDIAG_SCALAR(kCrcErrors, crc_errors),
    FABRICDIAG_SCALAR(kPcsSymbolErrors, pcs_symbol_errors),
    FABRICDIAG_SCALAR(kCorrectedBits, corrected_bits),
    FABRICDIAG_SCALAR(kReceivedBits, received_bits),
    FABRICDIAG_SCALAR(kLinkDowned, link_downed),
    FABRICDIAG_SCALAR(kLinkErrorRecovery, link_error_recovery),
    FABRICDIAG_SCALAR(kCarrierChanges, carrier_changes),
    FABRICDIAG_SCALAR(kLinkDownEvents, link_down_events),
    FABRICDIAG_SCALAR(kOutOfSequence, out_of_sequence),
    FABRICDIAG_SCALAR(kPacketSeqErr, packet_seq_err),
    FABRICDIAG_SCALAR(kLocalAckTimeoutErr, local_ack_timeout_err),
    FABRICDIAG_SCALAR(kRnrNakRetryErr, rnr_nak_retry_err),
    FABRICDIAG_SCALAR(kRetriesExceeded, retries_exceeded),
    FABRICDIAG_SCALAR(kDuplicateRequest, duplicate_request),
    FABRICDIAG_SCALAR(kImpliedNakSeqErr, implied_nak_seq_err),
    FABRICDIAG_SCALAR(kAdaptiveRetrans, adaptive_retrans),
    FABRICDIAG_SCALAR(kLinkRate, link_rate),
    FABRICDIAG_SCALAR(kExpectedRate, expected_rate),
    FABRICDIAG_PER_PRIORITY(kRxPauseFraction, rx_pause_fraction),
    FABRICDIAG_PER_PRIORITY(kTxPauseFraction, tx_pause_fraction),
    FABRICDIAG_PER_PRIORITY(kRxPauseFrames, rx_pause_frames),
    FABRICDIAG_PER_PRIORITY(kTxPauseFrames, tx_pause_frames),
};
#undef FABRICDIAG_SCALAR
#undef FABRICDIAG_PER_PRIORITY

// One field per signal, in the order of the slots; a field added to
// PortSignals (a double each, and link_up padded to one) needs its signal.
static_assert(std::size(kFields) == std::size(counters::kSignals),
              "every counters::Signal needs its PortSignals field here");
constexpr bool FieldsInSlotOrder() {
  for (size_t i = 0; i < std::size(kFields); ++i) {
    if (kFields[i].signal != counters::kSignals[i].signal) return false;
    if ((kFields[i].value == nullptr) !=
        counters::IsPerPriority(kFields[i].signal)) {
      return false;
    }
  }
  return true;
}
static_assert(FieldsInSlotOrder(), "kFields must follow counters::Signal");
static_assert(sizeof(PortSignals) ==
                  sizeof(double) * (counters::kSignalSlots + 1),
              "PortSignals changed: give the field its counters::Signal");

// The kFields index of every slot.
struct SlotIndex {
  uint8_t index[counters::kSignalSlots] = {};
  constexpr SlotIndex() {
    for (size_t i = 0; i < std::size(kFields); ++i) {
      const int first = static_cast<int>(kFields[i].signal);
      const int n = counters::IsPerPriority(kFields[i].signal)
                        ? analysis::kPriorities
                        : 1;
      for (int slot = first; slot < first + n; ++slot) {
        index[slot] = static_cast<uint8_t>(i);
      }
    }
  }
};
constexpr SlotIndex kSlotIndex;

template <typename Signals>
auto& Slot(Signals& s, int slot) {
  const SignalField& f = kFields[kSlotIndex.index[slot]];
  if (f.value != nullptr) return s.*f.value;
  return (
      s.*
      f.per_priority)[static_cast<size_t>(slot - static_cast<int>(f.signal))];
}

}  // namespace

double& SlotOf(PortSignals& s, int slot) { return Slot(s, slot); }
double SlotOf(const PortSignals& s, int slot) { return Slot(s, slot); }

size_t SlotOffset(int slot) {
  const PortSignals probe;
  return static_cast<size_t>(reinterpret_cast<const char*>(&Slot(probe, slot)) -
                             reinterpret_cast<const char*>(&probe));
}

}  // namespace fabricdiag::analysis
