// The bridge's Prometheus metrics, one series per switch (docs/metrics.md,
// "gNMI bridge"):
//
//   fabricdiag_gnmi_subscription_up{switch}            1 while the required
//                                                      group streams
//   fabricdiag_gnmi_updates_total{switch}              leaves applied
//                                                      (rate() = updates/s)
//   fabricdiag_gnmi_last_update_age_seconds{switch}    since the last leaf
//   fabricdiag_gnmi_reconnects_total{switch}           groups started again
//   fabricdiag_gnmi_errors_total{switch,reason}        by reason
//   fabricdiag_gnmi_counter_resets_total{switch}       resets detected
//   fabricdiag_gnmi_reloads_total{switch}              boot-time changes
//   fabricdiag_gnmi_reports_total{switch}              reports queued
//   fabricdiag_gnmi_ingest_connected{switch}           stream to collector
//   fabricdiag_gnmi_switch_configured{switch}          0: refused
//
//   auto metrics = std::make_shared<BridgeMetrics>(&bridge, clock);
//   families = metrics->Collect();
//
// Thread-safe (Collect reads Bridge::Status()).
#pragma once

#include <cstdint>
#include <vector>

#include "common/clock.h"
#include "gnmi/bridge.h"
#include "prometheus/collectable.h"
#include "prometheus/metric_family.h"

namespace fabricdiag::gnmi {

// The families for `switches` at monotonic time `now_nanos`. Pure.
std::vector<prometheus::MetricFamily> BridgeMetricFamilies(
    const std::vector<SwitchStatus>& switches, int64_t now_nanos);

class BridgeMetrics final : public prometheus::Collectable {
 public:
  // `bridge` and `clock` must outlive this.
  BridgeMetrics(const Bridge* bridge, const Clock& clock)
      : bridge_(bridge), clock_(clock) {}
  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  const Bridge* bridge_;
  const Clock& clock_;
};

}  // namespace fabricdiag::gnmi
