// Reading small files whole, and secrets (tokens, private keys) safely.
//
//   ASSIGN_OR_RETURN(std::string text, ReadFileCapped(path, 16 << 20));
//   ASSIGN_OR_RETURN(std::string token,
//                    ReadSecretFile("--auth_token_file", path, 4096));
//
// ReadSecretFile refuses a file that its group or other users can read, as
// ssh refuses a private key anyone can read: whoever can read the token can
// write layouts, and whoever can read the key can pose as the service. The
// message says how to fix it. (systemd's LoadCredential= hands services a
// 0400 copy, see docs/deployment.md.)
//
// Errors name the file. ReadFileCapped and ReadSecretFile: NotFound,
// PermissionDenied, FailedPrecondition (a directory, a secret readable by
// others), InvalidArgument (larger than the cap). ReadTokenFile and
// ReadPemFile, which read what a flag names: InvalidArgument, naming the
// flag. Thread-safe.
#pragma once

#include <cstddef>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace fabricdiag {

absl::StatusOr<std::string> ReadFileCapped(const std::string& path,
                                           size_t max_bytes);

// A secret (key, token). `what` names the flag in messages ("--tls_key").
// Refused (FailedPrecondition, with the chmod that fixes it) when anyone
// but its owner may write it or read it, except that a file owned by root
// may be readable by its group (mode 0640: granted on purpose by root, as
// for a Kubernetes Secret volume with fsGroup).
absl::StatusOr<std::string> ReadSecretFile(absl::string_view what,
                                           const std::string& path,
                                           size_t max_bytes);

// A bearer token: a secret file's content without surrounding white space
// (the newline editors and `echo` leave), at least `min_length` characters
// of visible ASCII (RFC 6750 b64token characters are a subset of it;
// anything else cannot travel in an HTTP/2 header value).
absl::StatusOr<std::string> ReadTokenFile(absl::string_view what,
                                          const std::string& path,
                                          size_t min_length);

// A PEM file (certificate, CA bundle, or with `secret` a private key, read
// as ReadSecretFile reads): at most 1 MiB, holding a "-----BEGIN " block.
absl::StatusOr<std::string> ReadPemFile(absl::string_view what,
                                        const std::string& path, bool secret);

}  // namespace fabricdiag
