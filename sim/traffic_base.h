// The healthy traffic of every simulated NIC, from the declared layouts'
// traffic models (analysis/traffic_model.h): what each NIC sends and
// receives per training step, split into the part that flows during compute
// (TP when it crosses nodes, CP, PP chain, EP all-to-all) and the gradient
// all-reduce burst (DP, DP-CP, EDP) at the end of each step.
//
// Step time: the scenario's step_seconds, else per layout max(1 s, 1.25 x
// the model's serial communication time), so that a step's traffic fits the
// NIC rate. A NIC of no layout, or of a layout without a usable model
// section, gets kDefaultNicBytesPerSecond each way, flat.
//
// EP routing is never uniform: each NIC's EP receive share gets a fixed,
// seeded skew in [0.7, 1.3] (kEpSkew).
//
//   ASSIGN_OR_RETURN(TrafficBase base, TrafficBase::Build(fabric, 0.0, seed));
//   double rx = base.nic(3).MeanRxBytesPerSecond();
//   double avg = base.nic(3).RxBytesPerSecondOver(t, dt);   // burst-aware
//
// Pure: no I/O, no clock. Immutable once built.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "sim/fabric.h"

namespace fabricdiag::sim {

// ~10 GB/s per NIC each way when nothing better is known (a busy 400G NIC).
inline constexpr double kDefaultNicBytesPerSecond = 10e9;
// EP receive skew of a NIC: mean x U(1 - kEpSkew, 1 + kEpSkew).
inline constexpr double kEpSkew = 0.3;
// The gradient all-reduce runs in the last kDpBurstFraction of each step;
// the rest of the traffic in the part before.
inline constexpr double kDpBurstFraction = 0.3;

struct NicBase {
  double step_seconds = 1.0;
  // Bytes per step.
  double compute_tx = 0;
  double compute_rx = 0;  // EP part already skewed
  double dp_tx = 0;
  double dp_rx = 0;
  double ep_skew = 1.0;
  bool modelled = false;  // false: the flat default
  // NICs of the same EP group (else DP group), this one excluded: whom a
  // hot expert or a straggler is compared with.
  std::vector<size_t> peers;

  double MeanTxBytesPerSecond() const {
    return (compute_tx + dp_tx) / step_seconds;
  }
  double MeanRxBytesPerSecond() const {
    return (compute_rx + dp_rx) / step_seconds;
  }
  // Average over [t, t + dt) seconds, with compute traffic in the first
  // 1 - kDpBurstFraction of each step and DP traffic in the rest.
  double TxBytesPerSecondOver(double t, double dt) const;
  double RxBytesPerSecondOver(double t, double dt) const;
};

class TrafficBase {
 public:
  // `step_seconds` <= 0: derive from the models. `fabric` must outlive this.
  static absl::StatusOr<TrafficBase> Build(const Fabric& fabric,
                                           double step_seconds, uint64_t seed);
  const NicBase& nic(size_t index) const { return nics_[index]; }
  size_t size() const { return nics_.size(); }

 private:
  std::vector<NicBase> nics_;
};

// Seconds of [t, t + dt) whose phase within a period of `step` seconds is
// in [lo, hi) (fractions of the step, 0 <= lo <= hi <= 1).
double PhaseOverlap(double t, double dt, double step, double lo, double hi);

}  // namespace fabricdiag::sim
