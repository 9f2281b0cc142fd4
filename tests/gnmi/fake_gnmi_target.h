// A small gNMI target for tests: checks the username/password metadata,
// refuses chosen subscription paths with UNIMPLEMENTED, sends each new
// Subscribe stream the responses scripted for its first path (then a
// sync_response), and pushes more responses to the open streams on demand.
//
//   FakeGnmiTarget target;
//   target.RequireCredentials("bridge", "s3cret");
//   target.Script("/interfaces/interface/state/counters", {response...});
//   ASSERT_TRUE(target.Start().ok());  // 127.0.0.1, a free port
//   ... address() ...
//   target.Push("/interfaces/interface/state/counters", response);
//
// Thread-safe.
#pragma once

#include <grpcpp/grpcpp.h>

#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "proto/gnmi.grpc.pb.h"

namespace fabricdiag::gnmi::testing {

class FakeGnmiTarget {
 public:
  struct Tls {
    std::string cert_file;  // PEM
    std::string key_file;
  };

  FakeGnmiTarget();
  ~FakeGnmiTarget();

  void RequireCredentials(std::string username, std::string password);
  // A Subscribe naming `path` (text form) ends with UNIMPLEMENTED.
  void Refuse(std::string path);
  // Sent to every stream whose first subscription path is `path`, on open.
  void Script(std::string path, std::vector<::gnmi::SubscribeResponse> r);

  // Listens on 127.0.0.1 (`port` 0: a free one; pass the old port to come
  // back where a stopped target was), plaintext or with `tls`.
  absl::Status Start(int port = 0, const Tls* tls = nullptr);
  // Ends every stream and stops listening.
  void Stop();

  // Sends `response` to the open streams subscribed to `path`; returns how
  // many.
  int Push(const std::string& path, const ::gnmi::SubscribeResponse& response);
  // Waits until `n` streams subscribed to `path` are open.
  bool WaitForStreams(const std::string& path, int n, absl::Duration timeout);

  std::string address() const;
  int port() const { return port_; }
  // Subscribe RPCs refused for missing or wrong credentials.
  int unauthenticated() const;
  // Subscribe RPCs received (all paths).
  int subscribes() const;
  // Subscribe RPCs accepted whose first subscription path is `path`.
  int subscribes(const std::string& path) const;

 private:
  class Service;
  std::unique_ptr<Service> service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
  bool stopped_ = false;
};

}  // namespace fabricdiag::gnmi::testing
