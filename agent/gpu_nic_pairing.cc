#include "agent/gpu_nic_pairing.h"

#include <algorithm>
#include <cstddef>
#include <map>
#include <tuple>

#include "absl/strings/str_split.h"

namespace fabricdiag::agent {

namespace {

constexpr uint32_t kVendorNvidia = 0x10de;
constexpr uint32_t kVendorAmd = 0x1002;

// How near a NIC is to a GPU; a larger value is nearer.
struct Nearness {
  PcieDistance distance = PcieDistance::kNone;
  size_t common = 0;  // path components in common

  auto Rank() const {
    return std::make_tuple(-static_cast<int>(distance), common);
  }
};

Nearness Measure(const PciFunction& gpu, const PciFunction& nic) {
  const std::vector<absl::string_view> a =
      absl::StrSplit(gpu.path, '/', absl::SkipEmpty());
  const std::vector<absl::string_view> b =
      absl::StrSplit(nic.path, '/', absl::SkipEmpty());
  size_t common = 0;
  // The last component of each is the function itself, never shared.
  while (common + 1 < a.size() && common + 1 < b.size() &&
         a[common] == b[common]) {
    ++common;
  }
  Nearness n;
  n.common = common;
  if (common >= 3) {  // host bridge, root port, and a bridge below it
    n.distance = PcieDistance::kPcieSwitch;
  } else if (common == 2) {
    n.distance = PcieDistance::kRootPort;
  } else if (common == 1 ||
             (gpu.numa_node >= 0 && gpu.numa_node == nic.numa_node)) {
    n.distance = PcieDistance::kNuma;
  }
  return n;
}

}  // namespace

absl::string_view PcieDistanceName(PcieDistance distance) {
  switch (distance) {
    case PcieDistance::kPcieSwitch:
      return "pcie_switch";
    case PcieDistance::kRootPort:
      return "root_port";
    case PcieDistance::kNuma:
      return "numa";
    case PcieDistance::kNone:
      return "none";
  }
  return "none";
}

bool IsGpu(const PciFunction& f) {
  if (f.vendor != kVendorNvidia && f.vendor != kVendorAmd) return false;
  const uint32_t class_code = f.pci_class >> 8;  // base class and subclass
  return class_code == 0x0300 || class_code == 0x0302 || class_code == 0x0380 ||
         class_code == 0x1200;
}

std::vector<GpuNicPair> PairGpusWithNics(
    const std::vector<PciFunction>& functions,
    const std::vector<RdmaNicPci>& nics) {
  std::vector<const PciFunction*> gpus;
  std::map<std::string, const PciFunction*> by_address;
  for (const PciFunction& f : functions) {
    by_address.emplace(f.address, &f);
    if (IsGpu(f)) gpus.push_back(&f);
  }
  std::sort(gpus.begin(), gpus.end(),
            [](const PciFunction* a, const PciFunction* b) {
              return a->address < b->address;
            });
  gpus.erase(std::unique(gpus.begin(), gpus.end(),
                         [](const PciFunction* a, const PciFunction* b) {
                           return a->address == b->address;
                         }),
             gpus.end());

  // The placeable NICs, by ascending PCI address (then name: the ports of
  // one function).
  struct Nic {
    const RdmaNicPci* nic;
    const PciFunction* function;
  };
  std::vector<Nic> placed;
  for (const RdmaNicPci& nic : nics) {
    auto it = by_address.find(nic.pci_address);
    if (it != by_address.end()) placed.push_back({&nic, it->second});
  }
  std::sort(placed.begin(), placed.end(), [](const Nic& a, const Nic& b) {
    return std::tie(a.nic->pci_address, a.nic->device) <
           std::tie(b.nic->pci_address, b.nic->device);
  });

  std::vector<int> taken(placed.size(), 0);
  std::vector<GpuNicPair> pairs;
  pairs.reserve(gpus.size());
  for (size_t g = 0; g < gpus.size(); ++g) {
    GpuNicPair pair;
    pair.gpu = static_cast<int>(g);
    pair.gpu_pci = gpus[g]->address;
    size_t best = placed.size();
    Nearness best_nearness;
    for (size_t i = 0; i < placed.size(); ++i) {
      const Nearness n = Measure(*gpus[g], *placed[i].function);
      if (n.distance == PcieDistance::kNone) continue;
      // Strictly nearer, or as near and paired with fewer GPUs so far; the
      // lowest address wins the remaining ties (the NICs are sorted).
      if (best == placed.size() || n.Rank() > best_nearness.Rank() ||
          (n.Rank() == best_nearness.Rank() && taken[i] < taken[best])) {
        best = i;
        best_nearness = n;
      }
    }
    if (best < placed.size()) {
      ++taken[best];
      pair.device = placed[best].nic->device;
      pair.netdev = placed[best].nic->netdev;
      pair.distance = best_nearness.distance;
    }
    pairs.push_back(std::move(pair));
  }
  return pairs;
}

}  // namespace fabricdiag::agent
