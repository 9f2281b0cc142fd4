// The sysfs walk behind the GPU to NIC pairing: every PCI function and the
// PCI function behind every RDMA device.
//
// Reads, under the sysfs root (through SysfsReader, so nothing outside it):
//   bus/pci/devices/<addr>           (a symlink) resolved to its canonical
//                                    path below devices/
//   bus/pci/devices/<addr>/class     "0x030200"
//   bus/pci/devices/<addr>/vendor    "0x10de"
//   bus/pci/devices/<addr>/numa_node "-1" when the platform does not say
//   class/infiniband/<dev>/device    (a symlink) its basename is the PCI
//                                    address; absent for software devices
//                                    (rxe, siw), which are left out
//   class/infiniband/<dev>/device/net/<netdev>  the first one, if any
// A function whose class, vendor or path cannot be read (a dangling
// symlink, junk) is left out and the failure is listed in `errors`; an
// unreadable or junk numa_node is -1 and listed too. Missing bus/pci or
// class/infiniband (a host without PCI, or without RDMA) is no error.
//
//   SysfsReader reader("/sys");
//   PciScan scan = ScanPci(&reader);
//   std::vector<GpuNicPair> pairs =
//       PairGpusWithNics(scan.functions, scan.nics);
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "agent/gpu_nic_pairing.h"
#include "agent/sysfs_reader.h"

namespace fabricdiag::agent {

struct PciScan {
  std::vector<PciFunction> functions;  // sorted by address
  std::vector<RdmaNicPci> nics;        // sorted by device name
  std::vector<std::string> errors;     // one line per failure
};

PciScan ScanPci(SysfsReader* reader);

// "0x030200\n" -> 0x030200; nullopt for anything else (empty, junk, more
// than 32 bits).
std::optional<uint32_t> ParsePciHex(absl::string_view text);

// "0\n" -> 0, "-1\n" -> -1; nullopt for junk or values below -1.
std::optional<int> ParseNumaNode(absl::string_view text);

}  // namespace fabricdiag::agent
