#include "agent/rdma_sysfs_source.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <set>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "agent/sysfs_parse.h"

namespace fabricdiag::agent {
namespace {

constexpr absl::string_view kClassDir = "class/infiniband";

// Lists files of an optional directory: a missing directory is normal (no
// hw_counters on this driver); anything else (e.g. `counters` being a file)
// is a structural error worth reporting.
std::vector<std::string> ListOptionalFiles(SysfsReader* reader,
                                           const std::string& dir,
                                           std::vector<absl::Status>* errors) {
  absl::StatusOr<std::vector<std::string>> files = reader->ListFiles(dir);
  if (files.ok()) return *std::move(files);
  if (files.status().code() != absl::StatusCode::kNotFound) {
    errors->push_back(files.status());
  }
  return {};
}

// Text attribute read on scans only: trimmed, "" when absent.
std::string ReadInfoText(SysfsReader* reader, const std::string& path) {
  absl::StatusOr<std::string> text = reader->ReadAttributeOnce(path);
  if (!text.ok()) return "";
  return std::string(TrimValue(*text));
}

Sample MakeSample(Subsystem subsystem, const std::string& device, uint32_t port,
                  const std::string& name, uint64_t raw) {
  Sample s;
  s.subsystem = subsystem;
  s.device = device;
  s.port = port;
  s.name = name;
  s.raw = raw;
  return s;
}

Sample MakeGauge(const std::string& device, uint32_t port,
                 const std::string& name, uint64_t raw, std::string unit) {
  Sample s = MakeSample(Subsystem::kRdmaPortAttribute, device, port, name, raw);
  s.kind = Kind::kGauge;
  s.unit = std::move(unit);
  return s;
}

}  // namespace

RdmaSysfsSource::RdmaSysfsSource(SysfsReader* reader)
    : RdmaSysfsSource(reader, Options()) {}

RdmaSysfsSource::RdmaSysfsSource(SysfsReader* reader, Options options)
    : reader_(reader), options_(options) {}

SourceStatus RdmaSysfsSource::Collect(Snapshot* snapshot) {
  SourceStatus status;
  status.source = std::string(name());
  ++calls_;

  absl::StatusOr<std::vector<std::string>> names =
      reader_->ListSubdirs(kClassDir);
  if (!names.ok()) {
    devices_.clear();
    // No class/infiniband at all: a node without RDMA, not an error.
    if (names.status().code() != absl::StatusCode::kNotFound) {
      RecordSourceError(&status, names.status());
    }
    return status;
  }

  // Forget devices that are gone (hot-unplug, driver unload).
  for (auto it = devices_.begin(); it != devices_.end();) {
    if (!std::binary_search(names->begin(), names->end(), it->first)) {
      reader_->DropFdCacheUnder(absl::StrCat(kClassDir, "/", it->first, "/"));
      it = devices_.erase(it);
    } else {
      ++it;
    }
  }

  for (const std::string& device : *names) {
    std::string dir = absl::StrCat(kClassDir, "/", device);
    absl::StatusOr<FileIdentity> identity = reader_->Stat(dir);
    if (!identity.ok()) {
      devices_.erase(device);  // vanished between list and stat
      if (identity.status().code() != absl::StatusCode::kNotFound) {
        RecordSourceError(&status, identity.status());
      }
      continue;
    }
    auto it = devices_.find(device);
    if (it == devices_.end() || it->second.needs_rescan ||
        it->second.identity != *identity ||
        calls_ - it->second.scanned_at_call >=
            static_cast<uint64_t>(std::max(1, options_.rescan_every_n_calls))) {
      if (it != devices_.end() && it->second.identity != *identity) {
        // Re-created under the same name: old descriptors are dead.
        reader_->DropFdCacheUnder(dir + "/");
      }
      it = devices_.insert_or_assign(device, ScanDevice(device, *identity))
               .first;
    }
    CollectDevice(device, &it->second, snapshot, &status);
  }
  return status;
}

RdmaSysfsSource::DeviceLayout RdmaSysfsSource::ScanDevice(
    const std::string& device, const FileIdentity& identity) {
  DeviceLayout layout;
  layout.identity = identity;
  layout.scanned_at_call = calls_;
  const std::string dir = absl::StrCat(kClassDir, "/", device);

  RdmaDeviceInfo& info = layout.info;
  info.name = device;
  info.fw_ver = ReadInfoText(reader_, dir + "/fw_ver");
  info.board_id = ReadInfoText(reader_, dir + "/board_id");
  info.hca_type = ReadInfoText(reader_, dir + "/hca_type");
  info.node_guid = ReadInfoText(reader_, dir + "/node_guid");
  absl::StatusOr<std::vector<std::string>> net =
      reader_->ListSubdirs(dir + "/device/net");
  if (net.ok()) info.netdevs = *std::move(net);

  // The width table of hw_counters is driver-specific. Device names can be
  // renamed by udev (rdma-core naming policies), so prefer the PCI driver.
  absl::StatusOr<std::string> driver =
      reader_->ReadLinkBasename(dir + "/device/driver");
  layout.is_mlx5 =
      driver.ok() ? *driver == "mlx5_core" : absl::StartsWith(device, "mlx5_");

  for (std::string& name :
       ListOptionalFiles(reader_, dir + "/hw_counters", &layout.scan_errors)) {
    if (!IsHwCounterSetting(name))
      layout.hw_counters.push_back(std::move(name));
  }

  absl::StatusOr<std::vector<std::string>> ports =
      reader_->ListSubdirs(dir + "/ports");
  if (!ports.ok()) {
    if (ports.status().code() != absl::StatusCode::kNotFound) {
      layout.scan_errors.push_back(ports.status());
    }
    return layout;
  }
  for (const std::string& p : *ports) {
    absl::StatusOr<uint64_t> number = ParseU64(p);
    if (!number.ok() || *number > std::numeric_limits<uint32_t>::max()) {
      continue;  // not a port directory
    }
    layout.ports.push_back(
        ScanPort(dir, static_cast<uint32_t>(*number), &layout.scan_errors));
  }
  std::sort(
      layout.ports.begin(), layout.ports.end(),
      [](const PortLayout& a, const PortLayout& b) { return a.port < b.port; });
  return layout;
}

RdmaSysfsSource::PortLayout RdmaSysfsSource::ScanPort(
    const std::string& device_dir, uint32_t port,
    std::vector<absl::Status>* errors) {
  PortLayout layout;
  layout.port = port;
  layout.dir = absl::StrCat(device_dir, "/ports/", port);
  layout.counters =
      ListOptionalFiles(reader_, layout.dir + "/counters", errors);
  layout.counters_ext =
      ListOptionalFiles(reader_, layout.dir + "/counters_ext", errors);
  for (std::string& name :
       ListOptionalFiles(reader_, layout.dir + "/hw_counters", errors)) {
    if (!IsHwCounterSetting(name))
      layout.hw_counters.push_back(std::move(name));
  }
  // Fixture mlx4_0 port 2 has "InfiniBand\n\n": trimming handles it.
  layout.link_layer = ReadInfoText(reader_, layout.dir + "/link_layer");

  // gid_attrs/ndevs/<idx>: read fails with EINVAL for empty GID slots and
  // on IB link layer (drivers/infiniband/core/sysfs.c); skip those. A port
  // has up to 256 slots, so this is done on scans only, without caching fds.
  const std::string ndevs_dir = layout.dir + "/gid_attrs/ndevs";
  absl::StatusOr<std::vector<std::string>> slots =
      reader_->ListFiles(ndevs_dir);
  if (slots.ok()) {
    std::set<std::string> netdevs;
    for (const std::string& slot : *slots) {
      std::string netdev = ReadInfoText(reader_, ndevs_dir + "/" + slot);
      if (!netdev.empty()) netdevs.insert(std::move(netdev));
    }
    layout.netdevs.assign(netdevs.begin(), netdevs.end());
  }
  return layout;
}

void RdmaSysfsSource::CollectDevice(const std::string& device,
                                    DeviceLayout* layout, Snapshot* snapshot,
                                    SourceStatus* status) {
  for (const absl::Status& error : layout->scan_errors) {
    RecordSourceError(status, error);
  }
  snapshot->rdma_devices.push_back(layout->info);
  for (const PortLayout& port : layout->ports) {
    CollectPort(device, layout, port, snapshot, status);
  }
  const std::string hw_dir =
      absl::StrCat(kClassDir, "/", device, "/hw_counters/");
  for (const std::string& name : layout->hw_counters) {
    CounterRead r =
        InterpretCounterRead(name, reader_->ReadAttribute(hw_dir + name));
    if (r.result == CounterReadResult::kGone) layout->needs_rescan = true;
    if (r.result == CounterReadResult::kError) {
      RecordSourceError(status, r.error);
    }
    if (r.result != CounterReadResult::kValue) continue;
    Sample s =
        MakeSample(Subsystem::kRdmaDeviceHwCounters, device, 0, name, r.value);
    s.width_bits = HwCounterWidthBits(layout->is_mlx5, name);
    s.unit = RdmaCounterUnit(name);
    s.direction = DirectionFromName(name);
    snapshot->samples.push_back(std::move(s));
  }
}

void RdmaSysfsSource::CollectPort(const std::string& device,
                                  DeviceLayout* layout, const PortLayout& port,
                                  Snapshot* snapshot, SourceStatus* status) {
  RdmaPortInfo info;
  info.device = device;
  info.port = port.port;
  info.link_layer = port.link_layer;
  info.netdevs = port.netdevs;

  // Returns the attribute text, or nullopt when absent; counts real errors.
  auto read_text = [&](const std::string& leaf) -> std::optional<std::string> {
    std::string path = absl::StrCat(port.dir, "/", leaf);
    absl::StatusOr<std::string> text = reader_->ReadAttribute(path);
    if (text.ok()) return std::string(TrimValue(*text));
    CounterRead r = InterpretCounterRead(path, text);
    if (r.result == CounterReadResult::kGone) layout->needs_rescan = true;
    if (r.result == CounterReadResult::kError)
      RecordSourceError(status, r.error);
    return std::nullopt;
  };
  auto parse_state = [&](const std::string& leaf, int* id, std::string* name) {
    std::optional<std::string> text = read_text(leaf);
    if (!text || text->empty()) return;
    absl::StatusOr<StateLine> line = ParseStateLine(*text);
    if (!line.ok()) {
      RecordSourceError(status,
                        absl::Status(line.status().code(),
                                     absl::StrCat(port.dir, "/", leaf, ": ",
                                                  line.status().message())));
      return;
    }
    *id = line->id;
    *name = line->name;
    snapshot->samples.push_back(MakeGauge(device, port.port, leaf + "_id",
                                          static_cast<uint64_t>(line->id), ""));
  };
  parse_state("state", &info.state_id, &info.state);
  parse_state("phys_state", &info.phys_state_id, &info.phys_state);
  if (std::optional<std::string> rate = read_text("rate");
      rate && !rate->empty()) {
    info.rate_text = *rate;
    absl::StatusOr<uint64_t> bps = ParseRateBytesPerSecond(*rate);
    if (bps.ok()) {
      info.rate_bytes_per_second = static_cast<double>(*bps);
      snapshot->samples.push_back(MakeGauge(device, port.port,
                                            "rate_bytes_per_second", *bps,
                                            "bytes_per_second"));
    } else {
      RecordSourceError(
          status,
          absl::Status(
              bps.status().code(),
              absl::StrCat(port.dir, "/rate: ", bps.status().message())));
    }
  }

  // Reads every file of one directory into (name, value) pairs.
  auto read_dir = [&](const std::string& subdir,
                      const std::vector<std::string>& files) {
    std::vector<std::pair<std::string, uint64_t>> values;
    values.reserve(files.size());
    const std::string prefix = absl::StrCat(port.dir, "/", subdir, "/");
    for (const std::string& name : files) {
      std::string path = prefix + name;
      CounterRead r = InterpretCounterRead(path, reader_->ReadAttribute(path));
      if (r.result == CounterReadResult::kGone) layout->needs_rescan = true;
      if (r.result == CounterReadResult::kError) {
        RecordSourceError(status, r.error);
      }
      if (r.result == CounterReadResult::kValue)
        values.emplace_back(name, r.value);
    }
    return values;
  };

  std::vector<std::pair<std::string, uint64_t>> pma =
      read_dir("counters", port.counters);
  const bool extended = PmaUsesExtendedWidth(pma);
  for (auto& [name, value] : pma) {
    Sample s = MakeSample(Subsystem::kRdmaPortCounters, device, port.port, name,
                          value);
    s.width_bits = PmaCounterWidthBits(name, extended);
    // A PMA counter stops at all-ones instead of wrapping (IBA 16.1.3.5).
    s.saturated = IsSaturated(value, s.width_bits);
    s.scale = RdmaCounterScale(name);
    s.unit = RdmaCounterUnit(name);
    s.direction = DirectionFromName(name);
    snapshot->samples.push_back(std::move(s));
  }
  for (auto& [name, value] : read_dir("counters_ext", port.counters_ext)) {
    Sample s = MakeSample(Subsystem::kRdmaPortCountersExt, device, port.port,
                          name, value);
    s.width_bits = 64;
    s.scale = RdmaCounterScale(name);
    s.unit = RdmaCounterUnit(name);
    s.direction = DirectionFromName(name);
    snapshot->samples.push_back(std::move(s));
  }
  for (auto& [name, value] : read_dir("hw_counters", port.hw_counters)) {
    Sample s = MakeSample(Subsystem::kRdmaPortHwCounters, device, port.port,
                          name, value);
    // mlx5 Q-counters wrap at 2^32 rather than saturate: no saturated flag.
    s.width_bits = HwCounterWidthBits(layout->is_mlx5, name);
    s.unit = RdmaCounterUnit(name);
    s.direction = DirectionFromName(name);
    snapshot->samples.push_back(std::move(s));
  }
  snapshot->rdma_ports.push_back(std::move(info));
}

}  // namespace fabricdiag::agent
