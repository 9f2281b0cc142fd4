// A NATS .creds file (decentralized JWT authentication: the user's JWT and
// its NKey seed, as `nsc generate creds` writes them), read and used to
// answer a server's login challenge in place of libnats' own reader.
//
// Why not libnats' own: a JWT login signs the server's nonce, and the
// libnats of Debian 12 (3.4.1) base64-encodes that signature with a
// function that stops at a zero byte (it takes the bytes for a C string),
// so a signature whose first byte is zero (1 in 256) goes out empty and
// the server refuses the login as it refuses a wrong file (nats.c 3.8.0
// fixed it). Twice in a row on one server and libnats gives the connection
// up for good. SignNonce() refuses to hand such a signature over: libnats
// then drops that connection without sending its CONNECT, not as a refused
// login, and connects again, to a new nonce.
//
//   ASSIGN_OR_RETURN(NatsCreds creds, ParseNatsCreds(text));
//   ASSIGN_OR_RETURN(std::string signature, SignNonce(creds.seed, nonce));
//
// Pure functions; thread-safe.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace fabricdiag::cluster {

// The two parts of a .creds file. The seed is a secret: wiped when the
// value ends.
struct NatsCreds {
  NatsCreds() = default;
  NatsCreds(NatsCreds&& other) noexcept;
  NatsCreds& operator=(NatsCreds&& other) noexcept;
  NatsCreds(const NatsCreds&) = delete;
  NatsCreds& operator=(const NatsCreds&) = delete;
  ~NatsCreds();

  std::string jwt;   // "eyJ0..."
  std::string seed;  // "SU...": a user's NKey seed
};

// The JWT and seed of a .creds file's text: each the one line between a
// header line and a footer line (lines of at least three dashes at both
// ends, "-----BEGIN NATS USER JWT-----" ... "------END NATS USER
// JWT------"; blank lines, spaces and CRs around them are ignored), the
// JWT's section first. InvalidArgument (naming no secret) when either is
// missing or the seed is not a user seed.
absl::StatusOr<NatsCreds> ParseNatsCreds(absl::string_view text);

// Overwrites `secret`'s bytes with zeros (not optimised away), then clears
// it.
void WipeSecret(std::string* secret);

// The Ed25519 signature (64 bytes) of `nonce` with the NKey `seed`, as a
// NATS login sends it base64-encoded. InvalidArgument when the seed is not
// one; Unavailable when the signature's first byte is zero, which this
// libnats would send empty (above): sign the next connection's nonce.
absl::StatusOr<std::string> SignNonce(const std::string& seed,
                                      const std::string& nonce);

}  // namespace fabricdiag::cluster
