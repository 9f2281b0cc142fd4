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

#include "analysis/fabric_view.h"

namespace fabricdiag::analysis {

// The value of slot `slot` (0 <= slot < counters::kSignalSlots) in `s`.
double& SlotOf(PortSignals& s, int slot);
double SlotOf(const PortSignals& s, int slot);

}  // namespace fabricdiag::analysis
