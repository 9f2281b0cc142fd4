#include "gnmi/bridge_metrics.h"

#include <functional>
#include <string>
#include <utility>

#include "common/metric_family.h"

namespace fabricdiag::gnmi {
namespace {

using prometheus::MetricFamily;
using prometheus::MetricType;

// One family with one sample per switch, from `value`.
MetricFamily PerSwitch(
    const std::vector<SwitchStatus>& switches, const char* name,
    const char* help, MetricType type,
    const std::function<double(const SwitchStatus&)>& value) {
  MetricFamily f = MakeFamily(name, help, type);
  for (const SwitchStatus& s : switches) {
    AddValue(&f, {{"switch", s.name}}, value(s));
  }
  return f;
}

}  // namespace

std::vector<MetricFamily> BridgeMetricFamilies(
    const std::vector<SwitchStatus>& switches, int64_t now_nanos) {
  const MetricType kGauge = MetricType::Gauge;
  const MetricType kCounter = MetricType::Counter;
  std::vector<MetricFamily> out;
  out.push_back(PerSwitch(
      switches, "fabricdiag_gnmi_switch_configured",
      "1 when the switch's gnmi block could be used; 0 when it was refused "
      "(credentials file readable by others, no tls_ca, ...; see the log)",
      kGauge, [](const SwitchStatus& s) { return s.configured ? 1.0 : 0.0; }));
  out.push_back(PerSwitch(
      switches, "fabricdiag_gnmi_subscription_up",
      "1 while the switch's required subscription group streams", kGauge,
      [](const SwitchStatus& s) { return s.session.up ? 1.0 : 0.0; }));
  out.push_back(PerSwitch(
      switches, "fabricdiag_gnmi_updates_total",
      "Leaves (counter values and port attributes) received from the switch",
      kCounter, [](const SwitchStatus& s) {
        return static_cast<double>(s.session.updates);
      }));
  MetricFamily age = MakeFamily(
      "fabricdiag_gnmi_last_update_age_seconds",
      "Seconds since the last leaf from the switch (absent before the first)",
      kGauge);
  for (const SwitchStatus& s : switches) {
    if (s.session.last_update_nanos == 0) continue;
    AddValue(
        &age, {{"switch", s.name}},
        static_cast<double>(now_nanos - s.session.last_update_nanos) / 1e9);
  }
  out.push_back(std::move(age));
  out.push_back(PerSwitch(
      switches, "fabricdiag_gnmi_reconnects_total",
      "Subscribe RPCs started again after they ended (errors_total says why, "
      "sample_realigns_total counts the others)",
      kCounter, [](const SwitchStatus& s) {
        return static_cast<double>(s.session.reconnects);
      }));
  out.push_back(PerSwitch(
      switches, "fabricdiag_gnmi_sample_realigns_total",
      "Subscription groups started again so that their samples arrive just "
      "before the report grid's points instead of just after",
      kCounter, [](const SwitchStatus& s) {
        return static_cast<double>(s.session.realigns);
      }));
  MetricFamily wait = MakeFamily(
      "fabricdiag_gnmi_sample_wait_seconds",
      "Median time a sample waits from its arrival to the switch's next "
      "report, for its slowest subscription group (absent until known)",
      kGauge);
  for (const SwitchStatus& s : switches) {
    if (s.session.sample_wait <= absl::ZeroDuration()) continue;
    AddValue(&wait, {{"switch", s.name}},
             absl::ToDoubleSeconds(s.session.sample_wait));
  }
  out.push_back(std::move(wait));
  MetricFamily errors = MakeFamily(
      "fabricdiag_gnmi_errors_total",
      "Ended subscriptions and unreadable values, by reason", kCounter);
  for (const SwitchStatus& s : switches) {
    for (const auto& [reason, n] : s.session.errors) {
      AddValue(&errors, {{"switch", s.name}, {"reason", reason}},
               static_cast<double>(n));
    }
  }
  out.push_back(std::move(errors));
  out.push_back(PerSwitch(
      switches, "fabricdiag_gnmi_counter_resets_total",
      "Counter resets seen: a value that went down, a port's last-clear or "
      "the switch's boot-time changed",
      kCounter, [](const SwitchStatus& s) {
        return static_cast<double>(s.session.resets);
      }));
  out.push_back(PerSwitch(
      switches, "fabricdiag_gnmi_lldp_up",
      "1 while the switch's LLDP subscription has synced and streams (its "
      "neighbor set is complete)",
      kGauge,
      [](const SwitchStatus& s) { return s.session.lldp_up ? 1.0 : 0.0; }));
  out.push_back(
      PerSwitch(switches, "fabricdiag_gnmi_lldp_neighbors",
                "LLDP neighbors of the switch's ports sent to the collector",
                kGauge, [](const SwitchStatus& s) {
                  return static_cast<double>(s.session.lldp_neighbors);
                }));
  out.push_back(PerSwitch(
      switches, "fabricdiag_gnmi_lldp_neighbors_incomplete",
      "LLDP neighbors held but not sent: no chassis id or no port id yet",
      kGauge, [](const SwitchStatus& s) {
        return static_cast<double>(s.session.lldp_incomplete);
      }));
  out.push_back(PerSwitch(
      switches, "fabricdiag_gnmi_reloads_total",
      "Switch reloads seen (boot-time changed); each starts a new boot id",
      kCounter,
      [](const SwitchStatus& s) { return static_cast<double>(s.reloads); }));
  out.push_back(PerSwitch(
      switches, "fabricdiag_gnmi_reports_total",
      "Reports queued for the collector on the switch's ingest stream",
      kCounter,
      [](const SwitchStatus& s) { return static_cast<double>(s.reports); }));
  out.push_back(PerSwitch(
      switches, "fabricdiag_gnmi_ingest_connected",
      "1 while the switch's ingest stream to the collector is connected",
      kGauge,
      [](const SwitchStatus& s) { return s.stream.connected ? 1.0 : 0.0; }));
  return out;
}

std::vector<MetricFamily> BridgeMetrics::Collect() const {
  return BridgeMetricFamilies(bridge_->Status(), clock_.MonotonicNanos());
}

}  // namespace fabricdiag::gnmi
