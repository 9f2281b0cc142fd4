#include "collector/runner/signal_map.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <string>

#include "analysis/signal_slots.h"
#include "counters/counter_table.h"
#include "counters/wire.h"

namespace fabricdiag::collector {
namespace {

using analysis::Has;

using counters::Direction;
using counters::Meaning;
using counters::Signal;
using counters::Source;

SignalRef FromMeaning(Meaning meaning, Direction direction, int priority) {
  const counters::MeaningSpec& spec = counters::SpecOf(meaning);
  Signal signal = spec.signal;
  if (spec.tx_signal != Signal::kNone) {
    signal = direction == Direction::kRx   ? spec.signal
             : direction == Direction::kTx ? spec.tx_signal
                                           : Signal::kNone;
  }
  if (signal == Signal::kNone) return {};
  const int8_t prio = priority >= 0 && priority < analysis::kPriorities
                          ? static_cast<int8_t>(priority)
                          : -1;
  if (counters::IsPerPriority(signal) && prio < 0) return {};
  return {signal, prio, spec.source};
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

PortAccumulator::ScalarSlots PortAccumulator::AbsentSlots() {
  ScalarSlots slots;
  slots.fill(analysis::kAbsent);
  return slots;
}

void PortAccumulator::Add(SignalRef ref, double v) {
  if (std::isnan(v) || ref.signal == Signal::kNone) return;
  const int slot = static_cast<int>(ref.signal);
  double* into;
  if (ref.source != Source::kNone) {
    into = &traffic_[ref.signal == Signal::kTxBytes ? 1 : 0]
                    [static_cast<size_t>(ref.source) - 1];
  } else if (counters::IsPerPriority(ref.signal)) {
    into = &analysis::SlotOf(s_, slot + ref.priority);
  } else if (ref.priority >= 0) {
    // The RDMA ECN counter is one total; ethtool reports it per priority.
    double& sum = per_priority_sum_[static_cast<size_t>(slot)];
    sum = Sum(sum, v);
    return;
  } else {
    into = &analysis::SlotOf(s_, slot);
  }
  *into = Max(*into, v);
}

analysis::PortSignals PortAccumulator::Finish() const {
  analysis::PortSignals s = s_;
  // The best source present: RDMA, else the physical port, else netdev.
  for (size_t dir = 0; dir < 2; ++dir) {
    double& traffic = dir == 0 ? s.rx_bytes : s.tx_bytes;
    for (auto it = traffic_[dir].rbegin(); it != traffic_[dir].rend(); ++it) {
      if (Has(*it)) {
        traffic = *it;
        break;
      }
    }
  }
  for (int slot = 0; slot < counters::kScalarSignalSlots; ++slot) {
    const double sum = per_priority_sum_[static_cast<size_t>(slot)];
    if (Has(sum))
      analysis::SlotOf(s, slot) = Max(analysis::SlotOf(s, slot), sum);
  }
  return s;
}

}  // namespace fabricdiag::collector
