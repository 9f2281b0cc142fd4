// What each file of a simulated node holds, given a port's counters: the
// mlx5 RDMA device directory, the netdev directory and the `ethtool -S`
// text. Pure: returns (relative path, content) pairs; tree_writer.h puts
// them on disk. Every counter the counter table (counters/counter_table.h)
// lists for mlx5 is there, with the width and unit the table gives it; the
// ones the simulator does not model read 0.
//
// Formats follow the kernel (docs/counters.md): decimal + "\n";
// port_xmit_data / port_rcv_data in 4-octet words (bytes / 4); state
// "4: ACTIVE" / "1: DOWN"; phys_state "5: LinkUp" / "3: Disabled"; rate
// "400 Gb/sec (4X NDR)" or "200 Gb/sec (4X HDR)"; netdev speed in Mb/s and
// "-1" while the link is down (SPEED_UNKNOWN); ethtool text as ethtool's
// dump_stats prints it ("NIC statistics:\n     name: value\n"), pause
// durations in microseconds.
//
//   for (const FileEntry& f : RdmaDeviceFiles(nic, 3, counters, true)) ...
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "sim/fabric.h"
#include "sim/port_counters.h"

namespace fabricdiag::sim {

struct FileEntry {
  std::string path;  // relative to the directory the function describes
  std::string content;
};

// Files under class/infiniband/<dev>/ (port 1 only). With `with_static`, also
// the files that never change (fw_ver, link_layer, gid_attrs, ...); the
// directory device/net/<netdev> is an entry whose path ends in '/' and
// whose content is empty. `nic_index` makes node_guid unique.
std::vector<FileEntry> RdmaDeviceFiles(const SimNic& nic, size_t nic_index,
                                       const PortCounters& c, bool with_static);

// Files under class/net/<netdev>/. A host NIC's statistics/* count only the
// kernel-stack traffic (mlx5 netdev stats exclude RoCE); a switch port's
// count everything on the wire, as the ASIC's counters do on SONiC/Cumulus.
std::vector<FileEntry> NetdevFiles(const PortCounters& c, bool switch_port,
                                   bool with_static);

// `ethtool -S` text with mlx5 names (also for switch ports).
std::string EthtoolStatsText(const PortCounters& c);

}  // namespace fabricdiag::sim
