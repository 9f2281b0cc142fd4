// A ListFindingsRequest as the collector answers it, over gRPC
// (ListFindings) and HTTP (/api/v1/findings, whose query parameters are
// read into the same request): checked, turned into a FindingsFilter, and
// answered one page at a time. Embedded and clustered collectors run this
// same code over their findings store.
//
//   absl::StatusOr<v1::ListFindingsResponse> r =
//       AnswerListFindings(request, findings, *layouts.Snapshot());
//
// InvalidArgument names the request field at fault (an unknown kind lists
// the known kinds; an unknown job the jobs of the layouts and findings).
// Thread-safe.
#pragma once

#include "absl/status/statusor.h"
#include "collector/declared/layout_registry.h"
#include "collector/findings/findings_store.h"
#include "proto/collector.pb.h"

namespace fabricdiag::collector {

// The filter of a checked request. A window (since or until) lists
// resolved findings too, like `all`.
absl::StatusOr<FindingsFilter> FindingsFilterOf(
    const v1::ListFindingsRequest& request, const FindingsStore& findings,
    const RegistrySnapshot& layouts);

// The page the request asks for, with next_page_token set when more match
// (staleness left to the caller).
absl::StatusOr<v1::ListFindingsResponse> AnswerListFindings(
    const v1::ListFindingsRequest& request, const FindingsStore& findings,
    const RegistrySnapshot& layouts);

}  // namespace fabricdiag::collector
