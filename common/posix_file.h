// POSIX file primitives that report absl::Status: errno mapped onto a
// canonical code, write and read loops that survive EINTR, fsync of a
// directory, mkdir -p, and one atomic file replace.
//
//   RETURN_IF_ERROR(MakeDirs("/var/lib/fabricdiag/layouts", 0750));
//   RETURN_IF_ERROR(WriteFileAtomically(path, bytes));  // durable
//   AtomicWriteOptions fast;
//   fast.durable = false;  // a crash may lose it, but never tears it
//   RETURN_IF_ERROR(WriteFileAtomically(path, bytes, fast));
//
// WriteFileAtomically writes the new content to a temporary file, renames it
// over `path` and, when durable, fsyncs the file before the rename and the
// directory after it: a reader (or a restart after a crash) sees the old
// content or the new, never a mix. A failure leaves the old content in place
// and removes the temporary file.
//
// Every error message names the file. Thread-safe (no shared state).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace fabricdiag {

// `what` (e.g. "cannot open /x") and strerror(err), with the code a caller
// (and a gRPC client) can act on: ENOENT NotFound; EACCES, EPERM, EROFS
// PermissionDenied (the remedy is the same: rights or the mount); ENOSPC,
// EDQUOT, EMFILE, ENFILE, ENOMEM ResourceExhausted; EEXIST AlreadyExists;
// ENOTDIR, EISDIR, ENOTEMPTY, ELOOP FailedPrecondition; EINVAL,
// ENAMETOOLONG InvalidArgument; EAGAIN, EINTR Unavailable; anything else
// Internal.
absl::Status ErrnoToStatus(int err, absl::string_view what);

// Owns a file descriptor and closes it on destruction.
class UniqueFd {
 public:
  explicit UniqueFd(int fd = -1) : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept;
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd();

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release();
  // Closes the descriptor now; the error close(2) reports, naming `path`.
  absl::Status Close(absl::string_view path);

 private:
  int fd_;
};

// Writes all of `data` to `fd`, resuming after EINTR and short writes.
// `path` names the file in the error.
absl::Status WriteAll(int fd, absl::string_view data, absl::string_view path);

// Reads `fd` to its end. InvalidArgument when it holds more than
// `max_bytes` (is it the right file?).
absl::StatusOr<std::string> ReadAll(int fd, absl::string_view path,
                                    size_t max_bytes);

// The directory part of `path` ("." when it has none).
std::string DirOf(const std::string& path);

// fsync(2) of a directory, which makes a create, rename or unlink in it
// survive a crash.
absl::Status FsyncDir(const std::string& dir);

// mkdir -p: creates `path` and its missing parents with `mode`. An existing
// directory is fine; FailedPrecondition when `path` or a parent exists and
// is not a directory.
absl::Status MakeDirs(const std::string& path, mode_t mode);

// Creates or truncates `path` and writes `data` into it (not atomic: a
// reader may see it half written; for files nobody reads yet).
absl::Status WriteFile(const std::string& path, absl::string_view data,
                       mode_t mode);

struct AtomicWriteOptions {
  // fsync the file before the rename and its directory after it, so that
  // the new content survives a crash once the call returns. Without it the
  // replace is still atomic for readers.
  bool durable = true;
  mode_t mode = 0640;
  // Where the content is staged before the rename; "<path>.tmp" when
  // empty. Must be on the same filesystem as `path`.
  std::string tmp_path;
};

// Replaces `path` with `data` atomically (see the overview).
absl::Status WriteFileAtomically(const std::string& path,
                                 absl::string_view data,
                                 const AtomicWriteOptions& options = {});

}  // namespace fabricdiag
