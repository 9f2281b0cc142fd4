#include "collector/state/state_store.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/log.h"
#include "common/names.h"
#include "common/posix_file.h"
#include "common/status_macros.h"

namespace fabricdiag::collector {
namespace {

constexpr char kLayoutsDir[] = "layouts";
constexpr char kTopologyFile[] = "topology.pb";
constexpr char kBaselinesFile[] = "straggler_baselines.pb";
// Followed by the shard's name and ".pb".
constexpr char kShardBaselinesPrefix[] = "straggler_baselines.";
constexpr char kMarksFile[] = "marks.pb";
constexpr char kFindingsLog[] = "findings.log";
constexpr char kLayoutSuffix[] = ".pb";
// Where WriteFileAtomically stages a file (common/posix_file.h): what a
// crash mid-write leaves behind, removed at load.
constexpr char kTmpSuffix[] = ".tmp";
constexpr mode_t kDirMode = 0750;

// Names the flag in errors about the directory itself.
absl::Status StateDirError(const absl::Status& status) {
  if (status.ok()) return status;
  return absl::Status(status.code(),
                      absl::StrCat("state_dir: ", status.message()));
}

// A shard's name goes into a file name: empty (the unsharded file) or the
// alphabet of a job's name.
absl::Status CheckShardName(absl::string_view shard) {
  if (shard.empty() || IsValidJobName(shard)) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("baselines: analysis shard name ", QuoteForMessage(shard),
                   " does not match ", kJobNamePattern));
}

}  // namespace

StateStore::StateStore(std::string dir, const Clock* clock, DirLock lock)
    : dir_(std::move(dir)),
      clock_(clock),
      lock_(std::move(lock)),
      log_(absl::StrCat(dir_, "/", kFindingsLog)) {}

StateStore::~StateStore() = default;

absl::StatusOr<std::unique_ptr<StateStore>> StateStore::Open(
    const std::string& dir, const Clock* clock) {
  if (dir.empty()) {
    return absl::InvalidArgumentError("state_dir: must not be empty");
  }
  std::string clean = dir;
  while (clean.size() > 1 && clean.back() == '/') clean.pop_back();
  RETURN_IF_ERROR(StateDirError(MakeDirs(clean, kDirMode)));
  // Root ignores permission bits, but not a read-only mount; a probe file
  // catches both, at startup rather than at the first acknowledged write.
  std::string probe = absl::StrCat(clean, "/.write-probe", kTmpSuffix);
  UniqueFd fd(
      open(probe.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640));
  if (!fd.valid()) {
    return ErrnoToStatus(errno,
                         absl::StrCat("state_dir ", clean, " is not writable"));
  }
  fd.Close(probe).IgnoreError();  // nothing was written
  unlink(probe.c_str());
  ASSIGN_OR_RETURN(DirLock lock,
                   DirLock::Acquire(clean, "fabricdiag-collector"));
  RETURN_IF_ERROR(
      StateDirError(MakeDirs(absl::StrCat(clean, "/", kLayoutsDir), kDirMode)));
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

absl::Status StateStore::CountFailure(absl::Status status) {
  return status.ok() ? status : CountError(std::move(status));
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
  return CountError(
      WriteObjectFile(LayoutPath(layout.job()), payload, applied));
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
    return CountError(
        ErrnoToStatus(errno, absl::StrCat("cannot remove ", path)));
  }
  return CountError(FsyncDir(DirOf(path)));
}

absl::StatusOr<std::vector<StoredLayout>> StateStore::ReadLayouts() {
  absl::MutexLock lock(&mu_);
  std::string dir = absl::StrCat(dir_, "/", kLayoutsDir);
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) {
    return ErrnoToStatus(errno, absl::StrCat("cannot list ", dir));
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
    absl::StatusOr<ObjectFile> file = ReadObjectFile(path);
    if (!file.ok() && !absl::IsDataLoss(file.status())) {
      problems_.push_back(std::string(file.status().message()));
      LogError(file.status().message());
      continue;
    }
    StoredLayout stored;
    absl::Status status = file.status();
    if (status.ok() && !stored.layout.ParseFromString(file->payload)) {
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
    stored.applied = file->written;
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
  return CountError(WriteObjectFile(absl::StrCat(dir_, "/", kTopologyFile),
                                    payload, applied));
}

absl::StatusOr<std::optional<StoredTopology>> StateStore::ReadTopology() {
  absl::MutexLock lock(&mu_);
  std::string path = absl::StrCat(dir_, "/", kTopologyFile);
  unlink(absl::StrCat(path, kTmpSuffix).c_str());
  absl::StatusOr<ObjectFile> file = ReadObjectFile(path);
  if (absl::IsNotFound(file.status())) return std::nullopt;
  if (!file.ok() && !absl::IsDataLoss(file.status())) return file.status();
  StoredTopology stored;
  absl::Status status = file.status();
  if (status.ok() && !stored.topology.ParseFromString(file->payload)) {
    status = absl::DataLossError("not a valid v1.Topology message");
  }
  if (!status.ok()) {
    QuarantineLocked(path, status.message()).IgnoreError();
    return std::nullopt;
  }
  stored.applied = file->written;
  return stored;
}

std::string StateStore::baselines_path(absl::string_view shard) const {
  if (shard.empty()) return absl::StrCat(dir_, "/", kBaselinesFile);
  return absl::StrCat(dir_, "/", kShardBaselinesPrefix, shard, ".pb");
}

absl::Status StateStore::WriteBaselines(absl::string_view payload,
                                        absl::Time written,
                                        absl::string_view shard) {
  RETURN_IF_ERROR(CheckShardName(shard));
  absl::MutexLock lock(&mu_);
  return CountError(WriteObjectFile(baselines_path(shard), payload, written));
}

std::string StateStore::marks_path() const {
  return absl::StrCat(dir_, "/", kMarksFile);
}

absl::Status StateStore::WriteMarks(absl::string_view payload,
                                    absl::Time written) {
  absl::MutexLock lock(&mu_);
  return CountError(WriteObjectFile(marks_path(), payload, written));
}

absl::StatusOr<std::optional<ObjectFile>> StateStore::ReadBaselines(
    absl::string_view shard) {
  RETURN_IF_ERROR(CheckShardName(shard));
  absl::MutexLock lock(&mu_);
  const std::string path = baselines_path(shard);
  unlink(absl::StrCat(path, kTmpSuffix).c_str());
  absl::StatusOr<ObjectFile> file = ReadObjectFile(path);
  if (absl::IsNotFound(file.status())) return std::nullopt;
  if (absl::IsDataLoss(file.status())) {
    QuarantineLocked(path, file.status().message()).IgnoreError();
    return std::nullopt;
  }
  if (!file.ok()) return file.status();
  return *std::move(file);
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
    status = CountError(ErrnoToStatus(
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

absl::StatusOr<LoadedFindings> StateStore::ReadFindings() {
  absl::MutexLock lock(&mu_);
  const std::string& path = log_.path();
  unlink(absl::StrCat(path, kTmpSuffix).c_str());
  absl::StatusOr<std::string> data = ReadStateFile(path);
  if (absl::IsNotFound(data.status())) {
    RETURN_IF_ERROR(CountFailure(log_.Open()));
    return LoadedFindings();
  }
  if (!data.ok() && !absl::IsDataLoss(data.status())) return data.status();
  FindingsReplay replay = ReplayFindingsLog(data.ok() ? absl::string_view(*data)
                                                      : absl::string_view());
  if (!data.ok()) replay.damage = std::string(data.status().message());
  LoadedFindings& loaded = replay.loaded;

  if (!replay.damage.empty()) {
    // Keep what was readable, move the damaged log aside for a human, and
    // start a fresh log holding the survivors.
    QuarantineLocked(
        path, absl::StrCat(replay.damage, "; kept the ", loaded.findings.size(),
                           " findings of the intact records"))
        .IgnoreError();
    RETURN_IF_ERROR(CountError(log_.Rewrite(loaded.findings, loaded.next_id)));
    return std::move(loaded);
  }
  if (loaded.dropped_torn_record) {
    LogWarning(absl::StrCat(path, ": dropped a torn last record (",
                            data->size() - replay.good_end,
                            " bytes; the collector stopped mid-write)"));
    RETURN_IF_ERROR(CountFailure(log_.Truncate(replay.good_end)));
    return std::move(loaded);
  }
  RETURN_IF_ERROR(CountFailure(log_.Open()));
  return std::move(loaded);
}

absl::Status StateStore::AppendFindings(
    absl::Span<const StoredFinding> findings, bool sync) {
  const std::string records = EncodeFindingRecords(findings);
  absl::MutexLock lock(&mu_);
  if (!log_.is_open()) {
    return absl::FailedPreconditionError(
        "findings log not open (ReadFindings first)");
  }
  return CountError(log_.Append(records, sync));
}

absl::Status StateStore::RewriteFindings(
    absl::Span<const StoredFinding> findings, uint64_t next_id) {
  absl::MutexLock lock(&mu_);
  return CountError(log_.Rewrite(findings, next_id));
}

uint64_t StateStore::findings_log_bytes() const {
  absl::MutexLock lock(&mu_);
  return log_.bytes();
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
