// A layout's `labels` (docs/layout-format.md, "Labels"): who owns the job
// (team, project, ...), carried onto its findings and exported on
// fabricdiag_finding_active as label_<key> so that alerts route by them.
//
// Keys become Prometheus label names behind the `label_` prefix and values
// become label values and JSON strings, so both are bounded and printable:
//
//   RETURN_IF_ERROR(ValidateLayoutLabels(layout.labels()));
//
// Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <string>

#include "absl/status/status.h"
#include "google/protobuf/map.h"

namespace fabricdiag::analysis {

// A key: a Prometheus label name's alphabet, lower case.
inline constexpr char kLabelKeyPattern[] = "[a-z_][a-z0-9_]{0,62}";
inline constexpr size_t kMaxLayoutLabels = 16;
inline constexpr size_t kMaxLabelValueBytes = 128;

// Every key matches kLabelKeyPattern; every value is 1 to
// kMaxLabelValueBytes bytes of UTF-8 without control characters; at most
// kMaxLayoutLabels of them. InvalidArgument naming the field
// ("labels.Team: ..."); keys are checked in sorted order, so the same
// layout always names the same one.
absl::Status ValidateLayoutLabels(
    const google::protobuf::Map<std::string, std::string>& labels);

}  // namespace fabricdiag::analysis
