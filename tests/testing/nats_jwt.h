// NATS decentralized (JWT) authentication for tests, made the way `nsc`
// makes it, without nsc: an operator, its system account (the server's
// own), an account allowed JetStream, and a user of that account, each an
// Ed25519 NKey; the operator signs the account's JWT, the account signs the
// user's. A server trusts the operator and preloads the account
// (NatsJwtServerConfig); a client connects with the user's .creds file (the
// user JWT and its NKey seed).
//
//   absl::StatusOr<NatsJwtAuth> auth = MakeNatsJwtAuth("fabricdiag");
//   conf << NatsJwtServerConfig(*auth);
//   std::ofstream(creds_path) << auth->user_creds;   // for --nats_creds
#pragma once

#include <string>

#include "absl/status/statusor.h"

namespace fabricdiag::testing {

struct NatsJwtAuth {
  std::string operator_jwt;
  std::string system_account_public_key;  // the server's own account
  std::string system_account_jwt;
  std::string account_public_key;  // "A..."
  std::string account_jwt;
  std::string user_public_key;  // "U..."
  std::string user_creds;       // the text of a .creds file
};

// A fresh operator, account `account_name` (JetStream unlimited) and user.
absl::StatusOr<NatsJwtAuth> MakeNatsJwtAuth(const std::string& account_name);

// The lines of a nats-server configuration that trust `auth`'s operator and
// know its account (a memory resolver).
std::string NatsJwtServerConfig(const NatsJwtAuth& auth);

}  // namespace fabricdiag::testing
