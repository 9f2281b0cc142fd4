// Thresholds of every rate analyzer, the hysteresis that gates their
// findings and the agent_down analyzer, with documented defaults;
// overridable from a YAML or JSON file (the collector's --analysis_config,
// docs/findings.md#configuration).
//
//   window_seconds: 3
//   hysteresis: {open_after: 3, open_within: 4, clear_after: 5}
//   hot_expert_incast: {rx_over_median: 4, min_link_fraction: 0.25}
//   pfc_storm: {warning_pause_fraction: 0.2}
//   agent_down: {missed_intervals: 10}
//
// Every key is optional; an unknown key or an out-of-range value is an error
// that names the key (a typo must not silently keep a default).
//
//   ASSIGN_OR_RETURN(AnalysisConfig config, ParseAnalysisConfig(text));
//
// Plain values: copy freely.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace fabricdiag::analysis {

// Findings open after their condition held long enough and resolve after
// it was clear in `clear_after` consecutive passes, so a single noisy sample
// never pages anyone. Findings marked `immediate` (a pause-storm event, a
// link that went down) skip the open delay.
//
// Every pass the analyzers run twice: over the window mean
// (`window_seconds`) and over the newest `recent_seconds` of samples (one
// sample at the agent's interval; 0 turns this view off). Which statistic
// opens a finding depends on how far past its threshold the condition is
// (its "over_threshold" evidence):
//
//  - strong (at least `strong_over_threshold`, 2x): the newest samples
//    alone, in `strong_open_after` (2) consecutive passes: the newest two
//    samples both twice past. Noise is not that: a stale read then its
//    lump puts at most one sample past, and only by the lump.
//  - weak (past the threshold, under 2x): k of the last n newest samples,
//    confirmed by the window mean: the newest samples had the condition in
//    `open_after` (k, 3) of the last `open_within` (n, 4) passes, and the
//    window mean has it now. The newest samples answer early, the k of n
//    forgives one stale or jittered sample, and the window mean (a mean of
//    several samples, so MoE skew and read jitter average out) keeps a
//    noisy sample or two from opening anything.
//  - without the newest-samples view: the window mean in `open_after`
//    consecutive passes (as before the newest samples were judged).
//
// The budget, counted in agent intervals from the fault's first faulty
// sample (one pass per interval), and where it goes:
//   agent read: up to 1 (the fault starts between two reads; the first
//     read after it holds part of an interval of it)
//   analysis pass: about 0.1 (agents read and passes run on the wall
//     clock's grid, a pass a tenth of an interval after the reads; up to
//     1 more when a report arrives later than that)
//   statistic: strong 1 more sample (the newest 2 both over); weak 2 more
//     (k = 3 newest samples) and the window mean over its threshold, which
//     needs a window of at most 3 intervals to cross with 3 faulty samples
//     for a fault only ~1.2x past its threshold
//   delivery: the store and the watch stream, well under an interval
// So a strong fault opens within about 3 intervals, a weak one within 5;
// the old rule (3 consecutive window means over) waited for the window to
// fill and then 2 more passes: 6 to 7. A finding resolves after its window
// mean and its newest samples were both clear (the window empties of the
// fault) and `clear_after` clean passes.
struct HysteresisConfig {
  int open_after = 3;
  int clear_after = 5;
  double recent_seconds = 1;
  double strong_over_threshold = 2;
  int strong_open_after = 2;
  int open_within = 4;
};
// Most passes open_within can span. An open_within below open_after counts
// as open_after (k of the last k).
inline constexpr int kMaxOpenWithin = 32;

struct HotExpertIncastConfig {
  // A member's RX far above its EP group's median: 4x is well beyond the
  // routing skew of a trained MoE router (auxiliary-loss balancing keeps
  // expert load within ~1.5-2x of the mean; the seed's "far above").
  double rx_over_median = 4.0;
  // ... and a meaningful share of its link: 25% of the link rate, so idle
  // groups with tiny absolute numbers never trip the ratio.
  double min_link_fraction = 0.25;
  // Used as the floor when the link rate is unknown: 2.5 GB/s (20 Gb/s).
  double min_rx_bytes_per_second = 2.5e9;
  // Smallest EP group whose median means anything.
  int min_group_size = 3;
};

struct PfcStormConfig {
  // Fraction of time a port transmitted pause on one priority. SONiC's PFC
  // watchdog calls a queue stormed when it stays paused for its detection
  // time (default 200 ms); a healthy RoCE fabric pauses well under 1%.
  double warning_pause_fraction = 0.2;
  double critical_pause_fraction = 0.5;
  // Where a driver has only frame counters: pause frames/s that mean the
  // same. A 100 Gb/s port needs ~2,980 max-quanta frames/s to stay paused
  // (65535 quanta x 512 bit times = 335 us each), so 20% is ~600 frames/s.
  double warning_pause_frames_per_second = 600;
  // A victim receives pause for at least this fraction of time.
  double victim_pause_fraction = 0.05;
};

struct EcmpImbalanceConfig {
  // Uplink TX max/mean across a switch's ECMP group (the seed's 1.5).
  double max_over_mean = 1.5;
  // Only when the mean uplink is busy enough for imbalance to hurt: 10% of
  // the uplink rate (or min_mean_bytes_per_second when unknown).
  double min_mean_utilization = 0.1;
  double min_mean_bytes_per_second = 1.25e9;
  // Host-side variant without switch telemetry: a NIC's CNPs handled over
  // the median of the NICs the model says carry equal load.
  double cnp_over_median = 4.0;
  double min_cnp_per_second = 1000;
};

struct LinkErrorsConfig {
  // Sustained errors per second on one port (any of symbol, receive, CRC).
  // IBTA's PortCounters are meant to stay at zero on a healthy link; NVIDIA
  // UFM's default symbol-error alarm is ~1 per second sustained.
  double errors_per_second = 1.0;
  // Pre-FEC BER (corrected bits / received bits) above which the link is
  // degrading: 1e-6 (NVIDIA's guidance for HDR/NDR PAM4 links is < 1e-8
  // raw BER before FEC margin runs out well above 1e-5).
  double pre_fec_ber = 1e-6;
  // Post-FEC BER (uncorrected symbols / received bits): 1e-12 is the IEEE
  // 802.3 target; above it frames are being lost.
  double post_fec_ber = 1e-12;
};

struct LinkDegradedConfig {
  // A port running below this fraction of its expected rate, or of the
  // median rate of its node's peer ports of the same kind.
  double min_rate_fraction = 0.9;
};

struct RetransmissionsConfig {
  // Retransmission-class events per second (out of sequence, sequence-error
  // NAKs, ACK timeouts, RNR NAKs, adaptive retransmissions). Healthy
  // lossless RoCE shows essentially none.
  double events_per_second = 10;
};

struct CongestionConfig {
  // ECN-marked packets or CNPs sent per second at a port, and its share of
  // the median of its peers (ports of the same job, or of the fabric).
  double cnp_per_second = 10000;
  double over_median = 5.0;
};

struct StragglerNicConfig {
  // A DP/EP member whose throughput is below this fraction of its group's
  // median while the median is busy.
  double below_median_fraction = 0.5;
  double min_median_link_fraction = 0.1;
  double min_median_bytes_per_second = 1.25e9;
  int min_group_size = 3;
  // ... and, once the NIC has a baseline of its own throughput (the mean of
  // its past windows in which it was not a straggler), below this fraction
  // of it. In an expert-parallel job routing skew is by design: lognormal
  // skew of sigma 0.3 puts 2x between healthy NICs of one group, so a NIC
  // low against its peers is a straggler only if it also fell against
  // itself. 0.7: a healthy NIC's window mean stays within ~20% of its own
  // baseline, a straggler (a half-speed link, a throttled GPU) loses half.
  double below_own_history_fraction = 0.7;
  // The baseline is an exponentially weighted mean over about this many
  // passes (5 minutes at one pass a second): slow enough that a straggler's
  // first windows hardly move it.
  int history_passes = 300;
  // ... and counts once this many passes went into it. Until then a NIC of
  // an expert-parallel job is not judged at all (its skew cannot be told
  // from a fault), one of a dense job on its group alone.
  int min_history_passes = 20;
  // The window's samples that moved must cover this fraction of the window
  // ...
  double min_window_coverage = 0.8;
  // ... and no interval between them may exceed this many times their
  // median: a read that came late or stale, then a lump, makes a mean of
  // zeros and catch-up that says nothing about the NIC. Agent jitter (one
  // interval up to 2x another) stays below 2.5.
  double max_interval_over_median = 2.5;
};

struct AgentDownConfig {
  // An agent silent for this many of its own sampling intervals is down.
  // A few missed reports are a restart or a network blip, and the agent
  // replays its buffer when it reconnects: a package upgrade restarts the
  // agent in 2 to 6 s on a busy node (stop, start, first read, TLS and the
  // stream's hello). Ten intervals (10 s at the default 1 s) covers that
  // with margin and still reports a dead agent well before Prometheus'
  // `up` alerts (a minute).
  int missed_intervals = 10;
  // The interval assumed for an agent that did not announce one: the
  // agent's default --interval (docs/agent.md).
  double default_interval_seconds = 1;
};

struct AgentMissingConfig {
  // A host the topology lists whose agent has not reported for this long
  // while the collector watched is missing (analysis/agent_missing.h); 0
  // turns the check off. Agents reconnecting after a collector restart
  // (backoff up to 30 s) and a fleet's connect storm fit well within 120 s.
  double after_seconds = 120;
};

struct AnalysisConfig {
  // Rates are averaged over this window before each pass: 3 samples at the
  // agent's 1 s, short enough that a weak fault's mean crosses within the
  // budget (HysteresisConfig), long enough to average out MoE skew and
  // read jitter with the k of n newest samples.
  double window_seconds = 3;
  HysteresisConfig hysteresis;
  HotExpertIncastConfig hot_expert_incast;
  PfcStormConfig pfc_storm;
  EcmpImbalanceConfig ecmp_imbalance;
  LinkErrorsConfig link_errors;
  LinkDegradedConfig link_degraded;
  RetransmissionsConfig retransmissions;
  CongestionConfig congestion;
  StragglerNicConfig straggler_nic;
  AgentDownConfig agent_down;
  AgentMissingConfig agent_missing;
};

// Parses a YAML (or JSON) config; InvalidArgument naming the key on an
// unknown key, a non-number or an out-of-range value.
absl::StatusOr<AnalysisConfig> ParseAnalysisConfig(absl::string_view text);

}  // namespace fabricdiag::analysis
