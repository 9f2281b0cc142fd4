// A TCP proxy on loopback that can hold back what a server answers, or
// what a client asks, for tests of the races a network makes:
//   - a request that reached the server but whose answer was lost: the
//     request lands, the client's wait for the answer times out, and the
//     answer arrives (and is ignored) only later (HoldRepliesFrom);
//   - a request delayed on its way while another client writes first
//     (HoldRequestsFrom);
//   - a NATS login refused (RefuseLogins), as a server refuses wrong
//     credentials;
//   - a NATS server's nonce chosen by the test (ReplaceNonces): one whose
//     signature libnats before 3.8 would send empty.
//
//   auto proxy = testing::StallProxy::Start(server_port);  // StatusOr
//   connect the client to 127.0.0.1:(*proxy)->port();
//   (*proxy)->HoldRepliesFrom("PUB $KV.");  // once a client sends that,
//                                           // answers wait
//   ... the client's request times out ...
//   (*proxy)->Release();       // what was held is delivered, in order
//
// Every connection through the proxy is affected alike. Nothing is ever
// dropped or reordered: held bytes are delivered, in order, at Release().
// Thread-safe; the destructor stops the proxy's thread and closes every
// connection.
#pragma once

#include <atomic>
#include <cstddef>
#include <deque>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

namespace fabricdiag::testing {

class StallProxy {
 public:
  // Listens on a free port of 127.0.0.1 and forwards every connection to
  // 127.0.0.1:`target_port`.
  static absl::StatusOr<std::unique_ptr<StallProxy>> Start(int target_port);
  ~StallProxy();
  StallProxy(const StallProxy&) = delete;
  StallProxy& operator=(const StallProxy&) = delete;

  int port() const { return port_; }
  // As soon as a client sends `marker` (found in what it sends from now
  // on; once), what the server sends is read and kept, not delivered: the
  // answer to the request that carried the marker is held, whatever came
  // before it is not.
  void HoldRepliesFrom(std::string marker);
  // As soon as a client sends `marker` (once), what it sent in the read
  // that carried the marker and everything after is kept, not passed on:
  // the server sees that request only at Release().
  void HoldRequestsFrom(std::string marker);
  // True once the marker was seen, until Release().
  bool holding() const { return holding_.load(); }
  // Delivers what was kept, then forwards as before (a marker not seen yet
  // is no longer looked for).
  void Release();
  // Bytes held since the marker was last seen: what the server sent
  // (HoldRepliesFrom), or what clients sent and the server has not seen yet
  // (HoldRequestsFrom).
  size_t held_bytes() const { return held_bytes_.load(); }
  // The next `n` connections are refused as a NATS server refuses a
  // login: the server's greeting reaches the client, the client's CONNECT
  // does not reach the server but is answered "-ERR 'Authorization
  // Violation'", and the connection is shut (closed once the client
  // closes it). Plain connections only: TLS hides the CONNECT.
  void RefuseLogins(int n);
  // The next connections, one per entry, get `nonces` in place of the
  // nonce of the server's greeting (its INFO's "nonce"): a client signs
  // what the proxy chose. The server checks the signature against its own
  // nonce, so such a login is refused. Plain connections only.
  void ReplaceNonces(std::vector<std::string> nonces);
  // Connections whose CONNECT was passed on to the server.
  int logins() const { return logins_.load(); }
  // Closes every connection open now (both ends), as a server that went
  // away; new ones are accepted as before.
  void CutConnections();
  // Connections accepted so far.
  int connections() const { return connections_.load(); }

 private:
  StallProxy(int listen_fd, int port, int target_port);
  void Run();

  const int listen_fd_;
  const int port_;
  const int target_port_;
  mutable absl::Mutex mu_;
  std::string marker_ ABSL_GUARDED_BY(mu_);  // "": not looking
  // What the marker holds: requests (HoldRequestsFrom) or replies.
  bool marker_holds_requests_ ABSL_GUARDED_BY(mu_) = false;
  std::atomic<bool> holding_{false};
  std::atomic<bool> holding_requests_{false};
  std::atomic<bool> stopping_{false};
  std::atomic<size_t> held_bytes_{0};
  std::atomic<int> refuse_logins_{0};
  std::deque<std::string> nonces_ ABSL_GUARDED_BY(mu_);
  std::atomic<int> logins_{0};
  std::atomic<int> connections_{0};
  std::atomic<bool> cut_{false};
  std::thread thread_;
};

}  // namespace fabricdiag::testing
