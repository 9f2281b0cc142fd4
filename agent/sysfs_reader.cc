#include "agent/sysfs_reader.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace fabricdiag::agent {
namespace {

absl::StatusCode CodeForErrno(int err) {
  switch (err) {
    case ENOENT:
    case ENODEV:
    case ENXIO:
      return absl::StatusCode::kNotFound;
    case EINVAL:
      return absl::StatusCode::kInvalidArgument;
    case EACCES:
    case EPERM:
      return absl::StatusCode::kPermissionDenied;
    case EOPNOTSUPP:
      return absl::StatusCode::kUnimplemented;
    case ENOTDIR:
    case EISDIR:
    case ELOOP:
    case EXDEV:  // RESOLVE_IN_ROOT refused to leave the root
      return absl::StatusCode::kFailedPrecondition;
    case EMFILE:
    case ENFILE:
    case ENOMEM:
      return absl::StatusCode::kResourceExhausted;
    case EIO:
    case EAGAIN:
    case EBUSY:
      return absl::StatusCode::kUnavailable;
    default:
      return absl::ErrnoToStatusCode(err);
  }
}

absl::Status ErrnoStatus(int err, absl::string_view op,
                         absl::string_view relpath) {
  return absl::Status(CodeForErrno(err),
                      absl::StrCat(op, " ", relpath, ": ", strerror(err)));
}

size_t DefaultMaxCachedFds() {
  struct rlimit lim;
  size_t cap = 4096;
  if (getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY) {
    cap = std::min<size_t>(cap, static_cast<size_t>(lim.rlim_cur / 2));
  }
  return std::max<size_t>(cap, 16);
}

}  // namespace

absl::Status ValidateRelativePath(absl::string_view relpath) {
  if (!relpath.empty() && relpath.front() == '/') {
    return absl::InvalidArgumentError(
        absl::StrCat("sysfs path must be relative: ", relpath));
  }
  if (relpath.find('\0') != absl::string_view::npos) {
    return absl::InvalidArgumentError("sysfs path contains a NUL byte");
  }
  for (absl::string_view part : absl::StrSplit(relpath, '/')) {
    if (part == "..") {
      return absl::InvalidArgumentError(
          absl::StrCat("sysfs path must not contain '..': ", relpath));
    }
  }
  return absl::OkStatus();
}

SysfsReader::SysfsReader(std::string root)
    : SysfsReader(std::move(root), Options()) {}

SysfsReader::SysfsReader(std::string root, Options options)
    : root_(std::move(root)), options_(options) {}

SysfsReader::~SysfsReader() {
  absl::MutexLock lock(&mu_);
  if (root_fd_ >= 0) close(root_fd_);
}

absl::StatusOr<int> SysfsReader::RootFdLocked() {
  if (root_fd_ >= 0) return root_fd_;
  int fd = open(root_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus(errno, "open sysfs root", root_);
  root_fd_ = fd;
  if (!cache_decided_) {
    struct statfs fs;
    const bool is_sysfs =
        fstatfs(fd, &fs) == 0 && static_cast<int64_t>(fs.f_type) == kSysfsMagic;
    // A tree of regular files (fixtures, a simulator, a support bundle) is
    // polled every interval: reading it must not keep updating its access
    // times. Reads of sysfs attributes touch no access time.
    noatime_ = !is_sysfs;
    switch (options_.cache_policy) {
      case FdCachePolicy::kAlways:
        cache_fds_ = true;
        break;
      case FdCachePolicy::kNever:
        cache_fds_ = false;
        break;
      case FdCachePolicy::kAuto:
        cache_fds_ = is_sysfs;
        break;
    }
    max_cached_fds_ = options_.max_cached_fds != 0 ? options_.max_cached_fds
                                                   : DefaultMaxCachedFds();
    cache_decided_ = true;
  }
  return root_fd_;
}

// See the EAGAIN comment in OpenLocked.
constexpr int kMaxOpenat2Retries = 64;

absl::StatusOr<int> SysfsReader::OpenLocked(absl::string_view relpath,
                                            int flags) {
  absl::Status valid = ValidateRelativePath(relpath);
  if (!valid.ok()) return valid;
  absl::StatusOr<int> root_fd = RootFdLocked();
  if (!root_fd.ok()) return root_fd.status();
  std::string path = relpath.empty() ? std::string(".") : std::string(relpath);
  flags |= O_CLOEXEC;
  for (int attempt = 0; attempt < 2; ++attempt) {
    int fd = -1;
    if (have_openat2_) {
      struct open_how how;
      memset(&how, 0, sizeof(how));
      how.flags = static_cast<uint64_t>(flags);
      // RESOLVE_IN_ROOT: absolute symlinks and ".." stay inside the root.
      how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
      // openat2(2): with RESOLVE_IN_ROOT the kernel fails with EAGAIN when
      // a rename or mount anywhere on the system raced with the lookup
      // (fs/namei.c checks rename_lock and mount_lock); retrying is the
      // documented answer. Renames are frequent on a busy host (and in the
      // fake trees of the tests), so a bounded retry loop is needed.
      for (int race = 0; race < kMaxOpenat2Retries; ++race) {
        fd = static_cast<int>(
            syscall(SYS_openat2, *root_fd, path.c_str(), &how, sizeof(how)));
        if (fd >= 0 || (errno != EAGAIN && errno != EINTR)) break;
      }
      if (fd < 0 && (errno == ENOSYS || errno == E2BIG)) {
        have_openat2_ = false;  // pre-5.6 kernel: lexical checks only
        continue;
      }
    } else {
      fd = openat(*root_fd, path.c_str(), flags);
    }
    if (fd >= 0) return fd;
    return ErrnoStatus(errno, "open", relpath);
  }
  return ErrnoStatus(ENOSYS, "open", relpath);
}

absl::StatusOr<size_t> SysfsReader::PreadWhole(
    int fd, std::string* buf, absl::string_view relpath) const {
  // One page holds any sysfs attribute, so the common case is a single
  // pread into a buffer that already has room: a short read means end of
  // file on both kernfs and regular files.
  constexpr size_t kFirstRead = 4096;
  const size_t cap = options_.max_attribute_bytes + 1;  // one more: too big
  if (buf->size() < std::min(kFirstRead, cap)) {
    buf->resize(std::min(kFirstRead, cap));
  }
  size_t len = 0;
  while (true) {
    const size_t room = std::min(buf->size(), cap) - len;
    ssize_t n = pread(fd, buf->data() + len, room, static_cast<off_t>(len));
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus(errno, "read", relpath);
    }
    len += static_cast<size_t>(n);
    if (len >= cap) {
      return absl::OutOfRangeError(
          absl::StrCat("read ", relpath, ": attribute larger than ",
                       options_.max_attribute_bytes, " bytes"));
    }
    if (static_cast<size_t>(n) < room) return len;
    buf->resize(std::min(buf->size() * 2, cap));
  }
}

absl::StatusOr<int> SysfsReader::OpenAttributeFd(absl::string_view relpath,
                                                 bool* keep) {
  absl::MutexLock lock(&mu_);
  // Decides noatime_ (and the descriptor policy) on the first call.
  if (absl::StatusOr<int> root = RootFdLocked(); !root.ok()) {
    return root.status();
  }
  // O_NONBLOCK: a FIFO planted in a hostile tree must not block the agent
  // (no effect on sysfs or regular files).
  absl::StatusOr<int> fd =
      OpenLocked(relpath, O_RDONLY | O_NONBLOCK | (noatime_ ? O_NOATIME : 0));
  if (!fd.ok() && noatime_ &&
      fd.status().code() == absl::StatusCode::kPermissionDenied) {
    // O_NOATIME needs the file's owner (or CAP_FOWNER): read others' trees
    // without it, and stop asking.
    noatime_ = false;
    fd = OpenLocked(relpath, O_RDONLY | O_NONBLOCK);
  }
  if (!fd.ok()) return fd.status();
  struct stat st {};
  if (fstat(*fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    const bool is_dir = S_ISDIR(st.st_mode);
    close(*fd);
    if (is_dir) return ErrnoStatus(EISDIR, "read", relpath);
    return absl::FailedPreconditionError(
        absl::StrCat("read ", relpath, ": not a regular file"));
  }
  if (keep != nullptr) {
    *keep = cache_fds_ && kept_fds_ < max_cached_fds_;
    if (*keep) ++kept_fds_;
  }
  return *fd;
}

void SysfsReader::ReleaseKeptFd() {
  absl::MutexLock lock(&mu_);
  --kept_fds_;
}

absl::StatusOr<std::string> SysfsReader::ReadAttribute(
    absl::string_view relpath) {
  absl::StatusOr<int> fd = OpenAttributeFd(relpath, /*keep=*/nullptr);
  if (!fd.ok()) return fd.status();
  std::string buf;
  absl::StatusOr<size_t> len = PreadWhole(*fd, &buf, relpath);
  close(*fd);
  if (!len.ok()) return len.status();
  buf.resize(*len);
  return buf;
}

SysfsAttribute::~SysfsAttribute() { Close(); }

SysfsAttribute::SysfsAttribute(SysfsAttribute&& other) noexcept
    : reader_(other.reader_),
      relpath_(std::move(other.relpath_)),
      fd_(std::exchange(other.fd_, -1)) {}

SysfsAttribute& SysfsAttribute::operator=(SysfsAttribute&& other) noexcept {
  if (this != &other) {
    Close();
    reader_ = other.reader_;
    relpath_ = std::move(other.relpath_);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

void SysfsAttribute::Close() {
  if (fd_ < 0) return;
  close(fd_);
  fd_ = -1;
  reader_->ReleaseKeptFd();
}

void AttributeRecycler::Add(SysfsAttribute attr) {
  if (attr.relpath().empty()) return;
  std::string path = attr.relpath();
  offered_.insert_or_assign(std::move(path), std::move(attr));
}

SysfsAttribute AttributeRecycler::Attribute(std::string relpath) {
  auto it = offered_.find(relpath);
  if (it == offered_.end()) return reader_->Attribute(std::move(relpath));
  SysfsAttribute attr = std::move(it->second);
  offered_.erase(it);
  return attr;
}

absl::StatusOr<absl::string_view> SysfsAttribute::ReadSlow(std::string* buf) {
  if (reader_ == nullptr) {
    return absl::FailedPreconditionError("read of an unbound SysfsAttribute");
  }
  if (fd_ >= 0) {
    absl::StatusOr<size_t> len = reader_->PreadWhole(fd_, buf, relpath_);
    if (len.ok()) return absl::string_view(buf->data(), *len);
    if (len.status().code() != absl::StatusCode::kNotFound) {
      return len.status();
    }
    // The kernfs node behind the descriptor was removed. The path may
    // exist again (a device re-created under the same name): reopen.
    Close();
  }
  bool keep = false;
  absl::StatusOr<int> fd = reader_->OpenAttributeFd(relpath_, &keep);
  if (!fd.ok()) return fd.status();
  absl::StatusOr<size_t> len = reader_->PreadWhole(*fd, buf, relpath_);
  // Keep the descriptor through read errors such as EINVAL (an attribute
  // with nothing to show right now, like the speed of a down link): only a
  // vanished file is worth reopening.
  if (keep &&
      (len.ok() || len.status().code() != absl::StatusCode::kNotFound)) {
    fd_ = *fd;
  } else {
    close(*fd);
    if (keep) reader_->ReleaseKeptFd();
  }
  if (!len.ok()) return len.status();
  return absl::string_view(buf->data(), *len);
}

absl::StatusOr<std::vector<std::string>> SysfsReader::ListLocked(
    absl::string_view relpath, EntryFilter filter) {
  absl::StatusOr<int> fd = OpenLocked(relpath, O_RDONLY | O_DIRECTORY);
  if (!fd.ok()) return fd.status();
  DIR* dir = fdopendir(*fd);
  if (dir == nullptr) {
    int err = errno;
    close(*fd);
    return ErrnoStatus(err, "opendir", relpath);
  }
  std::vector<std::string> names;
  errno = 0;
  while (struct dirent* ent = readdir(dir)) {
    absl::string_view name(ent->d_name);
    if (name == "." || name == "..") continue;
    if (filter != EntryFilter::kAll) {
      bool is_dir = ent->d_type == DT_DIR;
      if (ent->d_type == DT_LNK || ent->d_type == DT_UNKNOWN) {
        // Follow the link (relative to this directory, which is inside the
        // root). A loop or dangling link is neither a dir nor a usable file.
        struct stat st;
        if (fstatat(dirfd(dir), ent->d_name, &st, 0) != 0) {
          // A symlink loop is kept among the files so that reading it
          // reports ELOOP; a dangling link is simply not there.
          if (errno == ELOOP && filter == EntryFilter::kNonDirs) {
            names.emplace_back(name);
          }
          errno = 0;
          continue;
        }
        is_dir = S_ISDIR(st.st_mode);
      }
      if (is_dir != (filter == EntryFilter::kDirs)) continue;
    }
    names.emplace_back(name);
  }
  int err = errno;
  closedir(dir);
  if (err != 0) return ErrnoStatus(err, "readdir", relpath);
  std::sort(names.begin(), names.end());
  return names;
}

absl::StatusOr<std::vector<std::string>> SysfsReader::ListDir(
    absl::string_view relpath) {
  absl::MutexLock lock(&mu_);
  return ListLocked(relpath, EntryFilter::kAll);
}

absl::StatusOr<std::vector<std::string>> SysfsReader::ListSubdirs(
    absl::string_view relpath) {
  absl::MutexLock lock(&mu_);
  return ListLocked(relpath, EntryFilter::kDirs);
}

absl::StatusOr<std::vector<std::string>> SysfsReader::ListFiles(
    absl::string_view relpath) {
  absl::MutexLock lock(&mu_);
  return ListLocked(relpath, EntryFilter::kNonDirs);
}

bool SysfsReader::IsDir(absl::string_view relpath) {
  absl::MutexLock lock(&mu_);
  absl::StatusOr<int> fd = OpenLocked(relpath, O_PATH | O_DIRECTORY);
  if (!fd.ok()) return false;
  close(*fd);
  return true;
}

absl::StatusOr<std::string> SysfsReader::ReadLinkBasename(
    absl::string_view relpath) {
  absl::MutexLock lock(&mu_);
  // Resolve the parent inside the root, then readlink the last component
  // without following it.
  absl::string_view parent;
  absl::string_view leaf = relpath;
  size_t slash = relpath.rfind('/');
  if (slash != absl::string_view::npos) {
    parent = relpath.substr(0, slash);
    leaf = relpath.substr(slash + 1);
  }
  if (leaf.empty() || leaf == "." || leaf == "..") {
    return absl::InvalidArgumentError(
        absl::StrCat("not a symlink path: ", relpath));
  }
  absl::StatusOr<int> dir = OpenLocked(parent, O_PATH | O_DIRECTORY);
  if (!dir.ok()) return dir.status();
  char buf[4096];
  std::string leaf_str(leaf);
  ssize_t n = readlinkat(*dir, leaf_str.c_str(), buf, sizeof(buf));
  int err = errno;
  close(*dir);
  if (n < 0) return ErrnoStatus(err, "readlink", relpath);
  absl::string_view target(buf, static_cast<size_t>(n));
  while (!target.empty() && target.back() == '/') target.remove_suffix(1);
  size_t pos = target.rfind('/');
  if (pos != absl::string_view::npos) target = target.substr(pos + 1);
  if (target.empty() || target == "." || target == "..") {
    return absl::FailedPreconditionError(
        absl::StrCat("readlink ", relpath, ": target has no basename"));
  }
  return std::string(target);
}

namespace {

// What /proc/self/fd/<fd> links to: the path the descriptor was opened at.
absl::StatusOr<std::string> FdPath(int fd, absl::string_view relpath) {
  const std::string link = absl::StrCat("/proc/self/fd/", fd);
  char buf[4096];
  const ssize_t n = readlink(link.c_str(), buf, sizeof(buf));
  if (n < 0) return ErrnoStatus(errno, "realpath", relpath);
  if (static_cast<size_t>(n) >= sizeof(buf)) {
    return absl::OutOfRangeError(
        absl::StrCat("realpath ", relpath, ": path too long"));
  }
  return std::string(buf, static_cast<size_t>(n));
}

}  // namespace

absl::StatusOr<std::string> SysfsReader::RealPath(absl::string_view relpath) {
  absl::MutexLock lock(&mu_);
  absl::StatusOr<int> root_fd = RootFdLocked();
  if (!root_fd.ok()) return root_fd.status();
  absl::StatusOr<std::string> root = FdPath(*root_fd, relpath);
  if (!root.ok()) return root.status();
  absl::StatusOr<int> fd = OpenLocked(relpath, O_PATH);
  if (!fd.ok()) return fd.status();
  absl::StatusOr<std::string> path = FdPath(*fd, relpath);
  close(*fd);
  if (!path.ok()) return path.status();
  if (*path == *root) return std::string();
  // RESOLVE_IN_ROOT keeps the result below the root; without openat2 (a
  // pre-5.6 kernel) an absolute symlink may lead out: refuse it.
  const std::string prefix = *root == "/" ? *root : absl::StrCat(*root, "/");
  if (!absl::StartsWith(*path, prefix)) {
    return absl::FailedPreconditionError(
        absl::StrCat("realpath ", relpath, ": resolves outside the root"));
  }
  return path->substr(prefix.size());
}

bool SysfsReader::caches_fds() {
  absl::MutexLock lock(&mu_);
  (void)RootFdLocked();
  return cache_fds_;
}

size_t SysfsReader::cached_fd_count() {
  absl::MutexLock lock(&mu_);
  return kept_fds_;
}

}  // namespace fabricdiag::agent
