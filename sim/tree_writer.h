// Puts the simulated fabric on disk, one tree per node, in the layout the
// agent reads (`fabricdiag-agent --node=N --sysfs_root=OUT/N/sys
// --ethtool_dir=OUT/N/ethtool`):
//
//   OUT/<host>/sys/class/infiniband/<dev>/...   (sysfs_files.h)
//   OUT/<host>/sys/class/net/<netdev>/...
//   OUT/<host>/ethtool/<netdev>                 (`ethtool -S` text)
//   OUT/<switch>/sys/class/net/<port>/...  and  OUT/<switch>/ethtool/<port>
//   OUT/<node>/lldp.json                        (`lldpcli -f json show
//                                                neighbors`, sim/lldp.h;
//                                                the agent's --lldp_file)
//
// A reader never sees a torn or half-built state:
//   - every file is written to OUT/.sim-tmp and rename(2)d into place
//     (atomic on one filesystem). The temporary files live outside the
//     tree, not next to their target, because the agent lists counters/ and
//     statistics/ and would pick a temporary name up as a counter;
//   - a device directory (RDMA device, netdev) is built complete in
//     OUT/.sim-tmp and renamed into place; a vanished one (nic_gone) is
//     renamed out of the tree before it is deleted.
// Files whose content did not change are not rewritten.
//
// Create() deletes OUT/<node> for every simulated node (a previous run's
// tree) and nothing else under OUT. A switch whose `switch_trees` entry is
// false (it streams gNMI instead, sim/gnmi_fleet.h) gets no tree; an empty
// `switch_trees` gives every switch one.
//
//   ASSIGN_OR_RETURN(std::unique_ptr<TreeWriter> w,
//                    TreeWriter::Create("/tmp/fabric", &fabric));
//   RETURN_IF_ERROR(w->Write(nic_counters, port_counters));
//
// Not thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "sim/fabric.h"
#include "sim/lldp.h"
#include "sim/port_counters.h"
#include "sim/sysfs_files.h"

namespace fabricdiag::sim {

class TreeWriter {
 public:
  // `fabric` is not owned and must outlive the writer.
  static absl::StatusOr<std::unique_ptr<TreeWriter>> Create(
      std::string out_dir, const Fabric* fabric,
      std::vector<bool> switch_trees = {});

  // Brings the tree to `nics` / `ports` (indexed like the fabric's):
  // creates missing devices, removes absent ones, rewrites changed files.
  absl::Status Write(const std::vector<PortCounters>& nics,
                     const std::vector<PortCounters>& ports);

  // Writes every node's OUT/<node>/lldp.json for `cabling` (only the files
  // whose neighbors changed).
  absl::Status WriteLldp(const Cabling& cabling);

  // OUT/<node>/sys and OUT/<node>/ethtool, and OUT/<node>/lldp.json.
  std::string SysfsRoot(const std::string& node) const;
  std::string EthtoolDir(const std::string& node) const;
  std::string LldpFile(const std::string& node) const;

  // Files renamed into place so far (for tests and the run summary).
  uint64_t files_written() const { return files_written_; }

 private:
  TreeWriter(std::string out_dir, const Fabric* fabric,
             std::vector<bool> switch_trees);

  absl::Status WriteAtomic(const std::string& path, const std::string& content);
  // Writes `files` under `dir`: the whole directory via staging when it
  // does not exist yet, else only the changed files.
  absl::Status SyncDir(const std::string& dir,
                       const std::vector<FileEntry>& files, bool exists);
  absl::Status RemoveTree(const std::string& path);
  std::string TempPath();

  const std::string out_;
  const std::string tmp_;
  const Fabric* fabric_;
  const std::vector<bool> switch_trees_;  // per switch, never empty
  uint64_t temp_counter_ = 0;
  uint64_t files_written_ = 0;
  std::vector<bool> nic_exists_;
  std::vector<bool> port_exists_;
  // Last content written, by absolute path.
  std::map<std::string, std::string> written_;
};

}  // namespace fabricdiag::sim
