// Which analysis signal a counter series feeds, and how several counters of
// one port combine into it.
//
// Drivers spell the same thing differently: congestion notifications are
// mlx5 `np_cnp_sent`, irdma `cnpSent` or bnxt_re `np_cnp_pkts`; symbol
// errors are the IB PMA `symbol_error` and mlx5 ethtool `rx_symbol_err_phy`.
// The agent gives every counter its Meaning (with direction and priority)
// from the counter table (counters/counter_table.h); this file maps only
// meanings onto analysis::PortSignals fields. A series without a meaning
// from an agent older than 0.2 is looked up in the same table by name.
//
// Combining: traffic takes the best source (RDMA port counters, which count
// RoCE, over ethtool *_bytes_phy over netdev statistics, which miss RoCE on
// mlx5); per-priority ECN marks and discards add up; every other signal
// reported by two counters of one port (IB `symbol_error` and ethtool
// `rx_symbol_err_phy` count the same events) takes the larger.
//
//   SignalRef ref = ClassifySeries(meta);          // once per schema
//   PortAccumulator acc;
//   acc.Add(ref, mean_rate);                       // every pass
//   analysis::PortSignals s = acc.Finish();
//
// Pure; thread-compatible.
#pragma once

#include <cstdint>

#include "analysis/fabric_view.h"
#include "collector/store/node_series.h"

namespace fabricdiag::collector {

enum class SignalField : uint8_t {
  kNone = 0,
  kRdmaRxBytes,
  kRdmaTxBytes,
  kPhyRxBytes,
  kPhyTxBytes,
  kNetdevRxBytes,
  kNetdevTxBytes,
  kRxPauseSeconds,  // per priority
  kTxPauseSeconds,
  kRxPauseFrames,
  kTxPauseFrames,
  kPauseStormWarnings,
  kPauseStormErrors,
  kCnpSent,
  kCnpHandled,
  kEcnMarked,  // summed over priorities
  kRxDiscards,
  kPriorityDiscards,  // summed over priorities
  kRxOutOfBuffer,
  kSymbolErrors,
  kRxErrors,
  kCrcErrors,
  kPcsSymbolErrors,
  kCorrectedBits,
  kReceivedBits,
  kLinkDowned,
  kLinkErrorRecovery,
  kCarrierChanges,
  kLinkDownEvents,
  kOutOfSequence,
  kPacketSeqErr,
  kLocalAckTimeoutErr,
  kRnrNakRetryErr,
  kRetriesExceeded,
  kDuplicateRequest,
  kImpliedNakSeqErr,
  kAdaptiveRetrans,
};

struct SignalRef {
  SignalField field = SignalField::kNone;
  int8_t priority = -1;  // 0..7 for per-priority fields
};

// The signal a series feeds; kNone when the analyzers do not use it (or a
// per-priority series without a valid priority).
SignalRef ClassifySeries(const SeriesMeta& meta);

// Folds the mean rates of one port's series into PortSignals.
class PortAccumulator {
 public:
  // Ignores NaN values and kNone.
  void Add(SignalRef ref, double value);
  // The combined signals; link fields are left at their defaults.
  analysis::PortSignals Finish() const;

 private:
  analysis::PortSignals s_;
  double rdma_rx_ = analysis::kAbsent, rdma_tx_ = analysis::kAbsent;
  double phy_rx_ = analysis::kAbsent, phy_tx_ = analysis::kAbsent;
  double net_rx_ = analysis::kAbsent, net_tx_ = analysis::kAbsent;
  double ecn_per_priority_ = analysis::kAbsent;
  double priority_discards_ = analysis::kAbsent;
};

}  // namespace fabricdiag::collector
