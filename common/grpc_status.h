// Converts between absl::Status and grpc::Status.
//
// The canonical codes of both libraries are the same numbers (both follow
// google.rpc.Code), so the mapping is 1:1 and keeps the message. Services
// return `ToGrpcStatus(logic.Do(...))`; clients turn a failed RPC into an
// absl::Status with `FromGrpcStatus(status)`.
//
//   grpc::Status Apply(...) override {
//     return fabricdiag::ToGrpcStatus(registry_.Apply(layout));
//   }
//
// Thread-safe (pure functions).
#pragma once

#include <grpcpp/support/status.h>

#include "absl/status/status.h"

namespace fabricdiag {

grpc::Status ToGrpcStatus(const absl::Status& status);
absl::Status FromGrpcStatus(const grpc::Status& status);

}  // namespace fabricdiag
