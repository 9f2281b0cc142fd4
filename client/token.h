// Bearer tokens for the collector, read from the file a flag names:
// ReadTokenFile's rules (common/files.h: refused when others may read it,
// surrounding white space trimmed, visible ASCII only), every error an
// InvalidArgument naming the flag.
//
//   ASSIGN_OR_RETURN(std::string token, ReadIngestToken(path));
//   context.AddMetadata("authorization", absl::StrCat("Bearer ", token));
//
// Thread-safe.
#pragma once

#include <cstddef>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace fabricdiag::client {

// Shortest ingest token accepted: a shorter one is a truncated copy or a
// placeholder, not the collector's token.
inline constexpr size_t kMinIngestTokenLength = 16;

// The token of --ingest_token_file (agents and the gNMI bridge). The
// message of an error says where the collector's token comes from.
absl::StatusOr<std::string> ReadIngestToken(const std::string& path);

// The token of the CLI's `flag` ("token_file"): any non-empty token, the
// collector decides what it accepts.
absl::StatusOr<std::string> ReadApiToken(absl::string_view flag,
                                         const std::string& path);

}  // namespace fabricdiag::client
