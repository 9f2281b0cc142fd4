// Where the declared state (the jobs' layouts and the fabric topology) lives:
// the seam between the LayoutRegistry and its two backends.
//
//   - Embedded (the default): files in --state_dir, one collector process
//     (collector/declared/file_declared_state.h).
//   - Cluster (--nats): a replicated JetStream key-value bucket shared by
//     every collector of a cluster (cluster/jetstream_declared_state.h).
//
// The registry validates, then writes through this interface, and only then
// serves what it wrote; it never knows which backend runs. Every version of
// a layout or of the topology has a revision (increasing per backend). A
// write names the revision its writer last saw, so that two collectors
// writing the same job at once never merge silently: the second write fails
// with Aborted and its caller re-reads and decides (compare-and-set). The
// embedded backend has one writer and always succeeds.
//
// Every write takes its caller's deadline (a gRPC request's, through
// collector/declared/write_deadline.h; InfiniteFuture when there is none) and
// stops retrying at the earlier of it and the backend's own: DeadlineExceeded
// when the caller's passes first, its message saying whether the write may
// still land (a request was sent and not answered) or nothing was written.
// The embedded backend writes files at once and may ignore it.
//
// Writes made elsewhere (another collector of the cluster) reach the registry
// through Watch(), in the order the backend applied them.
//
// Usage:
//   ASSIGN_OR_RETURN(uint64_t revision,
//                    state->WriteLayout(layout, now, last_seen_revision,
//                                       answer_by));
//   state->Watch([&](const DeclaredChange& c) { registry.OnChange(c); });
//
// Implementations are thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "proto/layout.pb.h"

namespace fabricdiag::collector {

struct DeclaredLayout {
  v1::Layout layout;
  absl::Time applied;     // the writer's clock
  uint64_t revision = 0;  // 0 where the backend has no revisions (embedded)
  std::string where;      // a file path or a bucket key, for messages
};

struct DeclaredTopology {
  v1::Topology topology;
  absl::Time applied;
  uint64_t revision = 0;
  std::string where;
};

// One change made by any writer (this collector included: a watcher sees its
// own writes too, and the registry skips revisions it already serves).
struct DeclaredChange {
  enum class Kind { kLayout, kLayoutRemoved, kTopology, kDamaged };
  Kind kind = Kind::kLayout;
  uint64_t revision = 0;
  std::string job;            // kLayout, kLayoutRemoved
  DeclaredLayout layout;      // kLayout
  DeclaredTopology topology;  // kTopology
  std::string problem;        // kDamaged: what could not be read, and where
};

// What a reader (the LayoutRegistry) did with the changes that came through
// DeclaredState::Watch.
struct RegistryWatchStats {
  uint64_t applied = 0;   // layouts, removals and topologies now served
  uint64_t rejected = 0;  // changes that did not validate (kept out)
};

class DeclaredState {
 public:
  virtual ~DeclaredState() = default;

  // "--state_dir=/var/lib/fabricdiag", "NATS bucket fabricdiag_declared".
  virtual std::string Describe() const = 0;

  // Replaces the layout of layout.job(); returns its new revision once the
  // backend acknowledged it (on disk, or on a quorum of JetStream servers).
  // `expected_revision` is the revision of the job's layout the caller
  // serves (0: none). Aborted naming the job when it changed since;
  // InvalidArgument for an invalid job; ResourceExhausted when too large;
  // Unavailable when the backend cannot be reached by its own deadline,
  // DeadlineExceeded when not by `deadline` (the caller's, earlier).
  virtual absl::StatusOr<uint64_t> WriteLayout(const v1::Layout& layout,
                                               absl::Time applied,
                                               uint64_t expected_revision,
                                               absl::Time deadline) = 0;
  // Removes the layout of `job`. `expected_revision` is the revision of it
  // the caller serves (0: any): Aborted when the layout changed since, and
  // nothing is removed. NotFound when there is no such layout; Unavailable
  // and DeadlineExceeded as for WriteLayout.
  virtual absl::Status RemoveLayout(absl::string_view job,
                                    uint64_t expected_revision,
                                    absl::Time deadline) = 0;
  // Every readable layout, ascending job; damaged ones are set aside and
  // reported (problems()).
  virtual absl::StatusOr<std::vector<DeclaredLayout>> ReadLayouts() = 0;

  virtual absl::StatusOr<uint64_t> WriteTopology(const v1::Topology& topology,
                                                 absl::Time applied,
                                                 uint64_t expected_revision,
                                                 absl::Time deadline) = 0;
  // nullopt when no topology was ever written.
  virtual absl::StatusOr<std::optional<DeclaredTopology>> ReadTopology() = 0;

  // Sets aside a stored object that parsed but no longer validates (a
  // layout an older collector accepted), naming `why`.
  virtual void Reject(absl::string_view where, absl::string_view why) = 0;

  // Calls `on_change` for every change applied after this call, in order,
  // from one backend thread, until the backend is destroyed. The embedded
  // backend has no other writer and never calls it.
  virtual void Watch(std::function<void(const DeclaredChange&)> on_change) = 0;
  // Stops delivering: when it returns, `on_change` is not running and will
  // not be called again. The owner of `on_change` calls it before it goes
  // away (the LayoutRegistry's destructor does).
  virtual void StopWatching() = 0;

  // Human-readable reports of damaged objects found and set aside.
  virtual std::vector<std::string> problems() const = 0;
};

}  // namespace fabricdiag::collector
