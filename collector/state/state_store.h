// Durable collector state in --state_dir: job layouts, the fabric topology
// and the history of findings survive kill -9, a crash and a restart.
//
// Layout of the directory (created 0750 when missing):
//   LOCK               held (flock) while a collector uses the directory;
//                      holds its pid
//   layouts/<job>.pb   one file per job: an envelope + binary v1::Layout
//   topology.pb        the envelope + binary v1::Topology
//   findings.log       append-only log of finding versions (below)
//   straggler_baselines.pb  the envelope + every NIC's straggler_nic
//                      baseline (StragglerBaselines::Serialize), rewritten
//                      now and then by the analysis
//                      (collector/runner/rate_pass.h)
//   straggler_baselines.<shard>.pb  the same, of one analysis shard's jobs
//                      ("jobs.17"), when the analysis is sharded
//                      (--analysis_shards)
//   marks.pb           the envelope + the operators' acks, silences and
//                      forgotten nodes (collector/findings/silences.h)
//   *.corrupt-<unix seconds>[.<n>]  files found damaged at load, moved aside
//
// Why plain files and not an embedded database: there is none in the stack
// (Debian's -dev packages we build against have no LevelDB/RocksDB/SQLite
// binding in use), the write rate is tiny (a layout apply now and then, a few
// finding changes per analysis pass), and files stay inspectable with
// standard tools: `tail -c +21 layouts/job.pb | protoc --decode
// fabricdiag.v1.Layout layout.proto` prints a layout.
//
// The formats live with their code: object files (layouts, topology) in
// collector/state/object_store.h, replaced atomically and durably; findings.log
// in collector/state/findings_log.h, where a torn last record is cut off and
// damage elsewhere costs only the damaged records (the damaged log is moved
// aside and the intact records' findings rewritten to a fresh log). The
// caller decides when to fsync an append (FindingsStore: on every open and
// resolve) and when to compact (RewriteFindings, atomic like an object
// file). This class ties them to one locked directory and reports damage.
//
// Nothing here ever crashes on bad input: every damaged file is reported in
// problems() with its path and where it was moved.
//
// Usage:
//   ASSIGN_OR_RETURN(std::unique_ptr<StateStore> store,
//                    StateStore::Open("/var/lib/fabricdiag", &clock));
//   RETURN_IF_ERROR(store->WriteLayout(layout, clock.Now()));
//   ASSIGN_OR_RETURN(std::vector<StoredLayout> layouts, store->ReadLayouts());
//
// Thread-safe: every method may be called from any thread (one internal
// mutex; writes are rare and small).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "collector/state/findings_log.h"
#include "collector/state/object_store.h"
#include "common/clock.h"
#include "common/crc32c.h"  // the state files' checksum, for tests
#include "common/dir_lock.h"
#include "proto/collector.pb.h"
#include "proto/layout.pb.h"

namespace fabricdiag::collector {

struct StoredLayout {
  v1::Layout layout;
  absl::Time applied;  // when it was written (the writer's clock)
  std::string path;
};

struct StoredTopology {
  v1::Topology topology;
  absl::Time applied;
};

class StateStore {
 public:
  // Creates `dir` (and layouts/) with mode 0750 when missing, checks that
  // it is writable and locks it (see common/dir_lock.h) until the store is
  // destroyed. Errors name the directory: PermissionDenied when it is not
  // writable, FailedPrecondition when it is not a directory or another
  // process holds it.
  static absl::StatusOr<std::unique_ptr<StateStore>> Open(
      const std::string& dir, const Clock* clock);

  StateStore(const StateStore&) = delete;
  StateStore& operator=(const StateStore&) = delete;
  ~StateStore();

  const std::string& dir() const { return dir_; }

  // Durably replaces layouts/<job>.pb; returns once on disk.
  // InvalidArgument for an invalid job name.
  absl::Status WriteLayout(const v1::Layout& layout, absl::Time applied);
  // Durably removes layouts/<job>.pb; NotFound when there is none.
  absl::Status RemoveLayout(absl::string_view job);
  // Every readable layout, ascending job. Damaged files (bad envelope,
  // checksum, protobuf, or a job that does not match the file name) are
  // moved aside and reported in problems(); leftover "*.tmp" files of an
  // interrupted write are removed. Errors only when layouts/ is unreadable.
  absl::StatusOr<std::vector<StoredLayout>> ReadLayouts();

  absl::Status WriteTopology(const v1::Topology& topology, absl::Time applied);
  // nullopt when no topology was ever written (or it was damaged: moved
  // aside and reported).
  absl::StatusOr<std::optional<StoredTopology>> ReadTopology();

  // Durably and atomically replaces the baselines file of `shard` with
  // `payload`: straggler_baselines.pb when `shard` is empty, else
  // straggler_baselines.<shard>.pb. InvalidArgument for a shard name that
  // is not a valid job name (common/names.h: the same safe alphabet).
  absl::Status WriteBaselines(absl::string_view payload, absl::Time written,
                              absl::string_view shard = {});
  // The baselines file of `shard`; nullopt when there is none (or it was
  // damaged: moved aside and reported). Its payload is the caller's to
  // check (a payload it rejects goes to QuarantineFile(baselines_path())).
  absl::StatusOr<std::optional<ObjectFile>> ReadBaselines(
      absl::string_view shard = {});
  std::string baselines_path(absl::string_view shard = {}) const;

  // Durably and atomically replaces marks.pb with `payload`; on failure
  // (a full disk) the file stays as it was. Read with ReadObjectFile.
  absl::Status WriteMarks(absl::string_view payload, absl::Time written);
  std::string marks_path() const;

  // Moves a damaged file aside to "<path>.corrupt-<unix seconds>" and records
  // `why` in problems(). Used by callers whose own validation rejects a file
  // that parsed (a layout that no longer builds).
  absl::Status QuarantineFile(const std::string& path, absl::string_view why);

  // Replays findings.log (creating it when missing) and opens it for
  // appending. Call once, before AppendFindings.
  absl::StatusOr<LoadedFindings> ReadFindings();
  // Appends one record per finding (in one write); fsyncs when `sync`.
  // On failure the log is cut back to its previous end.
  absl::Status AppendFindings(absl::Span<const StoredFinding> findings,
                              bool sync);
  // Atomically replaces the log with exactly `findings` (after an 'N' record
  // holding `next_id`); the compaction.
  absl::Status RewriteFindings(absl::Span<const StoredFinding> findings,
                               uint64_t next_id);
  // Current size of findings.log in bytes.
  uint64_t findings_log_bytes() const;

  // Human-readable reports of damaged files found and moved aside.
  std::vector<std::string> problems() const;
  // Failed writes (object files or log appends) since Open.
  uint64_t write_errors() const;
  // The outcome of the latest write: OK until a write fails, then that
  // write's error until a later write succeeds. /healthz reports it, so a
  // disk that was full and has room again reads healthy after one write.
  absl::Status last_write_status() const;

 private:
  StateStore(std::string dir, const Clock* clock, DirLock lock);

  std::string LayoutPath(absl::string_view job) const;
  absl::Status QuarantineLocked(const std::string& path, absl::string_view why)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Records the outcome of a write (success included) in write_errors()
  // and last_write_status().
  absl::Status CountError(absl::Status status)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Records only a failure: for steps (reopening the log) that are not
  // writes of their own.
  absl::Status CountFailure(absl::Status status)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string dir_;
  const Clock* const clock_;
  const DirLock lock_;
  mutable absl::Mutex mu_;
  FindingsLog log_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> problems_ ABSL_GUARDED_BY(mu_);
  uint64_t write_errors_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Status last_write_status_ ABSL_GUARDED_BY(mu_);
};

}  // namespace fabricdiag::collector
