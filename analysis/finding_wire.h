// analysis::Finding <-> the wire finding (v1::Finding, proto/collector.proto)
// and the one severity table: analysis::Severity, v1::Severity and the
// names docs/findings.md gives them ("info", "warning", "critical").
//
// The collector's FindingsStore fills its v1::Findings with FillWireFinding,
// its analysis runner seeds the hysteresis with FindingFromWire, and every
// severity printed anywhere (the CLI, metric labels) is named here:
//
//   v1::Finding wire;
//   FillWireFinding(finding, &wire);
//   absl::string_view name = SeverityName(wire.severity(), "unknown");
//
// A library of its own (fabricdiag_analysis_wire): the analyzers link
// protobuf alone, and the collector API's generated code brings gRPC.
// Pure functions; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "analysis/finding.h"
#include "proto/collector.pb.h"

namespace fabricdiag::analysis {

v1::Severity SeverityToWire(Severity severity);
// SEVERITY_UNSPECIFIED, or a value this build does not know (a newer
// collector's log), reads as kWarning: the middle, neither silenced nor
// paging.
Severity SeverityFromWire(v1::Severity severity);

// "info", "warning", "critical"; `otherwise` for SEVERITY_UNSPECIFIED or a
// value this build does not know (callers differ in how they say it).
absl::string_view SeverityName(v1::Severity severity,
                               absl::string_view otherwise);

// Copies what `finding` says into `wire`: kind, severity, job, node, nodes
// ([node] when empty and node is set), device, group, summary, evidence,
// evidence_text and labels. Non-finite evidence is dropped: JSON (findings
// --json) has no NaN. Leaves id, state and times alone.
void FillWireFinding(const Finding& finding, v1::Finding* wire);
// The nodes FillWireFinding writes: `nodes`, or [node] when that is empty.
std::vector<std::string> WireNodes(const Finding& finding);

// What a wire finding says, as an analyzer would have reported it
// (immediate is false: the wire does not carry it).
Finding FindingFromWire(const v1::Finding& wire);

}  // namespace fabricdiag::analysis
