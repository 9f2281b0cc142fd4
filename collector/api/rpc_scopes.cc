#include "collector/api/rpc_scopes.h"

#include <utility>

namespace fabricdiag::collector {
namespace {

constexpr std::pair<absl::string_view, Scope> kRpcScopes[] = {
    // Reads.
    {"GetLayout", Scope::kRead},
    {"ListLayouts", Scope::kRead},
    {"GetTopology", Scope::kRead},
    {"ListFindings", Scope::kRead},
    {"WatchFindings", Scope::kRead},
    {"ListNodes", Scope::kRead},
    {"GetSeries", Scope::kRead},
    {"ListSilences", Scope::kRead},
    // Jobs declaring themselves.
    {"ApplyLayout", Scope::kDeclare},
    {"DeleteLayout", Scope::kDeclare},
    // What changes the fabric's picture for everyone.
    {"ApplyTopology", Scope::kAdmin},
    {"AdoptTopology", Scope::kAdmin},
    {"AckFinding", Scope::kAdmin},
    {"CreateSilence", Scope::kAdmin},
    {"ExpireSilence", Scope::kAdmin},
    {"ForgetNode", Scope::kAdmin},
};

}  // namespace

std::optional<Scope> RpcScope(absl::string_view method) {
  for (const auto& [name, scope] : kRpcScopes) {
    if (name == method) return scope;
  }
  return std::nullopt;
}

}  // namespace fabricdiag::collector
