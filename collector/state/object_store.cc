#include "collector/state/object_store.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/crc32c.h"
#include "common/little_endian.h"
#include "common/posix_file.h"

namespace fabricdiag::collector {
namespace {

constexpr char kObjectMagic[4] = {'F', 'D', 'S', '1'};
constexpr size_t kObjectHeaderBytes = 20;  // magic, length, crc, time

}  // namespace

std::string EncodeObject(absl::string_view payload, absl::Time written) {
  std::string body;
  PutU64(&body, static_cast<uint64_t>(absl::ToUnixNanos(written)));
  body.append(payload.data(), payload.size());
  std::string out(kObjectMagic, sizeof(kObjectMagic));
  PutU32(&out, static_cast<uint32_t>(payload.size()));
  PutU32(&out, Crc32c(body));
  out += body;
  return out;
}

absl::Status DecodeObject(absl::string_view data, absl::string_view* payload,
                          absl::Time* written) {
  if (data.size() < kObjectHeaderBytes ||
      data.substr(0, 4) != absl::string_view(kObjectMagic, 4)) {
    return absl::DataLossError("not a fabricdiag state file (bad header)");
  }
  uint32_t length = GetU32(data.data() + 4);
  if (data.size() - kObjectHeaderBytes != length) {
    return absl::DataLossError(absl::StrCat(
        "length mismatch: header says ", length, " payload bytes, file holds ",
        data.size() - kObjectHeaderBytes));
  }
  if (Crc32c(data.substr(12)) != GetU32(data.data() + 8)) {
    return absl::DataLossError("checksum mismatch");
  }
  *written =
      absl::FromUnixNanos(static_cast<int64_t>(GetU64(data.data() + 12)));
  *payload = data.substr(kObjectHeaderBytes);
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadStateFile(const std::string& path) {
  UniqueFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) {
    return ErrnoToStatus(errno, absl::StrCat("cannot open ", path));
  }
  struct stat st;
  if (fstat(fd.get(), &st) != 0) {
    return ErrnoToStatus(errno, absl::StrCat("cannot stat ", path));
  }
  if (!S_ISREG(st.st_mode)) {
    return absl::DataLossError(absl::StrCat(path, " is not a regular file"));
  }
  // Refused before reading: a huge file here is not one we wrote.
  if (static_cast<uint64_t>(st.st_size) > kMaxStateObjectBytes) {
    return absl::DataLossError(absl::StrCat(path, " is ", st.st_size,
                                            " bytes, more than the limit of ",
                                            kMaxStateObjectBytes));
  }
  return ReadAll(fd.get(), path, static_cast<size_t>(kMaxStateObjectBytes));
}

absl::Status WriteObjectFile(const std::string& path, absl::string_view payload,
                             absl::Time written) {
  return WriteFileAtomically(path, EncodeObject(payload, written));
}

absl::StatusOr<ObjectFile> ReadObjectFile(const std::string& path) {
  absl::StatusOr<std::string> data = ReadStateFile(path);
  if (!data.ok()) return data.status();
  absl::string_view payload;
  ObjectFile file;
  absl::Status status = DecodeObject(*data, &payload, &file.written);
  if (!status.ok()) return status;
  // The payload is the tail of the file: keep the buffer, drop the header.
  data->erase(0, data->size() - payload.size());
  file.payload = std::move(*data);
  return file;
}

}  // namespace fabricdiag::collector
