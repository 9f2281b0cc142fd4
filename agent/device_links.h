// Which RDMA device and port each netdev belongs to, from what the RDMA
// source found: a RoCE netdev is named in class/infiniband/D/ports/N/
// gid_attrs/ndevs/*; as a fallback (IPoIB, no GIDs yet) in D/device/net/*,
// with the port known only when the device has a single port.
//
//   LinkNetdevsToRdma(&snapshot);  // after every source has run
//
// Pure; thread-compatible.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "agent/sample.h"

namespace fabricdiag::agent {

// Netdev -> (RDMA device, port; 0 when unknown).
std::map<std::string, std::pair<std::string, uint32_t>> MapNetdevsToRdma(
    const std::vector<RdmaPortInfo>& ports,
    const std::vector<RdmaDeviceInfo>& devices);

// Fills rdma_device and rdma_port of every NetdevInfo of `snapshot` from its
// rdma_ports and rdma_devices (cleared for netdevs without an RDMA device).
void LinkNetdevsToRdma(Snapshot* snapshot);

}  // namespace fabricdiag::agent
