// Services served through completion queues (gRPC's asynchronous API).
//
// gRPC's callback API hands every completed read to a pool thread: under
// thousands of agent streams that cost ~9 context switches per report and
// about half of the collector's CPU in the kernel. A completion queue
// drained by a thread of its own runs each handler on that thread, with no
// hand-off, and one wake-up serves every event that is ready.
//
// CollectorServer gives each CqService `Options::cq_threads` queues and
// calls Serve() once per queue after the server started. Every tag put on
// a queue must be a CqTag; every operation must start under the queue's
// CqGate, so that none starts once the queue is shutting down:
//
//   void Call::StartRead() {
//     gate_->Start([&] { stream_.Read(&in_, &read_tag_); ++ops_; });
//   }
//
// Handlers of one queue run on its thread only; a call whose operations all
// go to one queue needs no lock of its own.
#pragma once

#include <grpcpp/grpcpp.h>

#include <mutex>

namespace fabricdiag::collector {

// What to do when the operation a tag was given to completes. `ok` is
// gRPC's: false when the call is cancelled, broken or the server is going
// away.
class CqTag {
 public:
  virtual void Proceed(bool ok) = 0;

 protected:
  ~CqTag() = default;
};

// Starts operations on one queue until it closes. Thread-safe.
class CqGate {
 public:
  // Runs `start` (which begins one operation on the queue) unless the queue
  // is closing; returns whether it ran.
  template <typename F>
  bool Start(F&& start) {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_) return false;
    start();
    return true;
  }

  // No operation starts after this returns; then the queue may be shut
  // down.
  void Close() {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
  }

 private:
  std::mutex mu_;
  bool closed_ = false;
};

class CqService {
 public:
  virtual ~CqService() = default;

  // Called once per queue, after the server started and before the queue's
  // thread runs: requests the first call(s) on `cq`. `gate` outlives every
  // tag on `cq`.
  virtual void Serve(grpc::ServerCompletionQueue* cq, CqGate* gate) = 0;
};

}  // namespace fabricdiag::collector
