// The one place a finding takes its job's labels (docs/layout-format.md,
// "Labels"): the analysis runner hands every pass's findings through here
// before the FindingsStore takes them, whichever analyzer set the job.
//
//   AddJobLabels(*snapshot, &reports);
//   findings.Update(reports, now, source);
//
// Pure; thread-safe.
#pragma once

#include <vector>

#include "analysis/finding.h"
#include "collector/declared/layout_registry.h"

namespace fabricdiag::collector {

// Sets each finding's labels to those of its job's layout in `layouts`;
// a finding of no job, or of a job `layouts` does not hold, has none.
void AddJobLabels(const RegistrySnapshot& layouts,
                  std::vector<analysis::Finding>* findings);

}  // namespace fabricdiag::collector
