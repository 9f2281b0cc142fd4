// What each kind of analysis shard reads of a port, and nothing else.
//
// The cross-node analyzers are cut into shards (docs/cluster.md): by job
// (hot_expert_incast, straggler_nic, tp_cross_node compare a job's NICs
// with their groups) and by switch group (ecmp_imbalance compares a leaf's
// uplinks, pfc_storm follows pause from a source to its victims across the
// switch). A shard's owner is sent only the signals its analyzers read, so
// the features on the wire are a few of PortSignals' 61 slots. This list
// is the one place that says which: tests run each kind's analyzers over
// ports cut down to it and over whole ports and require the same findings,
// so an analyzer that starts reading another signal fails them until the
// signal is added here.
//
//   PortView p = ...;
//   KeepOnly(ShardSlots(ShardKind::kJobs), &p.s);  // what the owner gets
//
// Pure.
#pragma once

#include "absl/types/span.h"
#include "analysis/fabric_view.h"

namespace fabricdiag::analysis {

enum class ShardKind {
  // A group of jobs: hot_expert_incast, straggler_nic, tp_cross_node over
  // the jobs' NICs.
  kJobs,
  // A group of switches: ecmp_imbalance and pfc_storm over the switches'
  // ports and the host NICs cabled to them.
  kSwitches,
};

// The slots (counters::Signal numbering, analysis/signal_slots.h) the
// analyzers of `kind` read, ascending. PortSignals::link_up and the port's
// SampleEvidence are read by both kinds and are not slots.
absl::Span<const int> ShardSlots(ShardKind kind);

// Makes every slot of `s` not in `slots` absent (NaN; 0 for the two link
// rates, whose unknown is 0). `slots` ascending.
void KeepOnly(absl::Span<const int> slots, PortSignals* s);

}  // namespace fabricdiag::analysis
