#include "client/collector_client.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace fabricdiag::client {
namespace {

using ::testing::Eq;

std::string Described(grpc::StatusCode code, const std::string& message) {
  return std::string(DescribeRpcError(grpc::Status(code, message), "c0:9811",
                                      absl::Seconds(10))
                         .message());
}

TEST(DescribeRpcErrorTest, ADeadlineTheCollectorAnsweredIsItsOwnWords) {
  const std::string collector =
      "cluster unavailable: writing the layout of job j to bucket b: Timeout "
      "(stopped at the request's deadline after 1 request in 900ms; a "
      "request went unanswered, so the write may still land: see "
      "`fabricdiag layout show` or `topology show` before applying it "
      "again)";
  const absl::Status status = DescribeRpcError(
      grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED, collector), "c0:9811",
      absl::Seconds(1));
  EXPECT_TRUE(absl::IsDeadlineExceeded(status)) << status;
  EXPECT_THAT(std::string(status.message()),
              Eq("collector c0:9811: " + collector));
}

TEST(DescribeRpcErrorTest, ADeadlineWithoutAnswerIsTheNetwork) {
  EXPECT_THAT(
      Described(grpc::StatusCode::DEADLINE_EXCEEDED, "Deadline Exceeded"),
      Eq("cannot reach collector c0:9811: no answer within 10s (--timeout)"));
}

TEST(DescribeRpcErrorTest, AnUnavailableClusterIsTheCollectorsAnswer) {
  EXPECT_THAT(Described(grpc::StatusCode::UNAVAILABLE,
                        "cluster unavailable: no responders"),
              Eq("collector c0:9811: cluster unavailable: no responders"));
}

}  // namespace
}  // namespace fabricdiag::client
