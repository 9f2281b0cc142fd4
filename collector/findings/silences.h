// Operator marks on findings: silences (matchers, for a while), acks (one
// finding, until it resolves) and forgotten nodes; what they mark and how
// they are kept (docs/cli.md, "Acknowledge, silence, maintenance").
//
// A mark never hides anything: a marked finding still opens, updates and
// resolves as before; Mark() only sets its `acked` and `silenced_by` fields
// for the surfaces (CLI, HTTP API, page, /metrics labels).
//
// Where the marks live is behind MarkState, like the declared state
// (collector/declared/declared_state.h): a file in --state_dir for one
// collector (FileMarkState), a replicated JetStream bucket in a cluster
// (cluster/jetstream_silences.h). Marks writes through it first and only
// then serves the mark; marks written by other collectors arrive through
// MarkState::Watch. Every mark is a whole value under its key (MarkKey):
// writing it again replaces it, last writer wins, which is what a mark
// means (a second ack of a finding records who acked it last).
//
// Usage:
//   FileMarkState state(state_store.get());
//   Marks marks(&state, clock);
//   RETURN_IF_ERROR(marks.Load());
//   absl::StatusOr<v1::Silence> s = marks.CreateSilence(request, "alice");
//   marks.Mark(&finding);  // sets acked / silenced_by
//
// Thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "collector/findings/mark_state.h"
#include "collector/findings/silence_matchers.h"
#include "collector/state/state_store.h"
#include "common/clock.h"
#include "proto/collector.pb.h"

namespace fabricdiag::collector {

// The longest silence (and maintenance window) accepted: a longer one is
// almost always a forgotten one.
inline constexpr absl::Duration kMaxSilence = absl::Hours(24 * 30);
// Expired silences stay listed this long, then are dropped.
inline constexpr absl::Duration kKeepExpiredSilences = absl::Hours(24 * 7);

// The embedded MarkState: every mark in one object file, marks.pb in
// --state_dir (the envelope of collector/state/object_store.h around a
// v1::OperatorMarks), rewritten whole on each write; silences that ended
// more than kKeepExpiredSilences before the write (the time the written
// mark carries, the writer's clock) are dropped then. A
// damaged file is moved aside (StateStore::QuarantineFile) and the marks
// start empty.
class FileMarkState final : public MarkState {
 public:
  // `store` must outlive this object.
  explicit FileMarkState(StateStore* store) : store_(store) {}

  std::string Describe() const override;
  absl::Status Put(const v1::OperatorMark& mark) override;
  absl::StatusOr<std::vector<v1::OperatorMark>> ReadAll() override;
  void Watch(std::function<void(const v1::OperatorMark&)>) override {}
  void StopWatching() override {}

 private:
  std::string path() const;

  StateStore* const store_;
  absl::Mutex mu_;
  bool loaded_ ABSL_GUARDED_BY(mu_) = false;
  std::map<std::string, v1::OperatorMark> marks_ ABSL_GUARDED_BY(mu_);
};

class Marks {
 public:
  // `state` must outlive this object.
  Marks(MarkState* state, const Clock& clock);
  ~Marks();

  Marks(const Marks&) = delete;
  Marks& operator=(const Marks&) = delete;

  // Reads every mark and watches for the others' writes. Call once.
  absl::Status Load();

  // Validates (InvalidArgument naming the field: matchers, duration_seconds
  // from 1 s to kMaxSilence, a non-empty comment), writes and returns the
  // new silence. `who` is the caller as the server knows it.
  absl::StatusOr<v1::Silence> CreateSilence(
      const v1::CreateSilenceRequest& request, absl::string_view who);
  // Ends the silence now. NotFound for an unknown id; an expired one is
  // returned as it is.
  absl::StatusOr<v1::Silence> ExpireSilence(absl::string_view id,
                                            absl::string_view who);
  // Every silence kept, newest first, `expired` set on those that ended.
  std::vector<v1::Silence> ListSilences() const;
  // Acknowledges `finding` (active; the caller checks) until it resolves.
  absl::StatusOr<v1::FindingAck> Ack(const v1::Finding& finding,
                                     absl::string_view comment,
                                     absl::string_view who);
  // Records that `node` was forgotten now: every collector that holds the
  // mark drops the node's liveness that is older (ForgottenAt).
  absl::StatusOr<v1::NodeForget> Forget(absl::string_view node,
                                        absl::string_view who);
  // When `node` was last forgotten (nullopt: never).
  std::optional<absl::Time> ForgottenAt(absl::string_view node) const;
  // Called with every forget another collector of a cluster writes (and
  // this collector's own, as they come back through MarkState::Watch),
  // outside the marks' lock, so that each collector drops what it keeps of
  // the node. May be set at any time; null stops the calls.
  void OnWatchedForget(std::function<void(const v1::NodeForget&)> hook);

  // Sets (or clears) finding->acked and finding->silenced_by as they apply
  // now. A resolved finding is never marked.
  void Mark(v1::Finding* finding) const;
  // Whether Mark would set acked / any silenced_by.
  bool Acked(const v1::Finding& finding) const;
  bool Silenced(const v1::Finding& finding) const;

 private:
  void Apply(const v1::OperatorMark& mark) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::vector<std::string> SilencedByLocked(const v1::Finding& finding,
                                            absl::Time now) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);
  std::string NewSilenceId();

  MarkState* const state_;
  const Clock& clock_;
  mutable absl::Mutex mu_;
  std::map<std::string, v1::Silence> silences_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, v1::FindingAck> acks_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, v1::NodeForget> forgets_ ABSL_GUARDED_BY(mu_);
  std::function<void(const v1::NodeForget&)> on_watched_forget_
      ABSL_GUARDED_BY(mu_);
  bool watching_ = false;
};

}  // namespace fabricdiag::collector
