#include "common/dir_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "common/posix_file.h"

namespace fabricdiag {
namespace {

absl::Status Errno(int err, absl::string_view what, const std::string& path) {
  return ErrnoToStatus(err, absl::StrCat("cannot ", what, " ", path));
}

}  // namespace

absl::StatusOr<DirLock> DirLock::Acquire(const std::string& dir,
                                         absl::string_view holder) {
  const std::string path = absl::StrCat(dir, "/LOCK");
  // O_NOFOLLOW: a symlink planted as LOCK must not make us truncate its
  // target.
  DirLock lock(
      open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0640));
  if (!lock.fd_.valid()) return Errno(errno, "create", path);
  if (flock(lock.fd_.get(), LOCK_EX | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK) return Errno(errno, "lock", path);
    char buf[32] = {};
    ssize_t n = pread(lock.fd_.get(), buf, sizeof(buf) - 1, 0);
    absl::string_view pid =
        absl::StripAsciiWhitespace(absl::string_view(buf, n > 0 ? n : 0));
    return absl::FailedPreconditionError(absl::StrCat(
        dir, " is in use by another ", holder,
        pid.empty() ? "" : absl::StrCat(" (pid ", pid, ", see ", path, ")"),
        ": stop it first, or give this one a directory of its own"));
  }
  const std::string pid = absl::StrCat(getpid(), "\n");
  if (ftruncate(lock.fd_.get(), 0) != 0 ||
      pwrite(lock.fd_.get(), pid.data(), pid.size(), 0) !=
          static_cast<ssize_t>(pid.size())) {
    // The lock holds without the pid; only the loser's message is poorer.
    (void)ftruncate(lock.fd_.get(), 0);
  }
  return lock;
}

}  // namespace fabricdiag
