// Finding proto -> the JSON object of docs/findings.md ("The finding object"),
// and the names and time formats every view of a finding shares: the CLI's
// tables and --json, the collector's metric labels and its HTTP API.
//
// The JSON form is a public contract (`fabricdiag findings --json`,
// /api/v1/findings, scripts, the demo), so field names, order and value
// spellings are fixed here in one place:
//
//   nlohmann::ordered_json j = FindingToJson(finding);
//   std::cout << j.dump() << "\n";
//   // {"id":"f-000123","kind":"pfc_storm","severity":"critical",...}
//
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "proto/collector.pb.h"

namespace fabricdiag::collector {

// "info", "warning", "critical" (analysis/finding_wire.h's table); "unknown"
// for SEVERITY_UNSPECIFIED or a value this build does not know (a newer
// collector), never a number.
absl::string_view SeverityName(v1::Severity severity);
// "active", "resolved"; "unknown" otherwise.
absl::string_view StateName(v1::FindingState state);
// "SNAPSHOT", "OPENED", "UPDATED", "RESOLVED"; "UNKNOWN" otherwise.
absl::string_view EventKindName(v1::FindingEvent::Kind kind);

// RFC 3339 in UTC with second precision: "2026-11-22T03:00:00Z". Sub-second
// parts are truncated towards the past so that a time never prints later
// than it happened.
std::string FormatRfc3339(int64_t unix_nanos);

// A short age for tables: "42s", "5m", "3h", "2d". Negative ages (clock skew
// between collector and this host) print as "0s".
std::string FormatAge(absl::Duration age);

// The object of docs/findings.md, keys in its order: id, kind, severity, state,
// job, node, nodes, device, group, summary, evidence, first_seen, last_seen,
// and resolved_at when the state is resolved. `evidence` merges the numeric
// evidence (integral values print as integers, NaN/inf as null) with
// evidence_text; on a key clash the number wins. Keys are sorted so that the
// output is deterministic (proto maps are unordered). A time of 0 (unset)
// prints as null. A marked finding also has "acked" ({who, at, comment})
// and "silenced_by" (silence ids), each only when it applies.
nlohmann::ordered_json FindingToJson(const v1::Finding& finding);

// A silence as `fabricdiag silences --json` prints it: id, matchers (an
// object KEY: VALUE), who, created, until, comment, expired, and expired_by
// when it was expired early.
nlohmann::ordered_json SilenceToJson(const v1::Silence& silence);

}  // namespace fabricdiag::collector
