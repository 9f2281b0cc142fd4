// The tokens of the collector's --auth_token_file: who may call the ops API
// (gRPC) and the HTTP API, and with which scopes (docs/security.md).
//
// One token a line, `NAME SCOPE[,SCOPE] TOKEN`, blank lines and lines
// starting with '#' ignored:
//
//   # name      scopes        token
//   grafana     read          3f1c...   (the page, dashboards, scripts)
//   slurm       declare       9a0e...   (the scheduler's prolog/epilog)
//   oncall      admin         77b2...   (topology, acks, silences, forget)
//
// A file that holds one word and nothing else is the format of earlier
// releases: that token with every scope, named "token".
//
//   ASSIGN_OR_RETURN(std::vector<AccessToken> tokens,
//                    ParseAccessTokens(text));
//
// Pure; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace fabricdiag::collector {

// What a token allows. `admin` includes the other two; `declare` does not
// include `read` (a scheduler's token declares jobs without reading the
// fabric's findings); a token that needs both lists both.
enum class Scope : uint8_t {
  kRead = 1,     // every read RPC, every GET of /api/
  kDeclare = 2,  // layouts: apply and delete, the HTTP job routes
  kAdmin = 4,    // topology, acks, silences, maintenance, forgetting nodes
};

// "read", "declare", "admin".
absl::string_view ScopeName(Scope scope);

// The shortest token accepted: a shorter one is a placeholder or a
// truncated copy (`openssl rand -hex 32` gives 64 characters).
inline constexpr size_t kMinAccessTokenLength = 16;

struct AccessToken {
  std::string name;    // the "who" of what it does (an ack, a silence)
  uint8_t scopes = 0;  // Scope bits as written (admin not expanded)
  std::string token;   // visible ASCII, at least kMinAccessTokenLength

  // Whether this token may do what `needed` allows (admin: everything).
  bool Allows(Scope needed) const;
  // Its scopes as written, comma-separated ("read,declare").
  std::string ScopeList() const;
};

// The tokens of a token file's text, in file order. InvalidArgument naming
// the line (never quoting it: a line holds a secret) for a line that is not
// NAME SCOPES TOKEN, a name that is not [A-Za-z0-9._@-]{1,64}, an unknown
// scope, a token shorter than kMinAccessTokenLength or with a character
// that is not visible ASCII, a name or a token given twice, or a file with
// no token at all.
absl::StatusOr<std::vector<AccessToken>> ParseAccessTokens(
    absl::string_view text);

}  // namespace fabricdiag::collector
