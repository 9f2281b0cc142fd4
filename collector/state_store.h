// Durable collector state in --state_dir: job layouts, the fabric topology
// and the history of findings survive kill -9, a crash and a restart.
//
// Layout of the directory (created 0750 when missing):
//   LOCK               held (flock) while a collector uses the directory; its
//   pid layouts/<job>.pb   one file per job: an envelope + binary v1::Layout
//   topology.pb        the envelope + binary v1::Topology
//   findings.log       append-only log of finding versions (below)
//   *.corrupt-<unix seconds>[.<n>]  files found damaged at load, moved aside
//
// Why plain files and not an embedded database: there is none in the stack
// (Debian's -dev packages we build against have no LevelDB/RocksDB/SQLite
// binding in use), the write rate is tiny (a layout apply now and then, a few
// finding changes per analysis pass), and files stay inspectable with
// standard tools: `tail -c +21 layouts/job.pb | protoc --decode
// fabricdiag.v1.Layout layout.proto` prints a layout.
//
// Object files (layouts, topology) are replaced atomically: the new content
// is written to "<name>.tmp", fsync'ed, renamed over the old file and the
// directory is fsync'ed, so a crash leaves either the old or the new version,
// never a mix. An object file is
//   "FDS1" | u32le payload length | u32le CRC32C(bytes 12..end) |
//   i64le written unix nanos | payload
// The checksum catches damage a protobuf parse would accept (protobuf reads
// a truncated message happily when the cut falls between fields).
//
// findings.log is "FDL1" followed by records
//   u32le body length | u32le CRC32C(body) | body
// where body is a one-byte type and a payload: 'F' a finding version
// (u32le length of the source name | the analyzer (source) that owns it |
// the serialized v1::Finding, complete: the last record of an id wins on
// replay) or
// 'N' the next finding id as u64le (written first by a compaction, so that
// ids stay unique after old findings are dropped). A record cut short by a
// crash (a torn last record) is dropped and the file truncated to the last
// good record. Damage anywhere else costs only the damaged records: replay
// scans on to the next intact record (length, type and checksum check out),
// then moves the damaged log aside and rewrites every intact record's
// finding to a fresh log. The caller decides when
// to fsync an append (FindingsStore: on every open and resolve) and when to
// compact (RewriteFindings, atomic like an object file).
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
#include "common/clock.h"
#include "common/dir_lock.h"
#include "proto/collector.pb.h"
#include "proto/layout.pb.h"

namespace fabricdiag::collector {

// CRC32C (Castagnoli), as used by iSCSI and ext4 metadata. Exposed for tests.
uint32_t Crc32c(absl::string_view data);

// Largest object file or log record accepted at load (a 1,000,000-rank
// layout with explicit placement is ~40 MB).
inline constexpr uint64_t kMaxStateObjectBytes = 256ull << 20;

struct StoredLayout {
  v1::Layout layout;
  absl::Time applied;  // when it was written (the writer's clock)
  std::string path;
};

struct StoredTopology {
  v1::Topology topology;
  absl::Time applied;
};

// A finding and the analyzer that reports it (which must survive a restart:
// only that analyzer's passes resolve it).
struct StoredFinding {
  v1::Finding finding;
  std::string source;
};

struct LoadedFindings {
  // The latest version of every finding in the log, ascending id.
  std::vector<StoredFinding> findings;
  // Smallest id number never used ("f-000042" uses 42).
  uint64_t next_id = 1;
  bool dropped_torn_record = false;
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
  absl::Status WriteObjectLocked(const std::string& path,
                                 absl::string_view payload, absl::Time written)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status QuarantineLocked(const std::string& path, absl::string_view why)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status OpenLogLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status RewriteFindingsLocked(absl::Span<const StoredFinding> findings,
                                     uint64_t next_id)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status CountError(absl::Status status)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string dir_;
  const Clock* const clock_;
  const DirLock lock_;
  mutable absl::Mutex mu_;
  int log_fd_ ABSL_GUARDED_BY(mu_) = -1;
  uint64_t log_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<std::string> problems_ ABSL_GUARDED_BY(mu_);
  uint64_t write_errors_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Status last_write_status_ ABSL_GUARDED_BY(mu_);
};

}  // namespace fabricdiag::collector
