#include "common/files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/posix_file.h"

namespace fabricdiag {
namespace {

absl::StatusOr<UniqueFd> OpenRegular(const std::string& path, struct stat* st) {
  UniqueFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY));
  if (!fd.valid()) {
    return ErrnoToStatus(errno, absl::StrCat("cannot open ", path));
  }
  if (fstat(fd.get(), st) != 0) {
    return ErrnoToStatus(errno, absl::StrCat("cannot stat ", path));
  }
  if (!S_ISREG(st->st_mode)) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, " is not a regular file"));
  }
  return fd;
}

}  // namespace

absl::StatusOr<std::string> ReadFileCapped(const std::string& path,
                                           size_t max_bytes) {
  struct stat st;
  absl::StatusOr<UniqueFd> fd = OpenRegular(path, &st);
  if (!fd.ok()) return fd.status();
  return ReadAll(fd->get(), path, max_bytes);
}

absl::StatusOr<std::string> ReadSecretFile(absl::string_view what,
                                           const std::string& path,
                                           size_t max_bytes) {
  struct stat st;
  absl::StatusOr<UniqueFd> fd = OpenRegular(path, &st);
  if (!fd.ok()) {
    return absl::Status(fd.status().code(),
                        absl::StrCat(what, ": ", fd.status().message()));
  }
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
  absl::StatusOr<std::string> data = ReadAll(fd->get(), path, max_bytes);
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
