// Renders a Snapshot as JSON, for `fabricdiag-agent --once` (support
// bundles, debugging) and tests.
//
//   std::cout << SnapshotToJson(snapshot, "gpu-003") << "\n";
//
// Raw values are printed as exact unsigned integers; `value` is the raw
// value in base units (bytes, seconds). Strings read from hostile files may
// hold invalid UTF-8: it is replaced, never an error.
#pragma once

#include <string>

#include "absl/strings/string_view.h"
#include "agent/sample.h"

namespace fabricdiag::agent {

std::string SnapshotToJson(const Snapshot& snapshot, absl::string_view node);

}  // namespace fabricdiag::agent
