// /api/v1/topology: one of the three topologies (declared, discovered over
// LLDP, effective) as JSON, each link with where it comes from, for the
// page's topology table and for scripts (docs/http-api.md).
//
//   absl::StatusOr<nlohmann::ordered_json> j =
//       TopologyJson(*source.Current(), "effective");
//
// Pure; thread-safe.
#pragma once

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "collector/topology/topology_views.h"

namespace fabricdiag::collector {

// `view` is "declared", "discovered" or "effective" ("" = declared, as the
// gRPC API); InvalidArgument naming the parameter otherwise, NotFound for
// the declared one when none was applied.
absl::StatusOr<nlohmann::ordered_json> TopologyJson(const TopologyViews& views,
                                                    absl::string_view view);

}  // namespace fabricdiag::collector
