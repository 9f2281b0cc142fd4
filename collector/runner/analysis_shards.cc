#include "collector/runner/analysis_shards.h"

#include <string>

namespace fabricdiag::collector {

void OneCollectorShards::Receive(absl::string_view /*shard*/,
                                 absl::Time /*now*/, const FeatureSlice& local,
                                 absl::Span<const uint32_t> own_ports,
                                 Received* views) {
  views->window.Clear();
  views->recent.Clear();
  views->window.window_seconds = local.window.window_seconds;
  const analysis::FabricView* recent =
      local.recent.has_value() ? &*local.recent : nullptr;
  if (recent != nullptr) views->recent.window_seconds = recent->window_seconds;
  const absl::Span<const analysis::PortView> all = local.window.ports();
  views->window.ReservePorts(own_ports.size());
  views->recent.ReservePorts(own_ports.size());
  for (uint32_t i : own_ports) {
    if (i >= all.size()) continue;
    const analysis::PortView& p = all[i];
    views->window.AddPort(std::string(), std::string()) = p;
    const analysis::PortView* r =
        recent != nullptr ? recent->Find(p.node, p.device) : nullptr;
    if (r != nullptr && r->device == p.device) {
      views->recent.AddPort(std::string(), std::string()) = *r;
    }
  }
  views->window.Finish();
  views->recent.Finish();
}

}  // namespace fabricdiag::collector
