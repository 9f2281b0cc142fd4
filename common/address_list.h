// Comma-separated lists of collector addresses, as the agent's and the CLI's
// --collector flags take them ("c0:9811,c1:9811"). Splitting and the rules
// every list obeys live here so that both binaries accept the same lists and
// word their errors the same way; what an entry may look like (HOST:PORT
// only, or gRPC target URIs too) is each binary's own check.
//
//   absl::StatusOr<std::vector<std::string>> list =
//       SplitAddressList("collector", "c0:9811, c1:9811");
//   // {"c0:9811", "c1:9811"}; InvalidArgument naming the flag and the
//   // entry for "c0:9811,,c1:9811" or "c0:9811,c0:9811".
//
// Pure functions; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace fabricdiag {

// Splits `value` at commas. Whitespace around an entry is dropped (so
// "a:1, b:2" reads naturally); an entry that is empty, holds whitespace or a
// control character inside, or repeats an earlier one is an InvalidArgument
// error whose message starts with "--`flag`=" and names the entry. An empty
// `value` is an error too: callers for which empty means "none" check that
// first.
absl::StatusOr<std::vector<std::string>> SplitAddressList(
    absl::string_view flag, absl::string_view value);

// Checks one "HOST:PORT" or "[v6]:PORT" entry: a non-empty host and a port
// in 1..65535 (0..65535 when `allow_port_zero`, for listening addresses).
// InvalidArgument "--`flag`=`value`: ..." otherwise.
absl::Status CheckHostPort(absl::string_view flag, absl::string_view value,
                           bool allow_port_zero);

}  // namespace fabricdiag
