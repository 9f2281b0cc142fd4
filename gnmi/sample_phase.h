// Where one subscription group's samples arrive against the bridge's report
// grid (whole multiples of the interval since the Unix epoch, where agents
// read and the bridge reports): a sample that arrives just after a grid
// point waits almost a whole interval for the next report, one that arrives
// just before it is reported at once. gNMI leaves a SAMPLE subscription's
// phase to the target, and targets (SONiC's telemetry server, gnmic's,
// the simulator's) time their samples from the moment the subscription
// starts. So a group whose samples wait more than half an interval is
// subscribed again at the moment that puts its samples a quarter of an
// interval before a grid point; a target that keeps its own schedule does
// not move, and after kMaxRealigns tries the group is left where it is.
//
//   SamplePhase phase(absl::Milliseconds(500));
//   phase.Arrived(absl::Now());  // per sampled response, after the sync
//   if (phase.ShouldRealign()) {
//     const absl::Duration delay = phase.Realign(absl::Now());
//     // cancel the group's call; start it again after `delay`
//   }
//
// Pure (the caller passes the time); thread-compatible.
#pragma once

#include <array>
#include <cstddef>

#include "absl/time/time.h"

namespace fabricdiag::gnmi {

class SamplePhase {
 public:
  // Arrivals the median is taken over: a few responses of one sample (a
  // target may split a table) and a late one do not decide alone.
  static constexpr size_t kWindow = 8;
  // Subscriptions started again to move the phase, at most.
  static constexpr int kMaxRealigns = 3;

  // `interval`: the report grid's and the subscriptions' sample interval.
  explicit SamplePhase(absl::Duration interval);

  // A sampled response arrived at `wall`.
  void Arrived(absl::Time wall);
  // The stream started again for another reason: the old phase is gone.
  void Restarted();

  // A full window whose median wait for the report is above half the
  // interval, and tries left.
  bool ShouldRealign() const;
  // Records a try and forgets the window; returns how long after `now` the
  // group should start so that its samples arrive a quarter of an interval
  // before a grid point: at least one millisecond, less than one interval.
  absl::Duration Realign(absl::Time now);

  // The median time the recent arrivals waited for the next grid point;
  // zero until a window is full.
  absl::Duration MedianWait() const;
  int realigns() const { return realigns_; }

 private:
  // From `wall` to the next grid point: (0, interval].
  absl::Duration WaitAt(absl::Time wall) const;

  absl::Duration interval_;
  std::array<absl::Duration, kWindow> waits_{};
  size_t next_ = 0;
  size_t count_ = 0;
  int realigns_ = 0;
};

}  // namespace fabricdiag::gnmi
