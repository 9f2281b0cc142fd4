// The matchers of a silence (`fabricdiag silence --matcher=kind=pfc_storm,
// node=leaf-3`): parsed and checked the same way by the CLI, before it
// sends them, and by the collector, which never trusts the wire; and what
// they select (docs/cli.md, "Acknowledge, silence, maintenance").
//
//   ASSIGN_OR_RETURN(std::vector<v1::SilenceMatcher> m, ParseMatchers(text));
//   if (SilenceMatches(silence, finding)) ...
//
// Pure functions; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "proto/collector.pb.h"

namespace fabricdiag::collector {

// The keys a matcher may name, in the order of the usage text.
inline constexpr const char* kSilenceKeys[] = {"kind",   "job",   "node",
                                               "device", "group", "severity"};

// "kind=pfc_storm,node=leaf-3" as matchers. InvalidArgument naming the
// field "--matcher" and what is wrong: an empty list, an item without "=",
// an unknown key, an empty value, a key given twice, a severity that is not
// info, warning or critical.
absl::StatusOr<std::vector<v1::SilenceMatcher>> ParseMatchers(
    absl::string_view text);
// The same checks on matchers that arrived over the wire.
absl::Status CheckMatchers(
    const google::protobuf::RepeatedPtrField<v1::SilenceMatcher>& matchers);

// How long a silence lasts: "4h", "90m", "2h30m" (Go-style,
// absl::ParseDuration) or whole days "7d"; positive and at most 30 days.
// InvalidArgument naming `field` ("--for" for the CLI, "for" over HTTP).
absl::StatusOr<absl::Duration> ParseSilenceDuration(absl::string_view text,
                                                    absl::string_view field);

// Whether every matcher of `silence` matches `finding` (no time check).
bool SilenceMatches(const v1::Silence& silence, const v1::Finding& finding);

}  // namespace fabricdiag::collector
