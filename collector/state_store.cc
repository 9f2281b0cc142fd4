#include "collector/state_store.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <map>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/log.h"
#include "common/names.h"
#include "common/status_macros.h"

namespace fabricdiag::collector {
namespace {

constexpr char kObjectMagic[4] = {'F', 'D', 'S', '1'};
constexpr char kLogMagic[4] = {'F', 'D', 'L', '1'};
constexpr size_t kObjectHeaderBytes = 20;  // magic, length, crc, time
constexpr size_t kRecordHeaderBytes = 8;   // length, crc
constexpr char kRecordFinding = 'F';
constexpr char kRecordNextId = 'N';
// Analyzer names ("pfc_storm"; empty for resolved findings) are short and
// printable; anything else marks garbage.
constexpr uint32_t kMaxSourceNameBytes = 64;
constexpr char kLayoutsDir[] = "layouts";
constexpr char kTopologyFile[] = "topology.pb";
constexpr char kFindingsLog[] = "findings.log";
constexpr char kLayoutSuffix[] = ".pb";
constexpr char kTmpSuffix[] = ".tmp";

// Table for the reflected Castagnoli polynomial 0x82F63B78.
std::array<uint32_t, 256> MakeCrcTable() {
  std::array<uint32_t, 256> table{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    table[i] = c;
  }
  return table;
}

void PutU32(std::string* out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out->push_back(static_cast<char>(v >> (8 * i)));
}
void PutU64(std::string* out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out->push_back(static_cast<char>(v >> (8 * i)));
}
uint32_t GetU32(const char* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}
uint64_t GetU64(const char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

// Maps errno onto the canonical code a caller (and a gRPC client) can act on.
absl::Status ErrnoError(int err, absl::string_view what) {
  std::string message = absl::StrCat(what, ": ", std::strerror(err));
  switch (err) {
    case ENOENT:
      return absl::NotFoundError(message);
    case EACCES:
    case EPERM:
    case EROFS:
      return absl::PermissionDeniedError(message);
    case ENOSPC:
    case EDQUOT:
      return absl::ResourceExhaustedError(message);
    case ENOTDIR:
      return absl::FailedPreconditionError(message);
    default:
      return absl::InternalError(message);
  }
}

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd_ >= 0) close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

absl::Status WriteAll(int fd, absl::string_view data, const std::string& path) {
  while (!data.empty()) {
    ssize_t n = write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoError(errno, absl::StrCat("cannot write ", path));
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return absl::OkStatus();
}

absl::Status FsyncDir(const std::string& dir) {
  Fd fd(open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (fd.get() < 0) {
    return ErrnoError(errno, absl::StrCat("cannot open directory ", dir));
  }
  if (fsync(fd.get()) != 0) {
    return ErrnoError(errno, absl::StrCat("cannot fsync directory ", dir));
  }
  return absl::OkStatus();
}

std::string DirOf(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

// Reads a whole regular file of at most kMaxStateObjectBytes.
absl::StatusOr<std::string> ReadSmallFile(const std::string& path) {
  Fd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0)
    return ErrnoError(errno, absl::StrCat("cannot open ", path));
  struct stat st;
  if (fstat(fd.get(), &st) != 0) {
    return ErrnoError(errno, absl::StrCat("cannot stat ", path));
  }
  if (!S_ISREG(st.st_mode)) {
    return absl::DataLossError(absl::StrCat(path, " is not a regular file"));
  }
  if (static_cast<uint64_t>(st.st_size) > kMaxStateObjectBytes) {
    return absl::DataLossError(absl::StrCat(path, " is ", st.st_size,
                                            " bytes, more than the limit of ",
                                            kMaxStateObjectBytes));
  }
  std::string data;
  data.resize(static_cast<size_t>(st.st_size));
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = read(fd.get(), &data[done], data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoError(errno, absl::StrCat("cannot read ", path));
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  data.resize(done);
  return data;
}

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

// Checks the envelope; on success `payload` views into `data`.
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

std::string EncodeRecord(char type, absl::string_view payload) {
  std::string body(1, type);
  body.append(payload.data(), payload.size());
  std::string out;
  PutU32(&out, static_cast<uint32_t>(body.size()));
  PutU32(&out, Crc32c(body));
  out += body;
  return out;
}

std::string EncodeFinding(const StoredFinding& stored) {
  std::string payload;
  PutU32(&payload, static_cast<uint32_t>(stored.source.size()));
  payload += stored.source;
  payload += stored.finding.SerializeAsString();
  return EncodeRecord(kRecordFinding, payload);
}

bool DecodeFinding(absl::string_view payload, StoredFinding* out) {
  if (payload.size() < 4) return false;
  uint32_t source_len = GetU32(payload.data());
  payload.remove_prefix(4);
  if (source_len > payload.size()) return false;
  out->source = std::string(payload.substr(0, source_len));
  payload.remove_prefix(source_len);
  return out->finding.ParseFromArray(payload.data(),
                                     static_cast<int>(payload.size()));
}

// "f-000042" -> 42.
std::optional<uint64_t> IdNumber(absl::string_view id) {
  uint64_t n = 0;
  if (!absl::ConsumePrefix(&id, "f-") || !absl::SimpleAtoi(id, &n)) {
    return std::nullopt;
  }
  return n;
}

// The size of the intact record that starts at `pos` of `data`, or 0: its
// length fits in what is left, its type is known, the source name of a
// finding is plausible and the checksum matches. The cheap checks come
// first, so that scanning a damaged stretch byte by byte for the next
// intact record rarely computes a checksum.
size_t IntactRecordAt(absl::string_view data, size_t pos) {
  const size_t left = data.size() - pos;
  if (left < kRecordHeaderBytes + 1) return 0;
  const uint32_t length = GetU32(data.data() + pos);
  if (length == 0 || length > left - kRecordHeaderBytes ||
      length > kMaxStateObjectBytes) {
    return 0;
  }
  absl::string_view body = data.substr(pos + kRecordHeaderBytes, length);
  if (body[0] == kRecordNextId) {
    if (length != 9) return 0;
  } else if (body[0] == kRecordFinding) {
    if (length < 5) return 0;
    const uint32_t source_len = GetU32(body.data() + 1);
    if (source_len > kMaxSourceNameBytes || source_len > length - 5) {
      return 0;
    }
    for (char c : body.substr(5, source_len)) {
      if (!absl::ascii_isgraph(c)) return 0;
    }
  } else {
    return 0;
  }
  if (Crc32c(body) != GetU32(data.data() + pos + 4)) return 0;
  return kRecordHeaderBytes + length;
}

absl::Status MakeDir(const std::string& path) {
  if (mkdir(path.c_str(), 0750) == 0 || errno == EEXIST) {
    struct stat st;
    if (stat(path.c_str(), &st) != 0) {
      return ErrnoError(errno, absl::StrCat("state_dir: cannot stat ", path));
    }
    if (!S_ISDIR(st.st_mode)) {
      return absl::FailedPreconditionError(
          absl::StrCat("state_dir: ", path, " exists and is not a directory"));
    }
    return absl::OkStatus();
  }
  return ErrnoError(errno, absl::StrCat("state_dir: cannot create ", path));
}

// mkdir -p with mode 0750 for every directory it creates.
absl::Status MakeDirs(const std::string& path) {
  for (size_t pos = path.find('/', 1); pos != std::string::npos;
       pos = path.find('/', pos + 1)) {
    std::string prefix = path.substr(0, pos);
    struct stat st;
    if (stat(prefix.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) continue;
    RETURN_IF_ERROR(MakeDir(prefix));
  }
  return MakeDir(path);
}

}  // namespace

uint32_t Crc32c(absl::string_view data) {
  static const std::array<uint32_t, 256> kTable = MakeCrcTable();
  uint32_t crc = 0xFFFFFFFFu;
  for (char ch : data) {
    crc = kTable[(crc ^ static_cast<unsigned char>(ch)) & 0xFF] ^ (crc >> 8);
  }
  return crc ^ 0xFFFFFFFFu;
}

StateStore::StateStore(std::string dir, const Clock* clock, DirLock lock)
    : dir_(std::move(dir)), clock_(clock), lock_(std::move(lock)) {}

StateStore::~StateStore() {
  absl::MutexLock lock(&mu_);
  if (log_fd_ >= 0) close(log_fd_);
}

absl::StatusOr<std::unique_ptr<StateStore>> StateStore::Open(
    const std::string& dir, const Clock* clock) {
  if (dir.empty()) {
    return absl::InvalidArgumentError("state_dir: must not be empty");
  }
  std::string clean = dir;
  while (clean.size() > 1 && clean.back() == '/') clean.pop_back();
  RETURN_IF_ERROR(MakeDirs(clean));
  // Root ignores permission bits, but not a read-only mount; a probe file
  // catches both, at startup rather than at the first acknowledged write.
  std::string probe = absl::StrCat(clean, "/.write-probe", kTmpSuffix);
  int fd = open(probe.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
  if (fd < 0) {
    return ErrnoError(errno,
                      absl::StrCat("state_dir ", clean, " is not writable"));
  }
  close(fd);
  unlink(probe.c_str());
  ASSIGN_OR_RETURN(DirLock lock,
                   DirLock::Acquire(clean, "fabricdiag-collector"));
  RETURN_IF_ERROR(MakeDir(absl::StrCat(clean, "/", kLayoutsDir)));
  RETURN_IF_ERROR(FsyncDir(clean));
  return std::unique_ptr<StateStore>(
      new StateStore(std::move(clean), clock, std::move(lock)));
}

std::string StateStore::LayoutPath(absl::string_view job) const {
  return absl::StrCat(dir_, "/", kLayoutsDir, "/", job, kLayoutSuffix);
}

absl::Status StateStore::CountError(absl::Status status) {
  // Every write ends in one call with its final status (an earlier failure
  // returns at once), so the last call tells the present state.
  if (!status.ok()) ++write_errors_;
  last_write_status_ = status;
  return status;
}

absl::Status StateStore::WriteObjectLocked(const std::string& path,
                                           absl::string_view payload,
                                           absl::Time written) {
  std::string tmp = absl::StrCat(path, kTmpSuffix);
  std::string data = EncodeObject(payload, written);
  {
    Fd fd(open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640));
    if (fd.get() < 0) {
      return CountError(ErrnoError(errno, absl::StrCat("cannot create ", tmp)));
    }
    absl::Status status = WriteAll(fd.get(), data, tmp);
    if (status.ok() && fsync(fd.get()) != 0) {
      status = ErrnoError(errno, absl::StrCat("cannot fsync ", tmp));
    }
    if (!status.ok()) {
      unlink(tmp.c_str());
      return CountError(status);
    }
  }
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    absl::Status status =
        ErrnoError(errno, absl::StrCat("cannot rename ", tmp, " to ", path));
    unlink(tmp.c_str());
    return CountError(status);
  }
  return CountError(FsyncDir(DirOf(path)));
}

absl::Status StateStore::WriteLayout(const v1::Layout& layout,
                                     absl::Time applied) {
  if (!IsValidJobName(layout.job())) {
    return absl::InvalidArgumentError(
        absl::StrCat("job: ", QuoteForMessage(layout.job()),
                     " is not a valid job name (", kJobNamePattern, ")"));
  }
  std::string payload;
  if (!layout.SerializeToString(&payload)) {
    return absl::InternalError("cannot serialize layout");
  }
  absl::MutexLock lock(&mu_);
  return WriteObjectLocked(LayoutPath(layout.job()), payload, applied);
}

absl::Status StateStore::RemoveLayout(absl::string_view job) {
  if (!IsValidJobName(job)) {
    return absl::NotFoundError(
        absl::StrCat("no layout for job ", QuoteForMessage(job)));
  }
  absl::MutexLock lock(&mu_);
  std::string path = LayoutPath(job);
  if (unlink(path.c_str()) != 0) {
    if (errno == ENOENT) {
      return absl::NotFoundError(absl::StrCat("no layout for job \"", job,
                                              "\" (", path, " is absent)"));
    }
    return CountError(ErrnoError(errno, absl::StrCat("cannot remove ", path)));
  }
  return CountError(FsyncDir(DirOf(path)));
}

absl::StatusOr<std::vector<StoredLayout>> StateStore::ReadLayouts() {
  absl::MutexLock lock(&mu_);
  std::string dir = absl::StrCat(dir_, "/", kLayoutsDir);
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) {
    return ErrnoError(errno, absl::StrCat("cannot list ", dir));
  }
  std::vector<std::string> names;
  while (struct dirent* e = readdir(d)) names.emplace_back(e->d_name);
  closedir(d);
  std::sort(names.begin(), names.end());

  std::vector<StoredLayout> out;
  for (const std::string& name : names) {
    std::string path = absl::StrCat(dir, "/", name);
    if (absl::EndsWith(name, kTmpSuffix)) {
      // A write interrupted before its rename: the old version (if any) is
      // intact under the real name.
      unlink(path.c_str());
      continue;
    }
    absl::string_view job = name;
    if (!absl::ConsumeSuffix(&job, kLayoutSuffix)) continue;
    absl::StatusOr<std::string> data = ReadSmallFile(path);
    if (!data.ok() && data.status().code() != absl::StatusCode::kDataLoss) {
      problems_.push_back(std::string(data.status().message()));
      LogError(data.status().message());
      continue;
    }
    absl::string_view payload;
    StoredLayout stored;
    absl::Status status = data.status();
    if (status.ok()) status = DecodeObject(*data, &payload, &stored.applied);
    if (status.ok() && !stored.layout.ParseFromArray(
                           payload.data(), static_cast<int>(payload.size()))) {
      status = absl::DataLossError("not a valid v1.Layout message");
    }
    if (status.ok() && stored.layout.job() != job) {
      status = absl::DataLossError(
          absl::StrCat("holds job ", QuoteForMessage(stored.layout.job()),
                       ", not the job its name says"));
    }
    if (!status.ok()) {
      QuarantineLocked(path, status.message()).IgnoreError();
      continue;
    }
    stored.path = path;
    out.push_back(std::move(stored));
  }
  return out;
}

absl::Status StateStore::WriteTopology(const v1::Topology& topology,
                                       absl::Time applied) {
  std::string payload;
  if (!topology.SerializeToString(&payload)) {
    return absl::InternalError("cannot serialize topology");
  }
  absl::MutexLock lock(&mu_);
  return WriteObjectLocked(absl::StrCat(dir_, "/", kTopologyFile), payload,
                           applied);
}

absl::StatusOr<std::optional<StoredTopology>> StateStore::ReadTopology() {
  absl::MutexLock lock(&mu_);
  std::string path = absl::StrCat(dir_, "/", kTopologyFile);
  unlink(absl::StrCat(path, kTmpSuffix).c_str());
  absl::StatusOr<std::string> data = ReadSmallFile(path);
  if (!data.ok() && absl::IsNotFound(data.status())) return std::nullopt;
  if (!data.ok() && data.status().code() != absl::StatusCode::kDataLoss) {
    return data.status();
  }
  StoredTopology stored;
  absl::string_view payload;
  absl::Status status = data.status();
  if (status.ok()) status = DecodeObject(*data, &payload, &stored.applied);
  if (status.ok() && !stored.topology.ParseFromArray(
                         payload.data(), static_cast<int>(payload.size()))) {
    status = absl::DataLossError("not a valid v1.Topology message");
  }
  if (!status.ok()) {
    QuarantineLocked(path, status.message()).IgnoreError();
    return std::nullopt;
  }
  return stored;
}

absl::Status StateStore::QuarantineFile(const std::string& path,
                                        absl::string_view why) {
  absl::MutexLock lock(&mu_);
  return QuarantineLocked(path, why);
}

absl::Status StateStore::QuarantineLocked(const std::string& path,
                                          absl::string_view why) {
  std::string base =
      absl::StrCat(path, ".corrupt-", absl::ToUnixSeconds(clock_->Now()));
  std::string target = base;
  struct stat st;
  for (int n = 1; lstat(target.c_str(), &st) == 0; ++n) {
    target = absl::StrCat(base, ".", n);
  }
  absl::Status status;
  std::string problem;
  if (rename(path.c_str(), target.c_str()) != 0) {
    status = CountError(ErrnoError(
        errno, absl::StrCat("cannot move ", path, " aside to ", target)));
    problem = absl::StrCat("damaged state file ", path, ": ", why, "; ",
                           status.message());
  } else {
    status = CountError(FsyncDir(DirOf(path)));
    problem = absl::StrCat("damaged state file ", path, ": ", why,
                           "; moved aside to ", target);
  }
  LogError(problem);
  problems_.push_back(std::move(problem));
  return status;
}

absl::Status StateStore::OpenLogLocked() {
  if (log_fd_ >= 0) close(log_fd_);
  std::string path = absl::StrCat(dir_, "/", kFindingsLog);
  log_fd_ = open(path.c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
  if (log_fd_ < 0) {
    return CountError(ErrnoError(errno, absl::StrCat("cannot open ", path)));
  }
  struct stat st;
  if (fstat(log_fd_, &st) != 0) {
    return ErrnoError(errno, absl::StrCat("cannot stat ", path));
  }
  log_bytes_ = static_cast<uint64_t>(st.st_size);
  if (log_bytes_ == 0) {
    RETURN_IF_ERROR(
        CountError(WriteAll(log_fd_, absl::string_view(kLogMagic, 4), path)));
    log_bytes_ = 4;
    if (fsync(log_fd_) != 0) {
      return CountError(ErrnoError(errno, absl::StrCat("cannot fsync ", path)));
    }
    RETURN_IF_ERROR(CountError(FsyncDir(dir_)));
  }
  return absl::OkStatus();
}

absl::StatusOr<LoadedFindings> StateStore::ReadFindings() {
  absl::MutexLock lock(&mu_);
  std::string path = absl::StrCat(dir_, "/", kFindingsLog);
  unlink(absl::StrCat(path, kTmpSuffix).c_str());
  LoadedFindings loaded;
  absl::StatusOr<std::string> data = ReadSmallFile(path);
  if (!data.ok() && absl::IsNotFound(data.status())) {
    RETURN_IF_ERROR(OpenLogLocked());
    return loaded;
  }
  std::string damage;
  if (!data.ok()) {
    if (data.status().code() != absl::StatusCode::kDataLoss) {
      return data.status();
    }
    damage = std::string(data.status().message());
    data = std::string();
  } else if (!data->empty() && absl::string_view(*data).substr(0, 4) !=
                                   absl::string_view(kLogMagic, 4)) {
    damage = "not a fabricdiag findings log (bad header)";
  }

  std::map<uint64_t, StoredFinding> by_id;
  uint64_t next_id = 1;
  const absl::string_view log = *data;
  size_t pos = std::min<size_t>(4, log.size());
  size_t good_end = pos;
  // Damaged stretches are skipped, not fatal: the scan resumes at the next
  // intact record, so one flipped byte costs one record, not the rest of
  // the log. Nothing intact after a bad stretch at the end is what a crash
  // mid-append leaves (a torn record), unless the log was damaged before.
  uint64_t skipped_bytes = 0;
  uint64_t skipped_ranges = 0;
  size_t first_skipped = 0;
  while (pos < log.size()) {
    size_t size = IntactRecordAt(log, pos);
    if (size == 0) {
      size_t next = pos + 1;
      while (next < log.size() && IntactRecordAt(log, next) == 0) ++next;
      if (next == log.size() && damage.empty() && skipped_ranges == 0) {
        loaded.dropped_torn_record = true;
        break;
      }
      if (skipped_ranges++ == 0) first_skipped = pos;
      skipped_bytes += next - pos;
      pos = next;
      continue;
    }
    absl::string_view body =
        log.substr(pos + kRecordHeaderBytes, size - kRecordHeaderBytes);
    absl::string_view payload = body.substr(1);
    if (body[0] == kRecordFinding) {
      StoredFinding finding;
      std::optional<uint64_t> n;
      if (DecodeFinding(payload, &finding)) n = IdNumber(finding.finding.id());
      if (!n.has_value()) {
        // Intact but unreadable: written by something else. Skip it too.
        if (skipped_ranges++ == 0) first_skipped = pos;
        skipped_bytes += size;
        pos += size;
        continue;
      }
      next_id = std::max(next_id, *n + 1);
      by_id[*n] = std::move(finding);
    } else {
      next_id = std::max(next_id, GetU64(payload.data()));
    }
    pos += size;
    good_end = pos;
  }
  if (skipped_ranges > 0) {
    absl::StrAppend(&damage, damage.empty() ? "" : "; ", skipped_bytes,
                    " damaged bytes in ", skipped_ranges,
                    " stretch(es) skipped, the first at byte ", first_skipped);
  }
  loaded.next_id = next_id;
  for (auto& [n, finding] : by_id)
    loaded.findings.push_back(std::move(finding));

  if (!damage.empty()) {
    // Keep what was readable, move the damaged log aside for a human, and
    // start a fresh log holding the survivors.
    QuarantineLocked(path,
                     absl::StrCat(damage, "; kept the ", loaded.findings.size(),
                                  " findings of the intact records"))
        .IgnoreError();
    RETURN_IF_ERROR(RewriteFindingsLocked(loaded.findings, loaded.next_id));
    RETURN_IF_ERROR(OpenLogLocked());
    return loaded;
  }
  if (loaded.dropped_torn_record) {
    LogWarning(absl::StrCat(path, ": dropped a torn last record (",
                            data->size() - good_end,
                            " bytes; the collector stopped mid-write)"));
    if (truncate(path.c_str(), static_cast<off_t>(good_end)) != 0) {
      return CountError(
          ErrnoError(errno, absl::StrCat("cannot truncate ", path)));
    }
  }
  RETURN_IF_ERROR(OpenLogLocked());
  if (loaded.dropped_torn_record && fsync(log_fd_) != 0) {
    return CountError(ErrnoError(errno, absl::StrCat("cannot fsync ", path)));
  }
  return loaded;
}

absl::Status StateStore::AppendFindings(
    absl::Span<const StoredFinding> findings, bool sync) {
  std::string data;
  for (const StoredFinding& finding : findings) {
    data += EncodeFinding(finding);
  }
  absl::MutexLock lock(&mu_);
  std::string path = absl::StrCat(dir_, "/", kFindingsLog);
  if (log_fd_ < 0) {
    return absl::FailedPreconditionError(
        "findings log not open (ReadFindings first)");
  }
  absl::Status status = WriteAll(log_fd_, data, path);
  if (status.ok() && sync && fdatasync(log_fd_) != 0) {
    status = ErrnoError(errno, absl::StrCat("cannot fsync ", path));
  }
  if (!status.ok()) {
    // Do not leave half a record for the next append to follow: that would
    // read as damage in the middle of the log.
    if (ftruncate(log_fd_, static_cast<off_t>(log_bytes_)) != 0) {
      LogError(absl::StrCat("cannot cut ", path, " back after a failed write: ",
                            std::strerror(errno)));
    }
    return CountError(status);
  }
  log_bytes_ += data.size();
  return CountError(absl::OkStatus());
}

absl::Status StateStore::RewriteFindings(
    absl::Span<const StoredFinding> findings, uint64_t next_id) {
  absl::MutexLock lock(&mu_);
  RETURN_IF_ERROR(RewriteFindingsLocked(findings, next_id));
  return OpenLogLocked();
}

absl::Status StateStore::RewriteFindingsLocked(
    absl::Span<const StoredFinding> findings, uint64_t next_id) {
  std::string path = absl::StrCat(dir_, "/", kFindingsLog);
  std::string tmp = absl::StrCat(path, kTmpSuffix);
  std::string data(kLogMagic, 4);
  std::string id;
  PutU64(&id, next_id);
  data += EncodeRecord(kRecordNextId, id);
  for (const StoredFinding& finding : findings) {
    data += EncodeFinding(finding);
  }
  {
    Fd fd(open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640));
    if (fd.get() < 0) {
      return CountError(ErrnoError(errno, absl::StrCat("cannot create ", tmp)));
    }
    absl::Status status = WriteAll(fd.get(), data, tmp);
    if (status.ok() && fsync(fd.get()) != 0) {
      status = ErrnoError(errno, absl::StrCat("cannot fsync ", tmp));
    }
    if (!status.ok()) {
      unlink(tmp.c_str());
      return CountError(status);
    }
  }
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    absl::Status status =
        ErrnoError(errno, absl::StrCat("cannot rename ", tmp, " to ", path));
    unlink(tmp.c_str());
    return CountError(status);
  }
  return CountError(FsyncDir(dir_));
}

uint64_t StateStore::findings_log_bytes() const {
  absl::MutexLock lock(&mu_);
  return log_bytes_;
}

std::vector<std::string> StateStore::problems() const {
  absl::MutexLock lock(&mu_);
  return problems_;
}

uint64_t StateStore::write_errors() const {
  absl::MutexLock lock(&mu_);
  return write_errors_;
}

absl::Status StateStore::last_write_status() const {
  absl::MutexLock lock(&mu_);
  return last_write_status_;
}

}  // namespace fabricdiag::collector
