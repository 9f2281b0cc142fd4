#include "sim/port_counters.h"

#include <cmath>

namespace fabricdiag::sim {
namespace {

using counters::Direction;
using counters::Family;
using counters::Meaning;

// Frames per second that keep a priority paused all the time: one per half
// quantum (65535 x 512 bit times at 400 Gb/s = 83.9 us).
constexpr double kFramesPerPausedSecond = 1.0 / 42e-6;
constexpr double kMicrosPerSecond = 1e6;

// Counters accumulate in 64 bits; the width a driver keeps is applied when
// a file is written (sysfs_files.cc), from the counter table.
void Add(PortCounters* c, Counter k, uint64_t n) { c->value[k] += n; }

}  // namespace

void SetPauseFraction(PortRates* rates, Side side, int p, double fraction) {
  if (p < 0 || p >= kPriorities) return;
  fraction = std::fmin(std::fmax(fraction, 0.0), 1.0);
  const bool rx = side == Side::kRx;
  rates->per_second[(rx ? kRxPauseMicros : kTxPauseMicros) + p] =
      fraction * kMicrosPerSecond;
  rates->per_second[(rx ? kRxPauseFrames : kTxPauseFrames) + p] =
      fraction * kFramesPerPausedSecond;
  // Each pause episode ends with one XOFF -> XON transition; short healthy
  // episodes are a few frames long, a storm is one long episode per stall.
  if (rx) {
    rates->per_second[kRxPauseTransitions + p] =
        fraction < 0.5 ? fraction * kFramesPerPausedSecond / 4 : 5;
  }
}

double PauseFraction(const PortRates& rates, Side side, int p) {
  if (p < 0 || p >= kPriorities) return 0;
  return rates
             .per_second[(side == Side::kRx ? kRxPauseMicros : kTxPauseMicros) +
                         p] /
         kMicrosPerSecond;
}

void Accumulate(const PortRates& rates, double seconds,
                PortCounters* counters) {
  if (rates.present && !counters->present) {
    *counters = PortCounters();  // driver reload: every counter from zero
  }
  counters->present = rates.present;
  counters->speed_gbps = rates.speed_gbps;
  if (!rates.present) return;
  if (std::isfinite(seconds) && seconds > 0) {
    for (int k = 0; k < kNumCounters; ++k) {
      const double r = rates.per_second[k];
      if (!std::isfinite(r) || r <= 0) continue;
      double total = r * seconds + counters->carry[k];
      double whole = std::floor(total);
      counters->carry[k] = total - whole;
      // 2^63 per tick is far beyond any rate; the cast stays defined.
      if (whole > 9.2e18) whole = 9.2e18;
      Add(counters, static_cast<Counter>(k), static_cast<uint64_t>(whole));
    }
  }
  if (counters->link_up && !rates.link_up) {
    Add(counters, kLinkDowned, 1);
    Add(counters, kLinkDownEvents, 1);
    Add(counters, kCarrierChanges, 1);
  } else if (!counters->link_up && rates.link_up) {
    Add(counters, kCarrierChanges, 1);
  }
  counters->link_up = rates.link_up;
}

std::optional<Counter> CounterOf(Family family, Meaning meaning,
                                 Direction direction, bool switch_port) {
  const bool tx = direction == Direction::kTx;
  switch (meaning) {
    case Meaning::kRdmaBytes:
    case Meaning::kPhyBytes:
      return tx ? kTxBytes : kRxBytes;
    case Meaning::kRdmaPackets:
    case Meaning::kPhyPackets:
      return tx ? kTxPackets : kRxPackets;
    case Meaning::kNetdevBytes:
      if (switch_port) return tx ? kTxBytes : kRxBytes;
      return tx ? kStackTxBytes : kStackRxBytes;
    case Meaning::kNetdevPackets:
      if (switch_port) return tx ? kTxPackets : kRxPackets;
      return tx ? kStackTxPackets : kStackRxPackets;
    case Meaning::kSymbolErrors:
      return family == Family::kIbPma ? kSymbolErrors : kSymbolErrorsPhy;
    case Meaning::kRxErrors:
      // IB port_rcv_errors; mlx5e_get_stats sums FCS errors into rx_errors.
      return family == Family::kIbPma ? kRcvErrors : kCrcErrors;
    case Meaning::kCrcErrors:
      return kCrcErrors;
    case Meaning::kTxDiscardsPhy:
      return kXmitDiscards;
    case Meaning::kRxDiscardsPhy:
      return kRxDiscardsPhy;
    case Meaning::kRxOutOfBuffer:
      return kRxOutOfBuffer;
    case Meaning::kPcsSymbolErrors:
      return kPcsSymbolErrors;
    case Meaning::kCorrectedBits:
      return kCorrectedBits;
    case Meaning::kReceivedBits:
      return kRxBits;
    case Meaning::kLinkErrorRecovery:
      return kLinkErrorRecovery;
    case Meaning::kLinkDowned:
      return kLinkDowned;
    case Meaning::kLinkDownEvents:
      return kLinkDownEvents;
    case Meaning::kCarrierChanges:
      return kCarrierChanges;
    case Meaning::kPfcPauseFrames:
      return tx ? kTxPauseFrames : kRxPauseFrames;
    case Meaning::kPfcPauseDuration:
      return tx ? kTxPauseMicros : kRxPauseMicros;
    case Meaning::kPfcPauseTransitions:
      return tx ? std::nullopt : std::optional<Counter>(kRxPauseTransitions);
    case Meaning::kPriorityDiscards:
      return kRxPrioDiscards;
    case Meaning::kPauseStormWarning:
      return kPauseStormWarning;
    case Meaning::kPauseStormError:
      return kPauseStormError;
    case Meaning::kCnpSent:
      return kNpCnpSent;
    case Meaning::kCnpHandled:
      return kRpCnpHandled;
    case Meaning::kEcnMarked:
      // The RDMA total; mlx5's per-priority marks are not simulated.
      return family == Family::kRdmaHw ? std::optional<Counter>(kNpEcnMarked)
                                       : std::nullopt;
    case Meaning::kOutOfSequence:
      return kOutOfSequence;
    case Meaning::kPacketSeqErr:
      return kPacketSeqErr;
    case Meaning::kLocalAckTimeout:
      return kLocalAckTimeoutErr;
    case Meaning::kRnrNakRetry:
      return kRnrNakRetryErr;
    case Meaning::kDuplicateRequest:
      return kDuplicateRequest;
    case Meaning::kImpliedNakSeqErr:
      return kImpliedNakSeqErr;
    case Meaning::kAdaptiveRetrans:
      return kRoceAdpRetrans;
    case Meaning::kRetriesExceeded:
      return kReqTransportRetriesExceeded;
    case Meaning::kNone:
    case Meaning::kGlobalPauseFrames:
    case Meaning::kGlobalPauseDuration:
    case Meaning::kPriorityBytes:
    case Meaning::kQueueBytes:  // queues are not simulated
    case Meaning::kQueuePackets:
    case Meaning::kQueueDrops:
    case Meaning::kQueueEcnMarked:
    case Meaning::kPfcWatchdogStorms:
    case Meaning::kPfcWatchdogRestorations:
      return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace fabricdiag::sim
