#include "collector/state/baselines_store.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/log.h"

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

BaselinesWriter::~BaselinesWriter() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void BaselinesWriter::Write(std::string payload, absl::Time written) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    pending_ = Pending{std::move(payload), written};
    if (!thread_.joinable()) thread_ = std::thread([this] { Run(); });
  }
  cv_.notify_all();
}

void BaselinesWriter::Flush() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [this] { return !pending_.has_value() && !writing_; });
}

void BaselinesWriter::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    cv_.wait(lock, [this] { return stopping_ || pending_.has_value(); });
    // Stopping drains what is pending first.
    if (!pending_.has_value()) return;
    Pending p = *std::move(pending_);
    pending_.reset();
    writing_ = true;
    lock.unlock();
    const absl::Status s = store_->Write(p.payload, p.written);
    if (!s.ok()) {
      LogWarning(absl::StrCat("analysis: cannot write straggler baselines to ",
                              store_->Describe(), ": ", s.message()));
    }
    lock.lock();
    writing_ = false;
    cv_.notify_all();
  }
}

}  // namespace fabricdiag::collector
