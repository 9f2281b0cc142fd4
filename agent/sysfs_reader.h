// SysfsReader: the only code in the agent that opens files under the sysfs
// root.
//
// Every path is relative to a root injected through the constructor
// (`--sysfs_root`, `/sys` in production, a fixture tree in tests). Paths are
// checked lexically (no absolute paths, no `..`) and resolved with
// openat2(RESOLVE_IN_ROOT), so a symlink in a hostile tree can never lead the
// reader outside the root; a symlink loop fails with ELOOP instead of hanging.
//
// Two ways to read an attribute:
//   ReadAttribute(path)   open, read, close: files read on device scans
//                         (firmware version, GID slots).
//   Attribute(path)       a SysfsAttribute handle for a file re-read every
//                         interval (every counter). It keeps its descriptor
//                         open when the cache policy allows, so a read is a
//                         single pread(fd, buf, n, 0) into a caller-owned
//                         buffer: no path lookup, no lock, no allocation.
//
// On a tree of regular files, attributes are opened with O_NOATIME when the
// kernel allows it (the agent's user owns the files), so that polling a
// fixture, a simulator's tree or a support bundle does not update access
// times (nor pay for the check on every read); sysfs reads touch none.
//
// Reading a sysfs attribute is expensive mostly because of open/close, not the
// read itself. On real sysfs, pread() at offset 0 on a kept descriptor makes
// kernfs call the attribute's show() again. On a regular filesystem
// (fixtures, a simulator rewriting files by atomic rename) a kept descriptor
// would return stale data, so keeping descriptors is a policy:
//   kAuto   keep them only when statfs says the root is sysfs;
//   kAlways keep them always (benchmarks on a fake tree that is never
//           rewritten);
//   kNever  open, read, close every time.
//
//   SysfsReader reader("/sys");
//   absl::StatusOr<std::string> fw =
//       reader.ReadAttribute("class/infiniband/mlx5_0/fw_ver");
//   SysfsAttribute tx = reader.Attribute(
//       "class/infiniband/mlx5_0/ports/1/counters/port_xmit_data");
//   std::string buf;
//   absl::StatusOr<absl::string_view> text = tx.Read(&buf);
//   absl::StatusOr<std::vector<std::string>> devs =
//       reader.ListDir("class/infiniband");
//
// Errors use canonical codes derived from errno (absl::ErrnoToStatusCode):
// ENOENT/ENODEV -> kNotFound, EINVAL -> kInvalidArgument, EACCES ->
// kPermissionDenied, EOPNOTSUPP -> kUnimplemented, ENOTDIR/EISDIR/ELOOP ->
// kFailedPrecondition; every message names the relative path.
//
// Thread safety: SysfsReader's methods are thread-safe (an internal mutex
// serializes opens). A SysfsAttribute is not: one owner reads it. Every
// SysfsAttribute must be destroyed before the reader that made it.
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"

namespace fabricdiag::agent {

// statfs(2) f_type of sysfs (include/uapi/linux/magic.h SYSFS_MAGIC).
inline constexpr int64_t kSysfsMagic = 0x62656572;

enum class FdCachePolicy { kAuto, kAlways, kNever };

class SysfsReader;

// One attribute file re-read every interval. Made by SysfsReader::Attribute
// (no I/O until the first Read). Move-only; closes its descriptor when
// destroyed.
class SysfsAttribute {
 public:
  SysfsAttribute() = default;
  ~SysfsAttribute();
  SysfsAttribute(SysfsAttribute&& other) noexcept;
  SysfsAttribute& operator=(SysfsAttribute&& other) noexcept;
  SysfsAttribute(const SysfsAttribute&) = delete;
  SysfsAttribute& operator=(const SysfsAttribute&) = delete;

  const std::string& relpath() const { return relpath_; }

  // The whole content of the file, exactly as read (no trimming), as a view
  // into `*buf`, which grows as needed and is never shrunk: reuse one
  // buffer for many reads. The view is valid until `*buf` changes.
  // A kept descriptor that fails with ENODEV/ENOENT (the kernfs node was
  // removed) is closed and the path opened again once, so a device
  // re-created under the same name is read afresh.
  absl::StatusOr<absl::string_view> Read(std::string* buf) {
    // The common case inline: a kept descriptor and an attribute that fits
    // the buffer (a short read means its end).
    if (fd_ >= 0 && !buf->empty()) {
      const ssize_t n = pread(fd_, buf->data(), buf->size(), 0);
      if (n >= 0 && static_cast<size_t>(n) < buf->size()) {
        return absl::string_view(buf->data(), static_cast<size_t>(n));
      }
    }
    return ReadSlow(buf);
  }

  // Whether the descriptor is currently kept open.
  bool kept_open() const { return fd_ >= 0; }

 private:
  friend class SysfsReader;
  absl::StatusOr<absl::string_view> ReadSlow(std::string* buf);
  SysfsAttribute(SysfsReader* reader, std::string relpath)
      : reader_(reader), relpath_(std::move(relpath)) {}
  void Close();

  SysfsReader* reader_ = nullptr;
  std::string relpath_;
  int fd_ = -1;
};

class SysfsReader {
 public:
  struct Options {
    FdCachePolicy cache_policy = FdCachePolicy::kAuto;
    // Upper bound of descriptors kept by SysfsAttributes. 0 = min(4096,
    // RLIMIT_NOFILE soft / 2). Past it, further attributes open, read and
    // close on every read.
    size_t max_cached_fds = 0;
    // Larger attributes are rejected with kOutOfRange (sysfs attributes are at
    // most one page; anything bigger is not a counter).
    size_t max_attribute_bytes = size_t{64} * 1024;
  };

  // `root` is the sysfs mount point or a tree that looks like one. The root
  // is opened lazily; a missing root makes every call fail with kNotFound.
  explicit SysfsReader(std::string root);
  SysfsReader(std::string root, Options options);
  ~SysfsReader();

  SysfsReader(const SysfsReader&) = delete;
  SysfsReader& operator=(const SysfsReader&) = delete;

  const std::string& root() const { return root_; }

  // Whole content of the attribute file at `relpath`, exactly as read (no
  // trimming): opens, reads and closes it.
  absl::StatusOr<std::string> ReadAttribute(absl::string_view relpath);

  // A handle for reading `relpath` every interval (see SysfsAttribute). The
  // path is checked on the first Read().
  SysfsAttribute Attribute(std::string relpath) {
    return SysfsAttribute(this, std::move(relpath));
  }

  // Names in the directory (without "." and ".."), sorted bytewise.
  absl::StatusOr<std::vector<std::string>> ListDir(absl::string_view relpath);

  // Names of the subdirectories, sorted; a symlink to a directory counts as a
  // directory (as /sys/class/infiniband/<dev> on real systems).
  absl::StatusOr<std::vector<std::string>> ListSubdirs(
      absl::string_view relpath);

  // Names of the entries that are not directories (after following
  // symlinks), sorted. Dangling symlinks are left out; symlink loops are
  // kept, so that reading them reports the loop (kFailedPrecondition).
  absl::StatusOr<std::vector<std::string>> ListFiles(absl::string_view relpath);

  // True when `relpath` resolves (inside the root) to a directory.
  bool IsDir(absl::string_view relpath);

  // Last path component of the target of the symlink at `relpath`
  // ("mlx5_core" for class/infiniband/mlx5_0/device/driver).
  absl::StatusOr<std::string> ReadLinkBasename(absl::string_view relpath);

  // The canonical path of `relpath`, relative to the root, with every
  // symlink resolved inside the root ("devices/pci0000:00/0000:00:01.0/
  // 0000:1b:00.0" for bus/pci/devices/0000:1b:00.0); "" for the root
  // itself. Resolves through /proc/self/fd, so needs /proc. A dangling
  // symlink is kNotFound.
  absl::StatusOr<std::string> RealPath(absl::string_view relpath);

  // Whether this reader keeps descriptors open (after resolving kAuto).
  bool caches_fds();
  // Descriptors kept open by live SysfsAttributes.
  size_t cached_fd_count();

 private:
  friend class SysfsAttribute;

  absl::StatusOr<int> RootFdLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<int> OpenLocked(absl::string_view relpath, int flags)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Opens `relpath` for reading; kFailedPrecondition unless it is a regular
  // file. With `keep` non-null, *keep says whether the caller may keep the
  // descriptor (policy and limit allow it; then it is counted until
  // ReleaseKeptFd).
  absl::StatusOr<int> OpenAttributeFd(absl::string_view relpath, bool* keep);
  void ReleaseKeptFd();
  // Reads the whole file behind `fd` into `*buf` (grown as needed); returns
  // its length. kOutOfRange past max_attribute_bytes. Lock-free.
  absl::StatusOr<size_t> PreadWhole(int fd, std::string* buf,
                                    absl::string_view relpath) const;
  enum class EntryFilter { kAll, kDirs, kNonDirs };
  absl::StatusOr<std::vector<std::string>> ListLocked(absl::string_view relpath,
                                                      EntryFilter filter)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string root_;
  const Options options_;
  absl::Mutex mu_;
  int root_fd_ ABSL_GUARDED_BY(mu_) = -1;
  bool cache_decided_ ABSL_GUARDED_BY(mu_) = false;
  bool cache_fds_ ABSL_GUARDED_BY(mu_) = false;
  size_t max_cached_fds_ ABSL_GUARDED_BY(mu_) = 0;
  bool have_openat2_ ABSL_GUARDED_BY(mu_) = true;
  // Open attributes with O_NOATIME (regular-file trees, while permitted).
  bool noatime_ ABSL_GUARDED_BY(mu_) = false;
  size_t kept_fds_ ABSL_GUARDED_BY(mu_) = 0;
};

// Hands the attributes of a read plan being rebuilt to the new plan: a file
// that is still there keeps its descriptor instead of being reopened (on
// real sysfs an open costs a path walk and a kernfs open; a rescan of an
// 8-NIC node would reopen ~900 files). What is not taken is closed when the
// recycler goes away. A descriptor that died with its device (ENODEV) is
// reopened by its first read, as always.
//
//   AttributeRecycler recycler(&reader);
//   for (SysfsAttribute& a : old_plan) recycler.Add(std::move(a));
//   SysfsAttribute rx = recycler.Attribute(
//       "class/net/eth0/statistics/rx_bytes");
//
// Not thread-safe.
class AttributeRecycler {
 public:
  explicit AttributeRecycler(SysfsReader* reader) : reader_(reader) {}
  AttributeRecycler(const AttributeRecycler&) = delete;
  AttributeRecycler& operator=(const AttributeRecycler&) = delete;

  // Offers `attr` (unbound ones are dropped).
  void Add(SysfsAttribute attr);
  // The attribute of `relpath`: an offered one, or a new one.
  SysfsAttribute Attribute(std::string relpath);

 private:
  SysfsReader* const reader_;
  absl::flat_hash_map<std::string, SysfsAttribute> offered_;
};

// Rejects absolute paths, `..` components and NUL bytes (kInvalidArgument).
absl::Status ValidateRelativePath(absl::string_view relpath);

}  // namespace fabricdiag::agent
