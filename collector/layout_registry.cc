#include "collector/layout_registry.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "analysis/layout_parse.h"
#include "common/log.h"
#include "common/names.h"
#include "common/status_macros.h"

namespace fabricdiag::collector {

using analysis::Dim;
using analysis::LayoutModel;

std::string ParallelismSummary(const LayoutModel& model) {
  std::vector<std::string> parts = {
      absl::StrCat("tp=", model.Degree(Dim::kTp)),
      absl::StrCat("pp=", model.Degree(Dim::kPp)),
      absl::StrCat("dp=", model.Degree(Dim::kDp))};
  if (model.Degree(Dim::kCp) > 1) {
    parts.push_back(absl::StrCat("cp=", model.Degree(Dim::kCp)));
  }
  if (model.Degree(Dim::kEp) > 1) {
    parts.push_back(absl::StrCat("ep=", model.Degree(Dim::kEp)));
  }
  return absl::StrJoin(parts, " ");
}

LayoutRegistry::LayoutRegistry(StateStore* store, const Clock* clock)
    : store_(store),
      clock_(clock),
      current_(std::make_shared<const RegistrySnapshot>()) {}

absl::Status LayoutRegistry::Load() {
  absl::MutexLock write_lock(&write_mu_);
  auto next = std::make_shared<RegistrySnapshot>();
  ASSIGN_OR_RETURN(std::vector<StoredLayout> stored, store_->ReadLayouts());
  for (StoredLayout& s : stored) {
    absl::StatusOr<LayoutModel> model = LayoutModel::Build(s.layout);
    if (!model.ok()) {
      // Valid when applied, invalid now: an older collector accepted what
      // this one rejects. Keep the file for a human, load the others.
      store_
          ->QuarantineFile(s.path, absl::StrCat("layout no longer valid: ",
                                                model.status().message()))
          .IgnoreError();
      continue;
    }
    std::string job = s.layout.job();
    LayoutSeries series = RenderLayoutSeries(*model);
    next->layouts[job] = std::make_shared<const LayoutEntry>(LayoutEntry{
        std::move(s.layout), *std::move(model), s.applied, std::move(series)});
  }
  ASSIGN_OR_RETURN(std::optional<StoredTopology> topology,
                   store_->ReadTopology());
  if (topology.has_value()) {
    absl::Status valid = analysis::ValidateTopology(topology->topology);
    if (!valid.ok()) {
      store_
          ->QuarantineFile(
              absl::StrCat(store_->dir(), "/topology.pb"),
              absl::StrCat("topology no longer valid: ", valid.message()))
          .IgnoreError();
    } else {
      next->topology =
          std::make_shared<const v1::Topology>(std::move(topology->topology));
      next->topology_applied = topology->applied;
    }
  }
  LogInfo(absl::StrCat("state_dir ", store_->dir(), ": loaded ",
                       next->layouts.size(), " layouts",
                       next->topology ? " and the topology" : ""));
  Publish(std::move(next));
  return absl::OkStatus();
}

void LayoutRegistry::Publish(std::shared_ptr<const RegistrySnapshot> next) {
  absl::MutexLock lock(&mu_);
  current_ = std::move(next);
}

std::shared_ptr<const RegistrySnapshot> LayoutRegistry::Snapshot() const {
  absl::MutexLock lock(&mu_);
  return current_;
}

absl::StatusOr<ApplyResult> LayoutRegistry::Apply(const v1::Layout& layout) {
  // Build outside every lock: it is pure and can take a while for a large
  // job.
  // Its series are rendered here too, once, not per scrape.
  ASSIGN_OR_RETURN(LayoutModel model, LayoutModel::Build(layout));
  LayoutSeries series = RenderLayoutSeries(model);
  absl::MutexLock write_lock(&write_mu_);
  absl::Time now = clock_->Now();
  RETURN_IF_ERROR(store_->WriteLayout(layout, now));
  auto entry = std::make_shared<const LayoutEntry>(
      LayoutEntry{layout, std::move(model), now, std::move(series)});
  auto next = std::make_shared<RegistrySnapshot>(*Snapshot());
  ApplyResult result;
  result.replaced = next->layouts.count(layout.job()) > 0;
  next->layouts[layout.job()] = entry;
  result.entry = std::move(entry);
  Publish(std::move(next));
  return result;
}

absl::StatusOr<std::shared_ptr<const LayoutEntry>> LayoutRegistry::Get(
    absl::string_view job) const {
  std::shared_ptr<const RegistrySnapshot> snap = Snapshot();
  auto it = snap->layouts.find(std::string(job));
  if (it == snap->layouts.end()) {
    return absl::NotFoundError(
        absl::StrCat("no layout for job ", QuoteForMessage(job),
                     " (fabricdiag layout list shows the known jobs)"));
  }
  return it->second;
}

std::vector<LayoutSummary> LayoutRegistry::List() const {
  std::shared_ptr<const RegistrySnapshot> snap = Snapshot();
  std::vector<LayoutSummary> out;
  out.reserve(snap->layouts.size());
  for (const auto& [job, entry] : snap->layouts) {
    LayoutSummary s;
    s.job = job;
    s.ranks = entry->model.WorldSize();
    s.hosts = static_cast<uint32_t>(entry->model.Hosts().size());
    s.parallelism = ParallelismSummary(entry->model);
    s.applied = entry->applied;
    out.push_back(std::move(s));
  }
  return out;
}

absl::Status LayoutRegistry::Delete(absl::string_view job) {
  absl::MutexLock write_lock(&write_mu_);
  std::shared_ptr<const RegistrySnapshot> snap = Snapshot();
  auto it = snap->layouts.find(std::string(job));
  if (it == snap->layouts.end()) {
    return absl::NotFoundError(
        absl::StrCat("no layout for job ", QuoteForMessage(job)));
  }
  absl::Status removed = store_->RemoveLayout(job);
  // A file already gone (removed by hand) still lets the job be forgotten.
  if (!removed.ok() && !absl::IsNotFound(removed)) return removed;
  auto next = std::make_shared<RegistrySnapshot>(*snap);
  next->layouts.erase(std::string(job));
  Publish(std::move(next));
  return absl::OkStatus();
}

absl::Status LayoutRegistry::ApplyTopology(const v1::Topology& topology) {
  RETURN_IF_ERROR(analysis::ValidateTopology(topology));
  absl::MutexLock write_lock(&write_mu_);
  absl::Time now = clock_->Now();
  RETURN_IF_ERROR(store_->WriteTopology(topology, now));
  auto next = std::make_shared<RegistrySnapshot>(*Snapshot());
  next->topology = std::make_shared<const v1::Topology>(topology);
  next->topology_applied = now;
  Publish(std::move(next));
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<const v1::Topology>>
LayoutRegistry::GetTopology() const {
  std::shared_ptr<const RegistrySnapshot> snap = Snapshot();
  if (snap->topology == nullptr) {
    return absl::NotFoundError(
        "no topology has been applied (fabricdiag topology apply FILE)");
  }
  return snap->topology;
}

size_t LayoutRegistry::NumLayouts() const { return Snapshot()->layouts.size(); }

}  // namespace fabricdiag::collector
