// Whether this collector analyzes: the seam between the analysis runner and
// the ways a collector can be placed.
//
//   - Embedded: one collector, always the analyst (AlwaysLeading below).
//   - Cluster (--nats): one collector at a time holds the analysis lease
//     (cluster/analysis_lease.h); the others mirror its findings.
//
// A term is one tenure of the lease; a new term (this collector took over,
// or took it back) means the findings were written by someone else
// meanwhile, so the runner seeds its hysteresis from them again.
//
// The analysis can also be cut into shards (cluster/shard_leases.h), each
// owned by one collector at a time under a term of its own: the findings of
// a shard's analyzers are written by its owner, fenced by ShardTerm(). A
// findings source of a shard is named "<family>@<shard>" (ShardOfSource).
//
//   if (role.Leading()) { ...analyze... }
//
// Implementations are thread-safe.
#pragma once

#include <cstdint>

#include "absl/strings/string_view.h"
#include "collector/findings/findings_replication.h"  // ShardOfSource

namespace fabricdiag::collector {

class AnalysisRole {
 public:
  virtual ~AnalysisRole() = default;
  // True while this collector may write findings.
  virtual bool Leading() const = 0;
  // Identifies the current tenure while Leading() (increasing across the
  // cluster); 0 when not leading.
  virtual uint64_t Term() const = 0;
  // The term under which this collector owns analysis shard `shard` (from
  // the same sequence as Term(): a shard's next owner has a higher one); 0
  // when it does not own it. A role without shards owns none.
  virtual uint64_t ShardTerm(absl::string_view /*shard*/) const { return 0; }
};

// The embedded role: the only collector leads, and owns every shard, in one
// term that lasts as long as the process (its hysteresis is seeded once, at
// the first pass): a cluster of one.
class AlwaysLeading final : public AnalysisRole {
 public:
  bool Leading() const override { return true; }
  uint64_t Term() const override { return 1; }
  uint64_t ShardTerm(absl::string_view /*shard*/) const override { return 1; }
};

}  // namespace fabricdiag::collector
