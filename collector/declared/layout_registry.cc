#include "collector/declared/layout_registry.h"

#include <algorithm>
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

LayoutRegistry::LayoutRegistry(DeclaredState* state, const Clock* clock)
    : state_(state),
      clock_(clock),
      current_(std::make_shared<const RegistrySnapshot>()) {}

LayoutRegistry::~LayoutRegistry() { state_->StopWatching(); }

namespace {

// The entry for a stored layout; the model's error when it no longer builds.
absl::StatusOr<std::shared_ptr<const LayoutEntry>> BuildEntry(
    DeclaredLayout stored) {
  ASSIGN_OR_RETURN(LayoutModel model, LayoutModel::Build(stored.layout));
  LayoutSeries series = RenderLayoutSeries(model);
  return std::make_shared<const LayoutEntry>(
      LayoutEntry{std::move(stored.layout), std::move(model), stored.applied,
                  std::move(series), stored.revision});
}

}  // namespace

absl::Status LayoutRegistry::Load() {
  absl::MutexLock write_lock(&write_mu_);
  auto next = std::make_shared<RegistrySnapshot>();
  ASSIGN_OR_RETURN(std::vector<DeclaredLayout> stored, state_->ReadLayouts());
  for (DeclaredLayout& s : stored) {
    std::string job = s.layout.job();
    std::string where = s.where;
    const uint64_t revision = s.revision;
    absl::StatusOr<std::shared_ptr<const LayoutEntry>> entry =
        BuildEntry(std::move(s));
    if (!entry.ok()) {
      // Valid when applied, invalid now: an older collector accepted what
      // this one rejects. Keep it for a human, load the others.
      rejected_revision_[job] = revision;
      state_->Reject(where, absl::StrCat("layout no longer valid: ",
                                         entry.status().message()));
      continue;
    }
    next->layouts[job] = *std::move(entry);
  }
  ASSIGN_OR_RETURN(std::optional<DeclaredTopology> topology,
                   state_->ReadTopology());
  if (topology.has_value()) {
    absl::Status valid = analysis::ValidateTopology(topology->topology);
    if (!valid.ok()) {
      state_->Reject(topology->where, absl::StrCat("topology no longer valid: ",
                                                   valid.message()));
    } else {
      next->topology =
          std::make_shared<const v1::Topology>(std::move(topology->topology));
      next->topology_applied = topology->applied;
      next->topology_revision = topology->revision;
      next->topology_version =
          TopologyVersionOf(topology->revision, topology->applied);
    }
  }
  LogInfo(absl::StrCat(state_->Describe(), ": loaded ", next->layouts.size(),
                       " layouts", next->topology ? " and the topology" : ""));
  Publish(std::move(next));
  return absl::OkStatus();
}

void LayoutRegistry::StartWatching() {
  state_->Watch([this](const DeclaredChange& change) { OnChange(change); });
}

RegistryWatchStats LayoutRegistry::watch_stats() const {
  absl::MutexLock lock(&mu_);
  return watch_stats_;
}

void LayoutRegistry::OnChange(const DeclaredChange& change) {
  using Kind = DeclaredChange::Kind;
  if (change.kind == Kind::kDamaged) {
    LogWarning(absl::StrCat("declared state: ", change.problem));
    absl::MutexLock lock(&mu_);
    ++watch_stats_.rejected;
    return;
  }
  // Built outside the write lock: it is pure and can take a while.
  absl::StatusOr<std::shared_ptr<const LayoutEntry>> entry;
  if (change.kind == Kind::kLayout) entry = BuildEntry(change.layout);
  absl::Status topology_valid;
  if (change.kind == Kind::kTopology) {
    topology_valid = analysis::ValidateTopology(change.topology.topology);
  }

  absl::MutexLock write_lock(&write_mu_);
  std::shared_ptr<const RegistrySnapshot> snap = Snapshot();
  auto next = std::make_shared<RegistrySnapshot>(*snap);
  absl::Status outcome;
  switch (change.kind) {
    case Kind::kLayout:
    case Kind::kLayoutRemoved: {
      auto it = snap->layouts.find(change.job);
      if (it != snap->layouts.end() &&
          it->second->revision >= change.revision) {
        return;  // served already (our own write, or a replay)
      }
      if (change.kind == Kind::kLayoutRemoved) {
        rejected_revision_.erase(change.job);
        if (it == snap->layouts.end()) return;
        next->layouts.erase(change.job);
      } else if (entry.ok()) {
        next->layouts[change.job] = *entry;
        rejected_revision_.erase(change.job);
      } else {
        outcome = entry.status();
        rejected_revision_[change.job] = change.revision;
      }
      break;
    }
    case Kind::kTopology:
      if (snap->topology != nullptr &&
          snap->topology_revision >= change.revision) {
        return;
      }
      if (!topology_valid.ok()) {
        outcome = topology_valid;
        break;
      }
      next->topology =
          std::make_shared<const v1::Topology>(change.topology.topology);
      next->topology_applied = change.topology.applied;
      next->topology_revision = change.revision;
      next->topology_version =
          TopologyVersionOf(change.revision, change.topology.applied);
      break;
    case Kind::kDamaged:
      return;
  }
  if (!outcome.ok()) {
    LogWarning(absl::StrCat(
        "declared state: ignoring revision ", change.revision, " of ",
        change.kind == Kind::kTopology ? std::string("the topology")
                                       : absl::StrCat("job ", change.job),
        ": ", outcome.message()));
    absl::MutexLock lock(&mu_);
    ++watch_stats_.rejected;
    return;
  }
  Publish(std::move(next));
  absl::MutexLock lock(&mu_);
  ++watch_stats_.applied;
}

void LayoutRegistry::Publish(std::shared_ptr<const RegistrySnapshot> next) {
  absl::MutexLock lock(&mu_);
  current_ = std::move(next);
}

std::shared_ptr<const RegistrySnapshot> LayoutRegistry::Snapshot() const {
  absl::MutexLock lock(&mu_);
  return current_;
}

LayoutRegistry::WriteTurn::WriteTurn(LayoutRegistry* registry,
                                     absl::Time deadline)
    : registry_(registry) {
  absl::MutexLock lock(&registry_->turn_mu_);
  if (!registry_->turn_mu_.AwaitWithDeadline(
          absl::Condition(&registry_->turn_free_), deadline)) {
    status_ = absl::DeadlineExceededError(absl::StrCat(
        "another write through this collector is still waiting for ",
        registry_->state_->Describe(),
        ", and this one's deadline passed behind it: nothing was written"));
    return;
  }
  registry_->turn_free_ = false;
}

LayoutRegistry::WriteTurn::~WriteTurn() {
  if (!status_.ok()) return;
  absl::MutexLock lock(&registry_->turn_mu_);
  registry_->turn_free_ = true;
}

uint64_t LayoutRevision(const LayoutEntry& entry) {
  if (entry.revision != 0) return entry.revision;
  return static_cast<uint64_t>(
      std::max<int64_t>(1, absl::ToUnixNanos(entry.applied)));
}

absl::StatusOr<ApplyResult> LayoutRegistry::Apply(const v1::Layout& layout,
                                                  absl::Time deadline) {
  return WriteLayout(layout, std::nullopt, deadline);
}

absl::StatusOr<ApplyResult> LayoutRegistry::ApplyIf(const v1::Layout& layout,
                                                    uint64_t if_revision,
                                                    absl::Time deadline) {
  return WriteLayout(layout, if_revision, deadline);
}

absl::StatusOr<ApplyResult> LayoutRegistry::WriteLayout(
    const v1::Layout& layout, std::optional<uint64_t> if_revision,
    absl::Time deadline) {
  // Build outside every lock: it is pure and can take a while for a large
  // job.
  // Its series are rendered here too, once, not per scrape.
  ASSIGN_OR_RETURN(LayoutModel model, LayoutModel::Build(layout));
  LayoutSeries series = RenderLayoutSeries(model);
  WriteTurn turn(this, deadline);
  RETURN_IF_ERROR(turn.status());
  absl::MutexLock write_lock(&write_mu_);
  absl::Time now = clock_->Now();
  auto next = std::make_shared<RegistrySnapshot>(*Snapshot());
  auto served = next->layouts.find(layout.job());
  const uint64_t served_revision =
      served == next->layouts.end() ? 0 : LayoutRevision(*served->second);
  if (if_revision.has_value() && *if_revision != served_revision) {
    const std::string job = QuoteForMessage(layout.job());
    return absl::FailedPreconditionError(
        served_revision == 0
            ? absl::StrCat("job ", job, " has no layout, not revision ",
                           *if_revision)
            : absl::StrCat("the layout of job ", job, " is at revision ",
                           served_revision, ", not ", *if_revision,
                           *if_revision == 0 ? " (0: only a new job)" : "",
                           "; nothing written"));
  }
  // Without revisions the apply time is the revision: it grows per job
  // even when the clock does not (or steps back).
  if (served != next->layouts.end() && served->second->revision == 0 &&
      now <= served->second->applied) {
    now = served->second->applied + absl::Nanoseconds(1);
  }
  ApplyResult result;
  result.replaced = served != next->layouts.end();
  ASSIGN_OR_RETURN(
      uint64_t revision,
      state_->WriteLayout(layout, now, ExpectedRevision(*next, layout.job()),
                          deadline));
  rejected_revision_.erase(layout.job());
  auto entry = std::make_shared<const LayoutEntry>(
      LayoutEntry{layout, std::move(model), now, std::move(series), revision});
  next->layouts[layout.job()] = entry;
  result.entry = std::move(entry);
  Publish(std::move(next));
  return result;
}

uint64_t LayoutRegistry::ExpectedRevision(const RegistrySnapshot& snap,
                                          const std::string& job) const {
  auto served = snap.layouts.find(job);
  if (served != snap.layouts.end()) return served->second->revision;
  auto rejected = rejected_revision_.find(job);
  return rejected == rejected_revision_.end() ? 0 : rejected->second;
}

absl::StatusOr<std::shared_ptr<const LayoutEntry>> FindLayout(
    const RegistrySnapshot& snapshot, absl::string_view job) {
  auto it = snapshot.layouts.find(std::string(job));
  if (it == snapshot.layouts.end()) {
    return absl::NotFoundError(
        absl::StrCat("no layout for job ", QuoteForMessage(job),
                     " (fabricdiag layout list shows the known jobs)"));
  }
  return it->second;
}

absl::StatusOr<std::shared_ptr<const LayoutEntry>> LayoutRegistry::Get(
    absl::string_view job) const {
  return FindLayout(*Snapshot(), job);
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
    s.declaration = entry->applied_layout.declaration();
    s.labels.insert(entry->applied_layout.labels().begin(),
                    entry->applied_layout.labels().end());
    out.push_back(std::move(s));
  }
  return out;
}

absl::Status LayoutRegistry::Delete(absl::string_view job,
                                    absl::Time deadline) {
  WriteTurn turn(this, deadline);
  RETURN_IF_ERROR(turn.status());
  absl::MutexLock write_lock(&write_mu_);
  std::shared_ptr<const RegistrySnapshot> snap = Snapshot();
  auto it = snap->layouts.find(std::string(job));
  if (it == snap->layouts.end()) {
    return absl::NotFoundError(
        absl::StrCat("no layout for job ", QuoteForMessage(job)));
  }
  absl::Status removed =
      state_->RemoveLayout(job, it->second->revision, deadline);
  // A file already gone (removed by hand) still lets the job be forgotten.
  if (!removed.ok() && !absl::IsNotFound(removed)) return removed;
  auto next = std::make_shared<RegistrySnapshot>(*snap);
  next->layouts.erase(std::string(job));
  Publish(std::move(next));
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<const LayoutEntry>>
LayoutRegistry::ChangeDeclaration(
    absl::string_view job,
    const std::function<absl::Status(v1::LayoutDeclaration*)>& change,
    absl::Time deadline) {
  WriteTurn turn(this, deadline);
  RETURN_IF_ERROR(turn.status());
  absl::MutexLock write_lock(&write_mu_);
  std::shared_ptr<const RegistrySnapshot> snap = Snapshot();
  auto it = snap->layouts.find(std::string(job));
  if (it == snap->layouts.end()) {
    return absl::NotFoundError(
        absl::StrCat("no layout for job ", QuoteForMessage(job)));
  }
  const LayoutEntry& served = *it->second;
  v1::Layout layout = served.applied_layout;
  RETURN_IF_ERROR(change(layout.mutable_declaration()));
  ASSIGN_OR_RETURN(
      uint64_t revision,
      state_->WriteLayout(layout, served.applied, served.revision, deadline));
  auto entry = std::make_shared<const LayoutEntry>(
      LayoutEntry{std::move(layout), served.model, served.applied,
                  served.series, revision});
  auto next = std::make_shared<RegistrySnapshot>(*snap);
  next->layouts[std::string(job)] = entry;
  Publish(std::move(next));
  return entry;
}

absl::StatusOr<bool> LayoutRegistry::DeleteIf(
    absl::string_view job, const std::function<bool(const LayoutEntry&)>& still,
    absl::Time deadline) {
  WriteTurn turn(this, deadline);
  RETURN_IF_ERROR(turn.status());
  absl::MutexLock write_lock(&write_mu_);
  std::shared_ptr<const RegistrySnapshot> snap = Snapshot();
  auto it = snap->layouts.find(std::string(job));
  if (it == snap->layouts.end() || !still(*it->second)) return false;
  absl::Status removed =
      state_->RemoveLayout(job, it->second->revision, deadline);
  if (!removed.ok() && !absl::IsNotFound(removed)) return removed;
  auto next = std::make_shared<RegistrySnapshot>(*snap);
  next->layouts.erase(std::string(job));
  Publish(std::move(next));
  return true;
}

absl::Status LayoutRegistry::ApplyTopology(const v1::Topology& topology,
                                           absl::Time deadline) {
  return WriteTopology(topology, std::nullopt, deadline).status();
}

absl::StatusOr<uint64_t> LayoutRegistry::ApplyTopologyIf(
    const v1::Topology& topology, uint64_t expected_version,
    absl::Time deadline) {
  return WriteTopology(topology, expected_version, deadline);
}

uint64_t LayoutRegistry::TopologyVersionOf(uint64_t revision,
                                           absl::Time applied) {
  if (revision != 0) return revision;
  // The apply time is stored with the topology, so that a version read
  // before a restart still names the same topology after it; counted past
  // the last one so that two applies within one clock tick differ.
  topology_serial_ = std::max(
      topology_serial_ + 1,
      static_cast<uint64_t>(std::max<int64_t>(0, absl::ToUnixNanos(applied))));
  return topology_serial_;
}

absl::StatusOr<uint64_t> LayoutRegistry::WriteTopology(
    const v1::Topology& topology, std::optional<uint64_t> expected_version,
    absl::Time deadline) {
  RETURN_IF_ERROR(analysis::ValidateTopology(topology));
  WriteTurn turn(this, deadline);
  RETURN_IF_ERROR(turn.status());
  absl::MutexLock write_lock(&write_mu_);
  absl::Time now = clock_->Now();
  auto next = std::make_shared<RegistrySnapshot>(*Snapshot());
  // Compared under the write lock, so no write of this registry slips in
  // between; one through another collector fails the backend's own
  // compare-and-set on the revision below.
  if (expected_version.has_value() &&
      *expected_version != next->topology_version) {
    return absl::AbortedError(absl::StrCat(
        "the declared topology changed since it was read (version ",
        *expected_version, " read, ", next->topology_version,
        " now): read it again"));
  }
  ASSIGN_OR_RETURN(uint64_t revision,
                   state_->WriteTopology(
                       topology, now,
                       next->topology ? next->topology_revision : 0, deadline));
  next->topology = std::make_shared<const v1::Topology>(topology);
  next->topology_applied = now;
  next->topology_revision = revision;
  next->topology_version = TopologyVersionOf(revision, now);
  const uint64_t version = next->topology_version;
  Publish(std::move(next));
  return version;
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
