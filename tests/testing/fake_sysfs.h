// FakeSysfs: builds fake sysfs trees for tests and benchmarks.
//
// The layout is that of a real system, not of the procfs fixtures:
//   devices/pci0000:00/0000:17:00.0/infiniband/mlx5_0/...   real directories
//   devices/pci0000:00/0000:17:00.0/net/ens1f0np0/...
//   devices/virtual/net/lo/...                            (no PCI function)
//   class/infiniband/mlx5_0 ->
//   ../../devices/pci0000:00/0000:17:00.0/infiniband/mlx5_0 class/net/ens1f0np0
//   -> ../../devices/pci0000:00/0000:17:00.0/net/ens1f0np0 <ibdev>/device,
//   <netdev>/device -> ../../../0000:17:00.0 0000:17:00.0/driver ->
//   ../../../bus/pci/drivers/mlx5_core <ibdev>/ports/1/gid_attrs/ndevs/{0,1} =
//   "<netdev>\n"
// Every file write is atomic (written to <root>/.fake_sysfs_tmp, then
// renamed into place), like a simulator that rewrites counters while the
// agent reads them. Empty GID slots, which fail with EINVAL on a real
// kernel, cannot be faked on a plain filesystem: they are simply absent.
//
//   FakeSysfs fs(dir);
//   FakeRdmaDeviceSpec spec;
//   spec.netdevs = {"ens1f0np0"};
//   ASSERT_TRUE(fs.AddRdmaDevice("mlx5_0", spec).ok());
//   ASSERT_TRUE(fs.SetPortCounter("mlx5_0", 1, "port_xmit_data", 42).ok());
//
//   absl::StatusOr<FakeRoceNode> node = BuildRoceNode(dir, 8);
//
// Thread safety: not thread-safe; readers may run concurrently with writes
// (each file changes atomically).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "tests/testing/temp_dir.h"

namespace fabricdiag::agent {

struct FakeRdmaDeviceSpec {
  std::string pci_address;  // "0000:17:00.0"; empty = next free one
  int ports = 1;
  std::string link_layer = "Ethernet";
  std::string rate = "400 Gb/sec (4X NDR)";
  std::string state = "4: ACTIVE";
  std::string phys_state = "5: LinkUp";
  std::string fw_ver = "28.39.1002";
  std::string board_id = "MT_0000000838";
  std::string hca_type = "MT4129";
  std::string node_guid = "b83f:d203:00a1:0000";
  std::string driver = "mlx5_core";
  // netdevs[i] is the netdev of port i+1, created on the same PCI function
  // and named in that port's gid_attrs/ndevs/{0,1}. Fewer entries than
  // ports: the remaining ports get none (IB link layer).
  std::vector<std::string> netdevs;
  bool pma_counters = true;      // 64-bit (extended width) PMA set
  bool mlx5_hw_counters = true;  // port + device hw_counters
  // Initial values (default 0) of every port's counters/ and of the port and
  // device hw_counters/. Setting them here instead of calling SetPortCounter
  // afterwards avoids rewriting files (ext4 flushes on rename-over).
  std::map<std::string, uint64_t> pma_values;
  std::map<std::string, uint64_t> hw_values;
  std::map<std::string, uint64_t> netdev_stat_values;  // of spec.netdevs
};

struct FakeNetdevSpec {
  std::string pci_address;  // empty: a virtual device (devices/virtual/net)
  std::string operstate = "up";
  std::string carrier = "1";
  std::string speed = "400000";  // Mb/s; "" models a down link's empty read
  std::string mtu = "4200";
  bool statistics = true;  // the 24 rtnl_link_stats64 files
  std::map<std::string, uint64_t> stat_values;  // initial values, default 0
};

class FakeSysfs {
 public:
  // `root` must exist (a test temp dir); it becomes the sysfs root.
  explicit FakeSysfs(std::string root);

  const std::string& root() const { return root_; }

  absl::Status AddRdmaDevice(const std::string& name,
                             const FakeRdmaDeviceSpec& spec);
  // Removes class/infiniband/<name> and the device directory (hot-unplug).
  absl::Status RemoveRdmaDevice(const std::string& name);
  absl::Status SetPortCounter(const std::string& device, int port,
                              const std::string& name, uint64_t value);
  // port 0 = device-level hw_counters.
  absl::Status SetHwCounter(const std::string& device, int port,
                            const std::string& name, uint64_t value);
  // state, phys_state, rate, link_layer, ... (text written as given).
  absl::Status SetPortAttribute(const std::string& device, int port,
                                const std::string& name,
                                const std::string& text);

  absl::Status AddNetdev(const std::string& name, const FakeNetdevSpec& spec);
  absl::Status RemoveNetdev(const std::string& name);
  absl::Status SetNetdevStat(const std::string& netdev, const std::string& name,
                             uint64_t value);
  absl::Status SetNetdevAttribute(const std::string& netdev,
                                  const std::string& name,
                                  const std::string& text);

  // Low-level helpers for hostile trees; paths are relative to the root.
  absl::Status WriteFile(const std::string& relpath, absl::string_view content);
  absl::Status MakeDir(const std::string& relpath);
  absl::Status Symlink(const std::string& target, const std::string& relpath);
  absl::Status Remove(const std::string& relpath);  // recursive

 private:
  std::string NextPciAddress();
  absl::Status EnsurePciFunction(const std::string& pci,
                                 const std::string& driver);

  std::string root_;
  bool tmp_dir_ready_ = false;
  int next_bus_ = 0x17;
  uint64_t tmp_counter_ = 0;
};

// The tests and benchmarks that build trees know TempDir by this name.
using ScopedTempDir = ::fabricdiag::testing::TempDir;

// What BuildRoceNode created.
struct FakeRoceNode {
  std::vector<std::string> rdma_devices;  // mlx5_0 ... mlx5_{n-1}
  std::vector<std::string> netdevs;       // ens1f0np0 ... (netdevs[i] on dev i)
};

// A GPU node with `nics` single-port ConnectX RoCE NICs: mlx5_i, Ethernet
// link layer, "400 Gb/sec (4X NDR)", netdev ens<i+1>f0np0, the full 64-bit
// PMA counter set, the mlx5 hw_counters set (basic, out_of_sequence,
// retransmission, extended error, roce_accl, congestion,
// rx_icrc_encapsulated, lifespan) per port and per device, and netdev
// statistics. Counter values are non-zero and distinct per NIC.
absl::StatusOr<FakeRoceNode> BuildRoceNode(const std::string& root,
                                           int nics = 8);

// The file names BuildRoceNode writes, for tests that assert on them.
const std::vector<std::string>& FakePmaCounterNames();
const std::vector<std::string>& FakeMlx5HwCounterNames();  // incl. lifespan
const std::vector<std::string>& FakeNetdevStatNames();

}  // namespace fabricdiag::agent
