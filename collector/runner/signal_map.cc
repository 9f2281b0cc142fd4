#include "collector/runner/signal_map.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "counters/counter_table.h"
#include "counters/wire.h"

namespace fabricdiag::collector {
namespace {

using analysis::Has;

using counters::Direction;
using counters::Meaning;

SignalRef FromMeaning(Meaning meaning, Direction direction, int priority) {
  const bool rx = direction == Direction::kRx;
  const bool tx = direction == Direction::kTx;
  const int8_t prio = priority >= 0 && priority < analysis::kPriorities
                          ? static_cast<int8_t>(priority)
                          : -1;
  auto by_direction = [rx, tx](SignalField rx_field, SignalField tx_field) {
    if (rx) return SignalRef{rx_field};
    if (tx) return SignalRef{tx_field};
    return SignalRef{};
  };
  switch (meaning) {
    case Meaning::kPfcPauseDuration:
      if (prio < 0 || (!rx && !tx)) return {};
      return {rx ? SignalField::kRxPauseSeconds : SignalField::kTxPauseSeconds,
              prio};
    case Meaning::kPfcPauseFrames:
      if (prio < 0 || (!rx && !tx)) return {};
      return {rx ? SignalField::kRxPauseFrames : SignalField::kTxPauseFrames,
              prio};
    case Meaning::kPauseStormWarning:
      return {SignalField::kPauseStormWarnings};
    case Meaning::kPauseStormError:
      return {SignalField::kPauseStormErrors};
    case Meaning::kRdmaBytes:
      return by_direction(SignalField::kRdmaRxBytes, SignalField::kRdmaTxBytes);
    case Meaning::kPhyBytes:
      return by_direction(SignalField::kPhyRxBytes, SignalField::kPhyTxBytes);
    case Meaning::kNetdevBytes:
      return by_direction(SignalField::kNetdevRxBytes,
                          SignalField::kNetdevTxBytes);
    case Meaning::kRxDiscardsPhy:
      return {SignalField::kRxDiscards};
    case Meaning::kPriorityDiscards:
      return {SignalField::kPriorityDiscards};
    case Meaning::kRxOutOfBuffer:
      return {SignalField::kRxOutOfBuffer};
    case Meaning::kEcnMarked:
      return {SignalField::kEcnMarked, prio};
    case Meaning::kCrcErrors:
      return {SignalField::kCrcErrors};
    case Meaning::kSymbolErrors:
      return {SignalField::kSymbolErrors};
    case Meaning::kPcsSymbolErrors:
      return {SignalField::kPcsSymbolErrors};
    case Meaning::kCorrectedBits:
      return {SignalField::kCorrectedBits};
    case Meaning::kReceivedBits:
      return {SignalField::kReceivedBits};
    case Meaning::kLinkDownEvents:
      return {SignalField::kLinkDownEvents};
    case Meaning::kRxErrors:
      return {SignalField::kRxErrors};
    case Meaning::kLinkDowned:
      return {SignalField::kLinkDowned};
    case Meaning::kLinkErrorRecovery:
      return {SignalField::kLinkErrorRecovery};
    case Meaning::kCarrierChanges:
      return {SignalField::kCarrierChanges};
    case Meaning::kCnpSent:
      return {SignalField::kCnpSent};
    case Meaning::kCnpHandled:
      return {SignalField::kCnpHandled};
    case Meaning::kOutOfSequence:
      return {SignalField::kOutOfSequence};
    case Meaning::kPacketSeqErr:
      return {SignalField::kPacketSeqErr};
    case Meaning::kLocalAckTimeout:
      return {SignalField::kLocalAckTimeoutErr};
    case Meaning::kRnrNakRetry:
      return {SignalField::kRnrNakRetryErr};
    case Meaning::kRetriesExceeded:
      return {SignalField::kRetriesExceeded};
    case Meaning::kDuplicateRequest:
      return {SignalField::kDuplicateRequest};
    case Meaning::kImpliedNakSeqErr:
      return {SignalField::kImpliedNakSeqErr};
    case Meaning::kAdaptiveRetrans:
      return {SignalField::kAdaptiveRetrans};
    case Meaning::kNone:
    case Meaning::kPfcPauseTransitions:
    case Meaning::kGlobalPauseFrames:
    case Meaning::kGlobalPauseDuration:
    case Meaning::kPhyPackets:
    case Meaning::kTxDiscardsPhy:
    case Meaning::kPriorityBytes:
    case Meaning::kRdmaPackets:
    case Meaning::kNetdevPackets:
    // A switch's queues and PFC watchdog are not port signals: queues are
    // not priorities, and the watchdog reports the partner's storm.
    case Meaning::kQueueBytes:
    case Meaning::kQueuePackets:
    case Meaning::kQueueDrops:
    case Meaning::kQueueEcnMarked:
    case Meaning::kPfcWatchdogStorms:
    case Meaning::kPfcWatchdogRestorations:
      return {};
  }
  return {};
}

// Larger of two signals, either of which may be absent.
double Max(double a, double b) {
  if (!Has(a)) return b;
  if (!Has(b)) return a;
  return std::max(a, b);
}
double Sum(double a, double b) {
  if (!Has(a)) return b;
  if (!Has(b)) return a;
  return a + b;
}
// The first signal present.
double First(double a, double b, double c) {
  return Has(a) ? a : (Has(b) ? b : c);
}

}  // namespace

SignalRef ClassifySeries(const SeriesMeta& m) {
  if (m.kind != v1::KIND_COUNTER) return {};
  const Meaning meaning = counters::FromWire(m.meaning);
  if (meaning != Meaning::kNone) {
    return FromMeaning(meaning, counters::FromWire(m.direction), m.priority);
  }
  // Agents before 0.2 gave meanings to ethtool statistics only: look the
  // other names up in the same table the agent uses now.
  counters::Subsystem subsystem;
  counters::Family family;
  if (!counters::FromWire(m.key.subsystem, &subsystem) ||
      subsystem == counters::Subsystem::kEthtool ||
      !counters::FamilyOf(subsystem, &family)) {
    return {};
  }
  const counters::CounterInfo info =
      counters::Classify(family, counters::Driver::kUnknown, m.key.name);
  if (info.kind != counters::Kind::kCounter) return {};
  return FromMeaning(info.meaning, info.direction, info.priority);
}

void PortAccumulator::Add(SignalRef ref, double v) {
  if (std::isnan(v)) return;
  analysis::PortSignals& s = s_;
  auto max_into = [v](double* field) { *field = Max(*field, v); };
  switch (ref.field) {
    case SignalField::kNone:
      return;
    case SignalField::kRdmaRxBytes:
      return max_into(&rdma_rx_);
    case SignalField::kRdmaTxBytes:
      return max_into(&rdma_tx_);
    case SignalField::kPhyRxBytes:
      return max_into(&phy_rx_);
    case SignalField::kPhyTxBytes:
      return max_into(&phy_tx_);
    case SignalField::kNetdevRxBytes:
      return max_into(&net_rx_);
    case SignalField::kNetdevTxBytes:
      return max_into(&net_tx_);
    case SignalField::kRxPauseSeconds:
      return max_into(&s.rx_pause_fraction[ref.priority]);
    case SignalField::kTxPauseSeconds:
      return max_into(&s.tx_pause_fraction[ref.priority]);
    case SignalField::kRxPauseFrames:
      return max_into(&s.rx_pause_frames[ref.priority]);
    case SignalField::kTxPauseFrames:
      return max_into(&s.tx_pause_frames[ref.priority]);
    case SignalField::kPauseStormWarnings:
      return max_into(&s.pause_storm_warnings);
    case SignalField::kPauseStormErrors:
      return max_into(&s.pause_storm_errors);
    case SignalField::kCnpSent:
      return max_into(&s.cnp_sent);
    case SignalField::kCnpHandled:
      return max_into(&s.cnp_handled);
    case SignalField::kEcnMarked:
      // The RDMA counter is one total; ethtool reports it per priority.
      if (ref.priority >= 0) {
        ecn_per_priority_ = Sum(ecn_per_priority_, v);
      } else {
        max_into(&s.ecn_marked);
      }
      return;
    case SignalField::kRxDiscards:
      return max_into(&s.rx_discards);
    case SignalField::kPriorityDiscards:
      priority_discards_ = Sum(priority_discards_, v);
      return;
    case SignalField::kRxOutOfBuffer:
      return max_into(&s.rx_out_of_buffer);
    case SignalField::kSymbolErrors:
      return max_into(&s.symbol_errors);
    case SignalField::kRxErrors:
      return max_into(&s.rx_errors);
    case SignalField::kCrcErrors:
      return max_into(&s.crc_errors);
    case SignalField::kPcsSymbolErrors:
      return max_into(&s.pcs_symbol_errors);
    case SignalField::kCorrectedBits:
      return max_into(&s.corrected_bits);
    case SignalField::kReceivedBits:
      return max_into(&s.received_bits);
    case SignalField::kLinkDowned:
      return max_into(&s.link_downed);
    case SignalField::kLinkErrorRecovery:
      return max_into(&s.link_error_recovery);
    case SignalField::kCarrierChanges:
      return max_into(&s.carrier_changes);
    case SignalField::kLinkDownEvents:
      return max_into(&s.link_down_events);
    case SignalField::kOutOfSequence:
      return max_into(&s.out_of_sequence);
    case SignalField::kPacketSeqErr:
      return max_into(&s.packet_seq_err);
    case SignalField::kLocalAckTimeoutErr:
      return max_into(&s.local_ack_timeout_err);
    case SignalField::kRnrNakRetryErr:
      return max_into(&s.rnr_nak_retry_err);
    case SignalField::kRetriesExceeded:
      return max_into(&s.retries_exceeded);
    case SignalField::kDuplicateRequest:
      return max_into(&s.duplicate_request);
    case SignalField::kImpliedNakSeqErr:
      return max_into(&s.implied_nak_seq_err);
    case SignalField::kAdaptiveRetrans:
      return max_into(&s.adaptive_retrans);
  }
}

analysis::PortSignals PortAccumulator::Finish() const {
  analysis::PortSignals s = s_;
  s.rx_bytes = First(rdma_rx_, phy_rx_, net_rx_);
  s.tx_bytes = First(rdma_tx_, phy_tx_, net_tx_);
  s.ecn_marked = Max(s.ecn_marked, ecn_per_priority_);
  s.rx_discards = Max(s.rx_discards, priority_discards_);
  return s;
}

}  // namespace fabricdiag::collector
