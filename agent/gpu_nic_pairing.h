// Pairs each GPU of a node with its nearest RDMA NIC by PCIe path.
//
// Pure: the inputs are what the sysfs walk (agent/gpu_nic_source.h) read,
// the output depends on nothing else. docs/agent.md ("GPU to NIC pairing")
// is the user-facing statement of the rules below.
//
// GPUs: PCI functions of an NVIDIA (vendor 0x10de) or AMD (0x1002) GPU:
// class 0x0300xx (VGA), 0x0302xx (3D controller: H100, A100), 0x0380xx
// (display controller: MI200) or 0x1200xx (processing accelerator: MI300X).
// They are numbered by ascending PCI address, the order nvidia-smi and
// CUDA_DEVICE_ORDER=PCI_BUS_ID show (CUDA's default FASTEST_FIRST order
// cannot be known from sysfs).
//
// Distance between a GPU and a NIC, from their canonical device paths
// ("pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:00.0/0000:1b:00.0": the host
// bridge, the root port, then every bridge down to the function):
//   kPcieSwitch  the paths share a bridge below the root port (a PCIe
//                switch; nvidia-smi's PIX/PXB)
//   kRootPort    they share the root port and nothing below it
//   kNuma        they share the host bridge, or both report the same
//                numa_node (>= 0); nvidia-smi's PHB/NODE
//   kNone        none of these: the NIC is not considered
// A GPU pairs with the NIC of the nearest distance; within kPcieSwitch the
// NIC whose common path is longest (the nearest switch of a cascade) wins.
// When several NICs are equally near, the one paired with the fewest
// GPUs so far (GPUs taken in index order) wins, then the lowest PCI
// address: two GPUs with two equally near NICs get one each, two GPUs
// under one switch with one NIC both get that NIC. A GPU with no NIC at
// kNuma or nearer gets an empty device and kNone.
//
//   std::vector<GpuNicPair> pairs = PairGpusWithNics(pci_functions, nics);
#pragma once

#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/string_view.h"

namespace fabricdiag::agent {

// One PCI function as sysfs describes it.
struct PciFunction {
  std::string address;  // "0000:1b:00.0" (lowercase hex)
  // Canonical path below <sysfs>/devices, ending in `address`.
  std::string path;
  uint32_t pci_class = 0;  // the `class` attribute: 0x030200
  uint32_t vendor = 0;     // the `vendor` attribute: 0x10de
  int numa_node = -1;      // -1: unknown (as the kernel says)
};

// An RDMA device and the PCI function behind it.
struct RdmaNicPci {
  std::string device;       // "mlx5_0"
  std::string pci_address;  // "0000:18:00.0"
  std::string netdev;       // "ibp24s0"; "" when it has none
};

enum class PcieDistance { kPcieSwitch, kRootPort, kNuma, kNone };

// "pcie_switch", "root_port", "numa", "none": the metric's label values.
absl::string_view PcieDistanceName(PcieDistance distance);

// One GPU and the NIC it pairs with.
struct GpuNicPair {
  int gpu = 0;          // index: rank of `gpu_pci` among the GPUs' addresses
  std::string gpu_pci;  // "0000:1b:00.0"
  std::string device;   // "mlx5_0"; "" when no NIC is near (kNone)
  std::string netdev;   // the NIC's netdev, "" when none
  PcieDistance distance = PcieDistance::kNone;

  auto Key() const { return std::tie(gpu, gpu_pci, device, netdev, distance); }
  friend bool operator==(const GpuNicPair& a, const GpuNicPair& b) {
    return a.Key() == b.Key();
  }
  friend bool operator!=(const GpuNicPair& a, const GpuNicPair& b) {
    return !(a == b);
  }
};

// Whether `f` is an NVIDIA or AMD GPU (the classes above).
bool IsGpu(const PciFunction& f);

// The pairs, one per GPU in `functions`, in GPU index order. A NIC whose
// PCI address is not among `functions` cannot be placed and is ignored.
// No GPU: no pairs.
std::vector<GpuNicPair> PairGpusWithNics(
    const std::vector<PciFunction>& functions,
    const std::vector<RdmaNicPci>& nics);

}  // namespace fabricdiag::agent
