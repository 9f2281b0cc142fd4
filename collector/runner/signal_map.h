// Which analysis signal a counter series feeds, and how several counters of
// one port combine into it.
//
// Drivers spell the same thing differently: congestion notifications are
// mlx5 `np_cnp_sent`, irdma `cnpSent` or bnxt_re `np_cnp_pkts`; symbol
// errors are the IB PMA `symbol_error` and mlx5 ethtool `rx_symbol_err_phy`.
// The agent gives every counter its Meaning (with direction and priority)
// from the counter table (counters/counter_table.h); the signal a meaning
// feeds, and its source rank for traffic, are its row in the meaning table
// (counters/meanings.h). A series without a meaning from an agent older
// than 0.2 is looked up in the counter table by name.
//
// Combining: traffic takes the best source (RDMA port counters, which count
// RoCE, over ethtool *_bytes_phy over netdev statistics, which miss RoCE on
// mlx5); a signal without priorities reported per priority (ECN marks,
// discards) is the sum over the priorities, or a total reported besides
// when that is larger; every other signal reported by two counters of one
// port (IB `symbol_error` and ethtool `rx_symbol_err_phy` count the same
// events) takes the larger.
//
//   SignalRef ref = ClassifySeries(meta);          // once per schema
//   PortAccumulator acc;
//   acc.Add(ref, mean_rate);                       // every pass
//   analysis::PortSignals s = acc.Finish();
//
// Pure; thread-compatible.
#pragma once

#include <array>
#include <cstdint>

#include "analysis/fabric_view.h"
#include "collector/store/node_series.h"
#include "counters/meanings.h"

namespace fabricdiag::collector {

struct SignalRef {
  counters::Signal signal = counters::Signal::kNone;
  // 0..7 for per-priority signals and for counters reported per priority;
  // else -1.
  int8_t priority = -1;
  // For rx_bytes and tx_bytes: which counter it comes from.
  counters::Source source = counters::Source::kNone;
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
  using ScalarSlots =
      std::array<double, static_cast<size_t>(counters::kScalarSignalSlots)>;
  static ScalarSlots AbsentSlots();

  analysis::PortSignals s_;
  // rx_bytes [0] and tx_bytes [1] per source (index: Source - 1).
  std::array<std::array<double, 3>, 2> traffic_ = {
      {{analysis::kAbsent, analysis::kAbsent, analysis::kAbsent},
       {analysis::kAbsent, analysis::kAbsent, analysis::kAbsent}}};
  // Per slot of a signal without priorities: the counters that report it
  // per priority, summed.
  ScalarSlots per_priority_sum_ = AbsentSlots();
};

}  // namespace fabricdiag::collector
