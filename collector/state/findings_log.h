// findings.log, the append-only history of finding versions in
// --state_dir (see collector/state/state_store.h for the directory). The file
// is "FDL1" followed by records
//   u32le body length | u32le CRC32C(body) | body
// where body is a one-byte type and a payload: 'F' a finding version
// (u32le length of the source name | the analyzer (source) that owns it |
// the serialized v1::Finding, complete: the last record of an id wins on
// replay), 'T' a finding version with the term of the analysis leader that
// wrote it (u64le term, then what 'F' holds; written only for a term other
// than 0, so a log without terms keeps its bytes and reads as term 0) or 'N'
// the next finding id as u64le (written first by a compaction, so that ids
// stay unique after old findings are dropped).
//
// Replay never fails on bad bytes. A record cut short by a crash (a torn
// last record) is reported so the caller can cut the file back to the last
// good record. Damage anywhere else costs only the damaged records: the
// scan resumes at the next intact record (length, type and checksum check
// out) and reports the damage, and the caller moves the log aside and
// rewrites the survivors to a fresh log.
//
//   FindingsReplay replay = ReplayFindingsLog(bytes);
//   FindingsLog log(dir + "/findings.log");
//   RETURN_IF_ERROR(log.Open());
//   RETURN_IF_ERROR(log.Append(EncodeFindingRecords(changed), /*sync=*/true));
//
// The byte format is what existing state directories hold: it must not
// change. FindingsLog is thread-compatible (StateStore serializes it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "common/posix_file.h"
#include "proto/collector.pb.h"

namespace fabricdiag::collector {

// A finding and the analyzer that reports it (which must survive a restart:
// only that analyzer's passes resolve it).
struct StoredFinding {
  v1::Finding finding;
  std::string source;
  // The analysis lease's term of the collector that wrote this version to
  // a cluster's shared findings (cluster/jetstream_findings.h); 0 when none
  // did (embedded, or written before versions carried a term).
  uint64_t term = 0;
};

struct LoadedFindings {
  // The latest version of every finding in the log, ascending id.
  std::vector<StoredFinding> findings;
  // Smallest id number never used ("f-000042" uses 42).
  uint64_t next_id = 1;
  bool dropped_torn_record = false;
};

struct FindingsReplay {
  LoadedFindings loaded;
  // Why the log must be moved aside and rewritten (a bad header, damaged
  // stretches with where the first one starts); empty when it is sound.
  std::string damage;
  // The end of the last intact record: where a torn tail is cut off.
  size_t good_end = 0;
};

// Replays the bytes of a findings log (empty: no findings).
FindingsReplay ReplayFindingsLog(absl::string_view log);

// One 'F' record per finding, ready to append.
std::string EncodeFindingRecords(absl::Span<const StoredFinding> findings);

// A whole compacted log: the header, an 'N' record holding `next_id`, and
// one record per finding.
std::string EncodeFindingsLog(absl::Span<const StoredFinding> findings,
                              uint64_t next_id);

// The open log file. Errors name the file and carry the errno's code.
class FindingsLog {
 public:
  explicit FindingsLog(std::string path) : path_(std::move(path)) {}

  const std::string& path() const { return path_; }
  bool is_open() const { return fd_.valid(); }
  // Current size of the file in bytes.
  uint64_t bytes() const { return bytes_; }

  // (Re)opens the file for appending, creating it with a durable header
  // when it is missing or empty.
  absl::Status Open();
  // Cuts the file back to `end` (a torn tail), reopens and fsyncs it.
  absl::Status Truncate(uint64_t end);
  // Appends encoded records (EncodeFindingRecords) in one write; fdatasyncs
  // when `sync`. On failure the file is cut back to its previous end, so
  // that no half record precedes the next append. FailedPrecondition when
  // not open.
  absl::Status Append(absl::string_view records, bool sync);
  // The compaction: atomically and durably replaces the file with
  // EncodeFindingsLog(findings, next_id), then reopens it.
  absl::Status Rewrite(absl::Span<const StoredFinding> findings,
                       uint64_t next_id);

 private:
  const std::string path_;
  UniqueFd fd_;
  uint64_t bytes_ = 0;
};

}  // namespace fabricdiag::collector
