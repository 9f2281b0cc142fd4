// RdmaSysfsSource: RDMA port counters and attributes from
// <sysfs>/class/infiniband.
//
// For every device in class/infiniband (symlinks into /sys/devices on real
// systems, plain directories in fixtures) and each of its ports it reports:
//   * counters/*      IB PMA counters     (Subsystem::kRdmaPortCounters), with
//                     width and saturation; port_{xmit,rcv}_data scaled x4
//   * counters_ext/*  pre-v4.5 64-bit set (Subsystem::kRdmaPortCountersExt)
//   * ports/N/hw_counters/* and <dev>/hw_counters/* driver counters
//                     (kRdmaPortHwCounters / kRdmaDeviceHwCounters), except
//                     `lifespan`, which is a setting
//   * gauges of Subsystem::kRdmaPortAttribute: "rate_bytes_per_second",
//     "state_id", "phys_state_id"
//   * RdmaDeviceInfo (fw_ver, board_id, hca_type, node_guid, device/net/*) and
//     RdmaPortInfo (state, phys_state, rate, link_layer, gid_attrs/ndevs/*).
//
// A value the kernel does not provide ("N/A (no PMA)", EINVAL, an empty file)
// is absent, never 0, and is not an error. Junk, overflow, EACCES, EIO or a
// symlink loop are counted in SourceStatus.errors and the source goes on.
//
// Costs: class/infiniband is listed on every call (no per-entry stat), so
// devices that appear or vanish are noticed at once. A scan of a device (its
// file lists, its rarely-changing info: firmware, netdevs) builds its read
// plan: one SysfsAttribute per file, which keeps its descriptor on sysfs,
// and one immutable SeriesDesc per series, shared with the snapshots. A call
// then costs one pread per file and no allocation per value. The plan is
// rebuilt when a planned file vanishes (a read fails with ENOENT/ENODEV, as
// every kept descriptor of a device that was removed and re-created under
// the same name does), and every `rescan_every_n_calls` calls, which picks
// up files that appeared (hw_counters after a firmware capability change);
// a rebuilt plan keeps the descriptors of the files that are still there.
//
//   SysfsReader reader("/sys");
//   RdmaSysfsSource source(&reader);
//   Snapshot snap;
//   SourceStatus status = source.Collect(&snap);
//
// Thread safety: Collect() must not be called concurrently (Source contract).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "agent/sample.h"
#include "agent/source.h"
#include "agent/sysfs_reader.h"

namespace fabricdiag::agent {

class RdmaSysfsSource : public Source {
 public:
  struct Options {
    // Rebuild every device's cached file lists after this many calls even
    // if nothing looked changed (catches hw_counters appearing after a
    // firmware capability change, renamed netdevs). >= 1.
    int rescan_every_n_calls = 60;
  };

  // `reader` is not owned and must outlive the source.
  explicit RdmaSysfsSource(SysfsReader* reader);
  RdmaSysfsSource(SysfsReader* reader, Options options);

  absl::string_view name() const override { return "rdma_sysfs"; }
  SourceStatus Collect(Snapshot* snapshot) override;

 private:
  // A file read on every call, and where its series is described.
  struct CounterFile {
    SysfsAttribute file;
    uint32_t desc = 0;  // index into DeviceLayout::table
    // counters/ only: the description when the port's PMA uses the 64-bit
    // table (== desc when the width does not depend on it), and whether
    // this counter's name or value can reveal that table.
    uint32_t desc_extended = 0;
    bool reveals_width = false;
  };
  struct PortLayout {
    uint32_t port = 0;
    std::string dir;  // class/infiniband/D/ports/N
    std::string link_layer;
    std::vector<std::string> netdevs;
    SysfsAttribute state;
    SysfsAttribute phys_state;
    SysfsAttribute rate;
    uint32_t state_desc = 0;
    uint32_t phys_state_desc = 0;
    uint32_t rate_desc = 0;
    // The PMA table is the 64-bit one whatever the values (unicast_*
    // files exist).
    bool extended_by_name = false;
    std::vector<CounterFile> counters;
    std::vector<CounterFile> counters_ext;
    std::vector<CounterFile> hw_counters;
  };
  struct DeviceLayout {
    uint64_t scanned_at_call = 0;
    bool needs_rescan = false;
    counters::Driver driver = counters::Driver::kUnknown;
    RdmaDeviceInfo info;
    // Every series of the device; immutable once the scan is done, shared
    // with the snapshots that point into it.
    std::shared_ptr<const std::vector<SeriesDesc>> table;
    std::vector<CounterFile> hw_counters;
    std::vector<PortLayout> ports;
    // Structural problems found by the scan (a `counters` that is a file);
    // reported again on every call while they persist.
    std::vector<absl::Status> scan_errors;
  };
  // Plans `device`, taking attributes from `recycler` where it has them.
  DeviceLayout ScanDevice(const std::string& device,
                          AttributeRecycler* recycler);
  PortLayout ScanPort(const std::string& device_dir, uint32_t port,
                      AttributeRecycler* recycler,
                      std::vector<absl::Status>* errors);
  // Offers every attribute of `layout` to `recycler`.
  static void Recycle(DeviceLayout* layout, AttributeRecycler* recycler);
  // Gives every file of `layout` its description and attribute handle.
  void Plan(const std::string& device, DeviceLayout* layout);
  // Reads every planned file of `layout` and appends samples and info.
  void CollectDevice(DeviceLayout* layout, Snapshot* snapshot,
                     SourceStatus* status);
  void CollectPort(DeviceLayout* layout, PortLayout* port, Snapshot* snapshot,
                   SourceStatus* status);
  // state, phys_state and rate: into `info`, and their samples.
  void CollectPortAttributes(DeviceLayout* layout, PortLayout* port,
                             RdmaPortInfo* info, Snapshot* snapshot,
                             SourceStatus* status);
  // counters/: which PMA table (and so which widths) applies is known only
  // once every value of the port is read.
  void CollectPmaCounters(DeviceLayout* layout, PortLayout* port,
                          Snapshot* snapshot, SourceStatus* status);
  // The trimmed text of an attribute (a view into buf_, valid until the next
  // read), or nullopt when absent, gone (the layout is marked for a rescan)
  // or broken (counted in `status`).
  std::optional<absl::string_view> ReadText(SysfsAttribute* file,
                                            DeviceLayout* layout,
                                            SourceStatus* status);
  // Reads one counter file: its value, or nullopt when absent, gone (the
  // layout is marked for a rescan) or broken (counted in `status`).
  std::optional<uint64_t> ReadCounter(CounterFile* counter,
                                      DeviceLayout* layout,
                                      SourceStatus* status);

  SysfsReader* const reader_;
  const Options options_;
  uint64_t calls_ = 0;
  std::map<std::string, DeviceLayout> devices_;
  std::string buf_;                   // read buffer shared by every file
  std::vector<uint64_t> pma_values_;  // scratch for one port's counters/
  std::vector<bool> pma_present_;
};

}  // namespace fabricdiag::agent
