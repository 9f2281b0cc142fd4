// The agent's /metrics: the latest Snapshot as Prometheus text (exposition
// format 0.0.4).
//
// Names follow fabricdiag_<subsystem>_<name>_<unit>[_total] (docs/metrics.md
// lists every family). Values are exactly what the kernel counted,
// converted to base units (bytes, seconds); a counter the kernel does not
// expose is absent, never 0. Families are sorted by name, series keep
// snapshot order.
//
// Rendering is cheap because almost nothing changes between snapshots: the
// series lines of a snapshot's counters ("name{labels} ") and the family
// headers are prepared once per device scan (when the sources' descriptions
// change), as one text; so are the device, port and agent families for as
// long as their labels stay the same. A render is one pass over the
// prepared text: copy a series' line, format its value straight after it
// (no allocation), into the caller's buffer, which keeps its capacity from
// render to render. Values are printed with the fewest
// digits that read back as the same double (a byte counter of 2^64 prints
// as 1.8446744073709552e+19, as node_exporter does).
//
//   ExpositionRenderer renderer;
//   std::string text;
//   renderer.Render(snapshot, health, &text);
//
// The families come from the name tables (agent/counter_families.h) and
// the families decided per snapshot (agent/dynamic_families.h); values are
// formatted by common/prom_text.h. agent/metrics_page.h serves the text.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "agent/agent_health.h"
#include "agent/sample.h"

namespace fabricdiag::agent {

// Not thread-safe: one renderer per caller (MetricsPage serializes).
class ExpositionRenderer {
 public:
  ExpositionRenderer();
  ~ExpositionRenderer();
  ExpositionRenderer(const ExpositionRenderer&) = delete;
  ExpositionRenderer& operator=(const ExpositionRenderer&) = delete;

  // Replaces *out with the exposition of `snapshot` and `health`.
  void Render(const Snapshot& snapshot, const AgentHealth& health,
              std::string* out);

  // Times the prepared lines were rebuilt (a new or changed set of series).
  uint64_t plans_built() const { return plans_built_; }

 private:
  struct Plan;
  // (Re)builds the prepared text of the families decided per render.
  void PrepareDynamic(const Snapshot& snapshot, const AgentHealth& health);
  std::unique_ptr<Plan> plan_;
  uint64_t plans_built_ = 0;
};

}  // namespace fabricdiag::agent
