// The JSON behind the collector's live page, documented in docs/http-api.md
// so that scripts can use it too:
//   /api/v1/findings   open findings (most severe first), then resolved ones
//   /api/v1/fabric     every host port's rates by node x rail, with its ratio
//                      to the rail's median; each leaf's ECMP uplinks
//   /api/v1/jobs       the declared jobs
//   /api/v1/jobs/JOB   one job's groups of one dimension, their members'
//                      rates and ratio to the group median, the plan's
//                      predicted bytes per step beside them
//
// The functions are pure (inputs in, JSON out): the HTTP routes in
// collector/web/web_routes.h gather the inputs (the findings store, the layout
// registry, the latest analysis pass's FabricView) per request. Rates are
// the analysis window's means the analyzers saw, in base units per second;
// a signal a port does not report is null, never 0.
//
//   nlohmann::ordered_json j = FabricJson(view.get(), topology, active, now);
//   response.body = j.dump();
//
// Thread-safe.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "analysis/fabric_view.h"
#include "analysis/layout_model.h"
#include "analysis/traffic_model.h"
#include "collector/declared/layout_registry.h"
#include "collector/findings/findings_staleness.h"
#include "proto/collector.pb.h"
#include "proto/layout.pb.h"

namespace fabricdiag::collector {

// The version of the JSON layout; bumped only by incompatible changes.
inline constexpr int kWebApiVersion = 1;

// Groups /api/v1/jobs/JOB lists per request at most (page with offset).
inline constexpr uint32_t kMaxGroupsPerPage = 256;

// /api/v1/findings. `active` in any order (listed most severe first, then
// oldest first); `resolved` newest first as the store returns them. Each
// finding is the object of docs/findings.md plus "duration_seconds" (open
// for so long, or how long it was open). "staleness" says whether they may
// be out of date ({"stale": false, "age_seconds": 0} for a lone collector).
nlohmann::ordered_json FindingsJson(absl::Span<const v1::Finding> active,
                                    absl::Span<const v1::Finding> resolved,
                                    const FindingsStaleness& staleness,
                                    absl::Time now);

// Whose ports a view holds: the whole fabric's, or only those of the agents
// that stream to this collector (a collector of a cluster that shards its
// analysis: no collector holds the others' ports). /api/v1/fabric's
// "scope": "fabric" or "collector".
enum class FabricScope { kFabric, kCollector };

// /api/v1/fabric. `view` null (no analysis pass yet) gives empty nodes;
// `topology` null gives no switches. `active` outlines the ports its
// findings name.
nlohmann::ordered_json FabricJson(const analysis::FabricView* view,
                                  FabricScope scope,
                                  const v1::Topology* topology,
                                  absl::Span<const v1::Finding> active,
                                  absl::Time now);

// A time as the API writes it ("generated", "applied"): RFC 3339 in UTC,
// null for the epoch or the infinite past.
nlohmann::ordered_json TimeJson(absl::Time t);

// FabricJson(...).dump(), written faster: the node x rail grid ("values",
// 4 numbers per cell: 272,000 at 8,500 nodes x 8 rails) is printed
// straight to text instead of as a JSON value per cell. The same JSON
// (numbers may be spelt differently: 9.1e+09 for 9100000000.0).
std::string FabricJsonText(const analysis::FabricView* view, FabricScope scope,
                           const v1::Topology* topology,
                           absl::Span<const v1::Finding> active,
                           absl::Time now);

// /api/v1/jobs.
nlohmann::ordered_json JobsJson(const RegistrySnapshot& snapshot);

struct JobQuery {
  analysis::Dim dim = analysis::Dim::kTp;
  // One group by name ("dp:3"), or a page of groups from `offset`.
  std::string group;
  uint32_t offset = 0;
  uint32_t limit = 64;  // <= kMaxGroupsPerPage
};

// "dim=dp&offset=0&limit=64&group=dp:3" -> JobQuery; InvalidArgument naming
// the parameter at fault (an unknown dimension, a limit out of range, an
// unknown parameter).
absl::StatusOr<JobQuery> ParseJobQuery(absl::string_view query);

// /api/v1/jobs/JOB. `traffic` is the plan's prediction for the job (null:
// none); `scope` says whose ports `view` holds ("scope": "fabric" or
// "collector", as /api/v1/fabric): on a collector of a cluster that shards
// its analysis the members of other collectors' agents have no rates. NotFound
// for a group the job does not have.
absl::StatusOr<nlohmann::ordered_json> JobJson(
    const LayoutEntry& entry, const analysis::TrafficModel* traffic,
    const JobQuery& query, const analysis::FabricView* view, FabricScope scope,
    absl::Span<const v1::Finding> active, absl::Time now);

}  // namespace fabricdiag::collector
