// PortSignals by slot: the numbering of counters::Signal (counters/meanings.h)
// over PortSignals' fields, one slot per signal and one per priority of a
// per-priority signal. The signal map folds counters into PortSignals by
// slot, and the cluster feature wire writes and reads them by slot, so a new
// signal is its field, its counters::Signal and its row in signal_slots.cc
// (static_asserts there fail until the three agree).
//
//   for (int slot = 0; slot < counters::kSignalSlots; ++slot) {
//     out.push_back(SlotOf(signals, slot));
//   }
//
// Pure.
#pragma once

#include <cstddef>
#include <type_traits>

#include "analysis/fabric_view.h"

namespace fabricdiag::analysis {

// The value of slot `slot` (0 <= slot < counters::kSignalSlots) in `s`.
double& SlotOf(PortSignals& s, int slot);
double SlotOf(const PortSignals& s, int slot);

// Where slot `slot` lies in a PortSignals, in bytes from its start: SlotOf()
// decided once, for code that folds many values into many ports by slot
// (collector/runner/signal_map.h).
size_t SlotOffset(int slot);
// The slot at `offset` (a SlotOffset()) of `s`.
static_assert(std::is_standard_layout_v<PortSignals>,
              "SlotOffset() needs PortSignals' fields at fixed offsets");
inline double& AtSlotOffset(PortSignals& s, size_t offset) {
  return *reinterpret_cast<double*>(reinterpret_cast<char*>(&s) + offset);
}

}  // namespace fabricdiag::analysis
