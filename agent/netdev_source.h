// NetdevSource: network interface counters from <sysfs>/class/net.
//
// For every interface in class/net whose name does not match the exclude
// regex it reports:
//   * statistics/*  64-bit rtnl_link_stats64 counters (kNetdevStatistics)
//   * kNetdevAttribute: carrier_changes, carrier_up_count, carrier_down_count
//     (counters; atomic_t in net/core/net-sysfs.c, so 32 bits wide), gauges
//     "speed_bytes_per_second" (speed is Mb/s; -1, empty or EINVAL while the
//     link is down -> absent), "mtu" (bytes) and "carrier" (0/1)
//   * NetdevInfo: name, operstate and speed (the RDMA device behind the
//     interface is linked by the Snapshotter, device_links.h).
//
// Virtual interfaces are excluded by a POSIX extended regex (regcomp
// REG_EXTENDED, unanchored search like node_exporter's device filters),
// evaluated once per interface name and cached. (POSIX rather than
// std::regex: no exceptions, and GCC 12's <regex> trips -Werror under ASan.)
// Switch front-panel ports (swp1, Ethernet0) are ordinary netdevs and are
// reported.
//
//   SysfsReader reader("/sys");
//   absl::StatusOr<std::unique_ptr<NetdevSource>> source =
//       NetdevSource::Create(&reader);
//   Snapshot snap;
//   (*source)->Collect(&snap);
//
// Thread safety: Collect() must not be called concurrently (Source contract).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "agent/sample.h"
#include "agent/source.h"
#include "agent/sysfs_reader.h"

namespace fabricdiag::agent {

// Loopback, container, bridge, tunnel and VM interfaces.
inline constexpr char kDefaultNetdevExclude[] =
    "^(lo|veth.*|docker.*|br-.*|virbr.*|cni.*|flannel.*|cali.*|vxlan.*|"
    "tunl.*|tun.*|tap.*|dummy.*|ifb.*|kube-.*|weave.*|genev_sys.*|vnet.*|"
    "nodelocaldns)$";

class NetdevSource : public Source {
 public:
  struct Options {
    // Interfaces whose name matches are skipped; "" excludes nothing.
    std::string exclude_regex = kDefaultNetdevExclude;
    // Rebuild cached statistics file lists and the RDMA map after this many
    // calls. >= 1.
    int rescan_every_n_calls = 60;
  };

  // kInvalidArgument when `options.exclude_regex` does not compile.
  // `reader` is not owned and must outlive the source.
  static absl::StatusOr<std::unique_ptr<NetdevSource>> Create(
      SysfsReader* reader, Options options);
  // With default Options (kDefaultNetdevExclude).
  static absl::StatusOr<std::unique_ptr<NetdevSource>> Create(
      SysfsReader* reader);

  ~NetdevSource() override;

  absl::string_view name() const override { return "netdev"; }
  SourceStatus Collect(Snapshot* snapshot) override;

 private:
  // A file read on every call, and where its series is described.
  struct CounterFile {
    SysfsAttribute file;
    uint32_t desc = 0;  // index into NetdevLayout::table
  };
  // The read plan of one interface, built by a scan.
  struct NetdevLayout {
    uint64_t scanned_at_call = 0;
    bool needs_rescan = false;
    // Every series of the interface; immutable once planned, shared with
    // the snapshots that point into it.
    std::shared_ptr<const std::vector<SeriesDesc>> table;
    std::vector<CounterFile> statistics;
    std::vector<CounterFile> flap_counters;  // carrier_changes, ...
    CounterFile mtu;
    CounterFile carrier;
    SysfsAttribute speed;
    uint32_t speed_desc = 0;
    SysfsAttribute operstate;
  };

  class Regex;  // owns a regex_t
  NetdevSource(SysfsReader* reader, Options options,
               std::unique_ptr<Regex> exclude);

  bool Excluded(const std::string& netdev);
  // Lists statistics/ and plans every file of `netdev`, taking attributes
  // from `recycler` where it has them.
  NetdevLayout Scan(const std::string& netdev, AttributeRecycler* recycler,
                    SourceStatus* status);
  // Offers every attribute of `layout` to `recycler`.
  static void Recycle(NetdevLayout* layout, AttributeRecycler* recycler);
  void CollectNetdev(const std::string& netdev, NetdevLayout* layout,
                     Snapshot* snapshot, SourceStatus* status);
  // A counter's value, or nullopt when absent, gone (a rescan is due) or
  // broken (counted in `status`).
  std::optional<uint64_t> ReadCounter(CounterFile* counter,
                                      NetdevLayout* layout,
                                      SourceStatus* status);

  SysfsReader* const reader_;
  const Options options_;
  std::unique_ptr<Regex> exclude_;  // null: exclude nothing
  uint64_t calls_ = 0;
  absl::flat_hash_map<std::string, bool> excluded_;
  std::map<std::string, NetdevLayout> netdevs_;
  std::string buf_;  // read buffer shared by every file
};

}  // namespace fabricdiag::agent
