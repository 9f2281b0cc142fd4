#include "collector/signal_map.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"

namespace fabricdiag::collector {
namespace {

using analysis::Has;

// RDMA counter names (counters/, counters_ext/, hw_counters/), as
// COUNTERS.md lists them per driver.
const absl::flat_hash_map<absl::string_view, SignalField>& RdmaNames() {
  static const auto* const kNames =
      new absl::flat_hash_map<absl::string_view, SignalField>{
          // IB PMA PortCounters / PortCountersExtended (x4 applied by the
          // agent's scale).
          {"port_rcv_data", SignalField::kRdmaRxBytes},
          {"port_xmit_data", SignalField::kRdmaTxBytes},
          {"port_rcv_data_64", SignalField::kRdmaRxBytes},
          {"port_xmit_data_64", SignalField::kRdmaTxBytes},
          {"symbol_error", SignalField::kSymbolErrors},
          {"port_rcv_errors", SignalField::kRxErrors},
          {"link_downed", SignalField::kLinkDowned},
          {"link_error_recovery", SignalField::kLinkErrorRecovery},
          // RoCE congestion control: mlx5, bnxt_re (old and new names).
          {"np_cnp_sent", SignalField::kCnpSent},
          {"np_cnp_pkts", SignalField::kCnpSent},
          {"cnpSent", SignalField::kCnpSent},
          {"tx_cnp_pkts", SignalField::kCnpSent},
          {"rp_cnp_handled", SignalField::kCnpHandled},
          {"cnpHandled", SignalField::kCnpHandled},
          {"rx_cnp_pkts", SignalField::kCnpHandled},
          {"np_ecn_marked_roce_packets", SignalField::kEcnMarked},
          {"rx_ecn_marked_pkts", SignalField::kEcnMarked},
          {"RxECNMrkd", SignalField::kEcnMarked},
          {"out_of_buffer", SignalField::kRxOutOfBuffer},
          // Transport retransmission signals: mlx5, bnxt_re, rxe.
          {"out_of_sequence", SignalField::kOutOfSequence},
          {"out_of_seq_request", SignalField::kOutOfSequence},
          {"packet_seq_err", SignalField::kPacketSeqErr},
          {"seq_err_naks_rcvd", SignalField::kPacketSeqErr},
          {"rcvd_seq_err", SignalField::kPacketSeqErr},
          {"local_ack_timeout_err", SignalField::kLocalAckTimeoutErr},
          {"to_retransmits", SignalField::kLocalAckTimeoutErr},
          {"rnr_nak_retry_err", SignalField::kRnrNakRetryErr},
          {"rnr_naks_rcvd", SignalField::kRnrNakRetryErr},
          {"rcvd_rnr_err", SignalField::kRnrNakRetryErr},
          {"req_transport_retries_exceeded", SignalField::kRetriesExceeded},
          {"req_rnr_retries_exceeded", SignalField::kRetriesExceeded},
          {"max_retry_exceeded", SignalField::kRetriesExceeded},
          {"retry_exceeded_err", SignalField::kRetriesExceeded},
          {"retry_rnr_exceeded_err", SignalField::kRetriesExceeded},
          {"duplicate_request", SignalField::kDuplicateRequest},
          {"implied_nak_seq_err", SignalField::kImpliedNakSeqErr},
          {"roce_adp_retrans", SignalField::kAdaptiveRetrans},
          {"roce_adp_retrans_to", SignalField::kAdaptiveRetrans},
      };
  return *kNames;
}

SignalRef FromMeaning(const SeriesMeta& m) {
  const bool rx = m.direction == v1::DIRECTION_RX;
  const bool tx = m.direction == v1::DIRECTION_TX;
  const int8_t prio = m.priority >= 0 && m.priority < analysis::kPriorities
                          ? static_cast<int8_t>(m.priority)
                          : -1;
  switch (m.meaning) {
    case v1::MEANING_PFC_PAUSE_DURATION:
      if (prio < 0 || (!rx && !tx)) return {};
      return {rx ? SignalField::kRxPauseSeconds : SignalField::kTxPauseSeconds,
              prio};
    case v1::MEANING_PFC_PAUSE_FRAMES:
      if (prio < 0 || (!rx && !tx)) return {};
      return {rx ? SignalField::kRxPauseFrames : SignalField::kTxPauseFrames,
              prio};
    case v1::MEANING_PAUSE_STORM_WARNING:
      return {SignalField::kPauseStormWarnings};
    case v1::MEANING_PAUSE_STORM_ERROR:
      return {SignalField::kPauseStormErrors};
    case v1::MEANING_PHY_BYTES:
      if (rx) return {SignalField::kPhyRxBytes};
      if (tx) return {SignalField::kPhyTxBytes};
      return {};
    case v1::MEANING_RX_DISCARDS_PHY:
      return {SignalField::kRxDiscards};
    case v1::MEANING_PRIORITY_DISCARDS:
      return {SignalField::kPriorityDiscards};
    case v1::MEANING_RX_OUT_OF_BUFFER:
      return {SignalField::kRxOutOfBuffer};
    case v1::MEANING_ECN_MARKED:
      return {SignalField::kEcnMarked, prio};
    case v1::MEANING_CRC_ERRORS:
      return {SignalField::kCrcErrors};
    case v1::MEANING_SYMBOL_ERRORS:
      return {SignalField::kSymbolErrors};
    case v1::MEANING_PCS_SYMBOL_ERRORS:
      return {SignalField::kPcsSymbolErrors};
    case v1::MEANING_CORRECTED_BITS:
      return {SignalField::kCorrectedBits};
    case v1::MEANING_RECEIVED_BITS:
      return {SignalField::kReceivedBits};
    case v1::MEANING_LINK_DOWN_EVENTS:
      return {SignalField::kLinkDownEvents};
    default:
      return {};
  }
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
  switch (m.key.subsystem) {
    case v1::SUBSYSTEM_RDMA_PORT_COUNTERS:
    case v1::SUBSYSTEM_RDMA_PORT_COUNTERS_EXT:
    case v1::SUBSYSTEM_RDMA_PORT_HW_COUNTERS:
    case v1::SUBSYSTEM_RDMA_DEVICE_HW_COUNTERS: {
      auto it = RdmaNames().find(m.key.name);
      if (it == RdmaNames().end()) return {};
      return {it->second};
    }
    case v1::SUBSYSTEM_ETHTOOL:
      return FromMeaning(m);
    case v1::SUBSYSTEM_NETDEV_STATISTICS:
      if (m.key.name == "rx_bytes") return {SignalField::kNetdevRxBytes};
      if (m.key.name == "tx_bytes") return {SignalField::kNetdevTxBytes};
      if (m.key.name == "rx_errors") return {SignalField::kRxErrors};
      if (m.key.name == "rx_crc_errors") return {SignalField::kCrcErrors};
      return {};
    case v1::SUBSYSTEM_NETDEV_ATTRIBUTE:
      if (m.key.name == "carrier_changes") {
        return {SignalField::kCarrierChanges};
      }
      return {};
    default:
      return {};
  }
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
