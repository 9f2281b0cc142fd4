// The text of a findings query, as the CLI's flags and the HTTP API's query
// parameters spell it, and its checks that need nothing but the wire types:
// times ("2h", "30m", "7d" ago, or RFC 3339), severities, finding kinds and
// page tokens. The collector checks the jobs against what it knows
// (collector/findings/findings_request.h).
//
//   absl::StatusOr<absl::Time> since = ParseQueryTime("since", "2h", now);
//   RETURN_IF_ERROR(CheckFindingKind("kind", "pfc_storm"));
//
// Errors are InvalidArgument whose message starts with the field's name
// ("since: ..."), so that the CLI exits 2 and the HTTP API answers 400
// naming it. Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "proto/collector.pb.h"

namespace fabricdiag::collector {

// A duration as operators write one: absl's ("2h", "30m", "1h30m", "90s")
// or a whole number of days ("30d"). Negative or zero durations are refused.
absl::StatusOr<absl::Duration> ParseQueryDuration(absl::string_view field,
                                                  absl::string_view text);

// A point in time: a duration before `now` ("2h": two hours ago) or an RFC
// 3339 time ("2026-11-29T10:00:00Z", "2026-11-29T12:00:00+02:00").
absl::StatusOr<absl::Time> ParseQueryTime(absl::string_view field,
                                          absl::string_view text,
                                          absl::Time now);

// "info", "warning", "critical".
absl::StatusOr<v1::Severity> ParseSeverity(absl::string_view field,
                                           absl::string_view text);

// OK for "" and for a kind of analysis/finding.h's kKnownFindingKinds;
// otherwise the message lists the known kinds.
absl::Status CheckFindingKind(absl::string_view field, absl::string_view kind);

// InvalidArgument: `job` is none of `known` (listed in the message, sorted,
// or "none" when empty).
absl::Status UnknownJobError(absl::string_view field, absl::string_view job,
                             std::vector<std::string> known);

// A page token: the findings after a page are those with a lower id number
// than its last one. Opaque to clients; "" = the first page (returns 0).
std::string FindingsPageToken(uint64_t last_id_number);
absl::StatusOr<uint64_t> ParseFindingsPageToken(absl::string_view field,
                                                absl::string_view token);

// Every check of a ListFindingsRequest that needs no collector state: the
// kind, the severity, since <= until, the page token. The message names the
// request's field.
absl::Status CheckListFindingsRequest(const v1::ListFindingsRequest& request);

}  // namespace fabricdiag::collector
