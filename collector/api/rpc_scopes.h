// The scope each RPC of the ops API (fabricdiag.v1.Collector) needs when
// the collector has a token file (docs/security.md#scopes): one explicit
// table, so that a new RPC without a scope is refused by every caller
// (and fails the table's test) instead of being open by omission.
//
//   std::optional<Scope> scope = RpcScope("ApplyLayout");  // kDeclare
//
// Pure; thread-safe.
#pragma once

#include <optional>

#include "absl/strings/string_view.h"
#include "collector/access/access_tokens.h"

namespace fabricdiag::collector {

// The scope of the Collector service's method `method` (its name in
// proto/collector.proto, "ListFindings"); nullopt for a name the table
// does not hold.
std::optional<Scope> RpcScope(absl::string_view method);

}  // namespace fabricdiag::collector
