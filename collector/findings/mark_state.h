// The seam between the operator marks (collector/findings/silences.h:
// acks, silences, forgotten nodes) and where they are kept: a file in
// --state_dir (FileMarkState) or, in a cluster, a JetStream bucket
// (cluster/jetstream_silences.h). Every mark is one whole value under its
// key: writing it again replaces it.
//
//   RETURN_IF_ERROR(state->Put(mark));
//   state->Watch([&](const v1::OperatorMark& m) { ... });
//
// Implementations are thread-safe.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "proto/collector.pb.h"

namespace fabricdiag::collector {

// "silence.<id>", "ack.<finding id>", "forget.<node>" ("." in a node name
// written "=2E", so that the key is one NATS subject token after the
// prefix); "" for an empty mark.
std::string MarkKey(const v1::OperatorMark& mark);
// When the mark was made (a silence: created, or expired when it ended
// early; an ack, a forget: when), by its writer's clock.
absl::Time MarkTime(const v1::OperatorMark& mark);

// Where the marks live (see the header comment).
class MarkState {
 public:
  virtual ~MarkState() = default;
  // "--state_dir=/var/lib/fabricdiag", "NATS bucket fabricdiag_marks".
  virtual std::string Describe() const = 0;
  // Durably writes `mark` under MarkKey(mark), replacing what was there.
  virtual absl::Status Put(const v1::OperatorMark& mark) = 0;
  // Every mark held, in no order.
  virtual absl::StatusOr<std::vector<v1::OperatorMark>> ReadAll() = 0;
  // Calls `on_mark` for every mark written after this call (by any writer,
  // this one included), from one backend thread, until StopWatching; it may
  // also be called again with marks ReadAll already returned. The embedded
  // backend has no other writer and never calls it.
  virtual void Watch(std::function<void(const v1::OperatorMark&)> on_mark) = 0;
  virtual void StopWatching() = 0;
};

}  // namespace fabricdiag::collector
