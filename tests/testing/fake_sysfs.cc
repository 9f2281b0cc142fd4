#include "tests/testing/fake_sysfs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <system_error>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "counters/counter_table.h"

namespace fabricdiag::agent {
namespace {

namespace fs = std::filesystem;

constexpr char kTmpDir[] = ".fake_sysfs_tmp";

absl::Status FromErrorCode(const std::error_code& ec, absl::string_view what) {
  return absl::InternalError(absl::StrCat(what, ": ", ec.message()));
}

std::string PortDir(const std::string& device, int port) {
  return absl::StrCat("class/infiniband/", device, "/ports/", port);
}

}  // namespace

namespace {

// The names of every row of `family` a device of `driver` has, in table
// order.
std::vector<std::string> TableNames(counters::Family family,
                                    counters::Driver driver) {
  std::vector<std::string> out;
  for (const counters::CounterSpec* row : counters::RowsFor(family, driver)) {
    out.push_back(counters::ExpandName(*row, -1));
  }
  return out;
}

}  // namespace

const std::vector<std::string>& FakePmaCounterNames() {
  // The pma_group_ext table of drivers/infiniband/core/sysfs.c.
  static const auto* names = new std::vector<std::string>(
      TableNames(counters::Family::kIbPma, counters::Driver::kAny));
  return *names;
}

const std::vector<std::string>& FakeMlx5HwCounterNames() {
  // drivers/infiniband/hw/mlx5/counters.c, all capability groups enabled,
  // and the lifespan setting.
  static const auto* names = [] {
    auto* v = new std::vector<std::string>(
        TableNames(counters::Family::kRdmaHw, counters::Driver::kMlx5));
    v->push_back("lifespan");
    return v;
  }();
  return *names;
}

const std::vector<std::string>& FakeNetdevStatNames() {
  // struct rtnl_link_stats64 as net-sysfs.c exposes it.
  static const auto* names = new std::vector<std::string>(
      TableNames(counters::Family::kNetdevStatistics, counters::Driver::kAny));
  return *names;
}

FakeSysfs::FakeSysfs(std::string root) : root_(std::move(root)) {}

absl::Status FakeSysfs::MakeDir(const std::string& relpath) {
  std::error_code ec;
  fs::create_directories(fs::path(root_) / relpath, ec);
  if (ec) return FromErrorCode(ec, absl::StrCat("mkdir ", relpath));
  return absl::OkStatus();
}

absl::Status FakeSysfs::WriteFile(const std::string& relpath,
                                  absl::string_view content) {
  absl::Status st;
  if (!tmp_dir_ready_) {
    st = MakeDir(kTmpDir);
    if (!st.ok()) return st;
    tmp_dir_ready_ = true;
  }
  std::string tmp =
      absl::StrCat(root_, "/", kTmpDir, "/", getpid(), ".", tmp_counter_++);
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0444);
  if (fd < 0) {
    return absl::InternalError(
        absl::StrCat("create ", tmp, ": ", strerror(errno)));
  }
  size_t off = 0;
  while (off < content.size()) {
    ssize_t n = write(fd, content.data() + off, content.size() - off);
    if (n < 0) {
      int err = errno;
      close(fd);
      unlink(tmp.c_str());
      return absl::InternalError(
          absl::StrCat("write ", tmp, ": ", strerror(err)));
    }
    off += static_cast<size_t>(n);
  }
  close(fd);
  fs::path dest = fs::path(root_) / relpath;
  st = MakeDir(fs::path(relpath).parent_path().string());
  if (!st.ok()) return st;
  if (rename(tmp.c_str(), dest.c_str()) != 0) {
    int err = errno;
    unlink(tmp.c_str());
    return absl::InternalError(
        absl::StrCat("rename to ", relpath, ": ", strerror(err)));
  }
  return absl::OkStatus();
}

absl::Status FakeSysfs::Symlink(const std::string& target,
                                const std::string& relpath) {
  absl::Status st = MakeDir(fs::path(relpath).parent_path().string());
  if (!st.ok()) return st;
  std::error_code ec;
  fs::create_symlink(target, fs::path(root_) / relpath, ec);
  if (ec) return FromErrorCode(ec, absl::StrCat("symlink ", relpath));
  return absl::OkStatus();
}

absl::Status FakeSysfs::Remove(const std::string& relpath) {
  std::error_code ec;
  fs::remove_all(fs::path(root_) / relpath, ec);
  if (ec) return FromErrorCode(ec, absl::StrCat("remove ", relpath));
  return absl::OkStatus();
}

std::string FakeSysfs::NextPciAddress() {
  // Skip functions that exist on disk (another FakeSysfs built them).
  while (true) {
    std::string pci =
        absl::StrFormat("%04x:%02x:00.0", next_bus_ >> 8, next_bus_ & 0xff);
    next_bus_ += 0x10;
    std::error_code ec;
    if (!fs::exists(fs::path(root_) / "devices/pci0000:00" / pci, ec)) {
      return pci;
    }
  }
}

absl::Status FakeSysfs::EnsurePciFunction(const std::string& pci,
                                          const std::string& driver) {
  const std::string dir = absl::StrCat("devices/pci0000:00/", pci);
  absl::Status st = MakeDir(dir);
  if (!st.ok() || driver.empty()) return st;
  std::error_code ec;
  if (fs::is_symlink(fs::path(root_) / dir / "driver", ec)) {
    return absl::OkStatus();
  }
  st = MakeDir(absl::StrCat("bus/pci/drivers/", driver));
  if (!st.ok()) return st;
  st = WriteFile(dir + "/vendor", "0x15b3\n");
  if (!st.ok()) return st;
  return Symlink(absl::StrCat("../../../bus/pci/drivers/", driver),
                 dir + "/driver");
}

absl::Status FakeSysfs::AddRdmaDevice(const std::string& name,
                                      const FakeRdmaDeviceSpec& spec) {
  const std::string pci =
      spec.pci_address.empty() ? NextPciAddress() : spec.pci_address;
  absl::Status st = EnsurePciFunction(pci, spec.driver);
  if (!st.ok()) return st;
  const std::string dev_dir =
      absl::StrCat("devices/pci0000:00/", pci, "/infiniband/", name);
  auto write = [&](const std::string& rel, absl::string_view text) {
    if (st.ok()) st = WriteFile(absl::StrCat(dev_dir, "/", rel), text);
  };
  auto hw_text = [&](const std::string& counter) {
    if (counter == "lifespan") return std::string("10\n");  // ms, a setting
    auto v = spec.hw_values.find(counter);
    return absl::StrCat(v == spec.hw_values.end() ? 0 : v->second, "\n");
  };
  write("fw_ver", spec.fw_ver + "\n");
  write("board_id", spec.board_id + "\n");
  write("hca_type", spec.hca_type + "\n");
  write("node_guid", spec.node_guid + "\n");
  write("node_type", "1: CA\n");
  if (!st.ok()) return st;
  st = Symlink(absl::StrCat("../../../", pci), dev_dir + "/device");
  if (!st.ok()) return st;
  st = Symlink(absl::StrCat("../../", dev_dir), "class/infiniband/" + name);
  if (!st.ok()) return st;

  for (int port = 1; port <= spec.ports; ++port) {
    const std::string p = absl::StrCat("ports/", port, "/");
    write(p + "state", spec.state + "\n");
    write(p + "phys_state", spec.phys_state + "\n");
    write(p + "rate", spec.rate + "\n");
    write(p + "link_layer", spec.link_layer + "\n");
    if (spec.pma_counters) {
      for (const std::string& c : FakePmaCounterNames()) {
        auto v = spec.pma_values.find(c);
        write(absl::StrCat(p, "counters/", c),
              absl::StrCat(v == spec.pma_values.end() ? 0 : v->second, "\n"));
      }
    }
    if (spec.mlx5_hw_counters) {
      for (const std::string& c : FakeMlx5HwCounterNames()) {
        write(absl::StrCat(p, "hw_counters/", c), hw_text(c));
      }
    }
    if (static_cast<size_t>(port) <= spec.netdevs.size()) {
      const std::string& netdev = spec.netdevs[static_cast<size_t>(port - 1)];
      write(p + "gid_attrs/ndevs/0", netdev + "\n");
      write(p + "gid_attrs/ndevs/1", netdev + "\n");
      write(p + "gid_attrs/types/0", "IB/RoCE v1\n");
      write(p + "gid_attrs/types/1", "RoCE v2\n");
      write(p + "gids/0", "fe80:0000:0000:0000:ba3f:d2ff:fea1:0000\n");
      write(p + "gids/1", "fe80:0000:0000:0000:ba3f:d2ff:fea1:0000\n");
      if (!st.ok()) return st;
      FakeNetdevSpec nspec;
      nspec.pci_address = pci;
      nspec.stat_values = spec.netdev_stat_values;
      st = AddNetdev(netdev, nspec);
      if (!st.ok()) return st;
      st = SetNetdevAttribute(netdev, "dev_port", absl::StrCat(port - 1, "\n"));
    }
    if (!st.ok()) return st;
  }
  if (spec.mlx5_hw_counters) {
    for (const std::string& c : FakeMlx5HwCounterNames()) {
      write("hw_counters/" + c, hw_text(c));
    }
  }
  return st;
}

absl::Status FakeSysfs::RemoveRdmaDevice(const std::string& name) {
  const std::string link = "class/infiniband/" + name;
  std::error_code ec;
  fs::path target = fs::read_symlink(fs::path(root_) / link, ec);
  absl::Status st = Remove(link);
  if (!st.ok()) return st;
  if (!ec) {
    // target is relative to class/infiniband.
    fs::path real = fs::path(root_) / "class/infiniband" / target;
    fs::remove_all(real, ec);
    if (ec) return FromErrorCode(ec, "remove device dir");
  }
  return absl::OkStatus();
}

absl::Status FakeSysfs::SetPortCounter(const std::string& device, int port,
                                       const std::string& name,
                                       uint64_t value) {
  return WriteFile(absl::StrCat(PortDir(device, port), "/counters/", name),
                   absl::StrCat(value, "\n"));
}

absl::Status FakeSysfs::SetHwCounter(const std::string& device, int port,
                                     const std::string& name, uint64_t value) {
  std::string dir = port == 0 ? absl::StrCat("class/infiniband/", device)
                              : PortDir(device, port);
  return WriteFile(absl::StrCat(dir, "/hw_counters/", name),
                   absl::StrCat(value, "\n"));
}

absl::Status FakeSysfs::SetPortAttribute(const std::string& device, int port,
                                         const std::string& name,
                                         const std::string& text) {
  return WriteFile(absl::StrCat(PortDir(device, port), "/", name), text);
}

absl::Status FakeSysfs::AddNetdev(const std::string& name,
                                  const FakeNetdevSpec& spec) {
  std::string dir;
  std::string link_target;
  if (spec.pci_address.empty()) {
    dir = "devices/virtual/net/" + name;
  } else {
    absl::Status st = EnsurePciFunction(spec.pci_address, "");
    if (!st.ok()) return st;
    dir = absl::StrCat("devices/pci0000:00/", spec.pci_address, "/net/", name);
  }
  absl::Status st;
  auto write = [&](const std::string& rel, absl::string_view text) {
    if (st.ok()) st = WriteFile(absl::StrCat(dir, "/", rel), text);
  };
  write("operstate", spec.operstate + "\n");
  write("carrier", spec.carrier + "\n");
  write("speed", spec.speed.empty() ? "" : spec.speed + "\n");
  write("mtu", spec.mtu + "\n");
  write("carrier_changes", "2\n");
  write("carrier_up_count", "1\n");
  write("carrier_down_count", "1\n");
  write("flags", "0x1003\n");
  write("type", "1\n");
  if (spec.statistics) {
    for (const std::string& stat : FakeNetdevStatNames()) {
      auto v = spec.stat_values.find(stat);
      write("statistics/" + stat,
            absl::StrCat(v == spec.stat_values.end() ? 0 : v->second, "\n"));
    }
  }
  if (!st.ok()) return st;
  if (!spec.pci_address.empty()) {
    st = Symlink(absl::StrCat("../../../", spec.pci_address), dir + "/device");
    if (!st.ok()) return st;
  }
  return Symlink("../../" + dir, "class/net/" + name);
}

absl::Status FakeSysfs::RemoveNetdev(const std::string& name) {
  const std::string link = "class/net/" + name;
  std::error_code ec;
  fs::path target = fs::read_symlink(fs::path(root_) / link, ec);
  absl::Status st = Remove(link);
  if (!st.ok() || ec) return st;
  fs::remove_all(fs::path(root_) / "class/net" / target, ec);
  if (ec) return FromErrorCode(ec, "remove netdev dir");
  return absl::OkStatus();
}

absl::Status FakeSysfs::SetNetdevStat(const std::string& netdev,
                                      const std::string& name, uint64_t value) {
  return WriteFile(absl::StrCat("class/net/", netdev, "/statistics/", name),
                   absl::StrCat(value, "\n"));
}

absl::Status FakeSysfs::SetNetdevAttribute(const std::string& netdev,
                                           const std::string& name,
                                           const std::string& text) {
  return WriteFile(absl::StrCat("class/net/", netdev, "/", name), text);
}

absl::StatusOr<FakeRoceNode> BuildRoceNode(const std::string& root, int nics) {
  FakeSysfs fake(root);
  FakeRoceNode node;
  for (int i = 0; i < nics; ++i) {
    const std::string dev = absl::StrCat("mlx5_", i);
    const std::string netdev = absl::StrCat("ens", i + 1, "f0np0");
    FakeRdmaDeviceSpec spec;
    spec.netdevs = {netdev};
    spec.node_guid = absl::StrFormat("b83f:d203:00a1:%04x", i);
    // Distinct, non-zero values so that mix-ups between NICs are visible.
    const uint64_t base = static_cast<uint64_t>(i + 1) * 1000;
    spec.pma_values = {
        {"port_xmit_data", base * 1000003},
        {"port_rcv_data", base * 1000033},
        {"port_xmit_packets", base * 1009},
        {"port_rcv_packets", base * 1013},
        {"unicast_xmit_packets", base * 1009},
        {"unicast_rcv_packets", base * 1013},
        {"port_xmit_wait", base + 7},
    };
    for (const std::string& c : FakeMlx5HwCounterNames()) {
      spec.hw_values[c] = base + c.size();
    }
    for (const std::string& s : FakeNetdevStatNames()) {
      spec.netdev_stat_values[s] = base + s.size();
    }
    absl::Status st = fake.AddRdmaDevice(dev, spec);
    if (!st.ok()) return st;
    node.rdma_devices.push_back(dev);
    node.netdevs.push_back(netdev);
  }
  return node;
}

}  // namespace fabricdiag::agent
