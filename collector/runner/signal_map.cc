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

PortAccumulator::Fold PortAccumulator::FoldOf(SignalRef ref) {
  if (ref.signal == Signal::kNone) return {};
  const int slot = static_cast<int>(ref.signal);
  if (ref.source != Source::kNone) {
    const int direction = ref.signal == Signal::kTxBytes ? 1 : 0;
    return {Fold::Op::kTraffic,
            static_cast<uint16_t>(direction * 3 + static_cast<int>(ref.source) -
                                  1)};
  }
  if (counters::IsPerPriority(ref.signal)) {
    return {Fold::Op::kMax,
            static_cast<uint16_t>(analysis::SlotOffset(slot + ref.priority))};
  }
  if (ref.priority >= 0) {
    return {Fold::Op::kPrioritySum, static_cast<uint16_t>(slot)};
  }
  return {Fold::Op::kMax, static_cast<uint16_t>(analysis::SlotOffset(slot))};
}

analysis::PortSignals PortAccumulator::Finish() const {
  analysis::PortSignals s = s_;
  FinishInto(&s);
  return s;
}

void PortAccumulator::Reset() {
  traffic_.fill(analysis::kAbsent);
  if (summed_) per_priority_sum_.fill(analysis::kAbsent);
  summed_ = false;
}

void PortAccumulator::FinishInto(analysis::PortSignals* into) const {
  // The best source present: RDMA, else the physical port, else netdev.
  for (size_t dir = 0; dir < 2; ++dir) {
    double& traffic = dir == 0 ? into->rx_bytes : into->tx_bytes;
    for (size_t source = 3; source-- > 0;) {
      if (Has(traffic_[dir * 3 + source])) {
        traffic = traffic_[dir * 3 + source];
        break;
      }
    }
  }
  if (!summed_) return;
  for (int slot = 0; slot < counters::kScalarSignalSlots; ++slot) {
    const double sum = per_priority_sum_[static_cast<size_t>(slot)];
    if (!Has(sum)) continue;
    double& total = analysis::SlotOf(*into, slot);
    total = Max(total, sum);
  }
}

}  // namespace fabricdiag::collector
