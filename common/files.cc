#include "common/files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace fabricdiag {
namespace {

absl::Status ErrnoStatus(int err, absl::string_view what) {
  return absl::Status(absl::ErrnoToStatusCode(err),
                      absl::StrCat(what, ": ", std::strerror(err)));
}

// Reads an open descriptor whole, at most `max_bytes`.
absl::StatusOr<std::string> ReadAll(int fd, const std::string& path,
                                    size_t max_bytes) {
  std::string out;
  char buf[65536];
  while (true) {
    const ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus(errno, absl::StrCat("cannot read ", path));
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

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

absl::StatusOr<int> OpenRegular(const std::string& path, struct stat* st) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return ErrnoStatus(errno, absl::StrCat("cannot open ", path));
  if (fstat(fd, st) != 0) {
    const int err = errno;
    close(fd);
    return ErrnoStatus(err, absl::StrCat("cannot stat ", path));
  }
  if (!S_ISREG(st->st_mode)) {
    close(fd);
    return absl::FailedPreconditionError(
        absl::StrCat(path, " is not a regular file"));
  }
  return fd;
}

}  // namespace

absl::StatusOr<std::string> ReadFileCapped(const std::string& path,
                                           size_t max_bytes) {
  struct stat st;
  absl::StatusOr<int> fd = OpenRegular(path, &st);
  if (!fd.ok()) return fd.status();
  Fd owned(*fd);
  return ReadAll(owned.get(), path, max_bytes);
}

absl::StatusOr<std::string> ReadSecretFile(absl::string_view what,
                                           const std::string& path,
                                           size_t max_bytes) {
  struct stat st;
  absl::StatusOr<int> fd = OpenRegular(path, &st);
  if (!fd.ok()) {
    return absl::Status(fd.status().code(),
                        absl::StrCat(what, ": ", fd.status().message()));
  }
  Fd owned(*fd);
  // As PostgreSQL treats its TLS key: a file of our own must be ours alone
  // (0600 or less); a file root owns may also be readable by its group
  // (0640: root:fabricdiag, or a Kubernetes Secret volume with fsGroup),
  // because root granted that read on purpose. Nobody else may read it and
  // nobody but the owner may write it.
  const bool root_owned = st.st_uid == 0 && geteuid() != 0;
  const mode_t forbidden =
      root_owned ? (S_IWGRP | S_IRWXO) : (S_IRWXG | S_IRWXO);
  if ((st.st_mode & forbidden) != 0) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "%s=%s is readable or writable by group or others (mode %04o): "
        "anyone on this host could use or replace the secret; run "
        "`chmod 600 %s` (or hand it over with systemd's LoadCredential=)",
        what, path, st.st_mode & 07777, path));
  }
  absl::StatusOr<std::string> data = ReadAll(owned.get(), path, max_bytes);
  if (!data.ok()) {
    return absl::Status(data.status().code(),
                        absl::StrCat(what, ": ", data.status().message()));
  }
  return data;
}

absl::StatusOr<std::string> ReadTokenFile(absl::string_view what,
                                          const std::string& path,
                                          size_t min_length) {
  absl::StatusOr<std::string> text = ReadSecretFile(what, path, 64 << 10);
  if (!text.ok()) return absl::InvalidArgumentError(text.status().message());
  const absl::string_view token = absl::StripAsciiWhitespace(*text);
  if (token.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": ", path, " holds no token"));
  }
  for (char c : token) {
    if (c < 0x21 || c > 0x7e) {
      return absl::InvalidArgumentError(absl::StrCat(
          what, ": ", path,
          " holds a space or non-ASCII character inside the token"));
    }
  }
  if (token.size() < min_length) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, "=", path, ": the token must be at least ",
                     min_length, " characters (e.g. `openssl rand -hex 32`)"));
  }
  return std::string(token);
}

absl::StatusOr<std::string> ReadPemFile(absl::string_view what,
                                        const std::string& path, bool secret) {
  constexpr size_t kMaxPemBytes = 1 << 20;  // PEM files are a few KB
  absl::StatusOr<std::string> data =
      secret ? ReadSecretFile(what, path, kMaxPemBytes)
             : ReadFileCapped(path, kMaxPemBytes);
  if (!data.ok()) {
    const std::string message(data.status().message());
    return absl::InvalidArgumentError(
        secret ? message : absl::StrCat(what, ": ", message));
  }
  if (data->find("-----BEGIN ") == std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, "=", path, " is not in PEM format"));
  }
  return data;
}

}  // namespace fabricdiag
