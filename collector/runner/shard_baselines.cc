#include "collector/runner/shard_baselines.h"

#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "collector/runner/rate_pass.h"

namespace fabricdiag::collector {
namespace {

// analysis::JobShardOf names a job's shard so.
constexpr char kJobShardPrefix[] = "jobs.";

}  // namespace

bool ShardBaselines::Keeps(absl::string_view shard) {
  return absl::StartsWith(shard, kJobShardPrefix);
}

BaselinesStore* ShardBaselines::StoreOf(const std::string& shard) {
  std::unique_ptr<BaselinesStore>& store = stores_[shard];
  if (store == nullptr) store = store_->ForShard(shard);
  return store.get();
}

analysis::StragglerBaselines::JobFn ShardBaselines::JobsOf(
    const std::string& shard) const {
  return [shard, counts = options_.counts](absl::string_view job) {
    return analysis::JobShardOf(job, counts) == shard;
  };
}

ShardBaselines::Taken ShardBaselines::Take(
    const std::string& shard, absl::Time now,
    absl::Span<const analysis::LayoutModel* const> layouts,
    analysis::StragglerBaselines* baselines, bool read) {
  written_[shard] = now;
  wrote_none_.erase(shard);
  // Until Take() read the store without a problem.
  unread_.insert(shard);
  Taken out;
  if (!read) return out;
  const analysis::StragglerBaselines::JobFn jobs = JobsOf(shard);
  std::vector<const analysis::LayoutModel*> own;
  for (const analysis::LayoutModel* m : layouts) {
    if (m != nullptr && jobs(m->job())) own.push_back(m);
  }
  analysis::StragglerBaselines stored;
  absl::StatusOr<LoadedBaselines> loaded = LoadStragglerBaselines(
      StoreOf(shard), now, options_.max_age, own, &stored);
  if (!loaded.ok()) {
    out.problem = std::string(loaded.status().message());
    out.unanswered = true;
    return out;
  }
  out.problem = std::move(loaded->problem);
  if (!out.problem.empty()) return out;
  unread_.erase(shard);
  out.dropped = loaded->dropped;
  // None stored, or none of a NIC still in a layout.
  if (loaded->restored == 0) return out;
  out.restored = baselines->Adopt(jobs, std::move(stored));
  return out;
}

void ShardBaselines::Save(absl::Time now, absl::Span<const std::string> owned,
                          const analysis::StragglerBaselines& baselines,
                          bool all) {
  for (const std::string& shard : owned) {
    if (!Keeps(shard)) continue;
    // A shard owned without a Take() waits a period from now, as one taken.
    auto [it, fresh] = written_.try_emplace(shard, now);
    if (!all && (fresh || now - it->second < options_.every)) continue;
    it->second = now;
    std::string bytes = baselines.Serialize(JobsOf(shard));
    // Nothing learned of the shard's jobs, as at its last write: the store
    // already says so (a lone collector owns every job shard, most of them
    // empty on a small fabric).
    const bool none = bytes == no_baselines_;
    if (none && !wrote_none_.insert(shard).second) continue;
    if (!none) wrote_none_.erase(shard);
    unread_.erase(shard);
    writer_->Write(StoreOf(shard), std::move(bytes), now);
  }
}

bool ShardBaselines::HandOver(const std::string& shard, absl::Time now,
                              const analysis::StragglerBaselines& baselines,
                              std::function<void()> done) {
  if (!Keeps(shard)) return false;
  auto [it, fresh] = written_.try_emplace(shard, now);
  if (unread_.contains(shard) && (fresh || now - it->second < options_.every)) {
    return false;
  }
  it->second = now;
  unread_.erase(shard);
  wrote_none_.erase(shard);
  writer_->Write(StoreOf(shard), baselines.Serialize(JobsOf(shard)), now,
                 std::move(done));
  return true;
}

}  // namespace fabricdiag::collector
