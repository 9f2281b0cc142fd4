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

void AddGauge(absl::string_view device, uint32_t port, absl::string_view name,
              uint64_t value, absl::string_view unit, Snapshot* snapshot) {
  // A handful of gauges per port: each sample owns its description.
  SeriesDesc desc;
  desc.subsystem = Subsystem::kVerbs;
  desc.device = std::string(device);
  desc.port = port;
  desc.name = std::string(name);
  desc.unit = std::string(unit);
  desc.kind = Kind::kGauge;
  snapshot->samples.push_back(Sample::Of(std::move(desc), value));
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

  if (attr.state >= 0) {
    AddGauge(device, port, "state", static_cast<uint64_t>(attr.state), "",
             snapshot);
  }
  if (attr.phys_state >= 0) {
    AddGauge(device, port, "phys_state", static_cast<uint64_t>(attr.phys_state),
             "", snapshot);
  }
  if (mtu.has_value()) {
    AddGauge(device, port, "active_mtu_bytes", static_cast<uint64_t>(*mtu),
             "bytes", snapshot);
  }
  if (lanes.has_value()) {
    AddGauge(device, port, "active_width_lanes", static_cast<uint64_t>(*lanes),
             "lanes", snapshot);
  }
  if (rate.has_value()) {
    // Exact: every table rate is a whole number of bytes/s (verbs.cc).
    AddGauge(device, port, "expected_rate_bytes_per_second",
             static_cast<uint64_t>(*rate), "bytes_per_second", snapshot);
  }
}

SourceStatus VerbsPortSource::Collect(Snapshot* snapshot) {
  SourceStatus status;
  status.source = std::string(name());
  absl::StatusOr<std::vector<std::string>> devices = verbs_->ListDevices();
  if (!devices.ok()) {
    RecordError(devices.status(), &status);
    return status;
  }
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
      AppendVerbsPort(device, port, *port_attr, snapshot);
    }
  }
  return status;
}

}  // namespace fabricdiag::agent
