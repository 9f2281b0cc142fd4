// Real NATS JetStream servers on loopback for tests and benchmarks of the
// collector cluster: N `nats-server` processes (Debian's package) routed
// into one cluster, each with its own free client and cluster ports and its
// own store directory, stopped (SIGKILL) when the object goes away.
//
//   testing::NatsCluster nats(3);
//   ASSERT_TRUE(nats.Start().ok());        // JetStream ready on all three
//   flag = "--nats=" + nats.urls();         // "nats://127.0.0.1:P1,..."
//   nats.Kill(0);                           // kill -9 of the first server
//   nats.Restart(0);                        // same ports, same store
//
// Not thread-safe.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "tests/testing/subprocess.h"
#include "tests/testing/temp_dir.h"

namespace fabricdiag::testing {

// A TCP port on 127.0.0.1 that nothing listens on right now.
int FreeLoopbackPort();

// True when `nats-server` is installed (scripts/install-deps.sh installs it).
bool HaveNatsServer();

// One nats-server without JetStream (no -js) on 127.0.0.1:`port`, ready to
// serve when this returns (killed with the result); FailedPrecondition when
// nats-server is missing, Aborted with its log when it did not start.
absl::StatusOr<std::unique_ptr<Subprocess>> StartServerWithoutJetStream(
    int port);

class NatsCluster {
 public:
  explicit NatsCluster(int servers);
  ~NatsCluster();
  NatsCluster(const NatsCluster&) = delete;
  NatsCluster& operator=(const NatsCluster&) = delete;

  // Starts every server and waits until each answers and knows JetStream's
  // meta leader; starts over on fresh ports and stores (3 attempts within
  // `timeout` in all) when a server dies or misses the election.
  absl::Status Start(absl::Duration timeout = absl::Seconds(60));

  // Before Start(): the servers do not tell clients the other servers'
  // URLs (`no_advertise`), so a client given one URL knows that server
  // alone, as one cut off from the others would (NATS clients otherwise
  // reconnect to the servers they learned of).
  void StopAdvertising();

  // Comma-separated client URLs of every server, for --nats.
  std::string urls() const;
  std::string url(int i) const;
  // Server i's client port on 127.0.0.1.
  int port(int i) const { return servers_[i].client_port; }
  int size() const { return static_cast<int>(servers_.size()); }

  void Kill(int i);    // SIGKILL, reaped
  void Pause(int i);   // SIGSTOP
  void Resume(int i);  // SIGCONT
  // Starts server i again with its ports and store (after Kill).
  absl::Status Restart(int i);
  // The server's log (stderr), for failure messages.
  std::string Log(int i) const;

 private:
  struct Server {
    int client_port = 0;
    int cluster_port = 0;
    std::string config;
    std::unique_ptr<Subprocess> process;
  };
  // Picks free ports and writes every server's configuration.
  void Configure();
  // Aborted when a server exited while starting (its port was taken).
  absl::Status StartOnce(absl::Duration timeout);
  absl::Status StartServer(int i);

  TempDir dir_;
  std::vector<Server> servers_;
  int attempt_ = 0;
  bool advertise_ = true;
};

}  // namespace fabricdiag::testing
