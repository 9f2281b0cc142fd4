#include "collector/baselines_store.h"

namespace fabricdiag::collector {

absl::Status FileBaselinesStore::Write(absl::string_view payload,
                                       absl::Time written) {
  return state_->WriteBaselines(payload, written);
}

absl::StatusOr<std::optional<ObjectFile>> FileBaselinesStore::Read() {
  const size_t problems_before = state_->problems().size();
  absl::StatusOr<std::optional<ObjectFile>> file = state_->ReadBaselines();
  if (!file.ok() || file->has_value()) return file;
  // Absent, or damaged and moved aside by the store (a new problem).
  const std::vector<std::string> problems = state_->problems();
  if (problems.size() > problems_before) {
    return absl::DataLossError(problems.back());
  }
  return std::nullopt;
}

void FileBaselinesStore::Reject(absl::string_view why) {
  // Reported in the store's problems(); the next Write replaces it anyway.
  state_->QuarantineFile(state_->baselines_path(), why).IgnoreError();
}

std::string FileBaselinesStore::Describe() const {
  return state_->baselines_path();
}

}  // namespace fabricdiag::collector
