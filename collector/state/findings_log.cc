#include "collector/state/findings_log.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <optional>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "collector/state/object_store.h"
#include "common/crc32c.h"
#include "common/little_endian.h"
#include "common/log.h"
#include "common/status_macros.h"

namespace fabricdiag::collector {
namespace {

constexpr char kLogMagic[4] = {'F', 'D', 'L', '1'};
constexpr size_t kRecordHeaderBytes = 8;  // length, crc
constexpr char kRecordFinding = 'F';
constexpr char kRecordTermFinding = 'T';
constexpr char kRecordNextId = 'N';
// Analyzer names ("pfc_storm"; empty for resolved findings) are short and
// printable; anything else marks garbage.
constexpr uint32_t kMaxSourceNameBytes = 64;

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
  if (stored.term != 0) PutU64(&payload, stored.term);
  PutU32(&payload, static_cast<uint32_t>(stored.source.size()));
  payload += stored.source;
  payload += stored.finding.SerializeAsString();
  return EncodeRecord(stored.term != 0 ? kRecordTermFinding : kRecordFinding,
                      payload);
}

// The payload of an 'F' record, or of a 'T' record when `with_term`.
bool DecodeFinding(absl::string_view payload, bool with_term,
                   StoredFinding* out) {
  if (with_term) {
    if (payload.size() < 8) return false;
    out->term = GetU64(payload.data());
    payload.remove_prefix(8);
  }
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
  } else if (body[0] == kRecordFinding || body[0] == kRecordTermFinding) {
    // The source name's length follows the type (and the term).
    const size_t at = body[0] == kRecordFinding ? 1 : 9;
    if (length < at + 4) return 0;
    const uint32_t source_len = GetU32(body.data() + at);
    if (source_len > kMaxSourceNameBytes || source_len > length - at - 4) {
      return 0;
    }
    for (char c : body.substr(at + 4, source_len)) {
      if (!absl::ascii_isgraph(c)) return 0;
    }
  } else {
    return 0;
  }
  if (Crc32c(body) != GetU32(data.data() + pos + 4)) return 0;
  return kRecordHeaderBytes + length;
}

}  // namespace

FindingsReplay ReplayFindingsLog(absl::string_view log) {
  FindingsReplay replay;
  if (!log.empty() && log.substr(0, 4) != absl::string_view(kLogMagic, 4)) {
    replay.damage = "not a fabricdiag findings log (bad header)";
  }
  std::map<uint64_t, StoredFinding> by_id;
  uint64_t next_id = 1;
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
      if (next == log.size() && replay.damage.empty() && skipped_ranges == 0) {
        replay.loaded.dropped_torn_record = true;
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
    if (body[0] != kRecordNextId) {
      StoredFinding finding;
      std::optional<uint64_t> n;
      if (DecodeFinding(payload, body[0] == kRecordTermFinding, &finding))
        n = IdNumber(finding.finding.id());
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
    absl::StrAppend(&replay.damage, replay.damage.empty() ? "" : "; ",
                    skipped_bytes, " damaged bytes in ", skipped_ranges,
                    " stretch(es) skipped, the first at byte ", first_skipped);
  }
  replay.loaded.next_id = next_id;
  for (auto& [n, finding] : by_id) {
    replay.loaded.findings.push_back(std::move(finding));
  }
  replay.good_end = good_end;
  return replay;
}

std::string EncodeFindingRecords(absl::Span<const StoredFinding> findings) {
  std::string data;
  for (const StoredFinding& finding : findings) {
    data += EncodeFinding(finding);
  }
  return data;
}

std::string EncodeFindingsLog(absl::Span<const StoredFinding> findings,
                              uint64_t next_id) {
  std::string data(kLogMagic, 4);
  std::string id;
  PutU64(&id, next_id);
  data += EncodeRecord(kRecordNextId, id);
  data += EncodeFindingRecords(findings);
  return data;
}

absl::Status FindingsLog::Open() {
  fd_ = UniqueFd(
      open(path_.c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0640));
  if (!fd_.valid()) {
    return ErrnoToStatus(errno, absl::StrCat("cannot open ", path_));
  }
  struct stat st;
  if (fstat(fd_.get(), &st) != 0) {
    return ErrnoToStatus(errno, absl::StrCat("cannot stat ", path_));
  }
  bytes_ = static_cast<uint64_t>(st.st_size);
  if (bytes_ == 0) {
    RETURN_IF_ERROR(
        WriteAll(fd_.get(), absl::string_view(kLogMagic, 4), path_));
    bytes_ = 4;
    if (fsync(fd_.get()) != 0) {
      return ErrnoToStatus(errno, absl::StrCat("cannot fsync ", path_));
    }
    RETURN_IF_ERROR(FsyncDir(DirOf(path_)));
  }
  return absl::OkStatus();
}

absl::Status FindingsLog::Truncate(uint64_t end) {
  if (truncate(path_.c_str(), static_cast<off_t>(end)) != 0) {
    return ErrnoToStatus(errno, absl::StrCat("cannot truncate ", path_));
  }
  RETURN_IF_ERROR(Open());
  if (fsync(fd_.get()) != 0) {
    return ErrnoToStatus(errno, absl::StrCat("cannot fsync ", path_));
  }
  return absl::OkStatus();
}

absl::Status FindingsLog::Append(absl::string_view records, bool sync) {
  if (!fd_.valid()) {
    return absl::FailedPreconditionError(
        absl::StrCat(path_, " is not open for appending"));
  }
  absl::Status status = WriteAll(fd_.get(), records, path_);
  if (status.ok() && sync && fdatasync(fd_.get()) != 0) {
    status = ErrnoToStatus(errno, absl::StrCat("cannot fsync ", path_));
  }
  if (!status.ok()) {
    // Do not leave half a record for the next append to follow: that would
    // read as damage in the middle of the log.
    if (ftruncate(fd_.get(), static_cast<off_t>(bytes_)) != 0) {
      LogError(
          absl::StrCat("cannot cut ", path_,
                       " back after a failed write: ", std::strerror(errno)));
    }
    return status;
  }
  bytes_ += records.size();
  return absl::OkStatus();
}

absl::Status FindingsLog::Rewrite(absl::Span<const StoredFinding> findings,
                                  uint64_t next_id) {
  RETURN_IF_ERROR(
      WriteFileAtomically(path_, EncodeFindingsLog(findings, next_id)));
  return Open();
}

}  // namespace fabricdiag::collector
