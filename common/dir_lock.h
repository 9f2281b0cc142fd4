// An exclusive, advisory lock on a directory that one process holds for its
// lifetime: two collectors on one --state_dir would overwrite each other's
// layouts and findings, so the second one must not start.
//
//   ASSIGN_OR_RETURN(DirLock lock, DirLock::Acquire(dir,
//   "fabricdiag-collector"));
//   ... // until `lock` is destroyed
//
// The lock is flock(2) on "<dir>/LOCK", which also holds the holder's pid
// (for the message the next process prints, and for humans). The kernel
// releases it when the holder exits for any reason, kill -9 included, so a
// stale LOCK file never blocks a restart. flock locks belong to the open
// file description: a second Acquire in the same process fails too.
//
// Acquire errors: FailedPrecondition when another process holds the lock
// (naming the directory, the pid, and what to do), or the errno's code when
// the file cannot be created or locked. Thread-compatible.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/posix_file.h"

namespace fabricdiag {

class DirLock {
 public:
  // `holder` names the program in the message the loser prints.
  static absl::StatusOr<DirLock> Acquire(const std::string& dir,
                                         absl::string_view holder);

  DirLock(DirLock&& other) noexcept = default;
  DirLock& operator=(DirLock&& other) noexcept = default;

 private:
  explicit DirLock(int fd) : fd_(fd) {}

  UniqueFd fd_;  // closing it releases the lock
};

}  // namespace fabricdiag
