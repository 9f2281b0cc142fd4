#include "agent/counter_desc.h"

#include <utility>

#include "counters/counter_table.h"

namespace fabricdiag::agent {
namespace {

SeriesDesc Gauge(Subsystem subsystem, const std::string& device, uint32_t port,
                 std::string name, std::string unit) {
  SeriesDesc d;
  d.subsystem = subsystem;
  d.device = device;
  d.port = port;
  d.name = std::move(name);
  d.kind = Kind::kGauge;
  d.unit = std::move(unit);
  return d;
}

}  // namespace

SeriesDesc DescribeCounter(Subsystem subsystem, counters::Driver driver,
                           std::string device, uint32_t port, std::string name,
                           bool* pma_width) {
  SeriesDesc d;
  d.subsystem = subsystem;
  d.device = std::move(device);
  d.port = port;
  counters::Family family;
  if (counters::FamilyOf(subsystem, &family)) {
    const counters::CounterInfo info = counters::Classify(family, driver, name);
    d.width_bits = info.width_bits;
    d.kind = info.kind;
    d.meaning = info.meaning;
    d.direction = info.direction;
    d.priority = info.priority;
    d.scale = info.scale;
    d.unit = info.unit;
    if (pma_width != nullptr) *pma_width = info.pma_width;
  } else if (pma_width != nullptr) {
    *pma_width = false;
  }
  d.name = std::move(name);
  return d;
}

std::vector<SeriesDesc> RdmaPortAttributeDescs(const std::string& device,
                                               uint32_t port) {
  const Subsystem s = Subsystem::kRdmaPortAttribute;
  std::vector<SeriesDesc> out;
  out.push_back(Gauge(s, device, port, "state_id", ""));
  out.push_back(Gauge(s, device, port, "phys_state_id", ""));
  out.push_back(
      Gauge(s, device, port, "rate_bytes_per_second", "bytes_per_second"));
  return out;
}

std::vector<SeriesDesc> NetdevAttributeDescs(const std::string& netdev) {
  const Subsystem s = Subsystem::kNetdevAttribute;
  std::vector<SeriesDesc> out;
  out.push_back(
      Gauge(s, netdev, 0, "speed_bytes_per_second", "bytes_per_second"));
  out.push_back(Gauge(s, netdev, 0, "mtu", "bytes"));
  out.push_back(Gauge(s, netdev, 0, "carrier", ""));
  return out;
}

}  // namespace fabricdiag::agent
