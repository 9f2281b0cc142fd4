#include "sim/tree_writer.h"

#include <sys/types.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <system_error>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/posix_file.h"
#include "sim/lldp.h"

namespace fabricdiag::sim {
namespace {

namespace fs = std::filesystem;

// The agent reads these files as an unprivileged user.
constexpr mode_t kDirMode = 0755;
constexpr mode_t kFileMode = 0644;

}  // namespace

absl::StatusOr<std::unique_ptr<TreeWriter>> TreeWriter::Create(
    std::string out_dir, const Fabric* fabric, std::vector<bool> switch_trees) {
  if (out_dir.empty()) return absl::InvalidArgumentError("--out: empty");
  if (switch_trees.empty()) {
    switch_trees.assign(fabric->switches().size(), true);
  }
  if (switch_trees.size() != fabric->switches().size()) {
    return absl::InternalError("TreeWriter: switch_trees is not per switch");
  }
  std::unique_ptr<TreeWriter> w(
      new TreeWriter(std::move(out_dir), fabric, std::move(switch_trees)));
  absl::Status st = MakeDirs(w->out_, kDirMode);
  if (!st.ok()) return st;
  st = w->RemoveTree(w->tmp_);
  if (!st.ok()) return st;
  st = MakeDirs(w->tmp_, kDirMode);
  if (!st.ok()) return st;
  std::vector<std::string> nodes;
  for (const SimNode& h : fabric->hosts()) nodes.push_back(h.name);
  for (const SimNode& s : fabric->switches()) nodes.push_back(s.name);
  for (size_t i = 0; i < nodes.size(); ++i) {
    const std::string& node = nodes[i];
    st = w->RemoveTree(absl::StrCat(w->out_, "/", node));
    if (!st.ok()) return st;
    if (i >= fabric->hosts().size() &&
        !w->switch_trees_[i - fabric->hosts().size()]) {
      continue;
    }
    st = MakeDirs(absl::StrCat(w->SysfsRoot(node), "/class/net"), kDirMode);
    if (st.ok()) st = MakeDirs(w->EthtoolDir(node), kDirMode);
    if (!st.ok()) return st;
  }
  for (const SimNode& h : fabric->hosts()) {
    st = MakeDirs(absl::StrCat(w->SysfsRoot(h.name), "/class/infiniband"),
                  kDirMode);
    if (!st.ok()) return st;
  }
  return w;
}

TreeWriter::TreeWriter(std::string out_dir, const Fabric* fabric,
                       std::vector<bool> switch_trees)
    : out_(std::move(out_dir)),
      tmp_(out_ + "/.sim-tmp"),
      fabric_(fabric),
      switch_trees_(std::move(switch_trees)),
      nic_exists_(fabric->nics().size(), false),
      port_exists_(fabric->ports().size(), false) {}

std::string TreeWriter::SysfsRoot(const std::string& node) const {
  return absl::StrCat(out_, "/", node, "/sys");
}

std::string TreeWriter::EthtoolDir(const std::string& node) const {
  return absl::StrCat(out_, "/", node, "/ethtool");
}

std::string TreeWriter::TempPath() {
  return absl::StrCat(tmp_, "/t", temp_counter_++);
}

absl::Status TreeWriter::WriteAtomic(const std::string& path,
                                     const std::string& content) {
  auto it = written_.find(path);
  if (it != written_.end() && it->second == content) return absl::OkStatus();
  // Not durable: a crashed simulator's tree is rebuilt by the next run.
  AtomicWriteOptions options;
  options.durable = false;
  options.mode = kFileMode;
  options.tmp_path = TempPath();
  absl::Status st = WriteFileAtomically(path, content, options);
  if (!st.ok()) return st;
  ++files_written_;
  written_[path] = content;
  return absl::OkStatus();
}

absl::Status TreeWriter::RemoveTree(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(path, ec))) return absl::OkStatus();
  // Out of the tree in one step, then deleted at leisure.
  const std::string doomed = TempPath();
  std::string victim = path;
  if (fs::exists(fs::symlink_status(tmp_, ec)) &&
      !absl::StartsWith(path, tmp_) &&
      rename(path.c_str(), doomed.c_str()) == 0) {
    victim = doomed;
  }
  fs::remove_all(victim, ec);
  if (ec) {
    return absl::InternalError(
        absl::StrCat("cannot remove ", path, ": ", ec.message()));
  }
  const std::string prefix = path + "/";
  for (auto it = written_.lower_bound(path); it != written_.end();) {
    if (it->first != path && !absl::StartsWith(it->first, prefix)) break;
    it = written_.erase(it);
  }
  return absl::OkStatus();
}

absl::Status TreeWriter::SyncDir(const std::string& dir,
                                 const std::vector<FileEntry>& files,
                                 bool exists) {
  if (exists) {
    for (const FileEntry& f : files) {
      if (absl::EndsWith(f.path, "/")) continue;  // directories: static
      absl::Status st = WriteAtomic(absl::StrCat(dir, "/", f.path), f.content);
      if (!st.ok()) return st;
    }
    return absl::OkStatus();
  }
  const std::string stage = TempPath();
  for (const FileEntry& f : files) {
    const fs::path p = fs::path(stage) / f.path;
    absl::Status st = MakeDirs(
        absl::EndsWith(f.path, "/") ? p.string() : p.parent_path().string(),
        kDirMode);
    if (st.ok() && !absl::EndsWith(f.path, "/")) {
      st = WriteFile(p.string(), f.content, kFileMode);
    }
    if (!st.ok()) return st;
  }
  if (rename(stage.c_str(), dir.c_str()) != 0) {
    return ErrnoToStatus(errno,
                         absl::StrCat("cannot rename ", stage, " to ", dir));
  }
  for (const FileEntry& f : files) {
    if (!absl::EndsWith(f.path, "/")) {
      written_[absl::StrCat(dir, "/", f.path)] = f.content;
      ++files_written_;
    }
  }
  return absl::OkStatus();
}

absl::Status TreeWriter::Write(const std::vector<PortCounters>& nics,
                               const std::vector<PortCounters>& ports) {
  if (nics.size() != fabric_->nics().size() ||
      ports.size() != fabric_->ports().size()) {
    return absl::InvalidArgumentError("counters do not match the fabric");
  }
  for (size_t i = 0; i < nics.size(); ++i) {
    const SimNic& nic = fabric_->nics()[i];
    const std::string root = SysfsRoot(nic.host);
    const std::string dev_dir =
        absl::StrCat(root, "/class/infiniband/", nic.rdma_device);
    const std::string net_dir = absl::StrCat(root, "/class/net/", nic.netdev);
    const std::string ethtool =
        absl::StrCat(EthtoolDir(nic.host), "/", nic.netdev);
    absl::Status st;
    if (!nics[i].present) {
      if (nic_exists_[i]) {
        // Like a driver unbind: the RDMA device, its netdev and with it
        // the ethtool statistics disappear.
        st = RemoveTree(dev_dir);
        if (st.ok()) st = RemoveTree(net_dir);
        if (st.ok()) st = RemoveTree(ethtool);
        if (!st.ok()) return st;
        nic_exists_[i] = false;
      }
      continue;
    }
    const bool exists = nic_exists_[i];
    // Netdev first: when the RDMA device appears, its netdev is there.
    st = SyncDir(net_dir, NetdevFiles(nics[i], false, !exists), exists);
    if (st.ok()) {
      st = SyncDir(dev_dir, RdmaDeviceFiles(nic, i, nics[i], !exists), exists);
    }
    if (st.ok()) st = WriteAtomic(ethtool, EthtoolStatsText(nics[i]));
    if (!st.ok()) return st;
    nic_exists_[i] = true;
  }
  for (size_t p = 0; p < ports.size(); ++p) {
    const SimPort& port = fabric_->ports()[p];
    if (!switch_trees_[port.switch_index]) continue;
    const std::string net_dir =
        absl::StrCat(SysfsRoot(port.switch_name), "/class/net/", port.port);
    const bool exists = port_exists_[p];
    absl::Status st =
        SyncDir(net_dir, NetdevFiles(ports[p], true, !exists), exists);
    if (st.ok()) {
      st = WriteAtomic(
          absl::StrCat(EthtoolDir(port.switch_name), "/", port.port),
          EthtoolStatsText(ports[p]));
    }
    if (!st.ok()) return st;
    port_exists_[p] = true;
  }
  return absl::OkStatus();
}

std::string TreeWriter::LldpFile(const std::string& node) const {
  return absl::StrCat(out_, "/", node, "/lldp.json");
}

absl::Status TreeWriter::WriteLldp(const Cabling& cabling) {
  auto write = [this](const std::string& node,
                      const std::vector<v1::LldpNeighbor>& neighbors) {
    absl::Status st = MakeDirs(absl::StrCat(out_, "/", node), kDirMode);
    if (!st.ok()) return st;
    return WriteAtomic(LldpFile(node), LldpcliJson(neighbors));
  };
  for (size_t h = 0; h < fabric_->hosts().size(); ++h) {
    absl::Status st = write(fabric_->hosts()[h].name,
                            HostLldpNeighbors(*fabric_, cabling, h));
    if (!st.ok()) return st;
  }
  for (size_t s = 0; s < fabric_->switches().size(); ++s) {
    if (!switch_trees_[s]) continue;
    absl::Status st = write(fabric_->switches()[s].name,
                            SwitchLldpNeighbors(*fabric_, cabling, s));
    if (!st.ok()) return st;
  }
  return absl::OkStatus();
}

}  // namespace fabricdiag::sim
