// When a write of the declared state, made on behalf of a caller (a gRPC
// request), stops retrying.
//
// A request carries its caller's deadline; the backend has its own (how
// long a JetStream write retries while the cluster does not answer). A
// write stops at the earlier of the two: past the caller's deadline nobody
// waits for the answer, and a write that lands later surprises whoever
// retried it elsewhere. The collector answers a little before the caller's
// deadline, so that its answer (which says whether anything may have been
// written) arrives while the caller still listens.
//
//   const absl::Time answer_by =
//       AnswerBy(FromChronoDeadline(context->deadline()), absl::Now());
//   registry.Apply(layout, answer_by);
//   ...
//   const WriteDeadline d =
//       ChooseWriteDeadline(absl::Now(), options.deadline, answer_by);
//
// Thread-safe (pure functions).
#pragma once

#include <chrono>

#include "absl/time/time.h"

namespace fabricdiag::collector {

// A gRPC deadline (grpc::ServerContext::deadline()) as an absl::Time;
// InfiniteFuture for a request without one (time_point::max()).
absl::Time FromChronoDeadline(std::chrono::system_clock::time_point deadline);

// When the collector must answer a request due at `deadline` for its
// answer to arrive in time: a tenth of the time left, at most 200 ms,
// before it. InfiniteFuture stays so; a deadline already past is returned
// as is.
absl::Time AnswerBy(absl::Time deadline, absl::Time now);

struct WriteDeadline {
  absl::Time at;
  // True when the caller's deadline comes before the backend's own: the
  // write then ends with DeadlineExceeded rather than Unavailable.
  bool caller = false;
};

// The earlier of `now + own` (the backend's) and `caller`.
WriteDeadline ChooseWriteDeadline(absl::Time now, absl::Duration own,
                                  absl::Time caller);

}  // namespace fabricdiag::collector
