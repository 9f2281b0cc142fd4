#include "collector/state/baselines_store.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/log.h"

namespace fabricdiag::collector {

absl::Status FileBaselinesStore::Write(absl::string_view payload,
                                       absl::Time written) {
  return state_->WriteBaselines(payload, written, shard_);
}

absl::StatusOr<std::optional<ObjectFile>> FileBaselinesStore::Read() {
  const size_t problems_before = state_->problems().size();
  absl::StatusOr<std::optional<ObjectFile>> file =
      state_->ReadBaselines(shard_);
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
  state_->QuarantineFile(state_->baselines_path(shard_), why).IgnoreError();
}

std::string FileBaselinesStore::Describe() const {
  return state_->baselines_path(shard_);
}

std::unique_ptr<BaselinesStore> FileBaselinesStore::ForShard(
    absl::string_view shard) {
  return std::make_unique<FileBaselinesStore>(state_, std::string(shard));
}

BaselinesWriter::~BaselinesWriter() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void BaselinesWriter::Write(BaselinesStore* store, std::string payload,
                            absl::Time written, std::function<void()> done) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto same =
        std::find_if(pending_.begin(), pending_.end(),
                     [store](const Pending& p) { return p.store == store; });
    if (same == pending_.end()) {
      same = pending_.insert(pending_.end(), Pending{store, {}, {}, {}});
    }
    same->payload = std::move(payload);
    same->written = written;
    if (done) same->done.push_back(std::move(done));
    if (!thread_.joinable()) thread_ = std::thread([this] { Run(); });
  }
  cv_.notify_all();
}

void BaselinesWriter::Flush() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [this] { return pending_.empty() && !writing_; });
}

void BaselinesWriter::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    cv_.wait(lock, [this] { return stopping_ || !pending_.empty(); });
    // Stopping drains what is pending first.
    if (pending_.empty()) return;
    Pending p = std::move(pending_.front());
    pending_.erase(pending_.begin());
    writing_ = true;
    lock.unlock();
    const absl::Status s = p.store->Write(p.payload, p.written);
    if (!s.ok()) {
      LogWarning(absl::StrCat("analysis: cannot write straggler baselines to ",
                              p.store->Describe(), ": ", s.message()));
    }
    lock.lock();
    std::vector<std::function<void()>> done = std::move(p.done);
    if (absl::IsUnavailable(s) && !pending_.empty()) {
      // The stores share one server (a cluster's bucket): the sets
      // waiting would each wait out its deadline too, and a stop behind
      // them. Each is written again at its next period.
      LogWarning(absl::StrCat("analysis: ", pending_.size(),
                              " more straggler baselines writes dropped "
                              "while the store does not answer"));
      for (Pending& dropped : pending_) {
        for (std::function<void()>& d : dropped.done) {
          done.push_back(std::move(d));
        }
      }
      pending_.clear();
    }
    if (!done.empty()) {
      lock.unlock();
      for (const std::function<void()>& d : done) d();
      lock.lock();
    }
    writing_ = false;
    cv_.notify_all();
  }
}

}  // namespace fabricdiag::collector
