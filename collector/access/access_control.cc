#include "collector/access/access_control.h"

#include <sys/stat.h>

#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "common/bearer_token.h"
#include "common/files.h"
#include "common/log.h"
#include "common/prom_text.h"

namespace fabricdiag::collector {
namespace {

// A token file is a few lines; this bound only stops a wrong path.
constexpr size_t kMaxTokenFileBytes = 1 << 20;
// How often a call looks whether the file changed.
constexpr absl::Duration kLookEvery = absl::Seconds(1);

absl::StatusOr<std::vector<AccessToken>> ReadTokens(absl::string_view flag,
                                                    const std::string& path) {
  absl::StatusOr<std::string> text =
      ReadSecretFile(flag, path, kMaxTokenFileBytes);
  if (!text.ok()) return absl::InvalidArgumentError(text.status().message());
  absl::StatusOr<std::vector<AccessToken>> tokens = ParseAccessTokens(*text);
  if (!tokens.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, "=", path, ": ", tokens.status().message()));
  }
  return tokens;
}

}  // namespace

AccessControl::AccessControl(std::vector<AccessToken> tokens)
    : open_(false), tokens_(std::move(tokens)) {}

AccessControl::AccessControl(std::string flag, std::string path,
                             const Clock* clock,
                             std::vector<AccessToken> tokens, FileStamp stamp)
    : open_(false),
      flag_(std::move(flag)),
      path_(std::move(path)),
      clock_(clock),
      tokens_(std::move(tokens)),
      last_look_nanos_(clock->MonotonicNanos()),
      stamp_(stamp) {}

AccessControl::FileStamp AccessControl::Stamp(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return FileStamp{};
  return {st.st_ino, st.st_size,
          static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 +
              st.st_mtim.tv_nsec};
}

absl::StatusOr<std::shared_ptr<AccessControl>> AccessControl::FromFile(
    absl::string_view flag, std::string path, const Clock* clock) {
  // Stamped before the read: a change during it is read again next time.
  const FileStamp stamp = Stamp(path);
  absl::StatusOr<std::vector<AccessToken>> tokens = ReadTokens(flag, path);
  if (!tokens.ok()) return tokens.status();
  return std::shared_ptr<AccessControl>(new AccessControl(
      std::string(flag), std::move(path), clock, *std::move(tokens), stamp));
}

void AccessControl::MaybeReload() {
  if (path_.empty()) return;
  const int64_t now = clock_->MonotonicNanos();
  if (now - last_look_nanos_ < absl::ToInt64Nanoseconds(kLookEvery)) return;
  last_look_nanos_ = now;
  const FileStamp stamp = Stamp(path_);
  if (stamp == stamp_) return;
  stamp_ = stamp;
  absl::StatusOr<std::vector<AccessToken>> tokens = ReadTokens(flag_, path_);
  if (!tokens.ok()) {
    ++reload_errors_;
    LogWarning(absl::StrCat(tokens.status().message(),
                            "; the tokens read before stay in force"));
    return;
  }
  tokens_ = *std::move(tokens);
  LogInfo(absl::StrCat(flag_, "=", path_, ": read again, ", tokens_.size(),
                       " token(s)"));
}

absl::StatusOr<std::string> AccessControl::Authorize(
    absl::string_view authorization, Scope needed) {
  if (open_) return std::string();
  if (absl::StripAsciiWhitespace(authorization).empty()) {
    ++unauthenticated_;
    return absl::UnauthenticatedError("this collector requires a token");
  }
  absl::MutexLock lock(&mu_);
  MaybeReload();
  // Every token is compared, to the end: the time taken tells nothing of
  // which one matched or how much of a wrong one was right.
  const AccessToken* match = nullptr;
  for (const AccessToken& t : tokens_) {
    if (BearerTokenMatches(authorization, t.token)) match = &t;
  }
  if (match == nullptr) {
    ++unauthenticated_;
    return absl::UnauthenticatedError(
        "the token is not valid for this collector");
  }
  if (!match->Allows(needed)) {
    ++denied_;
    return absl::PermissionDeniedError(
        absl::StrCat("the token \"", match->name, "\" has the scope(s) ",
                     match->ScopeList(), "; this needs the ", ScopeName(needed),
                     " scope", needed == Scope::kAdmin ? "" : " (or admin)"));
  }
  return match->name;
}

void AccessControl::AppendMetrics(std::string* out) const {
  if (open_) return;
  PromWriter w(out);
  w.Family("fabricdiag_api_refused_total",
           "Calls to the ops API and /api/ refused: reason=\"unauthenticated\" "
           "(no token or an unknown one), reason=\"scope\" (a token without "
           "the scope the call needs).",
           PromType::kCounter);
  w.Sample({{"reason", "unauthenticated"}},
           static_cast<double>(unauthenticated()));
  w.Sample({{"reason", "scope"}}, static_cast<double>(denied()));
  w.Family("fabricdiag_token_file_errors_total",
           "Re-reads of --auth_token_file that failed (the tokens read before "
           "stay in force; the log says why).",
           PromType::kCounter);
  w.Sample(static_cast<double>(reload_errors()));
}

}  // namespace fabricdiag::collector
