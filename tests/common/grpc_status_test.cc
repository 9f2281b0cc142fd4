#include "common/grpc_status.h"

#include <gtest/gtest.h>

namespace fabricdiag {
namespace {

TEST(GrpcStatusTest, OkMapsToOk) {
  EXPECT_TRUE(ToGrpcStatus(absl::OkStatus()).ok());
  EXPECT_TRUE(FromGrpcStatus(grpc::Status::OK).ok());
}

TEST(GrpcStatusTest, EveryCanonicalCodeRoundTripsWithItsMessage) {
  for (int code = 1; code <= 16; ++code) {
    absl::Status in(static_cast<absl::StatusCode>(code), "why it failed");
    grpc::Status wire = ToGrpcStatus(in);
    EXPECT_EQ(static_cast<int>(wire.error_code()), code);
    EXPECT_EQ(wire.error_message(), "why it failed");
    EXPECT_EQ(FromGrpcStatus(wire), in);
  }
}

TEST(GrpcStatusTest, NamedCodesAgree) {
  EXPECT_EQ(ToGrpcStatus(absl::UnavailableError("down")).error_code(),
            grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(
      FromGrpcStatus(grpc::Status(grpc::StatusCode::PERMISSION_DENIED, "no"))
          .code(),
      absl::StatusCode::kPermissionDenied);
}

TEST(GrpcStatusTest, OutOfRangeCodeFromPeerBecomesUnknown) {
  grpc::Status weird(static_cast<grpc::StatusCode>(20), "future code");
  absl::Status s = FromGrpcStatus(weird);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnknown);
  EXPECT_EQ(s.message(), "future code");
}

}  // namespace
}  // namespace fabricdiag
