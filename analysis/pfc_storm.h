// pfc_storm: a port that keeps transmitting PFC pause, and the ports its
// back-pressure reaches.
//
// PFC (IEEE 802.1Qbb) lets a receiver stop its link partner on one priority
// when its buffer fills. A receiver that stops draining (a hung host, PCIe
// back-pressure, a NIC firmware fault) keeps pausing its partner; the
// partner's switch then fills and pauses every port sending through it, and
// the lossless priority of a whole pod stalls. SONiC's PFC watchdog and the
// mlx5 `tx_pause_storm_*_events` counters (docs/counters.md) detect the
// same condition on one device; this analyzer sees the whole fabric, so it
// names the SOURCE (the port transmitting pause) and its VICTIMS (the ports
// receiving pause on the same priority).
//
// Per port and priority 0..7:
// - transmitted-pause fraction: PortSignals::tx_pause_fraction (mlx5
//   tx_prioN_pause_duration, microseconds per second); without duration
//   counters it is estimated from tx_pause_frames x 65535 quanta x 512 bit
//   times / link bits per second (an upper bound: a later XON ends a pause
//   early); without a link rate the frame rate is compared with
//   PfcStormConfig::warning_pause_frames_per_second instead (warning at
//   most: the fraction itself is unknown).
// - a port at >= warning_pause_fraction is a source candidate,
//   >= critical_pause_fraction critical; mlx5 pause-storm watchdog events
//   (pause_storm_errors or pause_storm_warnings > 0) are critical at once
//   (Finding::immediate).
// - a switch port transmitting pause while another port of the same switch
//   receives pause on that priority is relaying back-pressure, not causing
//   it, so it is not a source (a NIC is never discounted: a stuck receiver
//   is often paused back by its own switch).
// - victims: ports receiving pause on the source's priority for >=
//   victim_pause_fraction of the time. Following the topology (host NIC <->
//   switch port, and every relaying port of a switch), each source gets the
//   victims its back-pressure reaches; victims no source reaches (behind
//   spines the topology does not describe, or no topology at all) are listed
//   under every source of that priority.
// - a priority with victims paused >= warning_pause_fraction but no source
//   in the view gets one warning naming the most-paused port ("a victim
//   without a visible source": the source is outside telemetry or does not
//   count pause). Which victim is paused most changes from pass to pass, so
//   the warning names its fault (kFaultEvidence: the priority) and keeps the
//   port it named first for as long as the storm lasts (Hysteresis).
//
//   AnalysisInput in{&view, layouts, &topology, &config};
//   for (const Finding& f : PfcStormFindings(in)) { ... }
//
// Pure: same input, same findings, sorted by (node, device).
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "analysis/analyzer.h"
#include "analysis/finding.h"

namespace fabricdiag::analysis {

inline constexpr char kPfcStormKind[] = "pfc_storm";

// One finding per source port (node, device), group "", job = the one job
// whose layout places ranks on that NIC ("" otherwise); plus at most one
// "victim without a visible source" warning per priority. Empty when
// in.view or in.config is null.
std::vector<Finding> PfcStormFindings(const AnalysisInput& in);

// Whether `f` is a "victim without a visible source" warning.
bool IsSourceless(const Finding& f);

// The PFC priority a pfc_storm finding's "priority" evidence names: 0..7,
// or nullopt for anything else (absent, NaN, out of range, fractional: a
// finding read back from a store is not trusted to hold a sane number).
std::optional<int> StormPriority(const std::map<std::string, double>& evidence);

// Drops from `found` the source-less warnings of the priorities in
// `held_priorities`: those on which an open storm's source sits on a node
// whose findings are held (its agent away, or its collector's features
// not arriving: what it does now is unknown). While it is out of view its
// victims are seen without it, and a warning that the source is outside
// telemetry would be a second finding for the one storm.
void DropSourcelessOnPriorities(const std::set<int>& held_priorities,
                                std::vector<Finding>* found);

}  // namespace fabricdiag::analysis
