#include "collector/runner/job_labels.h"

namespace fabricdiag::collector {

void AddJobLabels(const RegistrySnapshot& layouts,
                  std::vector<analysis::Finding>* findings) {
  for (analysis::Finding& f : *findings) {
    f.labels.clear();
    if (f.job.empty()) continue;
    auto it = layouts.layouts.find(f.job);
    if (it == layouts.layouts.end()) continue;
    const auto& labels = it->second->applied_layout.labels();
    f.labels.insert(labels.begin(), labels.end());
  }
}

}  // namespace fabricdiag::collector
