#include "agent/verbs_port_source.h"

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "common/log.h"

namespace fabricdiag::agent {
namespace {

// ibv_query_port() numbers ports with a uint8_t, so no device has more than
// 255; the clamp keeps a bogus count from looping for hours.
constexpr uint32_t kMaxPorts = 255;

// The gauges of a port, in this order in its table.
enum Gauge { kState, kPhysState, kMtu, kLanes, kRate, kGauges };

std::shared_ptr<const std::vector<SeriesDesc>> PortTable(
    absl::string_view device, uint32_t port) {
  static constexpr struct {
    const char* name;
    const char* unit;
  } kGaugeNames[kGauges] = {
      {"state", ""},
      {"phys_state", ""},
      {"active_mtu_bytes", "bytes"},
      {"active_width_lanes", "lanes"},
      {"expected_rate_bytes_per_second", "bytes_per_second"}};
  auto table = std::make_shared<std::vector<SeriesDesc>>(kGauges);
  for (int g = 0; g < kGauges; ++g) {
    SeriesDesc& d = (*table)[static_cast<size_t>(g)];
    d.subsystem = Subsystem::kVerbs;
    d.device = std::string(device);
    d.port = port;
    d.name = kGaugeNames[g].name;
    d.unit = kGaugeNames[g].unit;
    d.kind = Kind::kGauge;
  }
  return table;
}

void RecordError(const absl::Status& error, SourceStatus* status) {
  status->ok = false;
  ++status->errors;
  status->last_error = error.ToString();
}

}  // namespace

VerbsPortSource::VerbsPortSource(std::unique_ptr<VerbsApi> verbs)
    : verbs_(std::move(verbs)) {
  // A null seam is a wiring bug in main(), not an environment error.
  if (verbs_ == nullptr) {
    LogError("VerbsPortSource: null VerbsApi");
    std::abort();
  }
}

void AppendVerbsPort(absl::string_view device, uint32_t port,
                     const VerbsPortAttr& attr, Snapshot* snapshot) {
  AppendVerbsPort(PortTable(device, port), attr, snapshot);
}

void AppendVerbsPort(
    const std::shared_ptr<const std::vector<SeriesDesc>>& table,
    const VerbsPortAttr& attr, Snapshot* snapshot) {
  const std::vector<SeriesDesc>& gauges = *table;
  const std::string& device = gauges[kState].device;
  const uint32_t port = gauges[kState].port;
  snapshot->series_owners.push_back(table);
  auto add = [&](Gauge g, uint64_t value) {
    snapshot->samples.emplace_back(&gauges[g], value);
  };
  const std::optional<int> mtu = IbMtuToBytes(attr.active_mtu);
  const std::optional<int> lanes = IbWidthToLanes(attr.active_width);
  const std::optional<double> lane_gbps = IbSpeedToLaneGbps(attr.active_speed);
  const std::optional<double> rate =
      ExpectedRateBytesPerSecond(attr.active_width, attr.active_speed);

  // VerbsPortInfo has plain fields: 0 there means "unknown encoding"; the
  // samples below carry absence properly.
  VerbsPortInfo info;
  info.device = std::string(device);
  info.port = port;
  info.state = attr.state;
  info.active_mtu_bytes = mtu.value_or(0);
  info.active_width_lanes = lanes.value_or(0);
  info.lane_gbps = lane_gbps.value_or(0.0);
  info.expected_rate_bytes_per_second = rate.value_or(0.0);
  info.link_layer = IbLinkLayerName(attr.link_layer);
  snapshot->verbs_ports.push_back(std::move(info));

  if (attr.state >= 0) add(kState, static_cast<uint64_t>(attr.state));
  if (attr.phys_state >= 0) {
    add(kPhysState, static_cast<uint64_t>(attr.phys_state));
  }
  if (mtu.has_value()) add(kMtu, static_cast<uint64_t>(*mtu));
  if (lanes.has_value()) add(kLanes, static_cast<uint64_t>(*lanes));
  // Exact: every table rate is a whole number of bytes/s (verbs.cc).
  if (rate.has_value()) add(kRate, static_cast<uint64_t>(*rate));
}

SourceStatus VerbsPortSource::Collect(Snapshot* snapshot) {
  SourceStatus status;
  status.source = std::string(name());
  absl::StatusOr<std::vector<std::string>> devices = verbs_->ListDevices();
  if (!devices.ok()) {
    RecordError(devices.status(), &status);
    return status;
  }
  // The gauge descriptions of every port, kept while the port is seen so
  // that every snapshot points at the same ones.
  PortTables seen;
  for (const std::string& device : *devices) {
    absl::StatusOr<VerbsDeviceAttr> device_attr = verbs_->QueryDevice(device);
    if (!device_attr.ok()) {
      RecordError(device_attr.status(), &status);
      continue;
    }
    const uint32_t ports = std::min(device_attr->phys_port_cnt, kMaxPorts);
    for (uint32_t port = 1; port <= ports; ++port) {
      absl::StatusOr<VerbsPortAttr> port_attr = verbs_->QueryPort(device, port);
      if (!port_attr.ok()) {
        RecordError(port_attr.status(), &status);
        continue;
      }
      auto key = std::make_pair(device, port);
      auto it = tables_.find(key);
      auto table = it != tables_.end() ? it->second : PortTable(device, port);
      AppendVerbsPort(table, *port_attr, snapshot);
      seen.emplace(std::move(key), std::move(table));
    }
  }
  tables_ = std::move(seen);
  return status;
}

}  // namespace fabricdiag::agent
