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
// Costs: class/infiniband is listed and each device directory stat'ed on every
// call, so devices that appear or vanish are noticed at once. The file lists
// of a device (and its rarely-changing info: firmware, netdevs) are cached and
// rebuilt when the device directory's identity changes, when a listed file
// vanishes, and every `rescan_every_n_calls` calls.
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
  struct PortLayout {
    uint32_t port = 0;
    std::string dir;  // class/infiniband/D/ports/N
    std::vector<std::string> counters;
    std::vector<std::string> counters_ext;
    std::vector<std::string> hw_counters;
    std::string link_layer;
    std::vector<std::string> netdevs;
  };
  struct DeviceLayout {
    FileIdentity identity;
    uint64_t scanned_at_call = 0;
    bool needs_rescan = false;
    bool is_mlx5 = false;
    RdmaDeviceInfo info;
    std::vector<std::string> hw_counters;
    std::vector<PortLayout> ports;
    // Structural problems found by the scan (a `counters` that is a file);
    // reported again on every call while they persist.
    std::vector<absl::Status> scan_errors;
  };
  DeviceLayout ScanDevice(const std::string& device,
                          const FileIdentity& identity);
  PortLayout ScanPort(const std::string& device_dir, uint32_t port,
                      std::vector<absl::Status>* errors);
  // Reads every cached file of `layout` and appends samples and info.
  void CollectDevice(const std::string& device, DeviceLayout* layout,
                     Snapshot* snapshot, SourceStatus* status);
  void CollectPort(const std::string& device, DeviceLayout* layout,
                   const PortLayout& port, Snapshot* snapshot,
                   SourceStatus* status);

  SysfsReader* const reader_;
  const Options options_;
  uint64_t calls_ = 0;
  std::map<std::string, DeviceLayout> devices_;
};

}  // namespace fabricdiag::agent
