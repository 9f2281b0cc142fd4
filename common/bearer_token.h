// Checking an `authorization: Bearer <token>` header (RFC 6750), for the
// write RPCs of the ops API and for agent ingest.
//
//   if (!BearerTokenMatches(header_value, token)) -> UNAUTHENTICATED
//
// The scheme name is case-insensitive (RFC 9110 11.1: "bearer" and
// "BEARER" are the same scheme); the token is compared in constant time,
// so the time taken does not reveal how much of it was right. Pure;
// thread-safe.
#pragma once

#include "absl/strings/string_view.h"

namespace fabricdiag {

bool BearerTokenMatches(absl::string_view header, absl::string_view token);

}  // namespace fabricdiag
