#include "client/token.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/files.h"

namespace fabricdiag::client {

absl::StatusOr<std::string> ReadIngestToken(const std::string& path) {
  absl::StatusOr<std::string> token =
      ReadTokenFile("--ingest_token_file", path, kMinIngestTokenLength);
  if (token.ok()) return token;
  // The packages leave an empty token file until the admin copies the
  // collector's in: say so where they will look.
  return absl::InvalidArgumentError(
      absl::StrCat(token.status().message(),
                   "; the collector's token (the packaged collector "
                   "generates /etc/fabricdiag/ingest-token) belongs "
                   "there, or pass --ingest_token_file= (empty) for a "
                   "collector whose ingest is open"));
}

absl::StatusOr<std::string> ReadApiToken(absl::string_view flag,
                                         const std::string& path) {
  absl::StatusOr<std::string> token =
      ReadTokenFile(absl::StrCat("--", flag), path, 1);
  if (token.ok()) return token;
  return absl::InvalidArgumentError(token.status().message());
}

}  // namespace fabricdiag::client
