// Building prometheus-cpp metric families by hand, for Collectables that
// export values they read at scrape time (collector and gNMI bridge
// metrics).
//
//   MetricFamily f = MakeFamily("fabricdiag_x_total", "What it counts",
//                               MetricType::Counter);
//   AddValue(&f, {{"node", "gpu-001"}}, 42);
//
// Header-only (callers link prometheus-cpp::core); pure.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "prometheus/client_metric.h"
#include "prometheus/metric_family.h"
#include "prometheus/metric_type.h"

namespace fabricdiag {

inline prometheus::MetricFamily MakeFamily(std::string name, std::string help,
                                           prometheus::MetricType type) {
  prometheus::MetricFamily f;
  f.name = std::move(name);
  f.help = std::move(help);
  f.type = type;
  return f;
}

// One sample of `f` (a counter or a gauge, as `f` says).
inline void AddValue(prometheus::MetricFamily* f,
                     std::vector<prometheus::ClientMetric::Label> labels,
                     double value) {
  prometheus::ClientMetric m;
  m.label = std::move(labels);
  if (f->type == prometheus::MetricType::Counter) {
    m.counter.value = value;
  } else {
    m.gauge.value = value;
  }
  f->metric.push_back(std::move(m));
}

}  // namespace fabricdiag
