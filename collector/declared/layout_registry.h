// The jobs' parallelism layouts and the fabric topology the collector knows,
// validated, durable, and readable by analysis passes without blocking
// writers.
//
// Apply validates with analysis::LayoutModel::Build (InvalidArgument messages
// start with the field at fault), writes the layout to the declared state
// (collector/declared/declared_state.h: files in --state_dir, or the cluster's
// JetStream bucket) and only then makes it visible and returns: an
// acknowledged layout survives a crash. The built model is kept, so analyzers
// never rebuild it.
//
// In a collector cluster, layouts and topology written through another
// collector arrive through DeclaredState::Watch (StartWatching): they are
// validated and built here like local writes, and served within the
// backend's delivery delay. A write carries the revision this registry
// serves for that job (or topology), so two collectors writing the same job
// at once never merge silently: the later one fails with Aborted.
//
// Topology validation (analysis::ValidateTopology) checks what can be checked
// without layouts: switch, port, host and NIC names are valid; switch names
// are unique; a port is used once per switch (as an uplink or by one link);
// a (host, NIC) pair is cabled once; every link names a declared switch.
// Empty uplinks are accepted (a single-switch fabric, a spine, or uplinks not
// known yet: ECMP analysis then skips that switch). Links to hosts that no
// layout mentions are accepted too: the topology describes the fabric, jobs
// come and go, and a layout applied later may use those hosts.
//
// Concurrency: writers (Apply, Delete, ApplyTopology) are serialized among
// themselves; readers never wait for a write's fsync. Snapshot() returns an
// immutable view (shared_ptrs to immutable models) that an analysis pass
// can hold as long as it likes.
//
// Usage:
//   LayoutRegistry registry(&declared_state, &clock);
//   RETURN_IF_ERROR(registry.Load());
//   registry.StartWatching();  // changes made through other collectors
//   ASSIGN_OR_RETURN(ApplyResult result, registry.Apply(layout));
//   std::shared_ptr<const RegistrySnapshot> snap = registry.Snapshot();
//   for (const auto& [job, entry] : snap->layouts) Analyze(*entry->model);
//
// Thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "analysis/layout_model.h"
#include "collector/declared/declared_state.h"
#include "collector/declared/layout_metrics.h"
#include "common/clock.h"
#include "proto/layout.pb.h"

namespace fabricdiag::collector {

// One applied layout. Immutable once published.
struct LayoutEntry {
  // The layout exactly as applied (what `layout show` prints).
  v1::Layout applied_layout;
  // The validated model (its layout() has defaults filled in).
  analysis::LayoutModel model;
  absl::Time applied;
  // Its Prometheus series, rendered at apply (see layout_metrics.h).
  LayoutSeries series;
  // The declared state's revision of this version (0 when embedded).
  uint64_t revision = 0;
};

// The revision users see (`layout show`, `--if-revision`, If-Match): the
// declared state's revision where it has revisions (a cluster; any write of
// the job's layout, a lease renewal included, moves it), else the apply time
// in Unix nanoseconds (Apply makes it grow per job; a renewal keeps it).
// Never 0 for a served layout, so 0 can mean "none".
uint64_t LayoutRevision(const LayoutEntry& entry);

struct ApplyResult {
  bool replaced = false;  // a layout of the same job existed before
  std::shared_ptr<const LayoutEntry> entry;
};

struct LayoutSummary {
  std::string job;
  uint32_t ranks = 0;
  uint32_t hosts = 0;
  std::string parallelism;  // "tp=8 pp=2 dp=4 ep=4" (cp, ep only when > 1)
  absl::Time applied;
  v1::LayoutDeclaration declaration;          // source, owner, lease
  std::map<std::string, std::string> labels;  // v1::Layout.labels
};

// "tp=8 pp=2 dp=4 ep=4": the degrees of a built model, cp and ep only when
// they are not 1.
std::string ParallelismSummary(const analysis::LayoutModel& model);

// What an analysis pass works on: every layout and the topology at one
// instant. Immutable.
struct RegistrySnapshot {
  std::map<std::string, std::shared_ptr<const LayoutEntry>> layouts;
  std::shared_ptr<const v1::Topology> topology;  // null when none applied
  absl::Time topology_applied;
  uint64_t topology_revision = 0;
  // Identifies the topology served, for a write that must replace exactly
  // the one its caller saw (ApplyTopologyIf): the declared state's revision
  // where it has revisions (a cluster), else the apply time in Unix
  // nanoseconds (made to increase at each topology served). 0 when none is
  // served.
  uint64_t topology_version = 0;
};

// The entry of `job` in `snapshot`; NotFound naming the job (and how to
// list the known ones).
absl::StatusOr<std::shared_ptr<const LayoutEntry>> FindLayout(
    const RegistrySnapshot& snapshot, absl::string_view job);

// Where an analysis pass takes the layouts and the topology from: the
// registry itself (as declared), or FilledLayouts (filled_layouts.h), the
// same with the NICs the agents pair filled in.
class LayoutSnapshots {
 public:
  virtual ~LayoutSnapshots() = default;
  // The current state; cheap.
  virtual std::shared_ptr<const RegistrySnapshot> Snapshot() const = 0;
};

class LayoutRegistry final : public LayoutSnapshots {
 public:
  // `state` and `clock` must outlive the registry.
  LayoutRegistry(DeclaredState* state, const Clock* clock);
  // Stops the watcher (StartWatching) before the registry goes away.
  ~LayoutRegistry() override;
  LayoutRegistry(const LayoutRegistry&) = delete;
  LayoutRegistry& operator=(const LayoutRegistry&) = delete;

  // Reads every layout and the topology from the declared state. Ones that no
  // longer validate are set aside (DeclaredState::Reject; its problems() says
  // which); the others load. Errors only when the declared state cannot be
  // read at all.
  absl::Status Load();

  // Declares or replaces a layout; returns once it is durable.
  // InvalidArgument naming the field when the layout is invalid; the store's
  // error (PermissionDenied, ResourceExhausted, ...) when it cannot be saved,
  // in which case the previous layout stays in effect. `deadline` is the
  // caller's (DeclaredState: a write stops retrying at it).
  absl::StatusOr<ApplyResult> Apply(
      const v1::Layout& layout, absl::Time deadline = absl::InfiniteFuture());
  // Apply when the layout served for the job is at `if_revision`
  // (LayoutRevision; 0: only when the job has none); FailedPrecondition
  // naming the revision served, nothing written, when it is not. In a
  // cluster a write made through another collector and not served here yet
  // fails the write's compare-and-set instead (Aborted).
  absl::StatusOr<ApplyResult> ApplyIf(
      const v1::Layout& layout, uint64_t if_revision,
      absl::Time deadline = absl::InfiniteFuture());
  // NotFound naming the job.
  absl::StatusOr<std::shared_ptr<const LayoutEntry>> Get(
      absl::string_view job) const;
  // Ascending job.
  std::vector<LayoutSummary> List() const;
  // NotFound naming the job; removes the file before forgetting the job.
  absl::Status Delete(absl::string_view job,
                      absl::Time deadline = absl::InfiniteFuture());

  // Changes the declaration (source, owner, lease) of the layout served for
  // `job` with `change`, writes it with the revision served (Aborted when
  // another collector changed it since) and serves it, keeping the built
  // model. NotFound naming the job; `change`'s error, nothing written.
  absl::StatusOr<std::shared_ptr<const LayoutEntry>> ChangeDeclaration(
      absl::string_view job,
      const std::function<absl::Status(v1::LayoutDeclaration*)>& change,
      absl::Time deadline = absl::InfiniteFuture());
  // Removes the layout of `job` when `still` holds for the version served
  // (asked under the write lock), with the revision served as the expected
  // one: a change made elsewhere meanwhile wins (Aborted). false, nothing
  // removed, when there is no such layout or `still` is false.
  absl::StatusOr<bool> DeleteIf(
      absl::string_view job,
      const std::function<bool(const LayoutEntry&)>& still,
      absl::Time deadline = absl::InfiniteFuture());

  // Validates (see the header comment), persists, then publishes.
  absl::Status ApplyTopology(const v1::Topology& topology,
                             absl::Time deadline = absl::InfiniteFuture());
  // ApplyTopology when the topology served is still `expected_version`
  // (RegistrySnapshot::topology_version; 0: none declared), and returns the
  // version written; Aborted, nothing written, when another write came in
  // between.
  absl::StatusOr<uint64_t> ApplyTopologyIf(
      const v1::Topology& topology, uint64_t expected_version,
      absl::Time deadline = absl::InfiniteFuture());
  // NotFound when no topology was applied.
  absl::StatusOr<std::shared_ptr<const v1::Topology>> GetTopology() const;

  // Serves what other writers change from now on (DeclaredState::Watch).
  // Call once, after Load().
  void StartWatching();
  // Applies one change from the watcher; public for tests. Revisions not
  // newer than what is served are skipped (a collector's own writes come
  // back through the watcher too).
  void OnChange(const DeclaredChange& change);
  RegistryWatchStats watch_stats() const;

  // The current state; cheap (one shared_ptr copy under a lock).
  std::shared_ptr<const RegistrySnapshot> Snapshot() const override;
  size_t NumLayouts() const;

 private:
  void Publish(std::shared_ptr<const RegistrySnapshot> next)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(write_mu_);
  // Apply, and ApplyIf when `if_revision` is set.
  absl::StatusOr<ApplyResult> WriteLayout(const v1::Layout& layout,
                                          std::optional<uint64_t> if_revision,
                                          absl::Time deadline);
  // ApplyTopology, and ApplyTopologyIf when `expected_version` is set.
  absl::StatusOr<uint64_t> WriteTopology(
      const v1::Topology& topology, std::optional<uint64_t> expected_version,
      absl::Time deadline);
  // RegistrySnapshot::topology_version of a topology of `revision`
  // applied at `applied`.
  uint64_t TopologyVersionOf(uint64_t revision, absl::Time applied)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(write_mu_);
  // The revision a write of `job` must replace: the one served, else one
  // seen and rejected (a layout that no longer validates), else 0.
  uint64_t ExpectedRevision(const RegistrySnapshot& snap,
                            const std::string& job) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(write_mu_);

  // One write at a time through this registry, its turn waited for only
  // until the caller's deadline: a write queued behind one that waits on
  // the backend (a cluster that does not answer) answers DeadlineExceeded
  // at its own deadline, nothing written, instead of after the other.
  class WriteTurn {
   public:
    WriteTurn(LayoutRegistry* registry, absl::Time deadline);
    ~WriteTurn();
    WriteTurn(const WriteTurn&) = delete;
    WriteTurn& operator=(const WriteTurn&) = delete;
    // OK once the turn is this write's; else why it is not.
    const absl::Status& status() const { return status_; }

   private:
    LayoutRegistry* const registry_;
    absl::Status status_;
  };

  DeclaredState* const state_;
  const Clock* const clock_;
  absl::Mutex turn_mu_;
  bool turn_free_ ABSL_GUARDED_BY(turn_mu_) = true;
  // Held for a whole write (validate-persist-publish) once its turn came,
  // and by the watcher's changes; never by readers.
  absl::Mutex write_mu_;
  // Jobs whose stored layout was seen but not served (it did not validate).
  std::map<std::string, uint64_t> rejected_revision_ ABSL_GUARDED_BY(write_mu_);
  // The last topology_version given here (a backend without revisions).
  uint64_t topology_serial_ ABSL_GUARDED_BY(write_mu_) = 0;
  // Guards only the pointer swap.
  mutable absl::Mutex mu_;
  std::shared_ptr<const RegistrySnapshot> current_ ABSL_GUARDED_BY(mu_);
  RegistryWatchStats watch_stats_ ABSL_GUARDED_BY(mu_);
};

}  // namespace fabricdiag::collector
