#include "analysis/shard_signals.h"

#include <array>
#include <cstddef>

#include "analysis/signal_slots.h"
#include "counters/meanings.h"

namespace fabricdiag::analysis {
namespace {

using counters::Signal;

constexpr int SlotNumber(Signal s) { return static_cast<int>(s); }

// The slots of `scalars` and every priority of `per_priority`, ascending
// when both lists are.
template <size_t S, size_t P>
constexpr std::array<int, S + P * kPriorities> Slots(
    const Signal (&scalars)[S], const Signal (&per_priority)[P]) {
  std::array<int, S + P * kPriorities> out{};
  size_t n = 0;
  for (Signal s : scalars) out[n++] = SlotNumber(s);
  for (Signal s : per_priority) {
    for (int prio = 0; prio < kPriorities; ++prio) {
      out[n++] = SlotNumber(s) + prio;
    }
  }
  return out;
}

// hot_expert_incast: a NIC's receive against its group's, link rate, CNPs
// sent, ECN marks, receive discards and the pause it transmits;
// straggler_nic: traffic both ways against the link's rates;
// tp_cross_node: transmit against the link rate.
constexpr Signal kJobScalars[] = {Signal::kRxBytes,     Signal::kTxBytes,
                                  Signal::kCnpSent,     Signal::kEcnMarked,
                                  Signal::kRxDiscards,  Signal::kLinkRate,
                                  Signal::kExpectedRate};
constexpr Signal kJobPerPriority[] = {Signal::kTxPauseFraction,
                                      Signal::kTxPauseFrames};
constexpr auto kJobSlots = Slots(kJobScalars, kJobPerPriority);

// ecmp_imbalance: uplinks' transmit against their rate, CNPs handled;
// pfc_storm: pause both ways per priority, the NICs' pause watchdogs,
// traffic against the link rate.
constexpr Signal kSwitchScalars[] = {
    Signal::kRxBytes,          Signal::kTxBytes,    Signal::kPauseStormWarnings,
    Signal::kPauseStormErrors, Signal::kCnpHandled, Signal::kLinkRate};
constexpr Signal kSwitchPerPriority[] = {
    Signal::kRxPauseFraction, Signal::kTxPauseFraction, Signal::kRxPauseFrames,
    Signal::kTxPauseFrames};
constexpr auto kSwitchSlots = Slots(kSwitchScalars, kSwitchPerPriority);

constexpr bool Ascending(const int* begin, const int* end) {
  for (const int* p = begin; p + 1 < end; ++p) {
    if (*p >= *(p + 1)) return false;
  }
  return true;
}
static_assert(Ascending(kJobSlots.data(), kJobSlots.data() + kJobSlots.size()));
static_assert(Ascending(kSwitchSlots.data(),
                        kSwitchSlots.data() + kSwitchSlots.size()));
static_assert(kSwitchSlots.back() < counters::kSignalSlots);

}  // namespace

absl::Span<const int> ShardSlots(ShardKind kind) {
  switch (kind) {
    case ShardKind::kJobs:
      return kJobSlots;
    case ShardKind::kSwitches:
      return kSwitchSlots;
  }
  return {};
}

void KeepOnly(absl::Span<const int> slots, PortSignals* s) {
  const auto* kept = slots.begin();
  for (int slot = 0; slot < counters::kSignalSlots; ++slot) {
    if (kept != slots.end() && *kept == slot) {
      ++kept;
      continue;
    }
    const bool rate = slot == SlotNumber(Signal::kLinkRate) ||
                      slot == SlotNumber(Signal::kExpectedRate);
    analysis::SlotOf(*s, slot) = rate ? 0 : kAbsent;
  }
}

}  // namespace fabricdiag::analysis
