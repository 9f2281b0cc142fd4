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
// or, folding many ports' series in place, PortAccumulator::FoldOf(ref) once
// per schema and Reset(), Add(fold, ...), FinishInto() per port.
//
// Pure; thread-compatible.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "analysis/fabric_view.h"
#include "analysis/signal_slots.h"
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
  // How a series of one SignalRef folds in: Add()'s decisions, taken once
  // per series (the view builder keeps one per series it maps, and folds
  // ~200 of them into each node's ports twice a pass).
  struct Fold {
    enum class Op : uint8_t { kNone, kMax, kTraffic, kPrioritySum };
    Op op = Op::kNone;
    // kMax: the slot's analysis::SlotOffset(); kTraffic: direction (rx 0,
    // tx 1) * 3 + source - 1; kPrioritySum: the scalar slot.
    uint16_t at = 0;
  };
  static Fold FoldOf(SignalRef ref);

  // Ignores NaN values and kNone.
  void Add(SignalRef ref, double value) { Add(FoldOf(ref), value, &s_); }
  // The combined signals; link fields are left at their defaults.
  analysis::PortSignals Finish() const;

  // The same in place, over signals the caller holds (a view's port, which
  // starts as a default PortSignals), with the folds taken ahead:
  //   acc.Reset();
  //   for (...) acc.Add(fold, mean, &port.s);
  //   acc.FinishInto(&port.s);
  void Reset();
  void Add(Fold fold, double value, analysis::PortSignals* into);
  void FinishInto(analysis::PortSignals* into) const;

 private:
  using ScalarSlots =
      std::array<double, static_cast<size_t>(counters::kScalarSignalSlots)>;
  static ScalarSlots AbsentSlots();
  // Larger, and sum, of two signals, either of which may be absent.
  static double Max(double a, double b) {
    if (!analysis::Has(a)) return b;
    if (!analysis::Has(b)) return a;
    return std::max(a, b);
  }
  static double Sum(double a, double b) {
    if (!analysis::Has(a)) return b;
    if (!analysis::Has(b)) return a;
    return a + b;
  }

  analysis::PortSignals s_;  // Add(SignalRef)'s
  // rx_bytes [0..2] and tx_bytes [3..5] per source (index: Source - 1).
  std::array<double, 6> traffic_ = {analysis::kAbsent, analysis::kAbsent,
                                    analysis::kAbsent, analysis::kAbsent,
                                    analysis::kAbsent, analysis::kAbsent};
  // Per slot of a signal without priorities: the counters that report it
  // per priority, summed (`summed_`: any since the last Reset()).
  ScalarSlots per_priority_sum_ = AbsentSlots();
  bool summed_ = false;
};

inline void PortAccumulator::Add(Fold fold, double value,
                                 analysis::PortSignals* into) {
  if (std::isnan(value)) return;
  switch (fold.op) {
    case Fold::Op::kNone:
      return;
    case Fold::Op::kMax: {
      double& slot = analysis::AtSlotOffset(*into, fold.at);
      slot = Max(slot, value);
      return;
    }
    case Fold::Op::kTraffic: {
      double& source = traffic_[fold.at];
      source = Max(source, value);
      return;
    }
    case Fold::Op::kPrioritySum: {
      // The RDMA ECN counter is one total; ethtool reports it per priority.
      double& sum = per_priority_sum_[fold.at];
      sum = Sum(sum, value);
      summed_ = true;
      return;
    }
  }
}

}  // namespace fabricdiag::collector
