// BuildPciTree: a fake sysfs PCI tree from a compact description (the
// format of tests/fixtures/pci/*.txt), for the GPU to NIC pairing tests.
//
// One PCI function a line: "<path below devices/> <class> <vendor>
// <numa_node> [rdma=<dev>] [net=<netdev>]"; '#' starts a comment. The
// class, vendor and numa_node texts are written as given (plus "\n"), so
// junk can be described; "-" leaves the file out. Bridges on a path without
// a line of their own become PCIe bridges (class 0x060400). Symlinks are
// those of a real kernel (see tests/fixtures/pci/PROVENANCE.md).
//
//   ScopedTempDir dir;
//   ASSERT_TRUE(BuildPciTreeFromFixture(dir.path(), "dgx-h100.txt").ok());
#pragma once

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace fabricdiag::agent {

// Builds the tree described by `description` under `root` (which exists).
absl::Status BuildPciTree(const std::string& root,
                          absl::string_view description);

// BuildPciTree with the text of tests/fixtures/pci/<name>.
absl::Status BuildPciTreeFromFixture(const std::string& root,
                                     const std::string& name);

// The RDMA device the agent pairs with each GPU of the tree of
// tests/fixtures/pci/dgx-h100.txt, by GPU index: each GPU's ConnectX-7 sits
// below its PCIe switch (tests/agent/gpu_nic_agent_test.cc reads the same
// from --once). The end-to-end tests that fill layouts compare against it.
inline constexpr const char* kDgxH100PairedNic[8] = {
    "mlx5_0", "mlx5_3", "mlx5_4",  "mlx5_5",
    "mlx5_6", "mlx5_9", "mlx5_10", "mlx5_11"};

}  // namespace fabricdiag::agent
