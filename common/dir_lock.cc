#include "common/dir_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace fabricdiag {
namespace {

absl::Status Errno(int err, absl::string_view what, const std::string& path) {
  const std::string message =
      absl::StrCat("cannot ", what, " ", path, ": ", std::strerror(err));
  switch (err) {
    case EACCES:
    case EPERM:
    case EROFS:
      return absl::PermissionDeniedError(message);
    case ENOENT:
      return absl::NotFoundError(message);
    default:
      return absl::InternalError(message);
  }
}

}  // namespace

absl::StatusOr<DirLock> DirLock::Acquire(const std::string& dir,
                                         absl::string_view holder) {
  const std::string path = absl::StrCat(dir, "/LOCK");
  // O_NOFOLLOW: a symlink planted as LOCK must not make us truncate its
  // target.
  DirLock lock(
      open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0640));
  if (lock.fd_ < 0) return Errno(errno, "create", path);
  if (flock(lock.fd_, LOCK_EX | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK) return Errno(errno, "lock", path);
    char buf[32] = {};
    ssize_t n = pread(lock.fd_, buf, sizeof(buf) - 1, 0);
    absl::string_view pid =
        absl::StripAsciiWhitespace(absl::string_view(buf, n > 0 ? n : 0));
    return absl::FailedPreconditionError(absl::StrCat(
        dir, " is in use by another ", holder,
        pid.empty() ? "" : absl::StrCat(" (pid ", pid, ", see ", path, ")"),
        ": stop it first, or give this one a directory of its own"));
  }
  const std::string pid = absl::StrCat(getpid(), "\n");
  if (ftruncate(lock.fd_, 0) != 0 ||
      pwrite(lock.fd_, pid.data(), pid.size(), 0) !=
          static_cast<ssize_t>(pid.size())) {
    // The lock holds without the pid; only the loser's message is poorer.
    (void)ftruncate(lock.fd_, 0);
  }
  return lock;
}

DirLock& DirLock::operator=(DirLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) close(fd_);
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

DirLock::~DirLock() {
  if (fd_ >= 0) close(fd_);
}

}  // namespace fabricdiag
