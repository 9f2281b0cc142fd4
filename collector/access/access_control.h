// Who may do what, checked on every RPC of the ops API and every /api/
// route of the HTTP API: the tokens of --auth_token_file
// (collector/access/access_tokens.h), or nobody checked when the collector
// has no token file (open, as before scopes existed).
//
//   ASSIGN_OR_RETURN(std::shared_ptr<AccessControl> access,
//                    AccessControl::FromFile("--auth_token_file", path,
//                                            &clock));
//   absl::StatusOr<std::string> who =
//       access->Authorize(header_value, Scope::kAdmin);
//   // Unauthenticated: no or wrong token; PermissionDenied: the token
//   // lacks the scope (the message names it); else the token's name.
//
// The file is read again when it changes (its modification time, size or
// inode; looked at no more than once a second, on a call): a token added,
// removed or rotated applies without a restart. A file that no longer
// parses or reads leaves the tokens in force, logged once per change.
// Tokens are compared in constant time, and never logged.
//
// Thread-safe.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "collector/access/access_tokens.h"
#include "common/clock.h"

namespace fabricdiag::collector {

class AccessControl {
 public:
  // Open: every call is let in, as nobody (Authorize answers "").
  AccessControl() = default;
  // These tokens, never re-read (tests, and the file's loader).
  explicit AccessControl(std::vector<AccessToken> tokens);

  // The tokens of the file at `path` (refused when others may read it, as
  // every secret: common/files.h); InvalidArgument naming `flag` and the
  // line at fault. `clock` paces the re-reads and must outlive this.
  static absl::StatusOr<std::shared_ptr<AccessControl>> FromFile(
      absl::string_view flag, std::string path, const Clock* clock);

  // Whether no token is needed (no token file).
  bool open() const { return open_; }

  // `authorization` is the request's header value ("Bearer TOKEN", the
  // scheme case-insensitive); empty when it sent none. Returns the name of
  // the token, "" when open.
  absl::StatusOr<std::string> Authorize(absl::string_view authorization,
                                        Scope needed);

  // Since start: calls refused for a missing or wrong token, for a token
  // without the scope; re-reads of the file that failed.
  uint64_t unauthenticated() const { return unauthenticated_.load(); }
  uint64_t denied() const { return denied_.load(); }
  uint64_t reload_errors() const { return reload_errors_.load(); }

  // Those counts as Prometheus families (fabricdiag_api_refused_total,
  // fabricdiag_token_file_errors_total); nothing when open.
  void AppendMetrics(std::string* out) const;

 private:
  // What identifies a version of the file without reading it.
  struct FileStamp {
    ino_t inode = 0;
    off_t size = -1;
    int64_t mtime_nanos = -1;
    bool operator==(const FileStamp& o) const {
      return inode == o.inode && size == o.size && mtime_nanos == o.mtime_nanos;
    }
  };

  // Re-reads the file when it changed and a second has passed since the
  // last look.
  void MaybeReload() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  static FileStamp Stamp(const std::string& path);

  const bool open_ = true;
  const std::string flag_;
  const std::string path_;  // empty: never re-read
  const Clock* const clock_ = nullptr;
  absl::Mutex mu_;
  std::vector<AccessToken> tokens_ ABSL_GUARDED_BY(mu_);
  // When the file was last looked at (Clock::MonotonicNanos).
  int64_t last_look_nanos_ ABSL_GUARDED_BY(mu_) = 0;
  FileStamp stamp_ ABSL_GUARDED_BY(mu_);
  std::atomic<uint64_t> unauthenticated_{0};
  std::atomic<uint64_t> denied_{0};
  std::atomic<uint64_t> reload_errors_{0};

  AccessControl(std::string flag, std::string path, const Clock* clock,
                std::vector<AccessToken> tokens, FileStamp stamp);
};

}  // namespace fabricdiag::collector
