// SysfsReader: the only code in the agent that opens files under the sysfs
// root.
//
// Every path is relative to a root injected through the constructor
// (`--sysfs_root`, `/sys` in production, a fixture tree in tests). Paths are
// checked lexically (no absolute paths, no `..`) and resolved with
// openat2(RESOLVE_IN_ROOT), so a symlink in a hostile tree can never lead the
// reader outside the root; a symlink loop fails with ELOOP instead of hanging.
//
// Reading a sysfs attribute is expensive mostly because of open/close, not the
// read itself. On real sysfs, pread(fd, buf, n, 0) on a kept descriptor makes
// kernfs call the attribute's show() again, so the reader can keep descriptors
// open and re-read them with one syscall per value. On a regular filesystem
// (fixtures, a simulator rewriting files by atomic rename) a kept descriptor
// would return stale data, so caching is a policy:
//   kAuto   cache descriptors only when statfs says the root is sysfs;
//   kAlways cache always (benchmarks on a fake tree that is never rewritten);
//   kNever  open, read, close every time.
//
//   SysfsReader reader("/sys");
//   absl::StatusOr<std::string> v =
//       reader.ReadAttribute("class/infiniband/mlx5_0/ports/1/counters/port_xmit_data");
//   absl::StatusOr<std::vector<std::string>> devs =
//       reader.ListDir("class/infiniband");
//
// Errors use canonical codes derived from errno (absl::ErrnoToStatusCode):
// ENOENT/ENODEV -> kNotFound, EINVAL -> kInvalidArgument, EACCES ->
// kPermissionDenied, EOPNOTSUPP -> kUnimplemented, ENOTDIR/EISDIR/ELOOP ->
// kFailedPrecondition; every message names the relative path.
//
// Thread safety: all methods are thread-safe; calls are serialized by an
// internal mutex (each call is a few syscalls, so contention is negligible).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
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

// Identity of a directory entry, used by sources to notice that a device
// directory was removed and re-created between two calls.
struct FileIdentity {
  uint64_t dev = 0;
  uint64_t ino = 0;
  int64_t mtime_nanos = 0;
  friend bool operator==(const FileIdentity& a, const FileIdentity& b) {
    return a.dev == b.dev && a.ino == b.ino && a.mtime_nanos == b.mtime_nanos;
  }
  friend bool operator!=(const FileIdentity& a, const FileIdentity& b) {
    return !(a == b);
  }
};

class SysfsReader {
 public:
  struct Options {
    FdCachePolicy cache_policy = FdCachePolicy::kAuto;
    // Upper bound of kept descriptors. 0 = min(4096, RLIMIT_NOFILE soft / 2).
    // When full, the whole cache is dropped and refilled (rare, self-healing).
    size_t max_cached_fds = 0;
    // Larger attributes are rejected with kOutOfRange (sysfs attributes are at
    // most one page; anything bigger is not a counter).
    size_t max_attribute_bytes = 64 * 1024;
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
  // trimming). Keeps the descriptor open when the cache policy allows it; a
  // kept descriptor that fails with ENODEV/ENOENT (device removed) is closed.
  absl::StatusOr<std::string> ReadAttribute(absl::string_view relpath);

  // Like ReadAttribute but never caches the descriptor: for files read only
  // on rescans (device info, the 256 gid_attrs/ndevs slots of a port).
  absl::StatusOr<std::string> ReadAttributeOnce(absl::string_view relpath);

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

  // dev/ino/mtime of what `relpath` resolves to.
  absl::StatusOr<FileIdentity> Stat(absl::string_view relpath);

  // Whether this reader keeps descriptors open (after resolving kAuto).
  bool caches_fds();
  size_t cached_fd_count();
  // Closes every kept descriptor.
  void DropFdCache();
  // Closes the kept descriptors of paths starting with `prefix` (a device
  // that went away: its descriptors would pin kernfs nodes until evicted).
  void DropFdCacheUnder(absl::string_view prefix);

 private:
  absl::StatusOr<int> RootFdLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<int> OpenLocked(absl::string_view relpath, int flags)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<std::string> ReadLocked(absl::string_view relpath,
                                         bool may_cache)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<std::string> PreadAll(int fd, absl::string_view relpath);
  enum class EntryFilter { kAll, kDirs, kNonDirs };
  absl::StatusOr<std::vector<std::string>> ListLocked(absl::string_view relpath,
                                                      EntryFilter filter)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void DropFdCacheLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string root_;
  const Options options_;
  absl::Mutex mu_;
  int root_fd_ ABSL_GUARDED_BY(mu_) = -1;
  bool cache_decided_ ABSL_GUARDED_BY(mu_) = false;
  bool cache_fds_ ABSL_GUARDED_BY(mu_) = false;
  size_t max_cached_fds_ ABSL_GUARDED_BY(mu_) = 0;
  bool have_openat2_ ABSL_GUARDED_BY(mu_) = true;
  absl::flat_hash_map<std::string, int> fds_ ABSL_GUARDED_BY(mu_);
};

// Rejects absolute paths, `..` components and NUL bytes (kInvalidArgument).
absl::Status ValidateRelativePath(absl::string_view relpath);

}  // namespace fabricdiag::agent
