#include "common/posix_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace fabricdiag {
namespace {

absl::StatusCode CodeOf(int err) {
  switch (err) {
    case ENOENT:
      return absl::StatusCode::kNotFound;
    case EACCES:
    case EPERM:
    case EROFS:
      return absl::StatusCode::kPermissionDenied;
    case ENOSPC:
    case EDQUOT:
    case EMFILE:
    case ENFILE:
    case ENOMEM:
      return absl::StatusCode::kResourceExhausted;
    case EEXIST:
      return absl::StatusCode::kAlreadyExists;
    case ENOTDIR:
    case EISDIR:
    case ENOTEMPTY:
    case ELOOP:
      return absl::StatusCode::kFailedPrecondition;
    case EINVAL:
    case ENAMETOOLONG:
      return absl::StatusCode::kInvalidArgument;
    case EAGAIN:
    case EINTR:
      return absl::StatusCode::kUnavailable;
    default:
      return absl::StatusCode::kInternal;
  }
}

// Opens (creating or truncating) `path`, writes `data`, fsyncs when `sync`
// and closes, reporting the first failure.
absl::Status WriteAndClose(const std::string& path, absl::string_view data,
                           mode_t mode, bool sync) {
  UniqueFd fd(
      open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode));
  if (!fd.valid()) {
    return ErrnoToStatus(errno, absl::StrCat("cannot create ", path));
  }
  RETURN_IF_ERROR(WriteAll(fd.get(), data, path));
  if (sync && fsync(fd.get()) != 0) {
    return ErrnoToStatus(errno, absl::StrCat("cannot fsync ", path));
  }
  // NFS and quotas may report a failed write only here.
  return fd.Close(path);
}

absl::Status MakeDir(const std::string& path, mode_t mode) {
  if (mkdir(path.c_str(), mode) != 0 && errno != EEXIST) {
    return ErrnoToStatus(errno, absl::StrCat("cannot create ", path));
  }
  struct stat st;
  if (stat(path.c_str(), &st) != 0) {
    return ErrnoToStatus(errno, absl::StrCat("cannot stat ", path));
  }
  if (!S_ISDIR(st.st_mode)) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, " exists and is not a directory"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ErrnoToStatus(int err, absl::string_view what) {
  return absl::Status(CodeOf(err),
                      absl::StrCat(what, ": ", std::strerror(err)));
}

UniqueFd& UniqueFd::operator=(UniqueFd&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) close(fd_);
    fd_ = other.release();
  }
  return *this;
}

UniqueFd::~UniqueFd() {
  if (fd_ >= 0) close(fd_);
}

int UniqueFd::release() {
  const int fd = fd_;
  fd_ = -1;
  return fd;
}

absl::Status UniqueFd::Close(absl::string_view path) {
  // Linux releases the descriptor even when close fails: never retry.
  if (fd_ >= 0 && close(release()) != 0) {
    return ErrnoToStatus(errno, absl::StrCat("cannot close ", path));
  }
  return absl::OkStatus();
}

absl::Status WriteAll(int fd, absl::string_view data, absl::string_view path) {
  while (!data.empty()) {
    const ssize_t n = write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoToStatus(errno, absl::StrCat("cannot write ", path));
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadAll(int fd, absl::string_view path,
                                    size_t max_bytes) {
  std::string out;
  char buf[65536];
  while (true) {
    const ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoToStatus(errno, absl::StrCat("cannot read ", path));
    }
    if (n == 0) return out;
    if (out.size() + static_cast<size_t>(n) > max_bytes) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, " is larger than ", max_bytes,
                       " bytes; is it the right file?"));
    }
    out.append(buf, static_cast<size_t>(n));
  }
}

std::string DirOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

absl::Status FsyncDir(const std::string& dir) {
  UniqueFd fd(open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd.valid()) {
    return ErrnoToStatus(errno, absl::StrCat("cannot open directory ", dir));
  }
  if (fsync(fd.get()) != 0) {
    return ErrnoToStatus(errno, absl::StrCat("cannot fsync directory ", dir));
  }
  return absl::OkStatus();
}

absl::Status MakeDirs(const std::string& path, mode_t mode) {
  for (size_t pos = path.find('/', 1); pos != std::string::npos;
       pos = path.find('/', pos + 1)) {
    const std::string prefix = path.substr(0, pos);
    struct stat st;
    if (stat(prefix.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) continue;
    RETURN_IF_ERROR(MakeDir(prefix, mode));
  }
  return MakeDir(path, mode);
}

absl::Status WriteFile(const std::string& path, absl::string_view data,
                       mode_t mode) {
  return WriteAndClose(path, data, mode, /*sync=*/false);
}

absl::Status WriteFileAtomically(const std::string& path,
                                 absl::string_view data,
                                 const AtomicWriteOptions& options) {
  const std::string tmp =
      options.tmp_path.empty() ? absl::StrCat(path, ".tmp") : options.tmp_path;
  absl::Status status = WriteAndClose(tmp, data, options.mode, options.durable);
  if (status.ok() && rename(tmp.c_str(), path.c_str()) != 0) {
    status =
        ErrnoToStatus(errno, absl::StrCat("cannot rename ", tmp, " to ", path));
  }
  if (!status.ok()) {
    unlink(tmp.c_str());
    return status;
  }
  return options.durable ? FsyncDir(DirOf(path)) : absl::OkStatus();
}

}  // namespace fabricdiag
