#include "counters/wire.h"

namespace fabricdiag::counters {
namespace {

// The vocabulary mirrors the wire enums number for number.
static_assert(static_cast<int>(Subsystem::kRdmaPortCounters) ==
              v1::SUBSYSTEM_RDMA_PORT_COUNTERS);
static_assert(static_cast<int>(Subsystem::kVerbs) == v1::SUBSYSTEM_VERBS);
static_assert(static_cast<int>(Subsystem::kGnmi) == v1::SUBSYSTEM_GNMI);
static_assert(v1::Subsystem_MAX == v1::SUBSYSTEM_GNMI,
              "add the new subsystem to counters/vocabulary.h");
static_assert(static_cast<int>(Kind::kCounter) == v1::KIND_COUNTER);
static_assert(static_cast<int>(Kind::kGauge) == v1::KIND_GAUGE);
static_assert(static_cast<int>(Direction::kRx) == v1::DIRECTION_RX);
static_assert(static_cast<int>(Direction::kTx) == v1::DIRECTION_TX);
static_assert(v1::Meaning_MAX + 1 == kMeaningCount,
              "add the new meaning to counters/vocabulary.h");
static_assert(static_cast<int>(Meaning::kLinkDownEvents) ==
              v1::MEANING_LINK_DOWN_EVENTS);
static_assert(static_cast<int>(Meaning::kRdmaBytes) == v1::MEANING_RDMA_BYTES);
static_assert(static_cast<int>(Meaning::kCarrierChanges) ==
              v1::MEANING_CARRIER_CHANGES);
static_assert(static_cast<int>(Meaning::kCnpSent) == v1::MEANING_CNP_SENT);
static_assert(static_cast<int>(Meaning::kAdaptiveRetrans) ==
              v1::MEANING_ADAPTIVE_RETRANS);
static_assert(static_cast<int>(Meaning::kQueueBytes) ==
              v1::MEANING_QUEUE_BYTES);
static_assert(static_cast<int>(Meaning::kQueueEcnMarked) ==
              v1::MEANING_QUEUE_ECN_MARKED);
static_assert(static_cast<int>(Meaning::kPfcWatchdogRestorations) ==
              v1::MEANING_PFC_WATCHDOG_RESTORATIONS);

}  // namespace

v1::Subsystem ToWire(Subsystem s) { return static_cast<v1::Subsystem>(s); }
v1::Kind ToWire(Kind k) { return static_cast<v1::Kind>(k); }
v1::Meaning ToWire(Meaning m) { return static_cast<v1::Meaning>(m); }
v1::Direction ToWire(Direction d) { return static_cast<v1::Direction>(d); }

Meaning FromWire(v1::Meaning m) {
  const int v = static_cast<int>(m);
  return v > 0 && v < kMeaningCount ? static_cast<Meaning>(v) : Meaning::kNone;
}

Direction FromWire(v1::Direction d) {
  return d == v1::DIRECTION_RX   ? Direction::kRx
         : d == v1::DIRECTION_TX ? Direction::kTx
                                 : Direction::kNone;
}

bool FromWire(v1::Subsystem wire, Subsystem* s) {
  const int v = static_cast<int>(wire);
  if (v < v1::SUBSYSTEM_RDMA_PORT_COUNTERS || v > v1::Subsystem_MAX) {
    return false;
  }
  *s = static_cast<Subsystem>(v);
  return true;
}

}  // namespace fabricdiag::counters
