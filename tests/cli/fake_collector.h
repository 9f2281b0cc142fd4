// A real gRPC Collector service (proto/collector.proto) backed by memory,
// for end-to-end tests of the `fabricdiag` binary. Listens on 127.0.0.1,
// port 0 unless told otherwise.
//
//   FakeCollector collector("s3cret");   // writes need this token
//   ASSERT_TRUE(collector.Start().ok());
//   RunCommand({cli, "--collector=" + collector.address(), "nodes"});
//   collector.WaitForWatchers(1, absl::Seconds(10));
//   collector.Publish(event);             // to every open watch
//
// Thread-safe.
#pragma once

#include <grpcpp/grpcpp.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "proto/collector.grpc.pb.h"

namespace fabricdiag::cli::testing {

class FakeCollector {
 public:
  // Writes need `Bearer <token>` when `token` is not empty.
  explicit FakeCollector(std::string token = "");
  ~FakeCollector();

  // Binds 127.0.0.1:`port` (0 = any free port).
  absl::Status Start(int port = 0);
  // Ends every watch stream and stops serving.
  void Shutdown();
  int port() const { return port_; }
  std::string address() const;

  void AddFinding(const v1::Finding& finding);
  void AddNode(const v1::NodeStatus& node);
  // Sends `event` to every open watch whose job filter matches.
  void Publish(const v1::FindingEvent& event);
  // Waits until `n` watches are open (each has been sent its snapshot).
  bool WaitForWatchers(int n, absl::Duration timeout);
  // Watches that ended because the client cancelled them.
  int cancelled_watches() const;
  // Authorization values the write RPCs received.
  std::vector<std::string> write_authorizations() const;
  bool HasLayout(const std::string& job) const;

 private:
  class Service;
  std::string token_;
  int port_ = 0;
  std::unique_ptr<Service> service_;
  std::unique_ptr<grpc::Server> server_;
};

}  // namespace fabricdiag::cli::testing
