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
//   if (role.Leading()) { ...analyze... }
//
// Implementations are thread-safe.
#pragma once

#include <cstdint>

namespace fabricdiag::collector {

class AnalysisRole {
 public:
  virtual ~AnalysisRole() = default;
  // True while this collector may write findings.
  virtual bool Leading() const = 0;
  // Identifies the current tenure while Leading() (increasing across the
  // cluster); 0 when not leading.
  virtual uint64_t Term() const = 0;
};

// The embedded role: the only collector leads, in one term that lasts as
// long as the process (its hysteresis is seeded once, at the first pass).
class AlwaysLeading final : public AnalysisRole {
 public:
  bool Leading() const override { return true; }
  uint64_t Term() const override { return 1; }
};

}  // namespace fabricdiag::collector
