#include "agent/rdma_sysfs_source.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <set>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "agent/counter_desc.h"
#include "agent/sysfs_parse.h"
#include "counters/vocabulary.h"

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
  absl::StatusOr<std::string> text = reader->ReadAttribute(path);
  if (!text.ok()) return "";
  return std::string(TrimValue(*text));
}

uint32_t Append(std::vector<SeriesDesc>* table, SeriesDesc desc) {
  table->push_back(std::move(desc));
  return static_cast<uint32_t>(table->size() - 1);
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

  // No per-entry stat: only a name not seen before (or due for a rescan)
  // is looked at; the devices already planned cost nothing here.
  absl::StatusOr<std::vector<std::string>> names = reader_->ListDir(kClassDir);
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
      it = devices_.erase(it);  // closes its descriptors
    } else {
      ++it;
    }
  }

  const uint64_t rescan_every =
      static_cast<uint64_t>(std::max(1, options_.rescan_every_n_calls));
  for (const std::string& device : *names) {
    auto it = devices_.find(device);
    if (it == devices_.end() || it->second.needs_rescan ||
        calls_ - it->second.scanned_at_call >= rescan_every) {
      // Not a device: a stray file, a dangling link of a device being torn
      // down.
      if (!reader_->IsDir(absl::StrCat(kClassDir, "/", device))) {
        if (it != devices_.end()) devices_.erase(it);
        continue;
      }
      // The new plan keeps the descriptors of the files that are still
      // there (dead ones, of a device re-created under the same name,
      // reopen on their first read).
      AttributeRecycler recycler(reader_);
      if (it != devices_.end()) Recycle(&it->second, &recycler);
      it = devices_.insert_or_assign(device, ScanDevice(device, &recycler))
               .first;
    }
    const size_t samples = snapshot->samples.size();
    const size_t owners = snapshot->series_owners.size();
    const size_t devices = snapshot->rdma_devices.size();
    const size_t ports = snapshot->rdma_ports.size();
    CollectDevice(&it->second, snapshot, &status);
    // A planned file vanished. If the whole device went away (its class
    // link dangles, the device is being torn down), it is not reported at
    // all, as if the listing had not shown it; otherwise what was read
    // stands and the layout is rebuilt on the next call.
    if (it->second.needs_rescan &&
        !reader_->IsDir(absl::StrCat(kClassDir, "/", device))) {
      snapshot->samples.resize(samples);
      snapshot->series_owners.resize(owners);
      snapshot->rdma_devices.resize(devices);
      snapshot->rdma_ports.resize(ports);
      devices_.erase(it);
    }
  }
  return status;
}

void RdmaSysfsSource::Recycle(DeviceLayout* layout,
                              AttributeRecycler* recycler) {
  for (CounterFile& c : layout->hw_counters) recycler->Add(std::move(c.file));
  for (PortLayout& port : layout->ports) {
    recycler->Add(std::move(port.state));
    recycler->Add(std::move(port.phys_state));
    recycler->Add(std::move(port.rate));
    for (auto* files :
         {&port.counters, &port.counters_ext, &port.hw_counters}) {
      for (CounterFile& c : *files) recycler->Add(std::move(c.file));
    }
  }
}

RdmaSysfsSource::DeviceLayout RdmaSysfsSource::ScanDevice(
    const std::string& device, AttributeRecycler* recycler) {
  DeviceLayout layout;
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

  // The widths of hw_counters are driver-specific. Device names can be
  // renamed by udev (rdma-core naming policies), so prefer the PCI driver.
  absl::StatusOr<std::string> module =
      reader_->ReadLinkBasename(dir + "/device/driver");
  layout.driver = module.ok() ? counters::RdmaDriverFromKernelModule(*module)
                              : counters::Driver::kUnknown;
  if (layout.driver == counters::Driver::kUnknown) {
    layout.driver = counters::DriverFromRdmaDeviceName(device);
  }

  for (std::string& name :
       ListOptionalFiles(reader_, dir + "/hw_counters", &layout.scan_errors)) {
    if (IsHwCounterSetting(name)) continue;
    CounterFile counter;
    counter.file =
        recycler->Attribute(absl::StrCat(dir, "/hw_counters/", name));
    layout.hw_counters.push_back(std::move(counter));
  }

  absl::StatusOr<std::vector<std::string>> ports =
      reader_->ListSubdirs(dir + "/ports");
  if (!ports.ok()) {
    if (ports.status().code() != absl::StatusCode::kNotFound) {
      layout.scan_errors.push_back(ports.status());
    }
    Plan(device, &layout);
    return layout;
  }
  for (const std::string& p : *ports) {
    absl::StatusOr<uint64_t> number = ParseU64(p);
    if (!number.ok() || *number > std::numeric_limits<uint32_t>::max()) {
      continue;  // not a port directory
    }
    layout.ports.push_back(ScanPort(dir, static_cast<uint32_t>(*number),
                                    recycler, &layout.scan_errors));
  }
  std::sort(
      layout.ports.begin(), layout.ports.end(),
      [](const PortLayout& a, const PortLayout& b) { return a.port < b.port; });
  Plan(device, &layout);
  return layout;
}

RdmaSysfsSource::PortLayout RdmaSysfsSource::ScanPort(
    const std::string& device_dir, uint32_t port, AttributeRecycler* recycler,
    std::vector<absl::Status>* errors) {
  PortLayout layout;
  layout.port = port;
  layout.dir = absl::StrCat(device_dir, "/ports/", port);
  auto files = [&](const char* subdir, bool skip_settings) {
    std::vector<CounterFile> out;
    for (const std::string& name : ListOptionalFiles(
             reader_, absl::StrCat(layout.dir, "/", subdir), errors)) {
      if (skip_settings && IsHwCounterSetting(name)) continue;
      CounterFile counter;
      counter.file =
          recycler->Attribute(absl::StrCat(layout.dir, "/", subdir, "/", name));
      out.push_back(std::move(counter));
    }
    return out;
  };
  layout.counters = files("counters", false);
  layout.counters_ext = files("counters_ext", false);
  layout.hw_counters = files("hw_counters", true);
  // Attributes missing here (a fixture, an odd driver) are not planned, so
  // that a planned file that vanishes later means the device changed.
  absl::StatusOr<std::vector<std::string>> port_files =
      reader_->ListFiles(layout.dir);
  auto plan = [&](const char* name) {
    if (port_files.ok() &&
        std::binary_search(port_files->begin(), port_files->end(), name)) {
      return recycler->Attribute(absl::StrCat(layout.dir, "/", name));
    }
    return SysfsAttribute();
  };
  layout.state = plan("state");
  layout.phys_state = plan("phys_state");
  layout.rate = plan("rate");
  // Fixture mlx4_0 port 2 has "InfiniBand\n\n": trimming handles it.
  layout.link_layer = ReadInfoText(reader_, layout.dir + "/link_layer");

  // gid_attrs/ndevs/<idx>: read fails with EINVAL for empty GID slots and
  // on IB link layer (drivers/infiniband/core/sysfs.c); skip those. A port
  // has up to 256 slots, so this is done on scans only, without keeping
  // descriptors.
  const std::string ndevs_dir = layout.dir + "/gid_attrs/ndevs";
  absl::StatusOr<std::vector<std::string>> slots =
      reader_->ListFiles(ndevs_dir);
  if (slots.ok()) {
    std::set<std::string> netdevs;
    for (const std::string& slot : *slots) {
      std::string netdev =
          ReadInfoText(reader_, absl::StrCat(ndevs_dir, "/", slot));
      if (!netdev.empty()) netdevs.insert(std::move(netdev));
    }
    layout.netdevs.assign(netdevs.begin(), netdevs.end());
  }
  return layout;
}

namespace {

// The file name of a planned attribute (the last path component).
std::string Leaf(const SysfsAttribute& file) {
  const std::string& path = file.relpath();
  return path.substr(path.rfind('/') + 1);
}

}  // namespace

void RdmaSysfsSource::Plan(const std::string& device, DeviceLayout* layout) {
  auto table = std::make_shared<std::vector<SeriesDesc>>();
  const counters::Driver driver = layout->driver;
  for (PortLayout& port : layout->ports) {
    const uint32_t p = port.port;
    std::vector<SeriesDesc> gauges = RdmaPortAttributeDescs(device, p);
    port.state_desc = Append(table.get(), std::move(gauges[0]));
    port.phys_state_desc = Append(table.get(), std::move(gauges[1]));
    port.rate_desc = Append(table.get(), std::move(gauges[2]));
    for (CounterFile& c : port.counters) {
      const std::string name = Leaf(c.file);
      bool pma_width = false;
      SeriesDesc d = DescribeCounter(Subsystem::kRdmaPortCounters, driver,
                                     device, p, name, &pma_width);
      // The width of the data and packet counters depends on which PMA
      // table the kernel uses, which only the values may tell (see
      // PmaUsesExtendedWidth): describe both, pick per read.
      c.desc = Append(table.get(), d);
      c.desc_extended = c.desc;
      if (pma_width) {
        d.width_bits = 64;
        c.desc_extended = Append(table.get(), std::move(d));
      }
      c.reveals_width = PmaCounterRevealsWidth(name);
      if (PmaCounterShowsExtendedWidth(name, 0)) port.extended_by_name = true;
    }
    for (CounterFile& c : port.counters_ext) {
      c.desc =
          Append(table.get(), DescribeCounter(Subsystem::kRdmaPortCountersExt,
                                              driver, device, p, Leaf(c.file)));
    }
    for (CounterFile& c : port.hw_counters) {
      // mlx5 Q-counters wrap at 2^32 rather than saturate: no saturated
      // flag for them.
      c.desc =
          Append(table.get(), DescribeCounter(Subsystem::kRdmaPortHwCounters,
                                              driver, device, p, Leaf(c.file)));
    }
  }
  for (CounterFile& c : layout->hw_counters) {
    c.desc =
        Append(table.get(), DescribeCounter(Subsystem::kRdmaDeviceHwCounters,
                                            driver, device, 0, Leaf(c.file)));
  }
  layout->table = std::move(table);
}

std::optional<uint64_t> RdmaSysfsSource::ReadCounter(CounterFile* counter,
                                                     DeviceLayout* layout,
                                                     SourceStatus* status) {
  CounterRead r =
      InterpretCounterRead(counter->file.relpath(), counter->file.Read(&buf_));
  switch (r.result) {
    case CounterReadResult::kValue:
      return r.value;
    case CounterReadResult::kGone:
      layout->needs_rescan = true;
      return std::nullopt;
    case CounterReadResult::kError:
      RecordSourceError(status, r.error);
      return std::nullopt;
    case CounterReadResult::kAbsent:
      return std::nullopt;
  }
  return std::nullopt;
}

void RdmaSysfsSource::CollectDevice(DeviceLayout* layout, Snapshot* snapshot,
                                    SourceStatus* status) {
  for (const absl::Status& error : layout->scan_errors) {
    RecordSourceError(status, error);
  }
  snapshot->series_owners.push_back(layout->table);
  snapshot->rdma_devices.push_back(layout->info);
  for (PortLayout& port : layout->ports) {
    CollectPort(layout, &port, snapshot, status);
  }
  const std::vector<SeriesDesc>& table = *layout->table;
  for (CounterFile& c : layout->hw_counters) {
    std::optional<uint64_t> value = ReadCounter(&c, layout, status);
    if (!value) continue;
    snapshot->samples.push_back(Sample{&table[c.desc], *value});
  }
}

std::optional<absl::string_view> RdmaSysfsSource::ReadText(
    SysfsAttribute* file, DeviceLayout* layout, SourceStatus* status) {
  if (file->relpath().empty()) return std::nullopt;  // not planned
  absl::StatusOr<absl::string_view> text = file->Read(&buf_);
  if (text.ok()) return TrimValue(*text);
  CounterRead r = InterpretCounterRead(file->relpath(), text);
  if (r.result == CounterReadResult::kGone) layout->needs_rescan = true;
  if (r.result == CounterReadResult::kError) {
    RecordSourceError(status, r.error);
  }
  return std::nullopt;
}

void RdmaSysfsSource::CollectPortAttributes(DeviceLayout* layout,
                                            PortLayout* port,
                                            RdmaPortInfo* info,
                                            Snapshot* snapshot,
                                            SourceStatus* status) {
  const std::vector<SeriesDesc>& table = *layout->table;
  auto parse_state = [&](SysfsAttribute* file, uint32_t desc, int* id,
                         std::string* name) {
    std::optional<absl::string_view> text = ReadText(file, layout, status);
    if (!text || text->empty()) return;
    absl::StatusOr<StateLine> line = ParseStateLine(*text);
    if (!line.ok()) {
      RecordSourceError(status,
                        absl::Status(line.status().code(),
                                     absl::StrCat(file->relpath(), ": ",
                                                  line.status().message())));
      return;
    }
    *id = line->id;
    *name = std::move(line->name);
    snapshot->samples.push_back(
        Sample{&table[desc], static_cast<uint64_t>(line->id)});
  };
  parse_state(&port->state, port->state_desc, &info->state_id, &info->state);
  parse_state(&port->phys_state, port->phys_state_desc, &info->phys_state_id,
              &info->phys_state);
  if (std::optional<absl::string_view> rate =
          ReadText(&port->rate, layout, status);
      rate && !rate->empty()) {
    info->rate_text = std::string(*rate);
    absl::StatusOr<uint64_t> bps = ParseRateBytesPerSecond(*rate);
    if (bps.ok()) {
      info->rate_bytes_per_second = static_cast<double>(*bps);
      snapshot->samples.push_back(Sample{&table[port->rate_desc], *bps});
    } else {
      RecordSourceError(status,
                        absl::Status(bps.status().code(),
                                     absl::StrCat(port->rate.relpath(), ": ",
                                                  bps.status().message())));
    }
  }
}

void RdmaSysfsSource::CollectPmaCounters(DeviceLayout* layout, PortLayout* port,
                                         Snapshot* snapshot,
                                         SourceStatus* status) {
  const std::vector<SeriesDesc>& table = *layout->table;
  const size_t n = port->counters.size();
  pma_values_.resize(n);
  pma_present_.assign(n, false);
  bool extended = port->extended_by_name;
  for (size_t i = 0; i < n; ++i) {
    CounterFile& c = port->counters[i];
    std::optional<uint64_t> value = ReadCounter(&c, layout, status);
    if (!value) continue;
    pma_values_[i] = *value;
    pma_present_[i] = true;
    if (c.reveals_width && !extended) {
      extended = PmaCounterShowsExtendedWidth(table[c.desc].name, *value);
    }
  }
  for (size_t i = 0; i < n; ++i) {
    if (!pma_present_[i]) continue;
    const CounterFile& c = port->counters[i];
    const SeriesDesc& desc = table[extended ? c.desc_extended : c.desc];
    // A PMA counter stops at all-ones instead of wrapping (IBA 16.1.3.5).
    snapshot->samples.push_back(Sample{
        &desc, pma_values_[i], IsSaturated(pma_values_[i], desc.width_bits)});
  }
}

void RdmaSysfsSource::CollectPort(DeviceLayout* layout, PortLayout* port,
                                  Snapshot* snapshot, SourceStatus* status) {
  const std::vector<SeriesDesc>& table = *layout->table;
  RdmaPortInfo info;
  info.device = layout->info.name;
  info.port = port->port;
  info.link_layer = port->link_layer;
  info.netdevs = port->netdevs;
  CollectPortAttributes(layout, port, &info, snapshot, status);
  CollectPmaCounters(layout, port, snapshot, status);
  for (auto* files : {&port->counters_ext, &port->hw_counters}) {
    for (CounterFile& c : *files) {
      if (std::optional<uint64_t> value = ReadCounter(&c, layout, status)) {
        snapshot->samples.push_back(Sample{&table[c.desc], *value});
      }
    }
  }
  snapshot->rdma_ports.push_back(std::move(info));
}

}  // namespace fabricdiag::agent
